"""Where a cell's settings come from, lowest priority first (like pydantic-settings'
``settings_customise_sources``): to change the priority, reorder a tuple here.

Training: the model's defaults < the shared ``training`` block < the variant's paper settings <
``variants.<name>``, merged key by key (a nested block such as ``validation`` too, so that
``variants.dmn.validation: {patience: 5}`` keeps the preset's measure); the shared block may
restate every default without undoing a preset. An alias (``variants.<alias>: {base: <variant>,
...}``, a second configuration of a registered variant) adds its own block last, over its base's
layers. Protocol: the dataset's own protocol < the
user's ``protocol.<dataset>``, where a null keeps the dataset's value and ``options`` merge key
by key. The study's own layers: ``params.yaml`` < override files < ``snakemake --config`` values
(:func:`typed_overrides`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import yaml

Source = tuple[str, Mapping[str, Any]]
_RESOLVER = yaml.resolver.Resolver()
_STR_TAG = "tag:yaml.org,2002:str"


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Merge ``override`` into a copy of ``base``: mappings recursively, everything else replaced.

    Example:
        >>> deep_merge({"a": {"b": 1, "c": 2}, "d": 1}, {"a": {"b": 3}, "d": None})
        {'a': {'b': 3, 'c': 2}, 'd': None}
    """
    merged = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def typed_overrides(values: Any) -> Any:
    """``snakemake --config`` values as a YAML file gives them (``128`` an integer, not ``'128'``).

    Snakemake reads a ``--config`` value's structure as YAML but keeps every scalar in it a
    string (``grid={max_length: [128]}`` gives ``['128']``). Each such string is read again as a
    plain YAML scalar: one that YAML reads as a number, boolean or null becomes one, any other
    text stays the string it was. (A quoted number in the value cannot be told apart: Snakemake
    has already dropped the quotes.)

    Args:
        values: the parsed ``--config`` values (mappings, lists, strings, or already typed).

    Returns:
        The same structure, with typed scalars.

    Example:
        >>> typed_overrides({"grid": {"max_length": ["128"]}, "seeds": "null", "study": "a: b", "seed": 7})
        {'grid': {'max_length': [128]}, 'seeds': None, 'study': 'a: b', 'seed': 7}
        >>> typed_overrides({"training": {"learning_rate": "3.0e-5", "length_grouping": "false"}})
        {'training': {'learning_rate': 3e-05, 'length_grouping': False}}
    """
    if isinstance(values, Mapping):
        return {key: typed_overrides(value) for key, value in values.items()}
    if isinstance(values, list):
        return [typed_overrides(value) for value in values]
    # The tag YAML's implicit resolution gives the text as a plain scalar: only a non-string one
    # is read (so "a: b" or "[x" stays text, never a mapping or a parse error).
    if (
        isinstance(values, str)
        and _RESOLVER.resolve(yaml.ScalarNode, values, (True, False)) != _STR_TAG
    ):
        return yaml.safe_load(values)
    return values


ALIAS_BASE = "base"  # the key of a variants.<alias> block that names its registered variant


def alias_base(config: Mapping[str, Any], variant: str) -> str | None:
    """The registered variant that ``variant`` is an alias of, or ``None`` when it is no alias.

    An alias is a block ``variants.<alias>`` with a ``base`` key: a second configuration of a
    registered variant under a name of its own (``bertsel_epoch5: {base: bertsel, epochs: 5}``).

    Example:
        >>> config = {"variants": {"bertsel_epoch5": {"base": "bertsel", "epochs": 5}, "dmn": {}}}
        >>> alias_base(config, "bertsel_epoch5"), alias_base(config, "dmn"), alias_base({}, "dmn")
        ('bertsel', None, None)
    """
    block = (config.get("variants") or {}).get(variant)
    if isinstance(block, Mapping) and isinstance(block.get(ALIAS_BASE), str):
        return str(block[ALIAS_BASE])
    return None


