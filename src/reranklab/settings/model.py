"""The study model: every key of ``params.yaml``, its type, range, default and description.

The one source of the settings: :mod:`reranklab.settings.generate` writes the JSON schema
(``workflow/schemas/params.schema.yaml``) from it, :func:`study_defaults` gives the defaults,
and :func:`validate_study` checks a config file against it before any job runs. The blocks
keyed by name come from what is registered: ``protocol.<dataset>`` (its ``options`` typed by the
dataset module's own options model) and ``variants.<variant>`` (the ``training`` keys, with
every variant's own settings). This package imports no registry: the config layer passes them
(:func:`reranklab.config.study_model`).

A ``variants`` block whose key is no registered variant and that names a ``base`` is an alias: a
second configuration of that registered variant under a name of its own, usable in
``grid.variant`` (:func:`reranklab.config.resolve_variant`). ``paper`` and ``deviations`` describe
the study (the paper it replicates, where it knowingly departs from it): checked, and read by no
step that trains, re-ranks or evaluates.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Annotated, Any, ClassVar, Literal, NamedTuple, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
    create_model,
)
from pydantic_core import PydanticCustomError

from reranklab.errors import ConfigError
from reranklab.settings.base import DatasetOptions, Keyed, Section, distinct_list
from reranklab.settings.cell import VARIANT
from reranklab.settings.elasticsearch import EsSettings
from reranklab.settings.errors import config_error, dotted
from reranklab.settings.local import LOCAL_NAME, LocalBlock
from reranklab.settings.protocol import Protocol, protocol_model
from reranklab.settings.sources import ALIAS_BASE
from reranklab.settings.variant import VariantSettings
from reranklab.settings.variant_fields import training_model

# A block's default, as the schema shows it: {} = every key of the block at its default.
SECTION_DEFAULT = {"default": {}}


class DatasetEntry(NamedTuple):
    """What the model needs of a registered dataset."""

    name: str
    options: type[DatasetOptions]  # its module's options model
    scorings: tuple[str, ...]  # its scoring protocols' names, the official one first
    label: str  # how messages call it (nfL6, WikiQA)


class Retrieval(Section):
    """First-stage BM25 settings."""

    backend: Literal["bm25s", "elasticsearch"] = Field(
        "bm25s",
        description="BM25 backend: bm25s (embedded, memory-mapped index) or elasticsearch (a cluster: retrieval.elasticsearch, env RERANKLAB_ES_URL).",
    )
    k1: float = Field(0.9, ge=0, description="BM25 term-frequency saturation.")
    b: float = Field(0.4, ge=0, le=1, description="BM25 length normalisation.")
    tokenizer: Literal["lucene", "bm25s"] = Field(
        "lucene",
        description="How the bm25s backend cuts texts into words: lucene (Lucene's StandardTokenizer and English possessive filter, as the elasticsearch backend and Anserini; Porter leaves words of 1-2 characters alone) or bm25s (bm25s.tokenize's \\w\\w+ words).",
    )
    stemmer: str | None = Field(
        "porter",
        description="PyStemmer algorithm for queries and passages of the bm25s backend (porter: Porter, as Lucene's EnglishAnalyzer and the elasticsearch backend stem; english: Snowball's Porter2; null = no stemming).",
    )
    stopwords: str | None = Field(
        "en",
        description="bm25s stopword list of the bm25s backend (en: Lucene's 33 English stop words, as EnglishAnalyzer; null = keep all tokens).",
    )
    length_norms: Literal["lucene", "exact"] = Field(
        "lucene",
        description="Passage lengths as the bm25s backend scores them: lucene (rounded as Lucene's one-byte norms store them, exact below 24 terms: the scores of Lucene, Elasticsearch and Anserini) or exact (bm25s' own).",
    )
    elasticsearch: EsSettings = Field(
        default_factory=EsSettings,
        description="The cluster and index settings of the elasticsearch backend (k1 and b above apply to it too).",
        json_schema_extra=SECTION_DEFAULT,
    )


class Data(Section):
    """Where raw files come from."""

    mirror: str | None = Field(
        None,
        description="Local folder holding <dataset>/<file> raw files, used instead of the canonical URLs (env RERANKLAB_MIRROR wins).",
    )


class Dvc(Section):
    """What ``dvc repro`` passes to Snakemake (dvc.yaml renders the block; Snakemake ignores it)."""

    configfiles: list[str] = Field(
        [],
        description="Override files `dvc repro` passes to Snakemake (--configfiles), e.g. [config/quickstart.yaml]; DVC tracks them as the config/ folder, so keep them there. [] = the study of params.yaml alone.",
    )


class Mlflow(Section):
    """Experiment tracking."""

    tracking_uri: str = Field(
        "sqlite:///results/mlflow.db",
        description="MLflow tracking URI (relative sqlite paths are relative to the working directory).",
    )
    experiment: str | None = Field(None, description="Experiment name; null = the study name.")
    log_training: bool = Field(
        True,
        description="Each training job logs to its fold's MLflow run while it trains (loss and learning rate per step, dev measures per epoch, system metrics, the model), which `track` then completes; false = training never touches MLflow and `track` makes the fold runs after the fact.",
    )


class SignificanceSettings(Section):
    """How the summary compares the rows of a dataset (reranklab.grading.significance)."""

    test: Literal["t", "permutation"] = Field(
        "t",
        description="The test whose p-values mark the tables: t (two-sided paired t-test) or permutation (two-sided paired randomisation test); both are computed for every pair.",
    )
    correction: Literal["holm", "bonferroni", "none"] = Field(
        "holm",
        description="Correction for multiple comparisons, within each dataset's measure (the comparisons of one column of its table).",
    )
    alpha: float = Field(0.05, gt=0, lt=1, description="Level of the corrected p-values.")
    resamples: int = Field(
        10_000,
        ge=100,
        description="Permutations of the randomisation test and resamples of the bootstrap confidence interval.",
    )
    seed: int = Field(0, ge=0, description="Seed of the permutations and bootstrap resamples.")
    reference: str | None = Field(
        None,
        description="A cell every other row of its dataset is compared with in its own column of results/significance.md (e.g. wikiqa/bertlets/L256); null = the first stage only.",
    )


class Report(Section):
    """The study's tables and figures."""

    significance: SignificanceSettings = Field(
        default_factory=SignificanceSettings,
        description="Paired tests between every pair of rows of a dataset, corrected for multiple comparisons.",
        json_schema_extra=SECTION_DEFAULT,
    )


