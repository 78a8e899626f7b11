"""The study configuration: load, merge, validate, and resolve one grid cell.

``params.yaml`` is the one configuration; override files only change values. The settings model
(:mod:`reranklab.settings`) rejects unknown keys, unknown datasets and variants, wrong types and
wrong dataset options before any job runs, naming the file (or the ``snakemake --config`` value)
and the key; the JSON schema shipped in the package (:data:`reranklab.resources.SCHEMA`) is
generated from the same model. Settings are layered, later wins (:mod:`reranklab.settings.sources`):

1. the model's defaults;
2. protocols: the dataset's own protocol, then what the user wrote in ``protocol.<dataset>``;
3. training: the user's shared ``training`` block, then the variant's paper settings, then
   what the user wrote in ``variants.<variant>`` (so presets survive a restated shared block).

A name in ``grid.variant`` is a registered variant or an alias, a second configuration of one
(``variants: {bertsel_epoch5: {base: bertsel, epochs: 5}}``); :func:`resolve_variant` is the one
place that maps a name to the registered variant that builds, trains and loads it and to its
resolved settings. Everything else (cell names, rule wildcards, results folders, MLflow, the
summary) uses the name as it is.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from reranklab.errors import ConfigError, yaml_error
from reranklab.evaluation.protocol import Scoring
from reranklab.resources import SCHEMA
from reranklab.settings.base import Section
from reranklab.settings.cell import Cell
from reranklab.settings.job import ModelSpec
from reranklab.settings.model import DatasetEntry, aliases, study_defaults, validate_study
from reranklab.settings.model import study_model as _study_model
from reranklab.settings.sources import (
    ALIAS_BASE,
    alias_base,
    deep_merge,
    merge_protocol,
    merge_training,
    protocol_sources,
    training_sources,
    typed_overrides,
    variant_blocks,
)
from reranklab.settings.training import NOT_MODEL_KEYS, RUN_OPTION_KEYS
from reranklab.training.validation import DEFAULTS as VALIDATION_DEFAULTS
from reranklab.training.validation import KEY as VALIDATION_KEY
from reranklab.training.validation import (
    ValidationSettings,
    check_measure,
    validation_settings,
)

if TYPE_CHECKING:
    from reranklab.models.registry import VariantSpec

# How error messages name the values given on Snakemake's command line (``--config key=value``).
COMMAND_LINE = "--config (command line)"


def schema_path() -> Path:
    """The JSON schema of ``params.yaml``: $RERANKLAB_SCHEMA, else the one shipped in the package.

    Raises:
        ConfigError: $RERANKLAB_SCHEMA names no file.

    Example:
        >>> schema_path().relative_to(SCHEMA.parents[2]).as_posix()
        'workflow/schemas/params.schema.yaml'
    """
    override = os.environ.get("RERANKLAB_SCHEMA")
    if override and not Path(override).is_file():
        raise ConfigError(f"RERANKLAB_SCHEMA={override}: no such file")
    return Path(override) if override else SCHEMA


@lru_cache(maxsize=8)
def study_model(extra: tuple[str, ...] = ()) -> type[Section]:
    """The settings model of ``params.yaml`` for the registered datasets and variants, plus
    the ``extra`` datasets made on demand that a config names (``irds:<id>``)."""
    from reranklab.data import dataset_names, get_dataset
    from reranklab.models.registry import get_variant, variant_names

    datasets = tuple(
        DatasetEntry(name, dataset.options_model, tuple(dataset.scoring_names()), dataset.label)
        for name in (*dataset_names(), *extra)
        for dataset in (get_dataset(name),)
    )
    return _study_model(
        datasets, tuple((name, get_variant(name).settings) for name in variant_names())
    )


def _labels(extra: tuple[str, ...] = ()) -> dict[str, str]:
    from reranklab.data import dataset_names, get_dataset

    return {name: get_dataset(name).label for name in (*dataset_names(), *extra)}


def _on_demand(config: Mapping[str, Any], source: str) -> tuple[str, ...]:
    """The datasets made on demand that ``config`` names: ``irds:<id>`` (in ``datasets`` or
    ``protocol``), and the collections of one's own it defines under ``local`` (registered
    here) or names that a file merged before it defined."""
    from reranklab.data import get_dataset
    from reranklab.data.registry import local_names, on_demand_names, register_local

    datasets = config.get("datasets")
    protocol = config.get("protocol")
    local = config.get("local")
    named = [
        *(datasets if isinstance(datasets, list) else ()),
        *(protocol if isinstance(protocol, Mapping) else ()),
    ]
    extra = on_demand_names(named)
    try:
        for name in extra:
            get_dataset(name)
        for name, entry in (local if isinstance(local, Mapping) else {}).items():
            register_local(str(name), entry)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    defined = [str(n) for n in (local if isinstance(local, Mapping) else ())]
    known = set(local_names())
    return extra + tuple(
        dict.fromkeys([*defined, *(n for n in named if isinstance(n, str) and n in known)])
    )


def validate_config(
    config: Mapping[str, Any], source: str = "config", complete: bool = True
) -> None:
    """Raise ConfigError naming ``source`` and the first wrong key if ``config`` breaks the model.

    Args:
        config: the study's config, or (``complete=False``) one of the files merged into it.
        source: how messages name it.
        complete: ``config`` is the whole study: every name in ``grid.variant`` must be a
            registered variant or an alias it defines (a single file may name an alias that
            another file defines).

    Example:
        >>> validate_config({"variants": {"nosuch": {}}}, "params.yaml")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        reranklab.errors.ConfigError: params.yaml: unknown variant 'nosuch' in variants (key variants.nosuch; known: ...)
    """
    extra = _on_demand(config, source)
    validate_study(study_model(extra), config, source, _labels(extra), complete=complete)


def parse_config_yaml(path: str | os.PathLike[str], name: str | None = None) -> Any:
    """A config file's YAML, parsed and not yet checked: each way it can fail is one line.

    Args:
        path: the file.
        name: how messages name it (default: ``path``).

    Raises:
        ConfigError: the file is missing, is not UTF-8 text, or is not YAML
            (``<name>:<line>:<column>: invalid YAML: ...``).
    """
    name = name or str(path)
    try:
        with open(path, encoding="utf-8") as handle:
            return yaml.safe_load(handle)
    except FileNotFoundError:
        raise ConfigError(f"config file {name} does not exist") from None
    except yaml.YAMLError as exc:
        raise ConfigError(str(yaml_error(name, exc))) from None
    except UnicodeDecodeError as exc:  # a binary file, or text in another encoding
        raise ConfigError(
            f"{name}: not a UTF-8 text file (byte {exc.object[exc.start]:#04x}: {exc.reason});"
            " a YAML file was expected"
        ) from None


def read_config_file(
    path: str | os.PathLike[str],
    name: str | None = None,
    earlier: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One config file's mapping, checked alone (an error names the file and the key); the
    names of its ``grid.variant`` are checked once merged (:func:`validate_config`).

    Args:
        path: the file.
        name: how messages name it (default: ``path``).
        earlier: the files before it, merged: a variant block of this file that refines an
            alias they define (``variants.<alias>`` without ``base``) is checked as that alias.

    Raises:
        ConfigError: the file is missing, is not YAML, is not a mapping, or breaks the model.
    """
    name = name or str(path)
    data = parse_config_yaml(path, name) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"{name}: expected a mapping at the top level")
    validate_config(_with_bases(data, earlier or {}), source=name, complete=False)
    return data


