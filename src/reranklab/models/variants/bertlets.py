"""BERTlets: pair-wise training of a scalar scorer on (query, positive, negative) triplets.

Each pair is scored ``s = BERT(q, p) · v`` (a 1-output linear head on [CLS]); a triplet's two
scores are normalised with a softmax and trained with the hinge
``max(0, m - (ŝ+ - ŝ-))`` (Mass et al.). The ranking score is ``s``.

Defaults: ``margin: 0.2`` (the paper's hinge margin); the optimiser settings are the schema's
BERT fine-tuning defaults. Override them in ``params.yaml: variants.bertlets``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reranklab.models.registry import VariantSpec, register_variant
from reranklab.models.variants._cross_encoder import CrossEncoderSettings, build_cross_encoder

NAME = "bertlets"


class BertletsSettings(CrossEncoderSettings):
    """BERTlets' hinge margin (Mass et al.)."""

    margin: float = 0.2


def build(encoder: str, training: Mapping[str, Any], max_length: int) -> Any:
    """A fresh BERTlets scorer on ``encoder`` (scalar head, score = the scalar)."""
    return build_cross_encoder(
        encoder, training, max_length, variant=NAME, num_outputs=1, score="logit"
    )


def loss(model: Any, training: Mapping[str, Any]) -> Any:
    """Softmax hinge on (positive, negative) score pairs with ``training.margin``."""
    from reranklab.models.losses.triplet_softmax_hinge import TripletSoftmaxHingeLoss

    return TripletSoftmaxHingeLoss(model, margin=BertletsSettings.from_training(training).margin)


SPEC = register_variant(
    VariantSpec(
        name=NAME,
        example_kind="triplet",
        description="BERTlets: [CLS] -> scalar, softmax hinge (margin m) on (q, p+, p-) triplets; score the scalar",
        build=build,
        loss=loss,
        settings=BertletsSettings,
        cross_encoder=True,
    )
)
