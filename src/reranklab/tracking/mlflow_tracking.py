"""Log one grid cell to MLflow: a parent run for the cell, a nested child run per fold.

Written for Snakemake, where many ``track`` jobs run at once against one sqlite database:

- only :class:`mlflow.MlflowClient` with explicit run ids is used, never the fluent API's
  process-global active-run stack, so runs cannot be mixed up;
- every write to a ``sqlite:///`` store happens under an exclusive lock on ``<db>.lock``
  (``filelock``; sqlite serialises writers anyway, but MLflow's schema creation and
  experiment creation race), and calls that still hit "database is locked" (e.g. the MLflow UI
  reading at that moment) are retried with back-off (``tenacity``);
- a sqlite store is created whole or not at all (:func:`open_store`): MLflow migrates a
  temporary file, which is renamed onto ``<db>`` when complete, so a job killed while creating
  it leaves no half-migrated store behind. A store that such a kill did break (made before
  this, or by another MLflow client) and that holds nothing but what creation writes is
  re-created in place, with a warning; one that holds runs is never touched;
- the experiment is created race-free (create; if it exists, get it), with its artifacts in
  ``mlartifacts/`` beside the database rather than in ``./mlruns``;
- a fold's run is the one its ``train`` job logged while it trained (loss curve, dev
  measures, system metrics, model: :mod:`reranklab.tracking.live`), found by its tags
  (:mod:`reranklab.tracking.tags`) and completed here with the test measures; only a fold
  trained without live logging gets a run made here;
- re-tracking a cell (the job re-ran) soft-deletes the runs tracked earlier for it (and the
  fold runs of earlier trainings), after the new ones are complete, so the experiment holds
  exactly one parent per cell and one run per fold.
"""

from __future__ import annotations

import contextlib
import glob
import json
import logging
import math
import os
import re
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import tenacity
from filelock import FileLock

from reranklab.config import flatten
from reranklab.errors import ConfigError, FormatError
from reranklab.io import atomic_path, read_json, write_json
from reranklab.tracking.source import source_tags
from reranklab.tracking.tags import (
    CELL_TAG,
    PARENT_TAG,
    fold_tags,
    pick_fold_run,
    recorded_run_id,
    run_tags,
)
from reranklab.tracking.ui import EXPERIMENT_KIND_TAG, MACHINE_LEARNING_KIND, runs_link

if TYPE_CHECKING:
    from mlflow import MlflowClient

T = TypeVar("T")
log = logging.getLogger(__name__)

MAX_PARAM_LENGTH = 6000  # MLflow's limit on a param value
PARAMS_PER_BATCH = 100  # MLflow's limit on params (and tags) per log_batch call
METRICS_PER_BATCH = 1000
LOCK_RETRIES = 12
_QUIET_LOGGERS = (
    "alembic",
    "alembic.runtime.migration",
    "mlflow.store.db.utils",
    "mlflow.store.db",
)


def cell_key(cell: Mapping[str, Any]) -> str:
    """``wikiqa/pointwise/L256`` (or ``wikiqa/bm25`` for a first-stage cell): run name and tag."""
    from reranklab.settings.cell import Cell

    length = cell.get("max_length")
    # One seed of a study with a seed axis (``seeds``): its own runs, nested under the cell's.
    seed = int(cell["seed"]) if cell.get("seeds") and length is not None else None
    return Cell(cell["dataset"], cell["variant"], None if length is None else int(length), seed).key


def metric_name(name: str) -> str:
    """An MLflow-legal metric name: ``"P@1"`` -> ``"P_at_1"``, ``"nDCG@10"`` -> ``"nDCG_at_10"``.

    Example:
        >>> metric_name("MRR@10"), metric_name("train.loss (last)")
        ('MRR_at_10', 'train.loss _last_')
    """
    return re.sub(r"[^A-Za-z0-9_.\- /]", "_", name.replace("@", "_at_"))


