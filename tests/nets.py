"""Small torch modules traced by more than one test file (graph node names follow the class names)."""

from __future__ import annotations

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.l = nn.Linear(3, 5)
        self.act = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.l(x))
