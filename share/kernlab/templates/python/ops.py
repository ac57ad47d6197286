"""{{name}}: the operator's contract, read by kl-pyworker.

inputs(shape, seed) returns the inputs and inouts, in the params' order
(shape holds the shape's values: shape["n"]); reference(*inputs) returns the
outputs in the params' order, the oracle (in float64 where it matters);
forward(*inputs) is the baseline a candidate replaces. Both update inouts
in place. A candidate file defines forward() the same way.
"""
import torch


def inputs(shape, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.rand(shape["n"], device="cuda", generator=g) * 2 - 1
    return (x,)


def reference(x):
    return (x.double() * 0.5).float()


def forward(x):
    return x * 0.5
