"""The ``training`` block: the shared settings plus every registered variant's own.

A variant's own setting (a field of its :class:`~reranklab.settings.variant.VariantSettings`
that is not a shared one) becomes a nullable key of the block, null = the variant's value; its
description is generated from the variants that declare it ("dmn, dmn_lite only - passes of
the episodic memory; null = the variant's default (4)"). A field several variants declare must
accept the same values in each.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Annotated, Any

from pydantic import Field, ValidationError, create_model
from pydantic.fields import FieldInfo

from reranklab.settings.base import takes_null
from reranklab.settings.training import SharedTraining
from reranklab.settings.variant import VariantSettings

Declarations = list[tuple[str, FieldInfo]]
# (variant name, its settings class) of every registered variant, sorted by name (the config
# layer reads the registry: reranklab.config.study_model).
Variants = Sequence[tuple[str, type[VariantSettings]]]


def _check_preset(variant: str, settings: type[VariantSettings]) -> None:
    # The paper's values of shared settings must be values the shared block accepts.
    shared = {k: v for k, v in settings.preset().items() if k in SharedTraining.model_fields}
    try:
        SharedTraining.model_validate(shared, strict=True)
    except ValidationError as exc:
        raise TypeError(
            f"{settings.__name__} (variant {variant}): a preset the training block rejects: {exc}"
        ) from None


def own_fields(variants: Variants) -> dict[str, Declarations]:
    """``{setting: [(variant, field), ...]}`` of the variants' own settings, in declaration order."""
    out: dict[str, Declarations] = {}
    for variant, settings in variants:
        _check_preset(variant, settings)
        for name, field in settings.model_fields.items():
            if name not in SharedTraining.model_fields:
                out.setdefault(name, []).append((variant, field))
    return out


def _show(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _joined(groups: dict[str, list[str]], word: str) -> str:
    return "; ".join(f"{key} {word} {', '.join(variants)}" for key, variants in groups.items())


def describe(name: str, declared: Declarations) -> str:
    """The schema text of a variant setting, from the variants that declare it.

    Example:
        >>> from pydantic import Field
        >>> field = Field(4, ge=1, description="passes of the episodic memory")
        >>> describe("episodes", [("dmn", field), ("dmn_lite", field)])
        "dmn, dmn_lite only - passes of the episodic memory; null = the variant's default (4)."
    """
    texts: dict[str, list[str]] = {}
    defaults: dict[str, list[str]] = {}
    for variant, field in declared:
        texts.setdefault(field.description or name, []).append(variant)
        default = field.get_default(call_default_factory=True)
        if default is not None:
            defaults.setdefault(_show(default), []).append(variant)
    if len(texts) == 1:
        [(text, variants)] = texts.items()
        out = f"{', '.join(variants)} only - {text}"
    else:
        out = "; ".join(f"{', '.join(variants)} - {text}" for text, variants in texts.items())
    if not takes_null(declared[0][1].annotation):
        values = next(iter(defaults)) if len(defaults) == 1 else _joined(defaults, "for")
        return f"{out}; null = the variant's default ({values})."
    return f"{out}. Paper values: {_joined(defaults, 'for')}." if defaults else f"{out}."


def _accepts(field: FieldInfo) -> tuple[Any, list[Any]]:
    annotation = field.annotation
    return (annotation | None if not takes_null(annotation) else annotation), list(field.metadata)


def merged_field(name: str, declared: Declarations) -> tuple[Any, FieldInfo]:
    """``(annotation, field)`` of a variant setting in the ``training`` block (null by default).

    Raises:
        TypeError: two variants declare it with different types or ranges.
    """
    annotation, metadata = _accepts(declared[0][1])
    for variant, field in declared[1:]:
        if _accepts(field) != (annotation, metadata):
            raise TypeError(
                f"setting {name!r}: variant {variant} declares another type or range than {declared[0][0]}"
            )
    typed = Annotated[(annotation, *metadata)] if metadata else annotation  # type: ignore[valid-type]
    return typed, Field(None, description=describe(name, declared))


@lru_cache(maxsize=4)
def training_model(variants: tuple[tuple[str, type[VariantSettings]], ...]) -> type[SharedTraining]:
    """The model of the ``training`` block (and of each ``variants.<name>``) for ``variants``.

    Example:
        >>> from pydantic import Field
        >>> class Dmn(VariantSettings):
        ...     episodes: int = Field(4, ge=1, description="passes of the episodic memory")
        >>> model = training_model((("dmn", Dmn),))
        >>> model.model_fields["episodes"].default is None, "encoder" in model.model_fields
        (True, True)
    """
    fields = {name: merged_field(name, declared) for name, declared in own_fields(variants).items()}
    return create_model(
        "Training",
        __base__=SharedTraining,
        __doc__="Training and inference settings shared by all variants, and the variants' own (null = the variant's value).",
        **fields,  # type: ignore[call-overload]
    )
