"""BERT[CE]: cross-entropy on the softmax of a (positive, negative) pair of scalar scores."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


def pairwise_softmax_cross_entropy(positive: torch.Tensor, negative: torch.Tensor) -> torch.Tensor:
    """Mean of ``-log ŝ+`` where ``(ŝ+, ŝ-) = softmax(s+, s-)``.

    ``-log ŝ+ = log(1 + e^(s- - s+)) = softplus(s- - s+)``, computed in that form so that it
    stays finite for any score gap.

    Args:
        positive: ``[B]`` scores of the (query, relevant passage) pairs.
        negative: ``[B]`` scores of the (query, non-relevant passage) pairs.

    Example:
        >>> pairwise_softmax_cross_entropy(torch.tensor([0.0]), torch.tensor([0.0]))  # log 2
        tensor(0.6931)
    """
    return F.softplus(negative.float() - positive.float()).mean()


class PairwiseSoftmaxCrossEntropyLoss(nn.Module):
    """Pair-wise loss of BERT[CE] on (query, positive, negative) triplets.

    The model maps each (query, passage) pair to a scalar ``s = BERT(q, p) · v`` (as BERTlets).
    For a triplet the two scores are normalised with a softmax, ``ŝ± = softmax(s+, s-)``, and
    the loss is the cross-entropy of the positive, ``-log ŝ+``, averaged over the batch. Unlike
    the BERTlets hinge it never stops pushing the pair apart. The ranking score is ``s``.

    Args:
        model: a re-ranker with a scalar head (``num_outputs == 1``).

    References:
        Mass et al., BERT[CE] for non-factoid passage re-ranking.

    Inputs:
        +--------------------------------------------------------------------+
        | batch (from ``TripletCollator``)                                   |
        +====================================================================+
        | ``positive``: model inputs of (q, p+); ``negative``: of (q, p-)    |
        +--------------------------------------------------------------------+

    Example:
        Scores ``s+ = [2, 0]``, ``s- = [0, 1]``: the per-triplet losses are
        ``log(1 + e^-2) = 0.1269`` and ``log(1 + e^1) = 1.3133``; the loss is their mean,
        ``0.7201``::

            loss = PairwiseSoftmaxCrossEntropyLoss(model)
            value = loss({"positive": positive_inputs, "negative": negative_inputs})
            value.backward()
    """

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        if getattr(model, "num_outputs", 1) != 1:
            raise ValueError("PairwiseSoftmaxCrossEntropyLoss needs a model with a scalar head")
        self.model = model

    def forward(self, batch: dict[str, Any]) -> torch.Tensor:
        positive = self.model(**batch["positive"]).squeeze(-1)
        negative = self.model(**batch["negative"]).squeeze(-1)
        return pairwise_softmax_cross_entropy(positive, negative)

    def get_config_dict(self) -> dict[str, Any]:
        return {}
