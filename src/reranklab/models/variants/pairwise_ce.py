"""BERT[CE]: the BERTlets scorer trained with a pair-wise softmax cross-entropy (Mass et al.).

Each pair is scored ``s = BERT(q, p) · v`` (a 1-output linear head on [CLS]) as in BERTlets;
a triplet's two scores are normalised with a softmax, ``ŝ± = softmax(s+, s-)``, and the loss is
``-log ŝ+``. The ranking score is ``s``.

Defaults: the schema's BERT fine-tuning settings. Override them in
``params.yaml: variants.pairwise_ce``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reranklab.models.registry import VariantSpec, register_variant
from reranklab.models.variants._cross_encoder import CrossEncoderSettings, build_cross_encoder

NAME = "pairwise_ce"


class PairwiseCeSettings(CrossEncoderSettings):
    """BERT[CE] fixes nothing beyond the shared settings."""


def build(encoder: str, training: Mapping[str, Any], max_length: int) -> Any:
    """A fresh BERT[CE] scorer on ``encoder`` (scalar head, score = the scalar)."""
    return build_cross_encoder(
        encoder, training, max_length, variant=NAME, num_outputs=1, score="logit"
    )


def loss(model: Any, training: Mapping[str, Any]) -> Any:
    """``-log softmax(s+, s-)[+]`` on (positive, negative) score pairs."""
    from reranklab.models.losses.pairwise_softmax_ce import PairwiseSoftmaxCrossEntropyLoss

    return PairwiseSoftmaxCrossEntropyLoss(model)


SPEC = register_variant(
    VariantSpec(
        name=NAME,
        example_kind="triplet",
        description="BERT[CE]: [CLS] -> scalar, -log softmax(s+, s-)[+] on (q, p+, p-) triplets; score the scalar",
        build=build,
        loss=loss,
        settings=PairwiseCeSettings,
        cross_encoder=True,
    )
)