class Paper(Section):
    """The paper a study replicates (no step that trains, re-ranks or evaluates reads it)."""

    id: str = Field(
        pattern=r"^[A-Za-z0-9_.-]+$",
        description="The paper's short id, e.g. mass2019 (as studies/published.yaml names it).",
    )
    cite: str = Field(
        min_length=1,
        description="Where its text is, file:line, e.g. papers/mass2019.txt:3.",
    )
    claims: list[Annotated[str, Field(min_length=1)]] | None = Field(
        None,
        description="The paper's claims this study grades (studies/claims.yaml ids, shell-style patterns such as monobert2019/large-beats-base*): a study run for some of them (two encoders, say) beside the paper's main study. null = all of them.",
    )


class Deviation(Section):
    """One way a study knowingly departs from its paper (no step that trains, re-ranks or
    evaluates reads it)."""

    name: str = Field(
        pattern=r"^[A-Za-z0-9_.-]+$", description="A short id of the deviation, e.g. no-doc2query."
    )
    what: str = Field(min_length=1, description="What reranklab does differently.")
    why: str = Field(min_length=1, description="Why it does.")
    affects: list[Annotated[str, Field(min_length=1)]] = Field(
        [],
        description="The published results it affects: id glob patterns of studies/published.yaml entries (e.g. mass2019/table2/*); [] = none named.",
    )


def _distinct_names(deviations: list[Deviation]) -> list[Deviation]:
    names = [deviation.name for deviation in deviations]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise PydanticCustomError(
            "distinct_names", "two deviations are named '{name}'", {"name": twice[0]}
        )
    return deviations


Deviations = Annotated[list[Deviation], AfterValidator(_distinct_names)]

# The first stages' names: a summary row of its own (``bm25``, ``pool``), never an alias's name.
FIRST_STAGES: tuple[str, ...] = get_args(Protocol.model_fields["first_stage"].annotation)
ALIAS_TEXT = "an alias defined under `variants` (a block with `base: <registered variant>`)"


def registered(kind: str, names: Sequence[str], known: str | None = None) -> Any:
    """A string that must be one of ``names`` (an unknown one is reported as an unknown ``kind``;
    ``known`` says what is, default the names)."""
    known = ", ".join(names) if known is None else known

    def check(value: str) -> str:
        if value not in names:
            raise PydanticCustomError(
                "unknown_name", "unknown {kind}", {"kind": kind, "known": known}
            )
        return value

    return Annotated[str, AfterValidator(check), Field(json_schema_extra={"enum": list(names)})]


