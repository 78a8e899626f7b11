"""The study configuration: load, merge, validate, and resolve one grid cell.

``params.yaml`` is the one configuration; override files only change values. The settings model
(:mod:`reranklab.settings`) rejects unknown keys, unknown datasets and variants, wrong types and
wrong dataset options before any job runs, naming the file and the key; the JSON schema
``workflow/schemas/params.schema.yaml`` is generated from the same model. Settings are layered,
later wins (:mod:`reranklab.settings.sources`):

1. the model's defaults;
2. protocols: the dataset's own protocol, then what the user wrote in ``protocol.<dataset>``;
3. training: the user's shared ``training`` block, then the variant's paper settings, then
   what the user wrote in ``variants.<variant>`` (so presets survive a restated shared block).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from reranklab.errors import ConfigError
from reranklab.evaluation.protocol import Scoring
from reranklab.settings.base import Section
from reranklab.settings.cell import Cell
from reranklab.settings.model import DatasetEntry, study_defaults, validate_study
from reranklab.settings.model import study_model as _study_model
from reranklab.settings.sources import (
    deep_merge,
    merge_protocol,
    merge_training,
    protocol_sources,
    training_sources,
)

SCHEMA_RELATIVE = Path("workflow/schemas/params.schema.yaml")


def schema_path() -> Path:
    """Where the schema is: $RERANKLAB_SCHEMA, ./workflow/schemas, or the source checkout's."""
    candidates = [
        os.environ.get("RERANKLAB_SCHEMA"),
        Path.cwd() / SCHEMA_RELATIVE,
        Path(__file__).resolve().parents[2] / SCHEMA_RELATIVE,
    ]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    raise ConfigError(f"cannot find the parameter schema {SCHEMA_RELATIVE} (set RERANKLAB_SCHEMA)")


@lru_cache(maxsize=1)
def study_model() -> type[Section]:
    """The settings model of ``params.yaml`` for the registered datasets and variants."""
    from reranklab.data import dataset_names, get_dataset
    from reranklab.models.registry import get_variant, variant_names

    datasets = tuple(
        DatasetEntry(name, dataset.options_model, tuple(dataset.scoring_names()), dataset.label)
        for name in dataset_names()
        for dataset in (get_dataset(name),)
    )
    return _study_model(
        datasets, tuple((name, get_variant(name).settings) for name in variant_names())
    )


def _labels() -> dict[str, str]:
    from reranklab.data import dataset_names, get_dataset

    return {name: get_dataset(name).label for name in dataset_names()}


def validate_config(config: Mapping[str, Any], source: str = "config") -> None:
    """Raise ConfigError naming ``source`` and the first wrong key if ``config`` breaks the model.

    Example:
        >>> validate_config({"variants": {"nosuch": {}}}, "params.yaml")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        reranklab.errors.ConfigError: params.yaml: unknown variant 'nosuch' in variants (key variants.nosuch; known: ...)
    """
    validate_study(study_model(), config, source, _labels())


def load_params(paths: Iterable[str | os.PathLike[str]]) -> dict[str, Any]:
    """Read ``params.yaml`` and override files, validating each file and then the merge."""
    merged: dict[str, Any] = {}
    names = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as handle:
                data = yaml.safe_load(handle) or {}
        except FileNotFoundError:
            raise ConfigError(f"config file {path} does not exist") from None
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: invalid YAML: {exc}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a mapping at the top level")
        validate_config(data, source=str(path))
        merged = deep_merge(merged, data)
        names.append(str(path))
    validate_config(merged, source=" + ".join(names) or "config")
    return merged


def schema_defaults() -> dict[str, Any]:
    """Every key's default, as a nested dict (from the settings model, as the schema shows them)."""
    return study_defaults(study_model())


def with_defaults(config: Mapping[str, Any]) -> dict[str, Any]:
    return deep_merge(schema_defaults(), config)


def resolve_protocol(config: Mapping[str, Any], dataset: str) -> dict[str, Any]:
    """The dataset's protocol with the user's non-null overrides applied (options key by key)."""
    from reranklab.data import get_dataset

    protocol = merge_protocol(
        protocol_sources(config, dataset, get_dataset(dataset).protocol.as_dict())
    )
    if protocol["first_stage"] == "bm25" and not protocol.get("depth"):
        raise ConfigError(f"protocol.{dataset}.depth: the bm25 first stage needs a depth (k)")
    return protocol


