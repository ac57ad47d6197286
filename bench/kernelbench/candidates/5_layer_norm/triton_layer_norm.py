import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layer_norm_rows(x_ptr, w_ptr, b_ptr, out_ptr, cols, eps,
                    BLOCK: tl.constexpr):
    # one program per row: mean and variance in registers, one pass over x
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / cols
    d = tl.where(mask, x - mean, 0.0)
    var = tl.sum(d * d, axis=0) / cols
    inv = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + row * cols + offs, d * inv * w + b, mask=mask)


class ModelNew(nn.Module):
    """The same parameters as Model (built after the same seed, so the
    same scale and shift), a fused Triton kernel instead of nn.LayerNorm."""

    def __init__(self, features: int):
        super(ModelNew, self).__init__()
        self.ln = nn.LayerNorm(features)
        with torch.no_grad():
            self.ln.weight.uniform_(0.5, 1.5)
            self.ln.bias.uniform_(-0.5, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty_like(x)
        layer_norm_rows[(rows,)](x, self.ln.weight, self.ln.bias, out, cols,
                                 self.ln.eps,
                                 BLOCK=triton.next_power_of_2(cols))
        return out
