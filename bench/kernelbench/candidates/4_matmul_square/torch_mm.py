import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """The same product through torch.mm: no faster, no slower. An A/A
    pair: what each timing method calls a speedup when there is none."""

    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.mm(A, B)
