"""A small program in the style of Triton's tutorials, written for kernlab's
tests: a fused row softmax (an autotuned block count per row) and a vector
add, called by a toy "model" at a few sizes with different frequencies,
next to PyTorch's own kernels. Nothing in it knows about kernlab."""
import sys

import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()
STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 20


@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(output_ptr + offsets, x + y, mask=mask)


def add(x: torch.Tensor, y: torch.Tensor):
    output = torch.empty_like(x)
    n_elements = output.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta['BLOCK_SIZE']), )
    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=1024)
    return output


@triton.autotune(configs=[triton.Config({}, num_warps=4),
                          triton.Config({}, num_warps=8)],
                 key=['n_cols'])
@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride,
                   n_rows, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    row_start_ptr = input_ptr + row * input_row_stride
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    x = tl.load(row_start_ptr + col_offsets, mask=mask, other=-float('inf'))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    out = num / tl.sum(num, axis=0)
    tl.store(output_ptr + row * output_row_stride + col_offsets, out,
             mask=mask)


def softmax(x):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    softmax_kernel[(n_rows, )](y, x, x.stride(0), y.stride(0), n_rows, n_cols,
                               BLOCK_SIZE=BLOCK_SIZE)
    return y


def step(batch, hidden):
    x = torch.randn(batch, hidden, device=DEVICE)
    h = add(x, torch.ones_like(x))
    p = softmax(h)
    ref = torch.softmax(h, dim=1)
    return float((p - ref).abs().max())


if __name__ == "__main__":
    torch.manual_seed(0)
    worst = 0.0
    for i in range(STEPS):
        worst = max(worst, step(4096, 1024))  # the busy shape
        if i % 5 == 0:
            worst = max(worst, step(512, 3000))  # a ragged one, now and then
    torch.cuda.synchronize()
    print("max |triton - torch| = %.3g" % worst)
    sys.exit(0 if worst < 1e-5 else 1)
