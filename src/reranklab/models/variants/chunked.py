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
from typing import Any

from reranklab.models.registry import VariantSpec, register_variant
from reranklab.models.variants._cross_encoder import token_inputs

NAME = "chunked"
DEFAULTS = {"chunks": 2, "chunk_length": 128, "pooling": "attention", "attention_size": 192}


def build(encoder: str, training: Mapping[str, Any], max_length: int) -> Any:
    """A fresh chunked scorer (scalar head on the pooled chunk vectors)."""
    from reranklab.models.chunked import ChunkedReranker
    from reranklab.models.encoder import load_encoder

    chunks = int(training.get("chunks") or DEFAULTS["chunks"])
    chunk_length = int(training.get("chunk_length") or max_length)
    model, tokenizer = load_encoder(encoder)
    return ChunkedReranker(
        model,
        tokenizer,
        variant=NAME,
        num_outputs=1,
        score="logit",
        max_length=chunk_length,
        encoder_name=encoder,
        inputs={**token_inputs(training), "chunks": chunks, "chunk_length": chunk_length},
        pooling=str(training.get("pooling") or DEFAULTS["pooling"]),
        attention_size=int(training.get("attention_size") or DEFAULTS["attention_size"]),
    )


def loss(model: Any, training: Mapping[str, Any]) -> Any:
    """The BERTlets softmax hinge with ``training.margin``."""
    from reranklab.models.losses.triplet_softmax_hinge import TripletSoftmaxHingeLoss

    return TripletSoftmaxHingeLoss(model, margin=float(training.get("margin", 0.2)))


def featurize(model: Any, id_pairs: Any, queries: Mapping[str, str], corpus: Mapping[str, str], *, progress: bool = True) -> Any:
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
        defaults=dict(DEFAULTS),
        featurize=featurize,
        load=load,
    )
)
