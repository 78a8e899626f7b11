"""Pydantic validation errors as :class:`~reranklab.errors.ConfigError`: the key the user wrote.

One wording for every settings error, whether ``validate-config`` finds it in ``params.yaml`` or a
dataset finds it in the options it was given: ``<file>: key <dotted key>: <what is wrong>``, an
unknown key with what is allowed there, an unknown dataset or variant with the known ones.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from reranklab.errors import ConfigError
from reranklab.settings.base import DatasetOptions, Keyed

Loc = tuple[str | int, ...]


def _choices(ctx: Mapping[str, Any]) -> str:
    # pydantic words a Literal's values as "'a', 'b' or 'c'"; shown as a list, as written in YAML.
    text = str(ctx.get("expected", ""))
    try:
        return repr(ast.literal_eval(f"[{text.replace(' or ', ', ')}]"))
    except (ValueError, SyntaxError):
        return text


_EXPECTED = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
}


def _range(field: FieldInfo | None) -> str:
    # " >= 0", " >= 16 and <= 512": the bounds of a field, said with its expected type.
    words = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}
    bounds = [
        f"{words[name]} {getattr(item, name)}"
        for item in (field.metadata if field is not None else [])
        for name in words
        if getattr(item, name, None) is not None
    ]
    return f" {' and '.join(bounds)}" if bounds else ""


def describe(error: Mapping[str, Any], field: FieldInfo | None = None) -> str:
    """What is wrong with one value, in the words of the JSON Schema validators.

    Args:
        error: one of pydantic's ``ValidationError.errors()``.
        field: the field the value is for (its bounds are named with a wrong type).

    Example:
        >>> describe({"type": "less_than_equal", "input": 1024, "ctx": {"le": 512}, "msg": ""})
        '1024 is greater than the maximum of 512'
        >>> describe({"type": "literal_error", "input": 1000, "ctx": {"expected": "100 or 500"}, "msg": ""})
        'expected one of [100, 500], got 1000'
    """
    kind, value, ctx = error["type"], error.get("input"), error.get("ctx") or {}
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}{_range(field)}, got {value!r}"
    bounds = {
        "greater_than_equal": ("less than the minimum of", "ge"),
        "greater_than": ("less than or equal to the minimum of", "gt"),
        "less_than_equal": ("greater than the maximum of", "le"),
        "less_than": ("greater than or equal to the maximum of", "lt"),
    }
    if kind in bounds:
        words, key = bounds[kind]
        return f"{value!r} is {words} {ctx[key]}"
    if kind == "literal_error":
        return f"expected one of {_choices(ctx)}, got {value!r}"
    if kind == "missing":
        return "missing (a required key)"
    if kind == "too_short":
        return f"expected at least {ctx.get('min_length')} item(s), got {value!r}"
    if kind == "string_pattern_mismatch":
        return f"{value!r} does not match {ctx.get('pattern')!r}"
    message = str(error.get("msg", kind)).removeprefix("Value error, ")
    return message if error.get("ctx") else f"{message}, got {value!r}"


def dotted(loc: Loc) -> str:
    """``("grid", "max_length", 0)`` -> ``"grid.max_length.0"``."""
    return ".".join(str(part) for part in loc) or "(top level)"


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if get_origin(annotation) is Annotated:
        return _model_in(get_args(annotation)[0])
    for arg in get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _extra_model(model: type[BaseModel]) -> type[BaseModel] | None:
    # A keyed block whose other keys are typed (the aliases of ``variants``).
    return getattr(model, "alias_model", None) if issubclass(model, Keyed) else None


def model_at(model: type[BaseModel] | None, loc: Loc) -> type[BaseModel] | None:
    """The model of the block at ``loc`` inside ``model`` (None where there is none)."""
    for part in loc:
        if model is None:
            return None
        if isinstance(part, int):  # an item of a list of blocks (deviations.0): the item's model
            continue
        fields = {f.alias or name: f for name, f in model.model_fields.items()}
        field = fields.get(str(part))
        model = _model_in(field.annotation) if field is not None else _extra_model(model)
    return model


def _alias_error(
    model: type[BaseModel], error: Mapping[str, Any], where: Loc, labels: Mapping[str, str]
) -> str | None:
    """The message of a wrong alias block (``variants.<name>``), or None for another error:
    a name that is neither a registered variant nor an alias (no ``base``), or an alias that
    takes a registered variant's name (a ``base`` in its block)."""
    loc: Loc = tuple(error["loc"])
    if len(loc) < 2 or loc[-1] != "base":
        return None
    keyed = model_at(model, loc[:-2])
    if keyed is None or _extra_model(keyed) is None:
        return None
    name = str(loc[-2])
    block = (*where, *loc[:-2])
    if error["type"] == "missing":
        return (
            f"{_unknown(keyed, block, [name], labels).removesuffix(')')};"
            f" or define an alias: {dotted((*block, name))}: {{base: <registered variant>, ...}})"
        )
    if error["type"] == "extra_forbidden":
        return (
            f"{dotted((*block, name))}: {name!r} is a registered variant: an alias (a block with"
            f" base: {error.get('input')!r}) needs a name of its own (key {dotted((*block, *loc[-2:]))})"
        )
    return None


