"""Bi-encoder, zero-shot: the :mod:`~reranklab.models.variants.biencoder` with ``fine_tune: false``.

The pre-trained encoder ranks as it is (mean pooling, cosine, as sentence-transformers uses
the packaged ``all-MiniLM-L6-v2``): its train step trains nothing and saves the encoder, so a
study can hold the zero-shot and the fine-tuned bi-encoder side by side
(``grid.variant: [biencoder_zeroshot, biencoder]``). Setting ``variants.biencoder_zeroshot.
fine_tune: true`` makes it the fine-tuned one again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from reranklab.models.registry import VariantSpec, register_variant
from reranklab.models.variants import biencoder

NAME = "biencoder_zeroshot"


class BiEncoderZeroShotSettings(biencoder.BiEncoderSettings):
    """The bi-encoder's settings, not fine-tuned by default."""

    fine_tune: bool = Field(False, description=biencoder.FINE_TUNE)


def build(encoder: str, training: Mapping[str, Any], max_length: int) -> Any:
    """The pre-trained bi-encoder on ``encoder`` (mean pooling, cosine)."""
    return biencoder.build_bi_encoder(encoder, training, max_length, variant=NAME)


def fine_tunes(training: Mapping[str, Any]) -> bool:
    return BiEncoderZeroShotSettings.from_training(training).fine_tune


SPEC = register_variant(
    VariantSpec(
        name=NAME,
        example_kind="triplet",
        description="Bi-encoder zero-shot: the pre-trained encoder, q and p encoded apart, mean pooling, score cos(q, p); not trained",
        build=build,
        loss=biencoder.loss,
        featurize=biencoder.featurize,
        load=biencoder.load,
        fine_tunes=fine_tunes,
        settings=BiEncoderZeroShotSettings,
    )
)