def resolve_scoring(config: Mapping[str, Any], dataset: str) -> Scoring:
    """The scoring protocol of ``dataset`` chosen in ``protocol.<dataset>.scoring`` (default: official).

    Example:
        >>> resolve_scoring({"protocol": {"wikiqa": {"scoring": "with-correct"}}}, "wikiqa").queries
        'relevant'
    """
    from reranklab.data import get_dataset

    protocol = resolve_protocol(config, dataset)
    return get_dataset(dataset).scoring(
        protocol.get("scoring"), relevance=int(protocol["relevance_threshold"])
    )


def resolve_training(config: Mapping[str, Any], variant: str) -> dict[str, Any]:
    """Training settings of ``variant``: schema < ``training`` < the variant's paper settings < ``variants.<name>``.

    The shared ``training`` block sets what every variant uses unless its paper fixes a value
    (e.g. monobert's learning rate 3e-6 and 10k warm-up steps); a paper setting is changed,
    per variant, under ``variants.<name>``, which always wins. So params.yaml may restate the
    shared defaults without undoing any preset.

    Example:
        >>> resolve_training({"training": {"learning_rate": 1e-5}}, "monobert")["learning_rate"]
        3e-06
        >>> resolve_training({"training": {"learning_rate": 1e-5}}, "pointwise")["learning_rate"]
        1e-05
        >>> resolve_training({"variants": {"monobert": {"learning_rate": 1e-5}}}, "monobert")["learning_rate"]
        1e-05
    """
    from reranklab.models.registry import get_variant

    # The layers, in order, are reranklab.settings.sources.training_sources: a nested block
    # (``validation``) is merged key by key, so ``variants.<name>.validation: {patience: 5}``
    # keeps the preset's measure.
    defaults = schema_defaults()["training"]
    return merge_training(
        training_sources(config, variant, defaults, get_variant(variant).defaults)
    )


def n_folds(config: Mapping[str, Any], dataset: str) -> int:
    protocol = resolve_protocol(config, dataset)
    return int(protocol["folds"]) if protocol["split"] == "cv" else 1


def resolve_cell(
    config: Mapping[str, Any], dataset: str, variant: str, max_length: int
) -> dict[str, Any]:
    """Every setting that determines one cell of the grid (logged to MLflow as the run's params)."""
    full = with_defaults(config)
    return {
        "study": full["study"],
        "seed": full["seed"],
        "dataset": dataset,
        "variant": variant,
        "max_length": int(max_length),
        "protocol": resolve_protocol(full, dataset),
        "retrieval": full["retrieval"],
        "training": resolve_training(full, variant),
    }


def first_stage_cell(config: Mapping[str, Any], dataset: str) -> dict[str, Any]:
    """The settings of a dataset's first-stage row (BM25 or the pool, not re-ranked)."""
    full = with_defaults(config)
    protocol = resolve_protocol(full, dataset)
    return {
        "study": full["study"],
        "seed": full["seed"],
        "dataset": dataset,
        "variant": protocol["first_stage"],
        "max_length": None,
        "protocol": protocol,
        "retrieval": full["retrieval"],
    }


def cell_id(variant: str, max_length: int | None) -> str:
    """The folder name of a cell under results/{runs,metrics,cells}/<dataset>/ (:class:`Cell`)."""
    return Cell("", variant, max_length).name


def grid(config: Mapping[str, Any]) -> list[tuple[str, str, int]]:
    """All (dataset, variant, max_length) cells of the study."""
    full = with_defaults(config)
    return [
        (dataset, variant, int(max_length))
        for dataset in full["datasets"]
        for variant in full["grid"]["variant"]
        for max_length in full["grid"]["max_length"]
    ]


def flatten(params: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}`` (lists kept as their string form), for MLflow params."""
    flat: dict[str, Any] = {}
    for key, value in params.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten(value, prefix=f"{name}."))
        else:
            flat[name] = value
    return flat