def variant_blocks(config: Mapping[str, Any], variant: str) -> tuple[Source, ...]:
    """The ``variants.<name>`` blocks that set ``variant``'s training, lowest priority first:
    its own, or for an alias its base's and then its own (without ``base``).

    Example:
        >>> config = {"variants": {"dmn": {"episodes": 2}, "dmn_e3": {"base": "dmn", "episodes": 3}}}
        >>> variant_blocks(config, "dmn_e3")
        (('variants.dmn', {'episodes': 2}), ('variants.dmn_e3', {'episodes': 3}))
    """
    blocks = config.get("variants") or {}
    base = alias_base(config, variant)
    own = {k: v for k, v in (blocks.get(variant) or {}).items() if k != ALIAS_BASE}
    if base is None:
        return ((f"variants.{variant}", own),)
    return ((f"variants.{base}", blocks.get(base) or {}), (f"variants.{variant}", own))


def training_sources(
    config: Mapping[str, Any], variant: str, defaults: Mapping[str, Any], paper: Mapping[str, Any]
) -> tuple[Source, ...]:
    """The layers of a variant's training settings, lowest priority first, each named.

    Args:
        config: the study configuration.
        variant: the variant's name, a registered one or an alias (:func:`alias_base`).
        defaults: the model's defaults of the ``training`` block.
        paper: the paper settings of the (base) variant (its settings class's preset).

    Example:
        >>> [name for name, _ in training_sources({}, "monobert", {}, {})]
        ['defaults', 'training', 'monobert paper settings', 'variants.monobert']
        >>> alias = {"variants": {"monobert_large": {"base": "monobert"}}}
        >>> [name for name, _ in training_sources(alias, "monobert_large", {}, {})]
        ['defaults', 'training', 'monobert paper settings', 'variants.monobert', 'variants.monobert_large']
    """
    return (
        ("defaults", defaults),
        ("training", config.get("training") or {}),
        (f"{alias_base(config, variant) or variant} paper settings", paper),
        *variant_blocks(config, variant),
    )


def merge_training(sources: tuple[Source, ...]) -> dict[str, Any]:
    """A variant's training settings: its :func:`training_sources` merged in order.

    The values are those the user wrote (not re-typed), so a job's settings, and with them its
    Snakemake params, are exactly what the config says.

    Example:
        >>> sources = training_sources({"training": {"learning_rate": 1e-5}}, "monobert", {"epochs": 2}, {"learning_rate": 3e-6})
        >>> merge_training(sources)
        {'epochs': 2, 'learning_rate': 3e-06}
    """
    training: dict[str, Any] = {}
    for _, layer in sources:
        training = deep_merge(training, layer)
    # Validation off (no measure): its block is left out, so the cell's settings, and with them
    # every job's params, are those of a study written before model selection existed.
    if not (training.get("validation") or {}).get("measure"):
        training.pop("validation", None)
    return training


def protocol_sources(
    config: Mapping[str, Any], dataset: str, own: Mapping[str, Any]
) -> tuple[Source, ...]:
    """The layers of a dataset's protocol, lowest priority first: its ``own``, then the user's."""
    return (
        (f"{dataset} protocol", own),
        (f"protocol.{dataset}", (config.get("protocol") or {}).get(dataset) or {}),
    )


def merge_protocol(sources: tuple[Source, ...]) -> dict[str, Any]:
    """The first source whole, then the later ones' non-null keys (``options`` key by key).

    Example:
        >>> own = {"depth": None, "folds": 5, "options": {"seed": 1, "size": 2}}
        >>> merge_protocol(protocol_sources({"protocol": {"x": {"folds": None, "options": {"seed": 3}}}}, "x", own))
        {'depth': None, 'folds': 5, 'options': {'seed': 3, 'size': 2}}
    """
    (_, own), *later = sources
    protocol = copy.deepcopy(dict(own))
    for _, layer in later:
        overrides = dict(layer)
        options = overrides.pop("options", None) or {}
        protocol.update({k: copy.deepcopy(v) for k, v in overrides.items() if v is not None})
        protocol["options"] = {**protocol.get("options", {}), **copy.deepcopy(options)}
    return protocol
