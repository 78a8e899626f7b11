"""BERTSel: sigmoid cross-entropy plus a hinge on (positive, negative) probabilities, half each."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


def bertsel_loss(
    positive: torch.Tensor, negative: torch.Tensor, margin: float = 0.2
) -> torch.Tensor:
    """Mean of ``0.5·(−log y+ − log(1 − y−)) + 0.5·max(0, m − y+ + y−)``, ``y± = sigmoid(z±)``.

    The cross-entropy half is computed from the logits (``−log σ(z) = softplus(−z)``,
    ``−log(1 − σ(z)) = softplus(z)``), so it stays finite for saturated probabilities.

    Args:
        positive: ``[B]`` logits ``z+ = w·[CLS] + b`` of the (query, relevant passage) pairs.
        negative: ``[B]`` logits ``z-`` of the (query, non-relevant passage) pairs.
        margin: the hinge margin ``m`` on the probabilities.

    Example:
        >>> bertsel_loss(torch.tensor([0.0]), torch.tensor([0.0]), margin=0.2)  # 0.5·2·log 2 + 0.5·0.2
        tensor(0.7931)
    """
    positive, negative = positive.float(), negative.float()
    cross_entropy = F.softplus(-positive) + F.softplus(negative)
    hinge = torch.clamp(margin - torch.sigmoid(positive) + torch.sigmoid(negative), min=0.0)
    return (0.5 * cross_entropy + 0.5 * hinge).mean()


class BertSelLoss(nn.Module):
    """The BERTSel loss on (query, positive, negative) triplets.

    The model maps each (query, passage) pair to ``y = sigmoid(w·[CLS] + b)``, the probability
    that the passage answers the query. A triplet's loss averages a point-wise part, the binary
    cross-entropy of the positive (label 1) and the negative (label 0), and a pair-wise part,
    the hinge ``max(0, m − y(q, p) + y(q, n))`` on the two probabilities. The ranking score
    is ``y``.

    Args:
        model: a re-ranker with a scalar head (``num_outputs == 1``) whose output is the logit.
        margin: the hinge margin ``m`` (``training.margin``).

    References:
        Li et al., "BERTSel: Answer Selection with Pre-trained Models", 2019.

    Inputs:
        +--------------------------------------------------------------------+
        | batch (from ``TripletCollator``)                                   |
        +====================================================================+
        | ``positive``: model inputs of (q, p+); ``negative``: of (q, p-)    |
        +--------------------------------------------------------------------+

    Example:
        Logits ``z+ = [2]``, ``z- = [0]``, ``m = 0.2``: ``y+ = 0.8808``, ``y- = 0.5``; the
        cross-entropy is ``0.1269 + 0.6931 = 0.8201`` and the hinge ``max(0, 0.2 − 0.3808) = 0``,
        so the loss is ``0.4100``::

            loss = BertSelLoss(model, margin=0.2)
            value = loss({"positive": positive_inputs, "negative": negative_inputs})
            value.backward()
    """

    def __init__(self, model: nn.Module, margin: float = 0.2) -> None:
        super().__init__()
        if getattr(model, "num_outputs", 1) != 1:
            raise ValueError("BertSelLoss needs a model with a scalar head")
        self.model = model
        self.margin = float(margin)

    def forward(self, batch: dict[str, Any]) -> torch.Tensor:
        positive = self.model(**batch["positive"]).squeeze(-1)
        negative = self.model(**batch["negative"]).squeeze(-1)
        return bertsel_loss(positive, negative, self.margin)

    def get_config_dict(self) -> dict[str, Any]:
        return {"margin": self.margin}
