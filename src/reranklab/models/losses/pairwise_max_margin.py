"""The pair-wise max-margin (hinge) loss of BERT-DMN, its lite variants, QA-LSTM and K-NRM."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn


def pairwise_max_margin(
    positive: torch.Tensor, negative: torch.Tensor, margin: float
) -> torch.Tensor:
    """Mean of ``max(0, m − f(q, p+) + f(q, p−))`` over the batch.

    Args:
        positive: ``[B]`` outputs ``f`` of the (query, relevant passage) pairs.
        negative: ``[B]`` outputs of the (query, non-relevant passage) pairs.
        margin: ``m``.

    Example:
        >>> pairwise_max_margin(torch.tensor([0.9, 0.5]), torch.tensor([0.6, 0.5]), 0.2)  # (0 + 0.2) / 2
        tensor(0.1000)
    """
    return torch.clamp(margin - positive.float() + negative.float(), min=0.0).mean()


class PairwiseMaxMarginLoss(nn.Module):
    """Hinge on (positive, negative) pairs of model outputs, ``max(0, m − f+ + f−)``.

    The model maps a batch of pairs to one value per pair, ``f = model(**inputs)`` ``[B]``, in
    the space the paper puts the margin in: BERT-DMN and the lite variants ``a = σ(W[c; Q; m])``
    (m = 0.2), QA-LSTM the cosine of question and answer vectors (Tan et al.), K-NRM
    ``tanh(wᵀφ + b)`` (m = 1, Xiong et al.). A model whose outputs are not yet ``f`` (the
    logits ``[B, 1]`` of a cross-encoder's head) is read through ``output`` (``a = σ(z)``).

    Args:
        model: a model whose ``forward(**inputs)`` returns ``[B]`` (or, with ``output``, what
            ``output`` maps to ``[B]``).
        margin: ``m`` (``training.margin``).
        output: maps the model's outputs to ``f``; ``None`` = they are ``f``.

    References:
        Kumar et al. 2016 / BERT-DMN; Tan et al. 2016 (QA-LSTM); Xiong et al. 2017 (K-NRM).

    Inputs:
        +--------------------------------------------------------------------+
        | batch (from ``TripletCollator``)                                   |
        +====================================================================+
        | ``positive``: inputs of (q, p+) pairs; ``negative``: of (q, p−)    |
        +--------------------------------------------------------------------+

    Example:
        Outputs ``f+ = [0.9, 0.5]``, ``f− = [0.6, 0.5]``, ``m = 0.2``: the first pair is beyond
        the margin (0.3 > 0.2, loss 0), the second scores a tie (loss 0.2); the loss is ``0.1``::

            loss = PairwiseMaxMarginLoss(model, margin=0.2)
            value = loss({"positive": positive_inputs, "negative": negative_inputs})
            value.backward()
    """

    def __init__(
        self,
        model: nn.Module,
        margin: float = 0.2,
        output: Callable[[torch.Tensor], torch.Tensor] | None = None,
    ) -> None:
        super().__init__()
        self.model = model
        self.margin = float(margin)
        self.output = output

    def forward(self, batch: dict[str, Any]) -> torch.Tensor:
        positive = self.model(**batch["positive"])
        negative = self.model(**batch["negative"])
        if self.output is not None:
            positive, negative = self.output(positive), self.output(negative)
        if positive.dim() != 1:
            raise ValueError(
                f"PairwiseMaxMarginLoss needs one output per pair, got shape {tuple(positive.shape)}"
            )
        return pairwise_max_margin(positive, negative, self.margin)

    def get_config_dict(self) -> dict[str, Any]:
        return {"margin": self.margin}
