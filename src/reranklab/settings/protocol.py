"""A dataset's evaluation protocol, and ``protocol.<dataset>``: a user's overrides of it.

:class:`Protocol` declares each protocol setting once (type, range, description); a dataset
module gives its values (the papers'). The ``protocol.<dataset>`` block of ``params.yaml`` is
derived from it (:func:`protocol_model`): the same keys, each null by default (null keeps the
dataset's value), ``options`` typed by the dataset's own
:class:`~reranklab.settings.base.DatasetOptions` and ``scoring`` one of its scoring protocols.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import Field, create_model
from pydantic.fields import FieldInfo

from reranklab.settings.base import DatasetOptions, PositiveOrAll, Section, takes_null

Measure = Literal["P@1", "MAP", "MRR", "MRR@10", "nDCG@10"]


class Protocol(Section):
    """A dataset's evaluation protocol (the papers' settings); every key can be overridden.

    Example:
        >>> Protocol(first_stage="pool", depth=None, split="predefined").as_dict()["metrics"]
        ['P@1', 'MAP', 'MRR']
    """

    first_stage: Literal["bm25", "pool"] = Field(
        "bm25",
        description="bm25 = BM25 top-depth over the corpus; pool = the dataset's own candidate lists.",
    )
    depth: int | None = Field(
        100,
        ge=1,
        description="Candidates per query from the first stage (k); null keeps a pool whole.",
    )
    inject_relevant: bool = Field(
        False,
        description="Put the first relevant passage missing from the top-depth at position depth (Mass et al.).",
    )
    split: Literal["cv", "predefined"] = Field(
        "cv",
        description="cv = k-fold cross-validation by query; predefined = the dataset's own split.",
    )
    folds: int = Field(5, ge=2, description="Number of folds for cv.")
    scored: Literal["test", "dev"] = Field(
        "test",
        description="Which held-out queries are re-ranked and scored: test, or dev for choosing settings (the test queries are then left out of the run altogether).",
    )
    negatives_per_positive: PositiveOrAll = Field(
        "all", description='Negatives kept per positive when sampling training examples, or "all".'
    )
    positives: Literal["judged", "candidates"] = Field(
        "judged",
        description="Training positives: judged = every judged relevant passage of a training query; candidates = only those among its first-stage candidates, the passages a re-ranker sees (a query whose candidates hold none is dropped).",
    )
    relevance_threshold: int = Field(
        1,
        ge=1,
        description="Smallest grade that counts as relevant in training (positives, injection); the scoring protocol has its own levels.",
    )
    metrics: tuple[Measure, ...] = Field(
        ("P@1", "MAP", "MRR"),
        description="Headline measures of the dataset, in the order the papers report them.",
    )
    options: dict[str, Any] = Field(
        default_factory=dict,
        description="The dataset's own settings (the defaults of its module's options model).",
    )
    scoring: str | None = Field(
        None,
        description="The dataset's scoring protocol by name (which queries count, relevance levels, measures); null = the official one (`reranklab datasets` lists them).",
    )

    def as_dict(self) -> dict[str, Any]:
        """Every key, as plain data (``metrics`` a list)."""
        out = self.model_dump()
        out["metrics"] = list(self.metrics)
        return out


def _overridable(field: FieldInfo) -> Any:
    # The field's type and checks, or null (which keeps the dataset's value); a user writes
    # lists (YAML) where the protocol keeps tuples.
    annotation = field.annotation
    if get_origin(annotation) is tuple:
        annotation = list[get_args(annotation)[0]]  # type: ignore[misc]
    typed = Annotated[(annotation, *field.metadata)] if field.metadata else annotation
    return typed if takes_null(annotation) else typed | None


def protocol_model(
    dataset: str, options: type[DatasetOptions], scorings: Sequence[str]
) -> type[Section]:
    """The ``protocol.<dataset>`` block of one dataset: :class:`Protocol`'s keys, null by
    default, ``options`` typed by the dataset's options model, ``scoring`` one of its scorings.

    Example:
        >>> from reranklab.settings.base import NoOptions
        >>> model = protocol_model("wikiqa", NoOptions, ["filtered", "with-correct"])
        >>> model.model_fields["options"].default is None, model.model_fields["folds"].default is None
        (True, True)
    """
    fields: dict[str, Any] = {
        name: (_overridable(field), Field(None, description=field.description))
        for name, field in Protocol.model_fields.items()
        if name not in ("options", "scoring")
    }
    described = "; ".join(
        f"{name} ({field.description})" if field.description else name
        for name, field in options.model_fields.items()
    )
    fields["scoring"] = (
        Literal[tuple(scorings)] | None,  # type: ignore[valid-type]
        Field(
            None,
            description=f"The scoring protocol of {dataset} by name (which queries count, relevance levels, measures): {', '.join(scorings)}; null = the official one, {scorings[0]}.",
        ),
    )
    fields["options"] = (
        options | None,
        Field(
            None,
            description=f"{dataset}'s own settings: {described}."
            if described
            else f"{dataset} takes no options.",
        ),
    )
    return create_model(
        f"{dataset}_protocol",
        __base__=Section,
        __doc__=f"Overrides of the evaluation protocol of {dataset}; a null or missing key keeps the dataset's value.",
        **fields,
    )