def field_at(model: type[BaseModel] | None, loc: Loc) -> FieldInfo | None:
    """The field a value at ``loc`` is for (None for a list item or where there is none)."""
    parent = model_at(model, loc[:-1]) if loc else None
    fields = {f.alias or name: f for name, f in (parent.model_fields.items() if parent else [])}
    return fields.get(str(loc[-1])) if loc and not isinstance(loc[-1], int) else None


def _keys(model: type[BaseModel] | None) -> list[str]:
    return [f.alias or name for name, f in (model.model_fields.items() if model else [])]


def _unknown(
    parent: type[BaseModel] | None, where: Loc, extra: Sequence[str], labels: Mapping[str, str]
) -> str:
    first = dotted((*where, extra[0]))
    if parent is not None and issubclass(parent, Keyed):
        known = ", ".join(_keys(parent))
        return (
            f"unknown {parent.kind} {extra[0]!r} in {dotted(where)} (key {first}; known: {known})"
        )
    if parent is not None and issubclass(parent, DatasetOptions):
        moved = [key for key in extra if key in parent.moved]
        if moved:
            return f"{dotted((*where, moved[0]))}: {parent.moved[moved[0]]}"
        dataset = str(where[-2]) if len(where) >= 2 else ""
        label = labels.get(dataset, dataset)
        if not parent.model_fields:
            return f"{dotted(where)}: {label} takes no options, got {sorted(extra)} (key {first})"
        known_options = sorted(_keys(parent))
        return f"{dotted(where)}: unknown option(s) {sorted(extra)}; {label} takes {known_options} (key {first})"
    allowed = ", ".join(_keys(parent))
    keys = ", ".join(dotted((*where, key)) for key in extra)
    return f"unknown key {keys}" + (f" (allowed here: {allowed})" if allowed else "")


def config_error(
    exc: ValidationError,
    model: type[BaseModel],
    *,
    source: str | None = None,
    where: Loc = (),
    labels: Mapping[str, str] | None = None,
) -> ConfigError:
    """The first error of ``exc`` as a ConfigError naming the file and the key.

    Args:
        exc: what ``model.model_validate`` raised.
        model: the validated model (to list the keys allowed where an unknown one was found).
        source: the file(s), e.g. ``params.yaml + config/quickstart.yaml``; None = no file.
        where: the key of the validated block in the study, e.g. ``("protocol", "nfl6", "options")``.
        labels: dataset name -> how the messages call it (``nfL6``), for "takes no options".

    Example:
        >>> from reranklab.settings.base import Section
        >>> class Grid(Section):
        ...     max_length: int = 256
        >>> try:
        ...     Grid.model_validate({"max_len": 3})
        ... except ValidationError as exc:
        ...     print(config_error(exc, Grid, source="params.yaml", where=("grid",)))
        params.yaml: unknown key grid.max_len (allowed here: max_length)
    """
    errors = exc.errors()
    first = errors[0]
    loc: Loc = tuple(first["loc"])
    # A wrong alias block first (it may have other errors, e.g. its missing base after a key).
    alias = next(
        (
            text
            for error in errors
            if loc[: len(error["loc"]) - 1] == tuple(error["loc"])[:-1]
            and (text := _alias_error(model, error, where, labels or {})) is not None
        ),
        None,
    )
    if alias is not None:
        text = alias
    elif first["type"] == "extra_forbidden":
        parent = loc[:-1]
        extra = [
            str(e["loc"][-1])
            for e in errors
            if e["type"] == "extra_forbidden" and tuple(e["loc"][:-1]) == parent
        ]
        text = _unknown(model_at(model, parent), (*where, *parent), extra, labels or {})
    elif first["type"] == "unknown_name":
        ctx = first.get("ctx") or {}
        full = (*where, *loc)
        text = f"unknown {ctx['kind']} {first['input']!r} in {dotted(full[:-1])} (key {dotted(full)}; known: {ctx['known']})"
    else:
        text = f"{'key ' if source else ''}{dotted((*where, *loc))}: {describe(first, field_at(model, loc))}"
    return ConfigError(f"{source}: {text}" if source else text)
