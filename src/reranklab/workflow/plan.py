"""The plan of a study's jobs: what every Snakemake rule asks of its step, as Python.

The rule files (``workflow/rules/*.smk``) hold only rules; every input function, every job's
spec (:mod:`reranklab.settings.job`), its run options and every target list is a method of
:class:`StudyPlan`, built once from the validated config. So the workflow's logic is unit-tested
here and kept by the import contracts like any other module, and a wildcard's text becomes a
typed value in one place (:meth:`StudyPlan.cell_of`).

A rule passes a job's spec as ``--spec {params.spec:q}``: its sorted JSON is what Snakemake's
params trigger compares, so a changed setting re-runs exactly the jobs whose spec it is in. Run
options (how a job runs, not what it makes) are :class:`ShellOptions`, which the trigger skips.

Example:
    >>> from types import SimpleNamespace
    >>> from reranklab.config import load_params, with_defaults
    >>> plan = StudyPlan(with_defaults(load_params(["params.yaml"])), cores=2)  # doctest: +SKIP
    >>> job = SimpleNamespace(dataset="wikiqa", variant="pointwise", max_length="256", seed_dir="", fold="0")
    >>> plan.cell_of(job).name  # doctest: +SKIP
    'pointwise-L256'
"""

from __future__ import annotations

import functools
import json
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from reranklab.config import (
    ResolvedCell,
    first_stage_cell,
    grid,
    n_folds,
    resolve_cell_settings,
    resolve_protocol,
    resolve_scoring,
    resolve_variant,
    study_dev_fraction,
)
from reranklab.errors import ConfigError
from reranklab.seeds import seed_from_dir, study_seeds
from reranklab.settings.cell import Cell, seed_of_part, seed_part
from reranklab.settings.job import (
    DatasetSpec,
    IndexSpec,
    RecordSpec,
    RetrieveSpec,
    SampleSpec,
    ScoringSpec,
    SplitSpec,
    SummarySpec,
)
from reranklab.settings.training import training_view

SUMMARY = ["results/summary.csv", "results/summary.md", "results/summary.json"]
SIGNIFICANCE = ["results/significance.csv", "results/significance.md"]
REPORT_PAGES = ("summary", "significance", "regression")
PLOTS = ["results/plots/length_sweep.csv", "results/plots/query_delta.csv"]
# The matrix and the claims a study is graded against, where they exist: a study without
# studies/ still runs (and grades nothing).
MATRIX_FILES = ("studies/published.yaml", "studies/external.yaml", "studies/expected.yaml")
CLAIMS_FILES = ("studies/claims.yaml",)


class Wildcards(Protocol):
    """A job's wildcards as Snakemake gives them (text attributes; tests pass a namespace)."""

    dataset: str


@dataclass
class _Job:
    """A job's wildcards, for the plan's own use (the target lists)."""

    dataset: str
    variant: str
    max_length: str
    seed_dir: str
    fold: str


