"""BERTlets: a hinge on the softmax of a (positive, negative) pair of scalar scores."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


def softmax_hinge(
    positive: torch.Tensor, negative: torch.Tensor, margin: float = 0.2
) -> torch.Tensor:
    """Mean of ``max(0, m - (ŝ+ - ŝ-))`` where ``(ŝ+, ŝ-) = softmax(s+, s-)``.

    The softmax keeps the difference in (-1, 1), so the loss is bounded by ``1 + m`` and is 0
    once ``tanh((s+ - s-) / 2) >= m``.

    Args:
        positive: ``[B]`` scores of the (query, relevant passage) pairs.
        negative: ``[B]`` scores of the (query, non-relevant passage) pairs.
        margin: the hinge margin ``m``.

    Example:
        >>> softmax_hinge(torch.tensor([0.0]), torch.tensor([0.0]), margin=0.2)  # 0.2 - (0.5 - 0.5)
        tensor(0.2000)
    """
    probabilities = torch.softmax(torch.stack([positive.float(), negative.float()], dim=-1), dim=-1)
    difference = probabilities[..., 0] - probabilities[..., 1]
    return torch.clamp(margin - difference, min=0.0).mean()


class TripletSoftmaxHingeLoss(nn.Module):
    """Pair-wise loss of BERTlets on (query, positive, negative) triplets.

    The model maps each (query, passage) pair to a scalar ``s = BERT(q, p) · v``. For a
    triplet the two scores are normalised with a softmax, ``ŝ± = softmax(s+, s-)``, and the loss
    is the hinge ``max(0, m - (ŝ+ - ŝ-))`` averaged over the batch. The ranking score is ``s``.

    Args:
        model: a :class:`~reranklab.models.reranker.CrossEncoderReranker` with 1 output.
        margin: the hinge margin ``m`` (``training.margin``, 0.2 by default).

    References:
        Mass et al., BERTlets for non-factoid passage re-ranking.

    Inputs:
        +--------------------------------------------------------------------+
        | batch (from ``TripletCollator``)                                   |
        +====================================================================+
        | ``positive``: padded (q, p+) pairs; ``negative``: padded (q, p-)   |
        +--------------------------------------------------------------------+

    Example:
        Scores ``s+ = [2, 0]``, ``s- = [0, 0]``, ``m = 0.2``: the first triplet has
        ``ŝ+ - ŝ- = tanh(1) = 0.7616 > m`` (loss 0), the second ``0`` (loss 0.2); the loss
        is ``0.1``::

            loss = TripletSoftmaxHingeLoss(model, margin=0.2)
            value = loss({"positive": positive_features, "negative": negative_features})
            value.backward()
    """

    def __init__(self, model: nn.Module, margin: float = 0.2) -> None:
        super().__init__()
        if getattr(model, "num_outputs", 1) != 1:
            raise ValueError("TripletSoftmaxHingeLoss needs a model with a scalar head")
        self.model = model
        self.margin = float(margin)

    def forward(self, batch: dict[str, Any]) -> torch.Tensor:
        positive = self.model(**batch["positive"]).squeeze(-1)
        negative = self.model(**batch["negative"]).squeeze(-1)
        return softmax_hinge(positive, negative, self.margin)

    def get_config_dict(self) -> dict[str, Any]:
        return {"margin": self.margin}