def _keyed(name: str, kind: str, blocks: Mapping[str, tuple[Any, str]]) -> type[Keyed]:
    base = type(f"{name}Base", (Keyed,), {"__annotations__": {}, "kind": kind})
    fields = {
        f"k{i}_{key.replace('-', '_')}": (
            model,
            Field(
                default_factory=model,
                alias=key,
                description=text,
                json_schema_extra=SECTION_DEFAULT,
            ),
        )
        for i, (key, (model, text)) in enumerate(blocks.items())
    }
    return create_model(name, __base__=base, **fields)  # type: ignore[call-overload]


def _alias_name(value: str) -> str:
    if value in FIRST_STAGES:
        raise PydanticCustomError(
            "first_stage_name",
            "'{name}' is a first stage's name (a summary row of its own), not a variant's",
            {"name": value},
        )
    return value


# A name in grid.variant: a registered variant or an alias (which ones exist is checked on the
# merged config: an alias may be defined in another file than the grid that names it).
VariantName = Annotated[
    str,
    Field(pattern=rf"^{VARIANT}$"),
    AfterValidator(_alias_name),
]
ALIAS_NAME_SCHEMA = {"type": "string", "pattern": rf"^{VARIANT}$", "not": {"enum": [*FIRST_STAGES]}}


class VariantsBlock(Keyed):
    """``variants``: a block per registered variant, and aliases (blocks with a ``base``, of
    :attr:`alias_model`; their names are checked as ``grid.variant``'s)."""

    model_config = ConfigDict(extra="allow", json_schema_extra={"propertyNames": ALIAS_NAME_SCHEMA})
    kind: ClassVar[str] = "variant"
    alias_model: ClassVar[type[BaseModel] | None] = None


def _variants(names: Sequence[str], training: type[BaseModel]) -> type[Keyed]:
    """The ``variants`` block: ``<registered variant>: <training keys>`` and
    ``<alias>: {base: <registered variant>, <training keys>}``."""
    alias = create_model(
        "VariantAlias",
        __base__=training,
        __doc__=f"A second configuration of a registered variant under a name of its own: its base's settings (paper settings, variants.<base>) with these keys winning; use its name in grid.variant. ({', '.join(FIRST_STAGES)} are taken.)",
        **{
            ALIAS_BASE: (
                registered(
                    "variant",
                    names,
                    f"{', '.join(names)}; an alias's base is a registered variant, not an alias",
                ),
                Field(description="The registered variant it configures (not another alias)."),
            )
        },
    )
    base = type(
        "VariantsBase",
        (VariantsBlock,),
        {
            "__module__": __name__,
            "__annotations__": {"__pydantic_extra__": dict[VariantName, alias]},
            "alias_model": alias,
        },
    )
    fields = {
        f"k{i}_{name}": (
            training,
            Field(
                default_factory=training,
                alias=name,
                description=f"{name}'s settings: they win over its paper's and the shared training block.",
                json_schema_extra=SECTION_DEFAULT,
            ),
        )
        for i, name in enumerate(names)
    }
    return create_model("Variants", __base__=base, **fields)  # type: ignore[call-overload]


def _section(model: type[BaseModel], description: str) -> tuple[Any, Any]:
    return model, Field(
        default_factory=model, description=description, json_schema_extra=SECTION_DEFAULT
    )


@lru_cache(maxsize=4)
def study_model(
    datasets: tuple[DatasetEntry, ...], variants: tuple[tuple[str, type[VariantSettings]], ...]
) -> type[Section]:
    """The model of ``params.yaml`` for these datasets and variants (``(name, settings class)``).

    Example:
        >>> from reranklab.settings.base import NoOptions
        >>> model = study_model((DatasetEntry("sample", NoOptions, ("default",), "sample"),), (("pointwise", VariantSettings),))
        >>> validate_study(model, {"datasets": ["sample"], "grid": {"variant": ["pointwise"]}}, "params.yaml")
    """
    names = [name for name, _ in variants]
    training = training_model(variants)
    grid = _grid_model(names)
    protocols = _protocols_model(datasets)
    per_variant = _variants(names, training)
    # The keys in the order the schema (and its documentation) lists them.
    return create_model(
        "Study",
        __base__=Section,
        __doc__="The configuration of a reranklab study (params.yaml, plus override files).",
        **_study_fields(datasets),
        **_section_fields(grid, protocols, training, per_variant),
        **_paper_fields(),
    )


