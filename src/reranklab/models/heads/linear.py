"""A linear scorer on the [CLS] vector: the head of BERT-lite (BERT-DMN §5.1)."""

from __future__ import annotations

import torch
from torch import nn


class ClsLinearHead(nn.Module):
    """``logit = wᵀ dropout(c) + b`` on the [CLS] vector ``c``; other features are ignored.

    Args:
        input_size: the encoder's hidden size.
        dropout: dropout on ``c`` (0.1).

    Example:
        >>> ClsLinearHead(4)(torch.zeros(3, 4)).tolist()  # zero bias at initialisation
        [0.0, 0.0, 0.0]
    """

    def __init__(self, input_size: int, dropout: float = 0.1) -> None:
        super().__init__()
        self.input_size = int(input_size)
        self.dropout = nn.Dropout(float(dropout))
        self.linear = nn.Linear(input_size, 1)
        # BERT's initialisation of classification heads.
        nn.init.normal_(self.linear.weight, mean=0.0, std=0.02)
        nn.init.zeros_(self.linear.bias)

    def config(self) -> dict[str, float | int]:
        return {"input_size": self.input_size, "dropout": self.dropout.p}

    def forward(self, cls: torch.Tensor, **_: torch.Tensor) -> torch.Tensor:
        """Logits ``[B]`` of ``cls`` ``[B, H]``."""
        return self.linear(self.dropout(cls)).squeeze(-1)
