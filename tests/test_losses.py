"""The variants' losses against hand-computed values."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from reranklab.models.losses import (
    PointwiseCrossEntropyLoss,
    TripletSoftmaxHingeLoss,
    pointwise_cross_entropy,
    softmax_hinge,
)
from reranklab.models.registry import get_variant
from reranklab.models.reranker import SCORE_FUNCTIONS


class FixedOutputs(nn.Module):
    """A stand-in model whose output row is the first input id(s): scores chosen by the test."""

    def __init__(self, num_outputs: int) -> None:
        super().__init__()
        self.num_outputs = num_outputs

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        return input_ids[:, : self.num_outputs].float()


def test_pointwise_cross_entropy_matches_hand_computation():
    logits = torch.tensor([[2.0, 0.0], [0.0, 1.0], [1.0, -1.0]])
    labels = torch.tensor([1, 1, 0])
    # -log softmax(z)[y]: log(1 + e^2), log(1 + e^-1), log(1 + e^-2)
    expected = (math.log1p(math.exp(2)) + math.log1p(math.exp(-1)) + math.log1p(math.exp(-2))) / 3
    assert pointwise_cross_entropy(logits, labels).item() == pytest.approx(expected, abs=1e-6)


def test_pointwise_loss_module_uses_model_logits():
    loss = PointwiseCrossEntropyLoss(FixedOutputs(2))
    features = {
        "input_ids": torch.tensor([[2, 0, 9], [0, 1, 9]]),
        "attention_mask": torch.ones(2, 3),
    }
    value = loss({"features": features, "labels": torch.tensor([1, 1])})
    assert value.item() == pytest.approx(
        (math.log1p(math.exp(2)) + math.log1p(math.exp(-1))) / 2, abs=1e-6
    )


def test_pointwise_score_is_probability_of_relevant():
    logits = torch.tensor([[2.0, 0.0], [0.0, 0.0], [-8.0, 10.0], [-9.0, 10.0]])
    scores = SCORE_FUNCTIONS["p_relevant"](logits)
    assert scores[0].item() == pytest.approx(1 / (1 + math.e**2), abs=1e-12)
    assert scores[1].item() == 0.5
    # float64 keeps confident pairs apart (float32 rounds both 1 - e^-18 and 1 - e^-19 to 1.0).
    assert torch.softmax(logits[2:], dim=-1)[:, 1].tolist() == [1.0, 1.0]
    assert scores[2].item() < scores[3].item() < 1.0


def test_softmax_hinge_matches_hand_computation():
    positive = torch.tensor([2.0, 0.0, -1.0])
    negative = torch.tensor([0.0, 0.0, 1.0])
    # softmax(s+, s-) difference = tanh((s+ - s-) / 2): tanh(1), 0, tanh(-1)
    per_triplet = [max(0.0, 0.2 - math.tanh(1.0)), 0.2, 0.2 + math.tanh(1.0)]
    assert per_triplet[0] == 0.0
    value = softmax_hinge(positive, negative, margin=0.2)
    assert value.item() == pytest.approx(sum(per_triplet) / 3, abs=1e-6)


def test_softmax_hinge_is_zero_beyond_the_margin_with_no_gradient():
    positive = torch.tensor([3.0, 1.0], requires_grad=True)
    negative = torch.tensor([0.0, 0.0], requires_grad=True)
    # tanh(1.5) = 0.905 and tanh(0.5) = 0.462 both exceed m = 0.3.
    value = softmax_hinge(positive, negative, margin=0.3)
    value.backward()
    assert value.item() == 0.0
    assert positive.grad.abs().sum().item() == 0.0


def test_softmax_hinge_just_inside_the_margin():
    # Scores with tanh((s+ - s-) / 2) = 0.1 leave exactly m - 0.1 of loss.
    gap = 2 * math.atanh(0.1)
    value = softmax_hinge(torch.tensor([gap]), torch.tensor([0.0]), margin=0.25)
    assert value.item() == pytest.approx(0.15, abs=1e-6)


def test_triplet_loss_module_scores_positives_and_negatives_separately():
    loss = TripletSoftmaxHingeLoss(FixedOutputs(1), margin=0.2)
    batch = {
        "positive": {"input_ids": torch.tensor([[2], [0]]), "attention_mask": torch.ones(2, 1)},
        "negative": {"input_ids": torch.tensor([[0], [0]]), "attention_mask": torch.ones(2, 1)},
    }
    assert loss(batch).item() == pytest.approx((0.0 + 0.2) / 2, abs=1e-6)


def test_losses_reject_a_head_of_the_wrong_size():
    with pytest.raises(ValueError, match="2-way"):
        PointwiseCrossEntropyLoss(FixedOutputs(1))
    with pytest.raises(ValueError, match="scalar"):
        TripletSoftmaxHingeLoss(FixedOutputs(2))


def test_variant_loss_factories_take_the_training_margin():
    assert get_variant("bertlets").loss(FixedOutputs(1), {"margin": 0.5}).margin == 0.5
    assert isinstance(get_variant("pointwise").loss(FixedOutputs(2), {}), PointwiseCrossEntropyLoss)
    assert get_variant("bertlets").defaults["margin"] == 0.2
    assert (get_variant("pointwise").example_kind, get_variant("bertlets").example_kind) == (
        "pointwise",
        "triplet",
    )
