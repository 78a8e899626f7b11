"""BERT[PW]: two-class cross-entropy on the [CLS] logits (Nogueira & Cho 2019; Mass et al.)."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


def pointwise_cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean two-class cross-entropy: ``-log softmax(logits)[label]`` averaged over the batch.

    Args:
        logits: ``[B, 2]`` (not relevant, relevant) logits.
        labels: ``[B]`` integer labels in {0, 1}.

    Example:
        >>> pointwise_cross_entropy(torch.tensor([[0.0, 0.0]]), torch.tensor([1]))  # log 2
        tensor(0.6931)
    """
    return F.cross_entropy(logits.float(), labels.long())


class PointwiseCrossEntropyLoss(nn.Module):
    """Point-wise classification loss of BERT[PW].

    Each (query, passage) pair is classified as relevant or not from the [CLS] representation
    with a 2-way linear head; the loss is the mean cross-entropy, and the ranking score is
    ``P(relevant) = softmax(logits)[:, 1]``.

    Args:
        model: a :class:`~reranklab.models.reranker.CrossEncoderReranker` with 2 outputs.

    References:
        Nogueira & Cho, "Passage Re-ranking with BERT", 2019; Mass et al., BERT[PW] for
        non-factoid passage re-ranking.

    Inputs:
        +--------------------------------------+---------------------+
        | batch (from ``PointwiseCollator``)    | labels              |
        +======================================+=====================+
        | ``features``: padded (q, p) pairs     | ``labels``: 0 or 1  |
        +--------------------------------------+---------------------+

    Example:
        With logits ``[[2, 0], [0, 1]]`` and labels ``[1, 1]`` the per-pair losses are
        ``log(1 + e^2) = 2.1269`` and ``log(1 + e^-1) = 0.3133``; the loss is their mean,
        ``1.2201``::

            loss = PointwiseCrossEntropyLoss(model)
            value = loss({"features": features, "labels": torch.tensor([1, 1])})
            value.backward()
    """

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        if getattr(model, "num_outputs", 2) != 2:
            raise ValueError("PointwiseCrossEntropyLoss needs a model with a 2-way head")
        self.model = model

    def forward(self, batch: dict[str, Any]) -> torch.Tensor:
        logits = self.model(**batch["features"])
        return pointwise_cross_entropy(logits, batch["labels"])

    def get_config_dict(self) -> dict[str, Any]:
        return {}
