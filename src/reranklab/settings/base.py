"""The building blocks of the typed settings: sections, field flags and shared field types.

A leaf module (pydantic only): the dataset modules, the variant modules and the study model
all build on it, so it imports none of them.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, ClassVar, Literal, TypeVar, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    PositiveInt,
    create_model,
)
from pydantic_core import PydanticCustomError

T = TypeVar("T")


class Section(BaseModel):
    """A block of ``params.yaml``: an unknown key is an error, and so is a value of another type
    (configs are validated with ``strict=True``: ``"3"`` is not the integer 3)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True)
class Flag:
    """A field flag, read by :func:`flagged`: put it in the field's ``Annotated[...]``.

    Args:
        trains_model: False = the setting does not change the trained model: it is left out
            of a train job's settings (changing it re-trains nothing).
        fingerprint: False = a training checkpoint written under another value may be resumed
            (the setting is left out of the checkpoint fingerprint).
        run_option: passed to a job as a command-line option (how it runs, not what it makes),
            never in its ``--spec``: changing it re-runs nothing.
    """

    trains_model: bool = True
    fingerprint: bool = True
    run_option: bool = False


NOT_MODEL = Flag(trains_model=False, fingerprint=False)
RUN_OPTION = Flag(trains_model=False, fingerprint=False, run_option=True)


def flagged(model: type[BaseModel], **wanted: bool) -> tuple[str, ...]:
    """The fields of ``model`` whose :class:`Flag` has every attribute of ``wanted``.

    Example:
        >>> from typing import Annotated
        >>> class S(Section):
        ...     every: Annotated[int, RUN_OPTION] = 1
        ...     size: int = 2
        >>> flagged(S, trains_model=False), flagged(S, trains_model=True)
        (('every',), ('size',))
    """
    out = []
    for name, field in model.model_fields.items():
        flag = next((m for m in field.metadata if isinstance(m, Flag)), Flag())
        if all(getattr(flag, key) == value for key, value in wanted.items()):
            out.append(name)
    return tuple(out)


M = TypeVar("M", bound=BaseModel)


def takes_null(annotation: Any) -> bool:
    """Whether ``annotation`` admits ``None`` (``int | None``), i.e. null is a value of its own.

    Example:
        >>> takes_null(int | None), takes_null(int)
        (True, False)
    """
    return annotation is type(None) or any(takes_null(arg) for arg in get_args(annotation))


@cache
def loose(model: type[M]) -> type[M]:
    """``model`` with its types but without its ranges: what the code reads settings with.

    A config is checked against the whole model (ranges too) before any job runs; the steps
    then read the resolved settings typed (``0`` for a float is ``0.0``, null is null), and a
    value outside a range (a test's tiny ``chunk_length``) is the caller's choice.

    Example:
        >>> class S(Section):
        ...     size: int = Field(16, ge=16)
        >>> loose(S).model_validate({"size": 11}).size, isinstance(loose(S)(), S)
        (11, True)
    """
    fields: dict[str, Any] = {
        name: (
            field.annotation,
            Field(default_factory=field.default_factory)
            if field.default_factory
            else Field(field.default),
        )
        for name, field in model.model_fields.items()
    }
    return create_model(model.__name__, __base__=model, __doc__=model.__doc__, **fields)  # type: ignore[call-overload]


def field_defaults(model: type[BaseModel]) -> dict[str, Any]:
    """``{field: default}`` of a model whose fields all have defaults (deep copies).

    Example:
        >>> class S(Section):
        ...     size: int = 2
        >>> field_defaults(S)
        {'size': 2}
    """
    return {
        name: copy.deepcopy(field.get_default(call_default_factory=True))
        for name, field in model.model_fields.items()
    }


def _distinct(values: Sequence[T]) -> Sequence[T]:
    if len({repr(v) for v in values}) != len(values):
        raise PydanticCustomError(
            "distinct", "expected distinct items, got {got}", {"got": repr(values)}
        )
    return values


def distinct_list(item: Any, min_length: int = 1) -> Any:
    """``list[item]`` with at least ``min_length`` items, all different (``uniqueItems``)."""
    return Annotated[
        list[item],
        Field(min_length=min_length, json_schema_extra={"uniqueItems": True}),
        AfterValidator(_distinct),
    ]


def _positive_or_all(value: Any) -> Any:
    if value == "all" or (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
        return value
    raise PydanticCustomError(
        "positive_or_all", "expected a positive integer or 'all', got {got}", {"got": repr(value)}
    )


# A count that may also be "all" (negatives per positive, training queries of a sample).
PositiveOrAll = Annotated[
    int | str,
    PlainValidator(_positive_or_all, json_schema_input_type=PositiveInt | Literal["all"]),
]


class Keyed(Section):
    """A block keyed by registered names (``protocol``: datasets, ``variants``: variants); an
    unknown key is reported as an unknown ``kind``."""

    kind: ClassVar[str] = "name"


class DatasetOptions(Section):
    """A dataset's own options (``protocol.<dataset>.options``), declared by its module.

    The defaults are the dataset's; ``moved`` maps an option that no longer exists to what
    replaced it (its error message).

    Example:
        >>> class Options(DatasetOptions):
        ...     pool_size: Literal[100, 500] = Field(100, description="candidates per question")
        >>> Options.defaults()
        {'pool_size': 100}
    """

    moved: ClassVar[dict[str, str]] = {}

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """The options as the dataset's protocol declares them (every field at its default)."""
        return field_defaults(cls)


class NoOptions(DatasetOptions):
    """The dataset takes no options."""