def sqlite_path(tracking_uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` tracking URI (relative to the working directory
    unless it has four slashes), or None for any other store.

    Example:
        >>> sqlite_path("sqlite:///results/mlflow.db"), sqlite_path("http://mlflow:5000")
        (PosixPath('results/mlflow.db'), None)
    """
    prefix = "sqlite:///"
    if not tracking_uri.startswith(prefix):
        return None
    path = tracking_uri[len(prefix) :].split("?", 1)[0]
    return Path(path) if path and path != ":memory:" else None


def param_values(params: Mapping[str, Any]) -> dict[str, str]:
    """Flatten nested settings to MLflow params: ``"training.epochs": "2"``.

    Lists and dicts become JSON, ``None`` becomes ``"None"``; values are cut to MLflow's 6000
    characters (marked with a trailing ``...``).

    Example:
        >>> param_values({"protocol": {"metrics": ["P@1", "MAP"], "depth": None}})
        {'protocol.metrics': '["P@1", "MAP"]', 'protocol.depth': 'None'}
    """
    out: dict[str, str] = {}
    for key, value in flatten(params).items():
        text = (
            json.dumps(value, sort_keys=True)
            if isinstance(value, list | tuple | dict)
            else str(value)
        )
        if len(text) > MAX_PARAM_LENGTH:
            text = text[: MAX_PARAM_LENGTH - 3] + "..."
        out[re.sub(r"[^A-Za-z0-9_.\- /]", "_", key)] = text
    return out


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def stats_metrics(stats: Any, prefix: str = "train.") -> list[tuple[str, float, int]]:
    """Numbers of a training-statistics JSON as ``(name, value, step)`` metrics.

    Scalars give one value (step 0); nested dicts are flattened with dots; a list of numbers,
    or of dicts of numbers (e.g. a log history with an optional ``step``/``epoch``), gives a
    metric history. Strings and other values are left to the artifact.

    Example:
        >>> stats_metrics({"loss": [0.9, 0.5], "examples": 40, "encoder": "bert"})
        [('train.loss', 0.9, 0), ('train.loss', 0.5, 1), ('train.examples', 40.0, 0)]
    """
    out: list[tuple[str, float, int]] = []
    if not isinstance(stats, Mapping):
        return out
    for key, value in stats.items():
        name = metric_name(f"{prefix}{key}")
        if isinstance(value, Mapping):
            out += stats_metrics(value, prefix=f"{name}.")
        elif isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, Mapping):
                    step = _number(item.get("step"))
                    for sub, number in item.items():
                        if sub != "step" and _number(number) is not None:
                            out.append(
                                (
                                    metric_name(f"{name}.{sub}"),
                                    float(number),
                                    int(step) if step is not None else index,
                                )
                            )
                elif _number(item) is not None:
                    out.append((name, float(item), index))
        elif _number(value) is not None:
            out.append((name, float(value), 0))
    return out


VALIDATION_KEYS = ("best_epoch", "chosen_epoch", "epochs_trained", "best_score")


def validation_metrics(stats: Any, prefix: str = "dev.") -> list[tuple[str, float, int]]:
    """The dev curve of a training job that validated (``train_stats.json``'s ``validation``).

    Every dev measure of every epoch becomes a point of a metric history whose step is the
    epoch (``dev.MAP`` at steps 1, 2, ...), so MLflow draws the validation curve; the chosen
    and best epochs and the number trained are single values. Nothing for a job that did not
    validate.

    Example:
        >>> stats = {"validation": {"history": [{"epoch": 1, "step": 8, "MAP": 0.5, "P@1": 0.25},
        ...                                     {"epoch": 2, "step": 16, "MAP": 0.6, "P@1": 0.5}],
        ...                         "best_epoch": 2, "chosen_epoch": 2}}
        >>> validation_metrics(stats)[:3]
        [('dev.MAP', 0.5, 1), ('dev.P_at_1', 0.25, 1), ('dev.MAP', 0.6, 2)]
        >>> validation_metrics(stats)[-2:]
        [('dev.best_epoch', 2.0, 0), ('dev.chosen_epoch', 2.0, 0)]
    """
    block = stats.get("validation") if isinstance(stats, Mapping) else None
    if not isinstance(block, Mapping):
        return []
    out: list[tuple[str, float, int]] = []
    for item in block.get("history") or []:
        epoch = int(item["epoch"])
        out += [
            (metric_name(f"{prefix}{name}"), float(value), epoch)
            for name, value in item.items()
            if name not in ("epoch", "step") and _number(value) is not None
        ]
    return out + [
        (metric_name(f"{prefix}{key}"), float(block[key]), 0)
        for key in VALIDATION_KEYS
        if _number(block.get(key)) is not None
    ]


def _training_metrics(stats: Any) -> list[tuple[str, float, int]]:
    # The validation block goes in as the dev curve (step = epoch), not as flattened train.* values.
    plain = (
        {k: v for k, v in stats.items() if k != "validation"}
        if isinstance(stats, Mapping)
        else stats
    )
    return stats_metrics(plain) + validation_metrics(stats)


def _quiet_mlflow() -> None:
    # Schema creation logs every alembic migration at INFO on a fresh database.
    for name in _QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


def _is_locked(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if "database is locked" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def abandon_runs(client: Any, run_ids: Iterable[str]) -> None:
    """Mark runs FAILED and delete them, best effort (used when logging a cell fails part-way)."""
    for run_id in run_ids:
        with contextlib.suppress(Exception):
            _retry(client.set_terminated, run_id, "FAILED")
            _retry(client.delete_run, run_id)


def _retry(call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call, retrying with back-off (0.1 s, doubling, at most 5 s) while sqlite answers
    "database is locked"; any other error, or the last attempt's, is raised as it is."""
    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception(_is_locked),
        stop=tenacity.stop_after_attempt(LOCK_RETRIES),
        wait=tenacity.wait_exponential(multiplier=0.1, max=5.0),
        reraise=True,
    )
    return retrying(call, *args, **kwargs)


@contextlib.contextmanager
def store_lock(tracking_uri: str) -> Iterator[None]:
    """Hold an exclusive lock on ``<db>.lock`` for a sqlite store; no-op for other stores."""
    db = sqlite_path(tracking_uri)
    if db is None:
        yield
        return
    db.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(db.with_name(db.name + ".lock")):
        yield


def open_store(tracking_uri: str) -> MlflowClient:
    """A client of the store at ``tracking_uri``; a sqlite store is first made whole.

    Call it under :func:`store_lock`. A missing (or empty) sqlite database is created by MLflow
    in a temporary file beside it, renamed onto it when complete: a job killed meanwhile leaves
    only that temporary file, which the next call removes. A database that MLflow cannot open
    and that holds no more rows in any table than a new store does (a creation killed
    part-way, e.g. ``table secrets already exists``) is re-created in place, with a warning.

    Raises:
        Exception: MLflow's error for a store it cannot open that holds runs or other data
            (an old schema, say: ``mlflow db upgrade``), or for a file that is not a database.

    Example:
        >>> with store_lock("sqlite:///results/mlflow.db"):  # doctest: +SKIP
        ...     client = open_store("sqlite:///results/mlflow.db")
    """
    _quiet_mlflow()
    from mlflow import MlflowClient

    db = sqlite_path(tracking_uri)
    if db is None:
        return MlflowClient(tracking_uri=tracking_uri)
    for leftover in db.parent.glob(f".{glob.escape(db.name)}.*.tmp*"):
        leftover.unlink(missing_ok=True)  # from a creation killed part-way (we hold the lock)
    if not db.is_file() or db.stat().st_size == 0:
        for stale in _side_files(db):
            stale.unlink(missing_ok=True)  # a journal of no database must not roll one back
        with atomic_path(db) as tmp:
            _create_store(tmp, db)
        return MlflowClient(tracking_uri=tracking_uri)
    try:
        return MlflowClient(tracking_uri=tracking_uri)
    except Exception as exc:
        if _is_locked(exc):
            raise
        error = exc
    fd, name = tempfile.mkstemp(prefix=f".{db.name}.", suffix=".tmp", dir=db.parent)
    os.close(fd)
    fresh = Path(name)
    try:
        _create_store(fresh, db)
        if not _holds_only_creation_rows(db, fresh):
            raise error
        log.warning(
            "%s: left half-created by a killed job (%s); creating it again", db, _first_line(error)
        )
        # sqlite's backup API copies the new store in as one transaction, keeping the file (and
        # so the connections MLflow's engine cache keeps open to it) in place.
        with (
            contextlib.closing(sqlite3.connect(fresh)) as source,
            contextlib.closing(sqlite3.connect(db)) as target,
        ):
            source.backup(target)
    finally:
        for path in (fresh, *_side_files(fresh)):
            path.unlink(missing_ok=True)
    return MlflowClient(tracking_uri=tracking_uri)


def _side_files(db: Path) -> list[Path]:
    return [db.with_name(db.name + suffix) for suffix in ("-journal", "-wal", "-shm")]


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _create_store(path: Path, db: Path) -> None:
    """Let MLflow create its schema (every migration) in the sqlite file ``path``."""
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    # The default experiment's artifacts go beside the database, like ours (ensure_experiment).
    store = SqlAlchemyStore(
        f"sqlite:///{path.absolute()}", str((db.parent / "mlartifacts").absolute())
    )
    store.engine.dispose()  # closes its connections before the file is renamed or removed


def _row_counts(db: Path) -> dict[str, int]:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        tables = [
            name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        ]
        return {
            name: conn.execute(f'SELECT COUNT(*) FROM "{name}"').fetchone()[0] for name in tables
        }


def _holds_only_creation_rows(db: Path, fresh: Path) -> bool:
    """Whether ``db`` holds no more rows in any table than the new store ``fresh`` (no run,
    no experiment but the default one...): nothing a user made is lost by re-creating it."""
    try:
        found = _row_counts(db)
    except sqlite3.DatabaseError:
        return False  # not a database at all: not ours to replace
    created = _row_counts(fresh)
    return all(count <= created.get(table, 0) for table, count in found.items())


def ensure_experiment(client: MlflowClient, name: str, tracking_uri: str) -> str:
    """The id of experiment ``name``, created if needed (artifacts beside a sqlite database).

    The experiment is marked a machine-learning one (``mlflow.experimentKind``, see
    :mod:`reranklab.tracking.ui`) when created, and when found without a kind; a kind set by
    someone else is left as it is.

    Raises:
        ConfigError: if the experiment exists but was deleted.
    """
    from mlflow.exceptions import MlflowException
    from mlflow.protos.databricks_pb2 import RESOURCE_ALREADY_EXISTS, ErrorCode

    experiment = _retry(client.get_experiment_by_name, name)
    if experiment is None:
        db = sqlite_path(tracking_uri)
        location = str((db.parent / "mlartifacts").resolve()) if db is not None else None
        try:
            return _retry(
                client.create_experiment,
                name,
                artifact_location=location,
                tags={EXPERIMENT_KIND_TAG: MACHINE_LEARNING_KIND},
            )
        except MlflowException as exc:
            # Another process created it between our look-up and our create.
            if exc.error_code != ErrorCode.Name(RESOURCE_ALREADY_EXISTS):
                raise
            experiment = _retry(client.get_experiment_by_name, name)
            if experiment is None:
                raise
    if experiment.lifecycle_stage != "active":
        raise ConfigError(
            f"mlflow.experiment: experiment {name!r} ({tracking_uri}) is deleted; restore it "
            f"(mlflow experiments restore --experiment-id {experiment.experiment_id}) or choose another name"
        )
    if EXPERIMENT_KIND_TAG not in experiment.tags:  # made before reranklab set it, or by hand
        _retry(
            client.set_experiment_tag,
            experiment.experiment_id,
            EXPERIMENT_KIND_TAG,
            MACHINE_LEARNING_KIND,
        )
    return experiment.experiment_id


def cell_runs(client: MlflowClient, experiment_id: str, key: str) -> list[Any]:
    """Active runs (parents and children, tracked or logged while training) of the cell ``key``."""
    quoted = key.replace("'", "\\'")
    runs: list[Any] = []
    token = None
    while True:
        page = _retry(
            client.search_runs,
            [experiment_id],
            filter_string=f"tags.`{CELL_TAG}` = '{quoted}'",
            max_results=1000,
            page_token=token,
        )
        runs += list(page)
        token = page.token
        if not token:
            return runs


def _runs_of_cell(client: MlflowClient, experiment_id: str, key: str) -> list[str]:
    """The ids of :func:`cell_runs`."""
    return [run.info.run_id for run in cell_runs(client, experiment_id, key)]


def _log(
    client: MlflowClient,
    run_id: str,
    params: Mapping[str, str],
    metrics: list[tuple[str, float, int]],
    artifacts: list[Path],
) -> None:
    from mlflow.entities import Metric, Param

    items = [Param(k, v) for k, v in params.items()]
    for start in range(0, len(items), PARAMS_PER_BATCH):
        _retry(client.log_batch, run_id, params=items[start : start + PARAMS_PER_BATCH])
    now = int(time.time() * 1000)
    points = [Metric(name, value, now, step) for name, value, step in metrics]
    for start in range(0, len(points), METRICS_PER_BATCH):
        _retry(client.log_batch, run_id, metrics=points[start : start + METRICS_PER_BATCH])
    for path in artifacts:
        _retry(client.log_artifact, run_id, str(path))


def _read_metrics(path: str | os.PathLike[str], keys: tuple[str, ...]) -> dict[str, Any]:
    metrics = read_json(path)
    if not isinstance(metrics, dict) or any(key not in metrics for key in keys):
        raise FormatError(path, None, f"not a metrics file: needs keys {', '.join(keys)}")
    return metrics


def _fold_metrics(metrics: Mapping[str, Any]) -> list[tuple[str, float, int]]:
    out = [(metric_name(k), float(v), 0) for k, v in metrics["aggregate"].items() if v is not None]
    return out + [(k, float(metrics[k]), 0) for k in ("n_queries", "n_excluded")]


def _cell_metrics(metrics: Mapping[str, Any]) -> list[tuple[str, float, int]]:
    out = []
    for group, suffix in (("overall", ""), ("fold_mean", "_fold_mean"), ("fold_std", "_fold_std")):
        out += [
            (metric_name(k) + suffix, float(v), 0)
            for k, v in metrics[group].items()
            if v is not None
        ]
    counts = ("n_queries", "n_excluded", "n_folds")
    return out + [(k, float(metrics[k]), 0) for k in counts if metrics.get(k) is not None]


def write_record(
    out: str | os.PathLike[str],
    tracking_uri: str,
    experiment: str,
    experiment_id: str,
    key: str,
    parent_id: str,
    earlier: Iterable[str],
    **runs: Any,
) -> dict[str, Any]:
    """Write (atomically) and return what a ``track`` job logged where: the step's output file.

    Args:
        out: the ``mlflow.json`` to write.
        tracking_uri, experiment, experiment_id: the store and experiment.
        key: the cell's key.
        parent_id: the cell's run.
        earlier: the runs of the cell this one replaced (deleted).
        runs: the other runs by role (``child_run_ids``, ``seed_run_ids``).
    """
    result = {
        "tracking_uri": tracking_uri,
        "experiment": experiment,
        "experiment_id": experiment_id,
        "cell": key,
        "parent_run_id": parent_id,
        **runs,
        "replaced_run_ids": sorted(earlier),
    }
    write_json(out, result)
    return result


def track_cell(
    cell: dict[str, Any],
    fold_artifacts: list[dict[str, Any]],
    cell_metrics_path: Path,
    cell_run_path: Path,
    tracking_uri: str,
    experiment: str,
    out: Path,
) -> dict[str, Any]:
    """Log a cell and its folds to MLflow and write the run ids to ``out`` (JSON).

    A fold whose training logged its run while it trained (:mod:`reranklab.tracking.live`)
    keeps that run: it is found by its tags (study, dataset, cell, fold, seed; the one its
    ``train_stats.json`` names first) and gets the test measures, the fold's files and the
    cell's other settings, and the cell's run as its parent. A fold without one gets a run
    made here from its ``train_stats.json``, as before training logged live. Every other
    earlier run of the cell (an earlier cell run, fold runs of earlier trainings or tracks) is
    soft-deleted once the new cell run is complete: one cell run, one run per fold.

    Args:
        cell: the resolved cell (:func:`reranklab.config.resolve_cell` or ``first_stage_cell``),
            logged flattened as params of every run.
        fold_artifacts: per fold ``{"fold": k, "run": Path, "metrics": Path,
            "train_stats": Path | None}``; ``metrics`` is an :func:`evaluate_run` JSON.
        cell_metrics_path: the cell's :func:`aggregate_folds` JSON.
        cell_run_path: the cell's concatenated run.
        tracking_uri: e.g. ``sqlite:///results/mlflow.db`` or ``http://host:5000``.
        experiment: experiment name (created if missing).
        out: where the ids go.

    Returns:
        ``{"tracking_uri", "experiment", "experiment_id", "cell", "parent_run_id",
        "child_run_ids": {"fold<k>": id}, "live_run_ids": [fold runs logged while training],
        "ui": the experiment's runs page, "replaced_run_ids": [ids soft-deleted]}``.

    Example:
        >>> track_cell(resolve_cell(config, "wikiqa", "pointwise", 256),
        ...            [{"fold": 0, "run": Path("fold0.run"), "metrics": Path("fold0.json"),
        ...              "train_stats": Path("train_stats.json")}],
        ...            Path("metrics.json"), Path("run.txt"), "sqlite:///results/mlflow.db",
        ...            "wikiqa-bert-base", Path("mlflow.json"))  # doctest: +SKIP
    """
    key = cell_key(cell)
    params = param_values(cell)
    cell_metrics = _read_metrics(
        cell_metrics_path, ("overall", "fold_mean", "fold_std", "n_queries", "n_excluded")
    )
    folds = [_read_fold(fold) for fold in sorted(fold_artifacts, key=lambda f: int(f["fold"]))]
    _check_artifacts(key, cell_run_path, folds)
    source = source_tags("track")

    with store_lock(tracking_uri):
        client = open_store(tracking_uri)
        experiment_id = ensure_experiment(client, experiment, tracking_uri)
        earlier = cell_runs(client, experiment_id, key)
        live = _live_fold_runs(earlier, cell, key, folds, tracking_uri, experiment_id)
        created: list[str] = []
        adopted: dict[str, str | None] = {}  # reused fold run -> the parent it had before
        children: dict[str, str] = {}
        try:
            parent_id = _create_cell_run(client, experiment_id, cell, key, live, source)
            created.append(parent_id)
            _log(
                client,
                parent_id,
                params,
                _cell_metrics(cell_metrics),
                [Path(cell_run_path), Path(cell_metrics_path)],
            )
            for fold in folds:
                fold_params = {**params, "fold": str(fold.index)}
                run = live[fold.index]
                if run is None:
                    child_id = _new_fold_run(
                        client, experiment_id, cell, key, fold, parent_id, fold_params, source
                    )
                    created.append(child_id)
                else:
                    child_id = run.info.run_id
                    adopted[child_id] = run.data.tags.get(PARENT_TAG)
                    _complete_fold_run(client, run, fold, parent_id, fold_params)
                children[f"fold{fold.index}"] = child_id
            _retry(client.set_terminated, parent_id, "FINISHED")
        except BaseException:
            # Leave no half-logged cell behind; the earlier complete runs stay.
            _restore_parents(client, adopted)
            abandon_runs(client, created)
            raise
        replaced = _delete_replaced(client, earlier, adopted)

    return write_record(
        out,
        tracking_uri,
        experiment,
        experiment_id,
        key,
        parent_id,
        replaced,
        child_run_ids=children,
        live_run_ids=sorted(adopted),
        ui=runs_link(tracking_uri, experiment_id),
    )


def _check_artifacts(key: str, cell_run_path: Path, folds: list[_Fold]) -> None:
    """Fail before touching the store when a file the cell's runs log is missing."""
    for path in [cell_run_path] + [p for fold in folds for p in fold.artifacts]:
        if not Path(path).is_file():
            raise FileNotFoundError(f"track {key}: missing artifact {path}")


def _live_fold_runs(
    earlier: list[Any],
    cell: dict[str, Any],
    key: str,
    folds: list[_Fold],
    tracking_uri: str,
    experiment_id: str,
) -> dict[int, Any]:
    """Each fold's run logged while it trained (None for a fold without one), by fold index."""
    # The runs the training jobs logged while they trained: completed, not made again.
    return {
        fold.index: pick_fold_run(
            earlier,
            cell,
            key,
            fold.index,
            recorded_run_id(fold.stats, tracking_uri, experiment_id),
        )
        for fold in folds
    }


def _create_cell_run(
    client: MlflowClient,
    experiment_id: str,
    cell: dict[str, Any],
    key: str,
    live: Mapping[int, Any],
    source: Mapping[str, str],
) -> str:
    """Create the cell's (parent) run and return its id."""
    starts = [run.info.start_time for run in live.values() if run and run.info.start_time]
    parent = _retry(
        client.create_run,
        experiment_id,
        start_time=min(starts) if starts else None,  # the cell began with its training
        run_name=key,
        tags={**source, **run_tags(cell, key, "cell")},
    )
    return parent.info.run_id


def _delete_replaced(
    client: MlflowClient, earlier: list[Any], adopted: Mapping[str, str | None]
) -> list[str]:
    """Soft-delete the cell's earlier runs that the new cell run did not adopt; their ids.

    A run still ``RUNNING`` is one whose job was killed outright (SIGKILL, a node failure):
    it is ended as ``KILLED`` first, so the record says what happened to it.
    """
    replaced = [run for run in earlier if run.info.run_id not in adopted]
    for run in replaced:
        if run.info.status == "RUNNING":
            _retry(client.set_terminated, run.info.run_id, "KILLED")
        _retry(client.delete_run, run.info.run_id)
    return [run.info.run_id for run in replaced]


@dataclass(frozen=True)
class _Fold:
    """What ``track`` logs for one fold: its test measures, its training and its files."""

    index: int
    test_metrics: list[tuple[str, float, int]]
    artifacts: list[Path]  # the fold's run and metrics, and train_stats.json when trained
    stats_path: Path | None
    stats: Any


def _read_fold(fold: Mapping[str, Any]) -> _Fold:
    stats_path = Path(fold["train_stats"]) if fold.get("train_stats") else None
    metrics = _read_metrics(fold["metrics"], ("aggregate", "n_queries", "n_excluded"))
    return _Fold(
        index=int(fold["fold"]),
        test_metrics=_fold_metrics(metrics),
        artifacts=[Path(fold["run"]), Path(fold["metrics"])] + ([stats_path] if stats_path else []),
        stats_path=stats_path,
        stats=read_json(stats_path) if stats_path and stats_path.is_file() else None,
    )


def _training_times(fold: _Fold) -> tuple[int | None, int | None]:
    """(start, end) in ms of a fold's training, from its train_stats.json (written at its end)."""
    if fold.stats_path is None or not isinstance(fold.stats, Mapping):
        return None, None
    end = fold.stats_path.stat().st_mtime
    seconds = _number(fold.stats.get("seconds"))
    start = end - seconds if seconds is not None else None
    return (int(start * 1000) if start is not None else None), int(end * 1000)


def _new_fold_run(
    client: MlflowClient,
    experiment_id: str,
    cell: Mapping[str, Any],
    key: str,
    fold: _Fold,
    parent_id: str,
    params: Mapping[str, str],
    source: Mapping[str, str],
) -> str:
    """A fold run made after the fact (the training logged none): test and training metrics."""
    start, end = _training_times(fold)
    child = _retry(
        client.create_run,
        experiment_id,
        start_time=start,
        run_name=f"fold{fold.index}",
        tags={**source, **fold_tags(cell, key, fold.index), PARENT_TAG: parent_id},
    )
    try:
        metrics = fold.test_metrics + (_training_metrics(fold.stats) if fold.stats else [])
        _log(client, child.info.run_id, params, metrics, fold.artifacts)
        _retry(client.set_terminated, child.info.run_id, "FINISHED", end_time=end)
    except BaseException:
        abandon_runs(client, [child.info.run_id])
        raise
    return child.info.run_id


def _complete_fold_run(
    client: MlflowClient, run: Any, fold: _Fold, parent_id: str, params: Mapping[str, str]
) -> None:
    """Add the test measures, the fold's files and the cell's settings to a fold's live run.

    Its training (curves, dev measures, model, train_stats.json) is in it already. MLflow
    params cannot change: only those the training did not log are added.
    """
    run_id = run.info.run_id
    missing = {k: v for k, v in params.items() if k not in run.data.params}
    files = [path for path in fold.artifacts if path != fold.stats_path]
    _log(client, run_id, missing, fold.test_metrics, files)
    _retry(client.set_tag, run_id, PARENT_TAG, parent_id)
    if run.info.status != "FINISHED":  # recorded by train_stats.json, so its model was saved
        _retry(client.set_terminated, run_id, "FINISHED", end_time=_training_times(fold)[1])


def _restore_parents(client: MlflowClient, adopted: Mapping[str, str | None]) -> None:
    """Give reused fold runs back the parent they had (best effort, after a failed track)."""
    for run_id, parent in adopted.items():
        with contextlib.suppress(Exception):
            if parent:
                _retry(client.set_tag, run_id, PARENT_TAG, parent)
            else:
                _retry(client.delete_tag, run_id, PARENT_TAG)
