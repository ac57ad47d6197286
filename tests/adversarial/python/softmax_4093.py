# A KernelBench-format problem (a Model, its sizes, get_inputs and
# get_init_inputs), as the issue that asked for these tests met it: the
# softmax of each row of a 4096 x 4093 randn matrix. Every right value is
# about 1/4093, far under KernelBench's atol = rtol = 1e-2, so that
# tolerance alone accepts a softmax over the wrong axis.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


batch_size = 4096
dim = 4093


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
