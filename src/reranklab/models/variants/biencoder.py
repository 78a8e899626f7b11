"""Bi-encoder: query and passage encoded apart, mean-pooled, ranked by cosine (sentence-transformers).

The encoder is used the way sentence encoders such as the packaged ``all-MiniLM-L6-v2`` were
trained: each text alone (``[CLS] text [SEP]``, the query cut at ``query_max_length``, the
passage at the cell's max length), the token vectors averaged over the attention mask
(``token_pooling: mean``; ``cls`` = the first token's vector), and the run holds the raw cosine of
the two vectors (float64). There is no head, so the encoder ranks as it is (zero-shot:
``fine_tune: false``, the ``biencoder_zeroshot`` variant) or after fine-tuning on the fold's
triplets with in-batch negatives (sentence-transformers' ``MultipleNegativesRankingLoss``: each
query's positive against every positive and hard negative of the batch, logits ``scale · cos``,
in-batch passages known relevant to the query left out).

Defaults: sentence-transformers' fine-tuning settings: AdamW 2e-5, 10% linear warm-up, weight
decay 0.01, scale 20, mean pooling. In-batch negatives grow with ``batch_size``. Override
them in ``params.yaml: variants.biencoder``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field

from reranklab.models.registry import VariantSpec, register_variant
from reranklab.settings.variant import VariantSettings

NAME = "biencoder"
FINE_TUNE = "train the encoder on the fold's triplets (in-batch negatives); false = rank with the pre-trained encoder as it is (zero-shot: the train step saves it untouched)"


class BiEncoderSettings(VariantSettings):
    """A bi-encoder: pooling, query length, whether it is fine-tuned and its softmax scale."""

    fine_tune: bool = Field(True, description=FINE_TUNE)
    token_pooling: Literal["mean", "cls"] = Field(
        "mean",
        description="sentence vector: mean of the token vectors over the attention mask (as sentence-transformers), or the [CLS] vector",
    )
    similarity_scale: float = Field(
        20.0,
        gt=0,
        description="inverse temperature of the in-batch softmax, logits = scale * cos (sentence-transformers: 20)",
    )
    query_max_length: Annotated[
        int | None,
        Field(
            ge=1,
            le=512,
            description="bi-encoder: the query, encoded alone, is cut to this many word pieces; null = the cell's max length",
        ),
    ] = None


def build_bi_encoder(
    encoder: str, training: Mapping[str, Any], max_length: int, *, variant: str
) -> Any:
    """A :class:`~reranklab.models.bi_encoder.BiEncoder` on ``encoder`` for ``variant``.

    A bi-encoder's query is encoded alone: ``query_max_length`` null = the cell's max length.
    """
    from reranklab.models.bi_encoder import BiEncoder

    settings = BiEncoderSettings.from_training(training)
    return BiEncoder.from_encoder(
        encoder,
        variant=variant,
        max_length=max_length,
        query_max_length=settings.query_max_length,
        pooling=settings.token_pooling,
    )


def build(encoder: str, training: Mapping[str, Any], max_length: int) -> Any:
    """A fresh bi-encoder on ``encoder`` (mean pooling, cosine)."""
    return build_bi_encoder(encoder, training, max_length, variant=NAME)


def loss(model: Any, training: Mapping[str, Any]) -> Any:
    """In-batch negatives over the triplets (MultipleNegativesRankingLoss)."""
    from reranklab.models.losses.in_batch_negatives import InBatchNegativesLoss

    return InBatchNegativesLoss(
        model, scale=BiEncoderSettings.from_training(training).similarity_scale
    )


def featurize(*args: Any, **kwargs: Any) -> Any:
    from reranklab.models.bi_encoder import bi_encoder_features

    return bi_encoder_features(*args, **kwargs)


def load(directory: Any, device: Any = None) -> Any:
    from reranklab.models.bi_encoder import load_bi_encoder

    return load_bi_encoder(directory, device=device)


def fine_tunes(training: Mapping[str, Any]) -> bool:
    """Whether the cell trains the encoder (``fine_tune``)."""
    return BiEncoderSettings.from_training(training).fine_tune


SPEC = register_variant(
    VariantSpec(
        name=NAME,
        example_kind="triplet",
        description="Bi-encoder: q and p encoded apart, mean pooling, score cos(q, p); fine-tuned with in-batch negatives (MultipleNegativesRankingLoss)",
        build=build,
        loss=loss,
        featurize=featurize,
        load=load,
        fine_tunes=fine_tunes,
        settings=BiEncoderSettings,
    )
)