def _with_bases(data: dict[str, Any], earlier: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` as checked: its blocks refining an earlier file's alias get the alias's base,
    as the merge will give them (a probe layered on a study changes its alias's epochs, say).

    Example:
        >>> _with_bases({"variants": {"large": {"epochs": 1}}}, {"variants": {"large": {"base": "bertsel"}}})
        {'variants': {'large': {'base': 'bertsel', 'epochs': 1}}}
    """
    blocks = data.get("variants")
    bases = aliases(earlier, ())  # every alias the earlier files define, with its base
    if not isinstance(blocks, Mapping) or not bases:
        return data
    refined = {
        variant: {ALIAS_BASE: bases[variant], **block}
        if variant in bases and isinstance(block, Mapping) and ALIAS_BASE not in block
        else block
        for variant, block in blocks.items()
    }
    return {**data, "variants": refined}


def load_params(
    paths: Iterable[str | os.PathLike[str]], overrides: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Read ``params.yaml`` and override files, then ``--config`` values, each checked alone
    (so an error names where it is), then their merge.

    Args:
        paths: ``params.yaml`` and override files, later wins.
        overrides: ``snakemake --config`` values as Snakemake parsed them (strings); read as
            YAML scalars (:func:`~reranklab.settings.sources.typed_overrides`).

    Returns:
        The merged configuration, without the model's defaults.

    Raises:
        ConfigError: naming the file, or ``--config (command line)``, and the key.

    Example:
        >>> load_params([], {"grid": {"max_length": ["x"]}})
        Traceback (most recent call last):
        ...
        reranklab.errors.ConfigError: --config (command line): key grid.max_length.0: expected an integer, got 'x'
    """
    merged: dict[str, Any] = {}
    names = []
    for path in paths:
        merged = deep_merge(merged, read_config_file(path, earlier=merged))
        names.append(str(path))
    typed = typed_overrides(overrides or {})
    if typed:
        validate_config(typed, source=COMMAND_LINE, complete=False)
        merged = deep_merge(merged, typed)
        names.append(COMMAND_LINE)
    validate_config(merged, source=" + ".join(names) or "config")
    return merged


def snakemake_config(
    config: Mapping[str, Any],
    configfiles: Iterable[str | os.PathLike[str]],
    overrides: Mapping[str, Any],
) -> dict[str, Any]:
    """The workflow's config as Snakemake merged it, checked source by source, ``--config`` typed.

    Snakemake merges ``params.yaml``, ``--configfile`` files and ``--config`` values before any
    rule file runs, so a wrong value would be reported against all of them, and reads a
    ``--config`` value's scalars as strings (``grid={max_length: [128]}`` gives ``['128']``).
    Here each file and the ``--config`` values are checked alone first, and the values are read
    as a YAML file would give them.

    Args:
        config: Snakemake's merged ``config``.
        configfiles: the files it was merged from, lowest priority first.
        overrides: ``workflow.config_settings.config``: the ``--config`` values.

    Returns:
        ``config`` with the ``--config`` values typed.

    Raises:
        ConfigError: naming the file, or ``--config (command line)``, and the key.
    """
    names: list[str] = []
    earlier: dict[str, Any] = {}
    for path in configfiles:
        names.append(str(_shown(Path(path))))
        earlier = deep_merge(earlier, read_config_file(path, names[-1], earlier))
    typed = typed_overrides(overrides)
    if typed:
        validate_config(typed, source=COMMAND_LINE, complete=False)
        names.append(COMMAND_LINE)
    merged = deep_merge(config, typed)
    validate_config(merged, source=" + ".join(names) or "config")
    return merged


def _shown(path: Path) -> Path:
    # Messages name a file as the user wrote it: relative to the working directory when inside.
    try:
        return path.absolute().relative_to(Path.cwd())
    except ValueError:
        return path


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


@dataclass(frozen=True)
class ResolvedVariant:
    """A name of ``grid.variant`` resolved: the registered variant behind it and its settings.

    Args:
        name: the name as the study writes it (cell names, paths, MLflow, summary rows).
        spec: the registered variant that builds, trains, featurizes and loads its models (an
            alias's base; the variant itself otherwise).
        training: its resolved training settings (:func:`resolve_training`).
    """

    name: str
    spec: VariantSpec
    training: dict[str, Any]

    @property
    def base(self) -> str | None:
        """The registered variant an alias configures; ``None`` for a registered variant."""
        return None if self.name == self.spec.name else self.spec.name

    @property
    def cell_names(self) -> dict[str, str]:
        """How a resolved cell names its variant: ``{"variant": name}``, plus ``"base"`` for an
        alias (what :func:`reranklab.models.registry.cell_spec` reads in a job)."""
        return {"variant": self.name, **({ALIAS_BASE: self.base} if self.base else {})}


def resolve_variant(config: Mapping[str, Any], variant: str) -> ResolvedVariant:
    """The one place a variant name of the study is resolved: a registered variant, or an alias
    (``variants.<alias>: {base: <registered variant>, ...}``) of one.

    Training settings: schema < ``training`` < the (base) variant's paper settings <
    ``variants.<base>`` < ``variants.<alias>`` (the last only for an alias). The shared
    ``training`` block sets what every variant uses unless its paper fixes a value (e.g.
    monobert's learning rate 3e-6 and 10k warm-up steps); a paper setting is changed, per
    variant, under ``variants.<name>``, which always wins. So params.yaml may restate the shared
    defaults without undoing any preset.

    Raises:
        ConfigError: ``variant`` is neither registered nor an alias of a registered variant.

    Example:
        >>> config = {"variants": {"bertsel": {"epochs": 3}, "bertsel_large": {"base": "bertsel", "encoder": "bert-large-uncased"}}}
        >>> resolved = resolve_variant(config, "bertsel_large")
        >>> resolved.spec.name, resolved.base, resolved.training["encoder"], resolved.training["epochs"]
        ('bertsel', 'bertsel', 'bert-large-uncased', 3)
        >>> resolve_variant(config, "bertsel").base is None
        True
    """
    from reranklab.models.registry import get_variant

    spec = get_variant(alias_base(config, variant) or variant)
    # The layers, in order, are reranklab.settings.sources.training_sources: a nested block
    # (``validation``) is merged key by key, so ``variants.<name>.validation: {patience: 5}``
    # keeps the preset's measure.
    defaults = schema_defaults()["training"]
    training = merge_training(training_sources(config, variant, defaults, spec.defaults))
    return ResolvedVariant(variant, spec, training)


def resolve_training(config: Mapping[str, Any], variant: str) -> dict[str, Any]:
    """Training settings of ``variant`` (registered or an alias): :func:`resolve_variant`'s.

    Example:
        >>> resolve_training({"training": {"learning_rate": 1e-5}}, "monobert")["learning_rate"]
        3e-06
        >>> resolve_training({"training": {"learning_rate": 1e-5}}, "pointwise")["learning_rate"]
        1e-05
        >>> resolve_training({"variants": {"monobert": {"learning_rate": 1e-5}}}, "monobert")["learning_rate"]
        1e-05
    """
    return resolve_variant(config, variant).training


def n_folds(config: Mapping[str, Any], dataset: str) -> int:
    protocol = resolve_protocol(config, dataset)
    return int(protocol["folds"]) if protocol["split"] == "cv" else 1


def resolve_cell(
    config: Mapping[str, Any], dataset: str, variant: str, max_length: int
) -> dict[str, Any]:
    """Every setting that determines one cell of the grid (logged to MLflow as the run's params).

    ``variant`` is the name the study gives it; an alias's cell also names its ``base``, the
    registered variant a job builds (:func:`resolve_variant`).
    """
    full = with_defaults(config)
    resolved = resolve_variant(full, variant)
    return {
        "study": full["study"],
        "seed": full["seed"],
        "dataset": dataset,
        **resolved.cell_names,
        "max_length": int(max_length),
        "protocol": resolve_protocol(full, dataset),
        "retrieval": full["retrieval"],
        "training": resolved.training,
    }


@dataclass(frozen=True)
class ResolvedCell:
    """One cell of the grid resolved once (:func:`resolve_cell_settings`): the workflow cuts
    every job spec of the cell (train, encode, rerank) from it, so no step reads the study
    config, a protocol or a variant's block again.

    Args:
        settings: every setting of the cell (:func:`resolve_cell`; what MLflow records).
        scoring: the dataset's scoring protocol (:func:`resolve_scoring`).
        validation: the dev selection, checked against the scoring and the split; ``None``
            when the cell does not select its epoch on dev.
    """

    settings: dict[str, Any]
    scoring: Scoring
    validation: ValidationSettings | None

    @property
    def names(self) -> dict[str, Any]:
        """The variant (an alias: and its ``base``) and the max length, as a job spec names them."""
        return {
            k: self.settings[k] for k in ("variant", ALIAS_BASE, "max_length") if k in self.settings
        }

    def _spec(self, training: dict[str, Any], **fields: Any) -> ModelSpec:
        return ModelSpec(
            **self.names, dataset=self.settings["dataset"], training=training, **fields
        )

    def train_spec(self, seed: int) -> ModelSpec:
        """A train job's: the settings that change the trained model (and, when it validates,
        the dataset's scoring, for its dev measure)."""
        training = {k: v for k, v in self.settings["training"].items() if k not in NOT_MODEL_KEYS}
        scoring = self.scoring.as_dict() if self.validation else None
        return self._spec(training, seed=seed, scoring=scoring)

    def encode_spec(self) -> ModelSpec:
        """An encode job's: what changes the frozen features (the encoder, the max length and
        how they are computed; a head reading the pair's mean needs it encoded)."""
        training = self.settings["training"]
        keep = ("encoder", "device", "eval_batch_size", "threads")
        kept = {k: training[k] for k in keep}
        if training.get("pair_pooling") is not None:
            kept["pair_pooling"] = training["pair_pooling"]
        return self._spec(kept)

    def rerank_spec(self) -> ModelSpec:
        """A rerank job's: every training setting but the run options."""
        training = self.settings["training"]
        return self._spec({k: v for k, v in training.items() if k not in RUN_OPTION_KEYS})


def setting_key(config: Mapping[str, Any], variant: str, name: str) -> str:
    """Where the user sets a validation setting of ``variant``: ``variants.<v>.validation.<name>``
    when that block names it (an alias's own block first, then its base's), else
    ``training.validation.<name>`` (for error messages).

    Example:
        >>> config = {"variants": {"dmn": {"validation": {"measure": "MRR"}}, "dmn_e3": {"base": "dmn"}}}
        >>> setting_key(config, "dmn_e3", "measure"), setting_key(config, "dmn_e3", "patience")
        ('variants.dmn.validation.measure', 'training.validation.patience')
    """
    for where, block in reversed(variant_blocks(config, variant)):
        if isinstance(block.get(VALIDATION_KEY), Mapping) and name in block[VALIDATION_KEY]:
            return f"{where}.{VALIDATION_KEY}.{name}"
    return f"training.{VALIDATION_KEY}.{name}"


def study_dev_fraction(config: Mapping[str, Any], variants: Sequence[str] = ()) -> float:
    """The dev fraction the split step applies: the shared ``training.validation.dev_fraction``.

    Folds are shared by every variant of a dataset, so the fraction is one value per study.

    Args:
        config: the study configuration (with or without the schema defaults).
        variants: the grid's variants; none may set another fraction under ``variants.<name>``.

    Raises:
        ConfigError: ``variants.<name>.validation.dev_fraction`` differs (the key is named).

    Example:
        >>> study_dev_fraction({"training": {"validation": {"dev_fraction": 0.1}}})
        0.1
        >>> study_dev_fraction({})
        0.0
    """
    shared = (config.get("training") or {}).get(VALIDATION_KEY)
    fraction = (
        float({**VALIDATION_DEFAULTS, **shared}.get("dev_fraction") or 0.0)
        if isinstance(shared, Mapping)
        else 0.0
    )
    for variant in variants:
        for where, settings in variant_blocks(config, variant):  # an alias: its base's block too
            block = settings.get(VALIDATION_KEY)
            if (
                isinstance(block, Mapping)
                and "dev_fraction" in block
                and float(block["dev_fraction"] or 0.0) != fraction
            ):
                raise ConfigError(
                    f"{where}.{VALIDATION_KEY}.dev_fraction: {block['dev_fraction']} differs from the study's {fraction}; the folds "
                    f"(and their held-out dev queries) are shared by every variant, so set dev_fraction in training.{VALIDATION_KEY} only"
                )
    return fraction


def resolve_cell_settings(
    config: Mapping[str, Any], dataset: str, variant: str, max_length: int
) -> ResolvedCell:
    """Resolve one cell of the grid, and check its dev selection before any job runs.

    Raises:
        ConfigError: the dev measure is not one of the dataset's scoring measures, or the cell
            selects its epoch on dev on a cross-validated dataset whose folds hold out no dev
            queries (the key to set is named).
    """
    settings = resolve_cell(config, dataset, variant, max_length)
    scoring = resolve_scoring(config, dataset)
    validation = validation_settings(settings["training"])
    if validation is not None:
        key = setting_key(config, variant, "measure")
        check_measure(validation, scoring, key)
        if settings["protocol"]["split"] == "cv" and not study_dev_fraction(config):
            raise ConfigError(
                f"{dataset} is split by cross-validation, whose folds have no dev queries, but"
                f" {variant} selects its epoch on dev ({key}: {validation.measure}, on in its"
                " paper preset or your config): set training.validation.dev_fraction (e.g. 0.1)"
                " to hold out part of each training fold, or turn it off with"
                f" variants.{variant}.validation: null"
            )
    return ResolvedCell(settings, scoring, validation)


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