class ShellOptions:
    """Command-line options that change how a job runs, not what it makes. Snakemake's params
    trigger skips values that are not plain data, so changing these re-runs nothing."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ShellOptions) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


class StudyPlan:
    """Every job of a study: its cell, spec, inputs and run options, and the study's targets.

    Args:
        config: the validated study config with its defaults (:func:`reranklab.config.with_defaults`).
        cores: Snakemake's ``--cores``; ``None`` under a cluster executor, which has none (its
            profile's ``set-threads`` then decides).
        root: the study folder (where ``studies/`` is looked for).
    """

    def __init__(
        self, config: Mapping[str, Any], cores: int | None = None, root: Path = Path(".")
    ) -> None:
        self.config = config
        self.cores = cores
        self.root = root
        self.seeds = study_seeds(config)
        # Every input, params and resources function of a model job reads its cell (about
        # eight per job, 1 ms each): resolved once per cell instead. Shared: read only.
        self._cells = functools.cache(functools.partial(resolve_cell_settings, config))

    # -- the study --------------------------------------------------------------------------

    @property
    def datasets(self) -> list[str]:
        return list(self.config["datasets"])

    @property
    def experiment(self) -> str:
        return self.config["mlflow"]["experiment"] or self.config["study"]

    def protocol(self, dataset: str) -> dict[str, Any]:
        return resolve_protocol(self.config, dataset)

    def folds_of(self, dataset: str) -> range:
        return range(n_folds(self.config, dataset))

    def first_stage_name(self, dataset: str) -> str:
        return self.protocol(dataset)["first_stage"]

    def all_cells(self) -> list[tuple[str, str, str, int | None]]:
        """(dataset, cell name, variant, max_length) of every summary row: first stages first."""
        rows: list[tuple[str, str, str, int | None]] = []
        for dataset in self.datasets:
            name = self.first_stage_name(dataset)
            rows.append((dataset, name, name, None))
        for dataset, variant, max_length in grid(self.config):
            rows.append((dataset, Cell(dataset, variant, max_length).name, variant, max_length))
        return rows

    # -- a job's cell: the one place a wildcard's text becomes a typed value ---------------------

    def seed_of(self, w: Any) -> int:
        """The seed of a job: its ``{seed_dir}`` wildcard's, else the study seed."""
        return seed_from_dir(getattr(w, "seed_dir", ""), self.config["seed"])

    def cell_of(self, w: Any) -> Cell:
        """The :class:`Cell` of a job's ``{dataset}``, ``{variant}``, ``{max_length}`` and
        ``{seed_dir}`` wildcards."""
        seed = seed_of_part(getattr(w, "seed_dir", ""))
        return Cell(w.dataset, w.variant, int(w.max_length), seed)

    def cell_settings(self, w: Any) -> ResolvedCell:
        """A job's cell resolved once (:func:`reranklab.config.resolve_cell_settings`): every
        model job's spec is cut from it."""
        cell = self.cell_of(w)
        return self._cells(cell.dataset, cell.variant, int(cell.max_length or 0))

    def resolved(self, w: Any) -> dict[str, Any]:
        """The resolved settings of a job's cell (:func:`reranklab.config.resolve_cell`)."""
        return self.cell_settings(w).settings

    def training(self, w: Any) -> Any:
        """The typed shared training settings of a job's cell."""
        return training_view(self.resolved(w)["training"])

    # -- specs of the data and first-stage steps -------------------------------------------------

    def check_local_files(self) -> None:
        """Every file a collection of one's own names exists, checked when the workflow loads:
        a missing one is one line naming its key, not a traceback from a job's input function.

        Raises:
            ConfigError: ``local.<name>.<key>: no such file <path> ...``.
        """
        from reranklab.data import get_dataset

        for dataset in self.datasets:
            job_fields = getattr(get_dataset(dataset), "job_fields", None)
            if job_fields:
                job_fields()

    def dataset_spec(self, w: Any) -> str:
        from reranklab.data import get_dataset

        # A collection of one's own (local.<name>) also passes its entry and its files' stamps.
        job_fields = getattr(get_dataset(w.dataset), "job_fields", None)
        local = job_fields() if job_fields else {}
        return DatasetSpec(options=self.protocol(w.dataset)["options"], **local).to_json()

    def mirror_option(self) -> str:
        mirror = self.config["data"].get("mirror")
        return f"--config-mirror {mirror}" if mirror else ""

    def retrieval_settings(self) -> dict[str, Any]:
        # Only the chosen backend's settings, so changing the other's reruns nothing.
        r = self.config["retrieval"]
        return {
            k: v for k, v in r.items() if k != "elasticsearch" or r["backend"] == "elasticsearch"
        }

    def index_spec(self, w: Any) -> str:
        return IndexSpec(retrieval=self.retrieval_settings()).to_json()

    def retrieve_spec(self, w: Any) -> str:
        p = self.protocol(w.dataset)
        keys = ("first_stage", "depth", "inject_relevant", "relevance_threshold")
        retrieval = self.retrieval_settings() if p["first_stage"] == "bm25" else None
        return RetrieveSpec(protocol={k: p[k] for k in keys}, retrieval=retrieval).to_json()

    def index_for(self, w: Any) -> str | list[str]:
        bm25 = self.first_stage_name(w.dataset) == "bm25"
        return f"results/index/{w.dataset}/bm25" if bm25 else []

    def split_spec(self, w: Any) -> str:
        p = self.protocol(w.dataset)
        # training.validation.dev_fraction: dev-less folds hold out part of their training
        # queries. Only when set: a study without it keeps its split job's spec.
        fraction = study_dev_fraction(self.config, self.config["grid"]["variant"]) or None
        protocol = {k: p[k] for k in ("split", "folds")}
        if p.get("scored", "test") != "test":
            # Only when set: a study scoring its test queries keeps its split job's spec.
            protocol["scored"] = p["scored"]
        return SplitSpec(
            protocol=protocol, seed=self.config["seed"], dev_fraction=fraction
        ).to_json()

    def sample_spec(self, w: Any) -> str:
        p = self.protocol(w.dataset)
        protocol = {k: p[k] for k in ("negatives_per_positive", "relevance_threshold")}
        if p.get("positives", "judged") != "judged":
            protocol["positives"] = p["positives"]
        return SampleSpec(protocol=protocol, seed=self.seed_of(w)).to_json()

    def scoring_spec(self, w: Any) -> str:
        # The whole definition, not only its name: a changed scoring re-runs evaluate and aggregate.
        return ScoringSpec(scoring=resolve_scoring(self.config, w.dataset).as_dict()).to_json()

    # -- the model jobs: train, encode, rerank ----------------------------------------------------

    def examples_for(self, w: Any) -> str:
        kind = resolve_variant(self.config, w.variant).spec.example_kind
        name = "pointwise" if kind == "pointwise" else "triplets"
        return f"results/samples/{w.dataset}{w.seed_dir}/fold{w.fold}/{name}.parquet"

    def cache_dir(self, w: Any) -> str:
        return self.cell_of(w).path("cache", f"fold{w.fold}")

    def cache_for(self, w: Any) -> list[str]:
        """The fold's frozen-feature cache when the variant (an alias: its base) reads one."""
        return (
            [self.cache_dir(w)] if resolve_variant(self.config, w.variant).spec.needs_cache else []
        )

    def validates(self, w: Any) -> bool:
        """Whether the job selects its epoch on dev (checked when its cell is resolved, before
        any job runs)."""
        return self.cell_settings(w).validation is not None

    def dev_inputs(self, w: Any) -> list[str]:
        """What scoring the fold's dev queries needs, for a job that validates; else nothing."""
        if not self.validates(w):
            return []
        d = w.dataset
        return [
            f"results/first_stage/{d}/candidates.run",
            f"results/data/{d}/qrels.txt",
            f"results/splits/{d}/folds.json",
        ]

    def train_spec(self, w: Any) -> str:
        return self.cell_settings(w).train_spec(self.seed_of(w)).to_json()

    def encode_spec(self, w: Any) -> str:
        return self.cell_settings(w).encode_spec().to_json()

    def rerank_spec(self, w: Any) -> str:
        return self.cell_settings(w).rerank_spec().to_json()

    def gpu_slots_of(self, w: Any) -> int:
        """The ``gpu`` resource of a model job, in slots (``training.gpu_slots`` per GPU): its
        ``training.gpu_share``, else whole GPUs (``training.gpus`` of a DDP job, else one)."""
        training = self.training(w)
        gpus = training.gpus if training.distributed == "ddp" else 1
        if training.gpu_share is None or training.distributed == "ddp":
            return gpus * training.gpu_slots
        if training.gpu_share > training.gpu_slots:
            raise ConfigError(
                f"{w.variant}: training.gpu_share {training.gpu_share} is more than"
                f" training.gpu_slots {training.gpu_slots}"
            )
        return training.gpu_share

    def gpu_options(self, w: Any) -> ShellOptions:
        """How the job's GPU lease is taken."""
        training = self.training(w)
        return ShellOptions(
            f"--gpu-slots {training.gpu_slots} --gpu-share {training.gpu_share or 0}"
        )

    def checkpoint_options(self, w: Any) -> str:
        # The directory is outside the rule's outputs: Snakemake deletes those of an incomplete
        # job before running it again, and the re-run must find its checkpoints.
        training = self.training(w)
        directory = self.cell_of(w).path("checkpoints", f"fold{w.fold}")
        return (
            f"--checkpoint-dir {directory} --checkpoint-every {training.checkpoint_every}"
            f" --keep-checkpoints {training.keep_checkpoints}"
            f" --delete-checkpoints {int(training.delete_checkpoints)}"
        )

    def train_options(self, w: Any) -> ShellOptions:
        """A train job's run options: its checkpoints, its dev inputs and inference batch when
        it validates, its live MLflow run and its GPU lease. Passed as options rather than in
        the rule's shell text, whose change would re-run every job."""
        text = self.checkpoint_options(w)
        dev = self.dev_inputs(w)
        if dev:
            candidates, qrels, folds = dev
            batch = self.training(w).eval_batch_size
            text += f" --candidates {candidates} --qrels {qrels} --folds {folds} --fold {w.fold}"
            text += f" --eval-batch-size {batch}"
        text += self.tracking_options(w, has_fold=bool(dev))
        return ShellOptions(f"{text} {self.gpu_options(w)}")

    def tracking_options(self, w: Any, has_fold: bool) -> str:
        """The options with which ``reranklab train`` logs to its fold's MLflow run while it
        trains (``mlflow.log_training``); none when that is off."""
        mlflow = self.config["mlflow"]
        if not mlflow.get("log_training", True):
            return ""
        options = {
            "--tracking-uri": mlflow["tracking_uri"],
            "--experiment": self.experiment,
            "--study": self.config["study"],
            "--cell-key": self.cell_of(w).key,  # what the track rule's cell key gives
        }
        text = "".join(f" {name} {shlex.quote(str(value))}" for name, value in options.items())
        return text if has_fold else f"{text} --fold {w.fold}"

    def threads_for_models(self) -> int:
        if self.cores is None:
            return 4
        return min(4, self.cores) if self.cores else 1

    def threads_for_retrieval(self) -> int:
        # bm25s scores queries on all the cores it is given; Snakemake caps a job's threads at
        # --cores, so ask for them all.
        if self.cores is None:
            return 8
        return self.cores or 1

    # -- aggregate, track, the seed axis -------------------------------------------------------------

    def fold_files(self, pattern: str) -> Callable[[Any], list[str]]:
        return lambda w: [
            pattern.format(dataset=w.dataset, cell=w.cell, fold=k) for k in self.folds_of(w.dataset)
        ]

    def train_stats(self, w: Any) -> list[str]:
        cell = Cell.parse(w.dataset, w.cell)
        if cell.is_first_stage:
            return []
        return [
            cell.path("models", f"fold{k}", "train_stats.json") for k in self.folds_of(w.dataset)
        ]

    def seed_files(self, pattern: str) -> Callable[[Any], list[str]]:
        return lambda w: [
            pattern.format(dataset=w.dataset, cell=self.cell_of(w).name, seed=s) for s in self.seeds
        ]

    def cell_params(self, dataset: str, cell: str) -> dict[str, Any]:
        """The full, resolved settings of a cell (what MLflow records)."""
        parsed = Cell.parse(dataset, cell)
        if parsed.is_first_stage:
            return first_stage_cell(self.config, dataset)
        resolved = self._cells(dataset, parsed.variant, int(parsed.max_length or 0)).settings
        if not self.seeds:
            return resolved
        # A seed of the seed axis (or, seed None, a multi-seed cell as a whole).
        seed = resolved["seed"] if parsed.seed is None else parsed.seed
        return {**resolved, "seed": seed, "seeds": self.seeds}

    def record_spec(self, w: Any) -> str:
        return RecordSpec(**self.cell_params(w.dataset, w.cell)).to_json()

    def seeds_record_spec(self, w: Any) -> str:
        return RecordSpec(**self.cell_params(w.dataset, self.cell_of(w).name)).to_json()

    # -- summarize, regress, the report ----------------------------------------------------------

    def grading_settings(
        self, dataset: str, variant: str, max_length: int | None
    ) -> dict[str, Any]:
        """What ``reranklab regress`` matches a summary row by: the study (and the paper it
        replicates, where the config names one, and which of its claims where it names them),
        the questions scored where they are dev questions, and a re-ranker's encoder and
        epochs."""
        paper = self.config.get("paper") or {}
        study = {"study": self.config["study"], **({"paper": paper["id"]} if paper else {})}
        if paper.get("claims"):  # the only claims of its paper this study grades
            study["claims"] = list(paper["claims"])
        scored = self.protocol(dataset).get("scored", "test")
        if scored != "test":
            # A row scored on dev questions grades only the claims about a dev set (only when
            # set: a study scoring its test queries keeps its summary job's spec).
            study["scored"] = scored
        if max_length is None:
            return study
        from reranklab.models.registry import cell_spec

        resolved = self._cells(dataset, variant, max_length).settings
        training = resolved["training"]
        # An alias's row names its registered variant, which says what kind of model it is
        # (reranklab.grading.learned holds a cross-encoder to its first stage).
        base = {"base": resolved["base"]} if resolved.get("base") else {}
        # QA-LSTM on GloVe and QA-LSTM on the encoder's word pieces are different conditions.
        encoder = cell_spec(resolved).representations(training)
        return {**study, "encoder": encoder, "epochs": training["epochs"], **base}

    def summary_spec(self) -> str:
        cells = [
            {
                "dataset": dataset,
                "variant": variant,
                "max_length": max_length,
                "metrics_path": f"results/cells/{dataset}/{cell}/metrics.json",
                **self.grading_settings(dataset, variant, max_length),
            }
            for dataset, cell, variant, max_length in self.all_cells()
        ]
        significance = self.config["report"]["significance"]
        return SummarySpec(
            cells=cells,
            title=self.config["study"],
            significance=significance,
            first_stages=dict(zip(self.datasets, self.first_stage_records(), strict=True)),
        ).to_json()

    def first_stage_records(self) -> list[str]:
        """Each dataset's first-stage record: recall at the depth, the planted answers."""
        return [f"results/first_stage/{d}/first_stage.json" for d in self.datasets]

    def cell_files(self, name: str) -> list[str]:
        return [f"results/cells/{d}/{c}/{name}" for d, c, _, _ in self.all_cells()]

    def matrix_files(self) -> list[str]:
        return [path for path in MATRIX_FILES if (self.root / path).exists()]

    def claims_files(self) -> list[str]:
        return [path for path in CLAIMS_FILES if (self.root / path).exists()]

    def claims_options(self) -> str:
        return " ".join(f"--claims {path}" for path in self.claims_files()) or "--no-claims"

    def analysis_reference(self) -> str:
        """``--reference KEY`` when ``report.significance.reference`` names a cell, else nothing."""
        reference = self.config["report"]["significance"]["reference"]
        return f"--reference {reference}" if reference else ""

    def report_dirs(self) -> list[str]:
        return [f"results/report/{d}" for d in self.datasets]

    def analysis_outputs(self) -> tuple[str, ...]:
        """The analyses' files for this grid: those with something to show (no length sweep
        of one max length, no chunking table without a chunked cell)."""
        from reranklab.report.analyses.outputs import outputs

        grid = self.config["grid"]
        return outputs(grid["variant"], grid["max_length"])

    def analysis_files(self) -> list[str]:
        """Every figure and table of the analyses, for each dataset of the study."""
        return [
            f"results/report/{d}/{name}" for d in self.datasets for name in self.analysis_outputs()
        ]

    def report_pages(self) -> list[str]:
        return [f"results/report/{page}.html" for page in REPORT_PAGES]

    def study_targets(self) -> list[str]:
        """What a study makes: the summary, the tests, the grades and the report, and every
        file they are made from (:meth:`job_outputs`)."""
        report = [
            *self.report_pages(),
            *self.analysis_files(),
            *PLOTS,
            "results/report/mlflow.json",
        ]
        return [*SUMMARY, *SIGNIFICANCE, "results/regression.md", *report, *self.job_outputs()]

    def job_outputs(self) -> list[str]:
        """Every file and folder the study's per-dataset and per-fold jobs write.

        They are targets too because Snakemake regenerates a missing file only when a job
        downstream of it must run: a training killed mid-way (its model folder deleted as
        incomplete) would otherwise leave the study with fold runs and no model, and a re-run
        would say "Nothing to be done". As targets, a missing one is made again, and what
        depends on it follows (its input is newer).
        """
        files: list[str] = []
        for dataset in self.datasets:
            files += self._dataset_outputs(dataset)
        for dataset, variant, max_length in grid(self.config):
            for seed in self.seeds or [None]:
                files += self._model_outputs(Cell(dataset, variant, max_length, seed))
        return files

    def _dataset_outputs(self, dataset: str) -> list[str]:
        data = f"results/data/{dataset}"
        names = (
            "corpus.parquet",
            "queries.tsv",
            "qrels.txt",
            "split.json",
            "pool.run",
            "stats.json",
        )
        files = [f"{data}/raw/manifest.json", *(f"{data}/{name}" for name in names)]
        first_stage = self.first_stage_name(dataset)
        if first_stage == "bm25":
            files.append(f"results/index/{dataset}/bm25")
        files += [
            f"results/first_stage/{dataset}/candidates.run",
            f"results/splits/{dataset}/folds.json",
        ]
        baseline = Cell.parse(dataset, first_stage)
        for k in self.folds_of(dataset):
            files += [
                baseline.path("runs", f"fold{k}.run"),
                baseline.path("metrics", f"fold{k}.json"),
            ]
        return files

    def _model_outputs(self, cell: Cell) -> list[str]:
        w = _Job(cell.dataset, cell.variant, str(cell.max_length), seed_part(cell.seed), "0")
        samples = f"results/samples/{cell.dataset}{w.seed_dir}"
        files: list[str] = []
        for k in self.folds_of(cell.dataset):
            w.fold = str(k)
            files += [f"{samples}/fold{k}/pointwise.parquet", f"{samples}/fold{k}/triplets.parquet"]
            files += self.cache_for(w)
            files += [cell.path("models", f"fold{k}"), cell.path("runs", f"fold{k}.run")]
            files.append(cell.path("metrics", f"fold{k}.json"))
        files += [cell.path("cells", "run.txt"), cell.path("cells", "metrics.json")]
        return files

    def tracking_link(self) -> str | None:
        """Where the study's MLflow runs are (the UI's runs table), from a tracked cell's
        ``mlflow.json``; ``None`` while no cell is tracked."""
        from reranklab.tracking.ui import runs_link, ui_command

        for dataset, cell, _, _ in self.all_cells():
            path = self.root / f"results/cells/{dataset}/{cell}/mlflow.json"
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
                link = runs_link(record["tracking_uri"], str(record["experiment_id"]))
            except (OSError, ValueError, KeyError, TypeError):
                continue  # not tracked (yet), or not a record of track
            command = ui_command(record["tracking_uri"])
            return f"MLflow: {command}, then open {link}" if command else f"MLflow: {link}"
        return None
