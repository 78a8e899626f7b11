"""monoBERT: BERT[PW] with Nogueira & Cho's settings, as a preset of the point-wise variant.

Same model and loss as ``pointwise`` (2-way head on [CLS], two-class cross-entropy, score
P(relevant)); the defaults are the paper's: the query is cut to 64 word pieces
(``query_max_length``) and the passage fills the rest of the cell's max length (the paper uses
512: put 512 in ``grid.max_length``), AdamW with learning rate 3e-6, weight decay 0.01, 10,000
warm-up steps (``warmup_steps``, absolute: it wins over ``warmup_ratio``) then linear decay.

Values written in ``params.yaml: training`` apply to every variant and override these
presets; put monobert-only changes under ``variants.monobert``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reranklab.models.registry import VariantSpec, register_variant
from reranklab.models.variants._cross_encoder import (
    CrossEncoderSettings,
    QueryMaxLength,
    build_cross_encoder,
)

NAME = "monobert"


class MonoBertSettings(CrossEncoderSettings):
    """Nogueira & Cho's settings: query cut to 64 pieces, lr 3e-6, 10k warm-up steps, decay 0.01."""

    query_max_length: QueryMaxLength = 64
    learning_rate: float = 3e-6
    warmup_steps: int | None = 10000
    weight_decay: float = 0.01


def build(encoder: str, training: Mapping[str, Any], max_length: int) -> Any:
    """A fresh monoBERT (2-way head, score P(relevant), query cut to ``query_max_length``)."""
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
        description="monoBERT (Nogueira & Cho): BERT[PW] with query cut to 64 pieces, lr 3e-6, 10k warm-up steps, weight decay 0.01",
        build=build,
        loss=loss,
        settings=MonoBertSettings,
        cross_encoder=True,
    )
)
