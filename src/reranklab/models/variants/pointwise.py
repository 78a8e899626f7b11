"""BERT[PW]: point-wise relevance classification of (query, passage) pairs.

The [CLS] representation goes through a 2-way linear head trained with cross-entropy on
(qid, pid, label) examples; candidates are ranked by ``P(relevant) = softmax(logits)[:, 1]``
(Nogueira & Cho 2019, as used by Mass et al. for non-factoid passage re-ranking), and the run
holds the margin ``l1 - l0`` (the same order: P = sigmoid(l1 - l0), but no saturation at 1.0).

Defaults: none beyond the schema's, which are already the usual BERT fine-tuning settings
(AdamW, learning rate 2e-5, batch 16, 10% linear warm-up, weight decay 0.01, clipping at 1.0,
2 epochs). Override them in ``params.yaml: variants.pointwise``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reranklab.models.registry import VariantSpec, register_variant
from reranklab.models.variants._cross_encoder import CrossEncoderSettings, build_cross_encoder

NAME = "pointwise"


class PointwiseSettings(CrossEncoderSettings):
    """BERT[PW] fixes nothing beyond the shared settings (the usual BERT fine-tuning ones)."""


def build(encoder: str, training: Mapping[str, Any], max_length: int) -> Any:
    """A fresh BERT[PW] on ``encoder`` (2-way head, score = P(relevant))."""
    return build_cross_encoder(
        encoder, training, max_length, variant=NAME, num_outputs=2, score="p_relevant"
    )


def loss(model: Any, training: Mapping[str, Any]) -> Any:
    """Two-class cross-entropy on the [CLS] logits."""
    from reranklab.models.losses.pointwise_ce import PointwiseCrossEntropyLoss

    return PointwiseCrossEntropyLoss(model)


SPEC = register_variant(
    VariantSpec(
        name=NAME,
        example_kind="pointwise",
        description="BERT[PW]: [CLS] -> 2-way linear head, cross-entropy on (q, p, label); score P(relevant)",
        build=build,
        loss=loss,
        settings=PointwiseSettings,
        cross_encoder=True,
    )
)