def _grid_model(names: list[str]) -> type[Section]:
    """``grid``: the variant and max_length axes (the datasets are the third)."""
    return create_model(
        "Grid",
        __base__=Section,
        __doc__="The other two axes of the grid dataset x variant x max_length.",
        variant=(
            distinct_list(
                Annotated[
                    VariantName,
                    WithJsonSchema(
                        {
                            "anyOf": [
                                {"type": "string", "enum": names},
                                {**ALIAS_NAME_SCHEMA, "description": ALIAS_TEXT},
                            ]
                        }
                    ),
                ]
            ),
            Field(
                ["pointwise"],
                description="Re-ranker variants: registered ones (`reranklab variants` lists them) and aliases defined under `variants`.",
            ),
        ),
        max_length=(
            distinct_list(Annotated[int, Field(ge=16, le=512)]),
            Field(
                [256],
                description="Maximum input length (query + passage, word pieces) of each cell.",
            ),
        ),
    )


def _protocols_model(datasets: tuple[DatasetEntry, ...]) -> type[Keyed]:
    """``protocol``: one block per registered dataset, overriding its own protocol (and, in the
    model, one per collection of one's own that the config defines under ``local``)."""
    return _keyed(
        "Protocols",
        "dataset",
        {
            entry.name: (
                protocol_model(entry.name, entry.options, entry.scorings),
                f"Overrides of {entry.name}'s own protocol.",
            )
            for entry in datasets
        },
    )


def _dataset_name_schema(datasets: tuple[DatasetEntry, ...]) -> dict[str, Any]:
    # The schema names what the model checks on the merged config: a registered dataset, an
    # ir_datasets id, or a collection that `local` defines (maybe in another file).
    return {
        "anyOf": [
            {"type": "string", "enum": [entry.name for entry in datasets]},
            {"type": "string", "pattern": "^irds:.+", "description": "an ir_datasets id"},
            {
                "type": "string",
                "pattern": LOCAL_NAME,
                "description": "a collection of one's own defined under `local`",
            },
        ]
    }


def _study_fields(datasets: tuple[DatasetEntry, ...]) -> dict[str, Any]:
    """The study's name, its seed(s) and its datasets."""
    return {
        "study": (
            str,
            Field(
                "reranklab",
                pattern=r"^[A-Za-z0-9_.-]+$",
                description="Name of the study; the MLflow experiment and report title.",
            ),
        ),
        "seed": (
            int,
            Field(
                42,
                description="One seed for fold assignment, negative sampling, model initialisation and data order.",
            ),
        ),
        "seeds": (
            distinct_list(Annotated[int, Field(ge=0)]) | None,
            Field(
                None,
                description="Several seeds per cell (a grid axis): each seed gets its own negative sampling, initialisation and data order (folds stay those of `seed`), and the summary reports the mean ± std over seeds; null = just `seed`.",
            ),
        ),
        "datasets": (
            distinct_list(
                Annotated[
                    registered("dataset", [entry.name for entry in datasets]),
                    WithJsonSchema(_dataset_name_schema(datasets)),
                ]
            ),
            Field(
                ["sample"],
                description="Datasets of the grid: registered names (`reranklab datasets` lists them), ir_datasets ids (irds:<id>) and collections of one's own defined under `local`.",
            ),
        ),
        "local": (
            LocalBlock,
            Field(
                default_factory=LocalBlock,
                description="Collections of one's own, keyed by the name `datasets` gives them: {queries, passages, qrels, splits, first_stage_run, title, scoring} (files as TSV, JSONL or Parquet; paths relative to the working directory); `protocol.<name>` tunes each one's protocol as for any dataset.",
                json_schema_extra=SECTION_DEFAULT,
            ),
        ),
    }


