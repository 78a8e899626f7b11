"""The study configuration: load, merge, validate, and resolve one grid cell.

``params.yaml`` is the one configuration; override files only change values. The JSON Schema
(``workflow/schemas/params.schema.yaml``) rejects unknown keys and wrong types before any job
runs. Settings are layered, later wins:

1. the schema's defaults;
2. protocols: the dataset's own protocol, then what the user wrote in ``protocol.<dataset>``;
3. training: the user's shared ``training`` block, then the variant's paper settings, then
   what the user wrote in ``variants.<variant>`` (so presets survive a restated shared block).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from reranklab.errors import ConfigError
from reranklab.evaluation.protocol import Scoring

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


@lru_cache(maxsize=4)
def _load_schema(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def load_schema() -> dict[str, Any]:
    return _load_schema(str(schema_path()))


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Merge ``override`` into a copy of ``base``: mappings recursively, everything else replaced."""
    merged = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _format_error(error: jsonschema.ValidationError, source: str) -> str:
    path = ".".join(str(p) for p in error.absolute_path) or "(top level)"
    if error.validator == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        allowed = ", ".join(sorted(error.schema.get("properties", {})))
        where = f"{path}." if error.absolute_path else ""
        keys = ", ".join(f"{where}{k}" for k in extra)
        return f"{source}: unknown key {keys}" + (f" (allowed here: {allowed})" if allowed else "")
    return f"{source}: key {path}: {error.message}"


def validate_config(config: Mapping[str, Any], source: str = "config") -> None:
    """Raise ConfigError naming the first wrong key (and ``source``) if ``config`` breaks the schema."""
    validator = jsonschema.Draft202012Validator(load_schema())
    errors = sorted(validator.iter_errors(dict(config)), key=lambda e: list(e.absolute_path))
    if errors:
        raise ConfigError(_format_error(errors[0], source))
    _validate_names(config, source)


def _validate_names(config: Mapping[str, Any], source: str) -> None:
    from reranklab.data import dataset_names
    from reranklab.models.registry import variant_names

    known_datasets = dataset_names()
    for name in list(config.get("datasets", [])) + list(config.get("protocol", {})):
        if name not in known_datasets:
            raise ConfigError(
                f"{source}: key datasets: unknown dataset {name!r} (known: {', '.join(known_datasets)})"
            )
    known_variants = variant_names()
    grid_variants = config.get("grid", {}).get("variant", [])
    for name in list(grid_variants) + list(config.get("variants", {})):
        if name not in known_variants:
            raise ConfigError(
                f"{source}: key grid.variant: unknown variant {name!r} (known: {', '.join(known_variants)})"
            )


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


def schema_defaults(schema: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The defaults the schema declares, as a nested dict."""
    schema = schema or load_schema()
    out: dict[str, Any] = {}
    for key, prop in schema.get("properties", {}).items():
        if prop.get("type") == "object" and "properties" in prop:
            out[key] = schema_defaults(prop)
        elif "default" in prop:
            out[key] = copy.deepcopy(prop["default"])
    return out


def with_defaults(config: Mapping[str, Any]) -> dict[str, Any]:
    return deep_merge(schema_defaults(), config)


def resolve_protocol(config: Mapping[str, Any], dataset: str) -> dict[str, Any]:
    """The dataset's protocol with the user's non-null overrides applied."""
    from reranklab.data import get_dataset

    protocol = get_dataset(dataset).protocol.as_dict()
    overrides = dict(config.get("protocol", {}).get(dataset) or {})
    options = overrides.pop("options", None) or {}
    protocol.update({k: v for k, v in overrides.items() if v is not None})
    protocol["options"] = {**protocol.get("options", {}), **options}
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

    training = schema_defaults()["training"]
    layers = (
        config.get("training", {}),
        get_variant(variant).defaults,
        config.get("variants", {}).get(variant, {}),
    )
    for layer in layers:
        # Deep: a nested block (``validation``) is merged key by key, so that
        # ``variants.<name>.validation: {patience: 5}`` keeps the preset's measure.
        training = deep_merge(training, layer or {})
    # Validation off (no measure): its block is left out, so the cell's settings, and with them
    # every job's params, are those of a study written before model selection existed.
    if not (training.get("validation") or {}).get("measure"):
        training.pop("validation", None)
    return training


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
    """The folder name of a cell under results/{runs,metrics,cells}/<dataset>/."""
    return variant if max_length is None else f"{variant}-L{int(max_length)}"


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
