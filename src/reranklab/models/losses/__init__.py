"""Training losses of the re-ranker variants, one per module.

Each loss is an ``nn.Module`` built from the model it trains (as in sentence-transformers'
cross-encoder losses) whose ``forward(batch)`` takes a collated batch of
:mod:`reranklab.features.batch` and returns a scalar; the arithmetic is a plain function
beside it so it can be checked by hand.
"""

from reranklab.models.losses.bertsel import BertSelLoss, bertsel_loss
from reranklab.models.losses.pairwise_max_margin import PairwiseMaxMarginLoss, pairwise_max_margin
from reranklab.models.losses.pairwise_softmax_ce import (
    PairwiseSoftmaxCrossEntropyLoss,
    pairwise_softmax_cross_entropy,
)
from reranklab.models.losses.pointwise_ce import PointwiseCrossEntropyLoss, pointwise_cross_entropy
from reranklab.models.losses.triplet_softmax_hinge import TripletSoftmaxHingeLoss, softmax_hinge

__all__ = [
    "BertSelLoss",
    "PairwiseMaxMarginLoss",
    "PairwiseSoftmaxCrossEntropyLoss",
    "PointwiseCrossEntropyLoss",
    "TripletSoftmaxHingeLoss",
    "bertsel_loss",
    "pairwise_max_margin",
    "pairwise_softmax_cross_entropy",
    "pointwise_cross_entropy",
    "softmax_hinge",
]
