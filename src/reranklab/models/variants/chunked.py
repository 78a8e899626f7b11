"""Chunked BERTlets (Mass et al. §4.3.2): a passage scored from the pooled [CLS] of its chunks.

The passage is split into ``chunks`` (2 or 3 in the paper) parts of nearly equal numbers of
words; each (query, chunk) is encoded at ``chunk_length`` word pieces (128 in the paper); the
chunks' [CLS] vectors are combined by additive attention (``attention_size`` 192, Yang et al.
2016) or max-pooling (``pooling``) and scored with ``v``; training is the BERTlets softmax hinge
on (q, p+, p-) triplets (``margin``). See :mod:`reranklab.models.chunked`.

Defaults: ``chunks: 2``, ``chunk_length: 128``, ``pooling: attention``, ``attention_size: 192``.
``chunk_length`` replaces the cell's max length as the length of each encoded sequence (set
``variants.chunked.chunk_length: null`` to use the grid's ``max_length`` instead).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field

from reranklab.models.registry import VariantSpec, register_variant
from reranklab.models.variants._cross_encoder import (
    CrossEncoderSettings,
    init_pooler,
    token_inputs,
)
from reranklab.settings.training import training_view

NAME = "chunked"


class ChunkedSettings(CrossEncoderSettings):
    """How Mass et al. chunk a passage (§4.3.2)."""

    chunks: int = Field(
        2,
        ge=2,
        le=8,
        description="equal parts (by words) the passage is split into, each encoded with the query (Mass et al. use 2 or 3)",
    )
    chunk_length: int | None = Field(
        128,
        ge=16,
        le=512,
        description="word pieces of each (query, chunk) sequence (Mass et al. 128); null = the cell's max_length",
    )
    pooling: Literal["attention", "max"] = Field(
        "attention",
        description="how the chunks' [CLS] vectors are combined, additive attention (Yang et al. 2016) or max-pooling",
    )
    attention_size: int = Field(
        192, ge=1, description="size of the additive attention's hidden layer (Mass et al. 192)"
    )


def build(encoder: str, training: Mapping[str, Any], max_length: int) -> Any:
    """A fresh chunked scorer (scalar head on the pooled chunk vectors)."""
    from reranklab.models.chunked import ChunkedReranker
    from reranklab.models.encoder import load_encoder

    settings = ChunkedSettings.from_training(training)
    chunk_length = max_length if settings.chunk_length is None else settings.chunk_length
    model, tokenizer = load_encoder(encoder)
    chunked = ChunkedReranker(
        model,
        tokenizer,
        variant=NAME,
        num_outputs=1,
        score="logit",
        max_length=chunk_length,
        encoder_name=encoder,
        inputs={**token_inputs(training), "chunks": settings.chunks, "chunk_length": chunk_length},
        pooling=settings.pooling,
        attention_size=settings.attention_size,
    )
    return init_pooler(chunked, training)


def loss(model: Any, training: Mapping[str, Any]) -> Any:
    """The BERTlets softmax hinge with ``training.margin``."""
    from reranklab.models.losses.triplet_softmax_hinge import TripletSoftmaxHingeLoss

    return TripletSoftmaxHingeLoss(model, margin=training_view(training).margin)


def featurize(
    model: Any,
    id_pairs: Any,
    queries: Mapping[str, str],
    corpus: Mapping[str, str],
    *,
    progress: bool = True,
) -> Any:
    """``chunks`` (query, chunk) sequences per pair (:func:`reranklab.models.chunked.chunk_features`)."""
    from reranklab.models.chunked import chunk_features

    return chunk_features(model, id_pairs, queries, corpus, progress=progress)


def load(directory: Any, device: Any = None) -> Any:
    """Restore a saved chunked scorer (:func:`reranklab.models.chunked.load_chunked`)."""
    from reranklab.models.chunked import load_chunked

    return load_chunked(directory, device=device)


SPEC = register_variant(
    VariantSpec(
        name=NAME,
        example_kind="triplet",
        description="chunked BERTlets: passage split into 2-3 chunks, (q, chunk) [CLS] vectors pooled by attention or max, softmax hinge",
        build=build,
        loss=loss,
        settings=ChunkedSettings,
        cross_encoder=True,
        featurize=featurize,
        load=load,
    )
)
