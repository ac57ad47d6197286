"""One Triton program per row: load, max, exp, sum and divide in registers."""
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_rows(out_ptr, in_ptr, stride, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(in_ptr + row * stride + offs, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(out_ptr + row * stride + offs, e / tl.sum(e, axis=0), mask=mask)


def forward(x):
    rows, cols = x.shape
    out = torch.empty_like(x)
    softmax_rows[(rows,)](out, x, x.stride(0), cols,
                          BLOCK=triton.next_power_of_2(cols))
    return out