def _section_fields(
    grid: type[BaseModel],
    protocols: type[BaseModel],
    training: type[BaseModel],
    per_variant: type[BaseModel],
) -> dict[str, Any]:
    """The sections: the grid, the protocols, retrieval, training, variants and the tools'."""
    return {
        "grid": _section(grid, "The other two axes of the grid dataset x variant x max_length."),
        "protocol": _section(
            protocols,
            "Per-dataset overrides of the dataset's own evaluation protocol (keyed by dataset name).",
        ),
        "retrieval": _section(Retrieval, "First-stage BM25 settings."),
        "training": _section(
            training,
            "Training and inference settings shared by all variants (a variant's paper settings win over them).",
        ),
        "variants": _section(
            per_variant,
            "Per-variant overrides of `training` (keyed by variant name); they win over the variant's paper settings. A key that is no registered variant defines an alias: {base: <registered variant>, <training keys>}, a second configuration of it (e.g. bertsel_epoch5: {base: bertsel, epochs: 5}) to name in grid.variant.",
        ),
        "data": _section(Data, "Where raw files come from."),
        "dvc": _section(Dvc, "What `dvc repro` passes to Snakemake (read by dvc.yaml only)."),
        "mlflow": _section(Mlflow, "Experiment tracking."),
        "report": _section(Report, "The study's tables and figures."),
    }


def _paper_fields() -> dict[str, Any]:
    """The paper the study replicates and where it departs from it (read by no model step)."""
    return {
        "paper": (
            Paper | None,
            Field(
                None,
                description="The paper the study replicates: {id, cite}; no step that trains, re-ranks or evaluates reads it. null = none.",
            ),
        ),
        "deviations": (
            Deviations,
            Field(
                [],
                description="Where the study knowingly departs from its paper: a list of {name, what, why, affects}; no step that trains, re-ranks or evaluates reads it.",
            ),
        ),
    }


def validate_study(
    model: type[Section],
    config: Mapping[str, Any],
    source: str = "config",
    labels: Mapping[str, str] | None = None,
    complete: bool = True,
) -> None:
    """Raise ConfigError naming ``source`` and the first wrong key if ``config`` breaks ``model``.

    Args:
        model: a :func:`study_model`.
        config: a config file's content, or the merge of several.
        source: the file(s), for the message.
        labels: dataset name -> how messages call it (``nfL6``).
        complete: ``config`` is the whole study (not one of the files merged into it), so every
            name in ``grid.variant`` must be a registered variant or an alias it defines.
    """
    try:
        model.model_validate(dict(config), strict=True)
    except ValidationError as exc:
        raise config_error(exc, model, source=source, labels=labels) from None
    if complete:
        _check_grid_variants(model, config, source)


def registered_variants(model: type[Section]) -> tuple[str, ...]:
    """The registered variants of a :func:`study_model` (its ``variants`` block's own keys)."""
    block = model.model_fields["variants"].annotation
    assert isinstance(block, type) and issubclass(block, BaseModel)
    return tuple(field.alias or name for name, field in block.model_fields.items())


def aliases(config: Mapping[str, Any], registered: Sequence[str]) -> dict[str, str]:
    """``{alias: base}`` of the aliases a (valid) config defines under ``variants``.

    Example:
        >>> aliases({"variants": {"dmn": {}, "dmn_e3": {"base": "dmn", "episodes": 3}}}, ["dmn"])
        {'dmn_e3': 'dmn'}
    """
    blocks = config.get("variants") or {}
    return {
        name: str(block[ALIAS_BASE])
        for name, block in blocks.items()
        if name not in registered and isinstance(block, Mapping) and ALIAS_BASE in block
    }


def _check_grid_variants(model: type[Section], config: Mapping[str, Any], source: str) -> None:
    registered = registered_variants(model)
    defined = aliases(config, registered)
    for i, name in enumerate((config.get("grid") or {}).get("variant") or []):
        if name not in registered and name not in defined:
            known = ", ".join(registered)
            if defined:
                known += f"; aliases: {', '.join(defined)}"
            key = ("grid", "variant", i)
            raise ConfigError(
                f"{source}: unknown variant {name!r} in {dotted(key[:-1])} (key {dotted(key)};"
                f" known: {known}; or define an alias: variants.{name}: {{base: <variant>, ...}})"
            )


def study_defaults(model: type[Section]) -> dict[str, Any]:
    """Every key's default, as a nested dict (the blocks keyed by name are empty)."""
    return copy.deepcopy(_defaults(model))


@lru_cache(maxsize=4)
def _defaults(model: type[Section]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        default = field.get_default(call_default_factory=True)
        if isinstance(default, Keyed):
            out[name] = {}
        elif isinstance(default, BaseModel):
            out[name] = default.model_dump()
        else:
            out[name] = copy.deepcopy(default)
    return out
