"""A fold's MLflow run, logged by its training job while it trains.

:class:`LiveRun` is the ``callback`` of :func:`reranklab.training.trainer.train_model` (it
implements its ``TrainingCallback`` hooks). From the start of the job to its end the fold's
run holds:

- the job's real start and end times and its status (``FINISHED``, ``FAILED``, ``KILLED``);
- the settings the job trained with (params), the identity tags ``track`` finds the run by
  (:mod:`reranklab.tracking.tags`), the encoder, MLflow's source tags (``reranklab train``,
  the git commit: :mod:`reranklab.tracking.source`);
- the data as MLflow dataset inputs (:mod:`mlflow.data`): the prepared dataset (name, and a
  digest of its files' sha256), the fold's training examples and, when the job validates, its
  dev set, each with the files' full sha256 in its profile;
- ``train.loss`` and ``train.learning_rate`` at every optimiser step, ``dev.<measure>`` at
  every epoch of a job that validates (step = epoch, as ``track`` always logged them), the
  training statistics at the end;
- ``system/...`` metrics (CPU, memory, disk, network; GPUs with ``nvidia-ml-py``) every
  ``interval`` seconds, when ``psutil`` is installed (silently none otherwise);
- the saved model under the ``model/`` artifacts: copied whole up to ``model_copy_max_bytes``,
  else its small files copied and its large ones (the weights) listed with their size in
  ``model/linked_files.json`` and left where they are (``reranklab.model_dir`` tag), so a
  study of BERT-base folds does not store every model twice.

Costs the training loop nothing: the hooks only append numbers the loop already holds on the
CPU (the step's loss, which it reads for its log, and the scheduler's learning rate) to a
queue. One background thread does every MLflow write, in batches (every ``interval`` seconds,
``log_batch``), under the store's lock (:func:`~reranklab.tracking.mlflow_tracking.store_lock`)
with retries, through :class:`mlflow.MlflowClient` with the run's id (never the fluent API's
process-global active run). An MLflow failure never fails the training: live logging stops
with a warning, and the cell's ``track`` job makes the fold's run after the fact instead.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import signal
import tempfile
import threading
import time
import warnings
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from reranklab.io.digest import sha256_of
from reranklab.tracking.mlflow_tracking import (
    METRICS_PER_BATCH,
    PARAMS_PER_BATCH,
    _retry,
    ensure_experiment,
    metric_name,
    open_store,
    param_values,
    stats_metrics,
    store_lock,
    validation_metrics,
)
from reranklab.tracking.source import source_tags
from reranklab.tracking.tags import MODEL_DIR_TAG, STATS_KEY, TAG_PREFIX, fold_tags

log = logging.getLogger(__name__)

STOP_JOIN_S = 10.0  # a stopped job waits this long for its logging thread, then exits
INTERVAL_S = 10.0  # between two writes (and two system samples): MLflow's own sampling interval
MODEL_COPY_MAX_BYTES = 64 << 20  # a tiny or lite model is copied; a BERT's weights are linked
SMALL_FILE_BYTES = 4 << 20  # configs, vocabularies, heads, stats: copied even when linking
DIGEST_CHARS = 10  # MLflow's advice: digests of at most 10 characters
LINKED_FILES = "linked_files.json"
# Left out of the end-of-training metrics: logged live already, or not numbers worth a chart.
_LIVE_STATS = ("loss_curve", "validation", STATS_KEY)


@dataclass(frozen=True)
class DatasetSpec:
    """One dataset input of the run.

    Args:
        name: the dataset's name in MLflow (``wikiqa``, ``wikiqa/fold0/examples``).
        files: the files it is made of; the digest is computed from their sha256.
        context: MLflow's ``mlflow.data.context`` tag (``training``, ``validation``).
        source: where it is (a folder or file); default the first file's folder.
    """

    name: str
    files: Sequence[str | os.PathLike[str]]
    context: str = "training"
    source: str | os.PathLike[str] | None = None


def dataset_digest(files: Sequence[str | os.PathLike[str]]) -> tuple[str, dict[str, str]]:
    """A short digest of files (by name and content) and each file's sha256.

    Example:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> _ = (folder / "queries.tsv").write_text("q1\\twhat\\n")
        >>> digest, files = dataset_digest([folder / "queries.tsv"])
        >>> len(digest), list(files)
        (10, ['queries.tsv'])
    """
    shas = {Path(path).name: sha256_of(path) for path in files}
    text = json.dumps(sorted(shas.items()))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:DIGEST_CHARS], shas


def _dataset_input(spec: DatasetSpec) -> Any:
    """The MLflow dataset input of ``spec`` (built through :mod:`mlflow.data`)."""
    from mlflow.data.dataset_source_registry import resolve_dataset_source
    from mlflow.data.meta_dataset import MetaDataset
    from mlflow.entities import Dataset, DatasetInput, InputTag

    digest, shas = dataset_digest(spec.files)
    where = Path(spec.source) if spec.source is not None else Path(spec.files[0]).parent
    with warnings.catch_warnings():  # "can be interpreted in multiple ways": both are local
        warnings.simplefilter("ignore")
        source = resolve_dataset_source(str(where.absolute()))
    config = MetaDataset(source, name=spec.name, digest=digest).to_dict()
    profile = json.dumps({"files": shas}, sort_keys=True)
    entity = Dataset(
        name=config["name"],
        digest=config["digest"],
        source_type=config["source_type"],
        source=config["source"],
        profile=profile,
    )
    return DatasetInput(entity, tags=[InputTag("mlflow.data.context", spec.context)])


def system_monitors() -> list[Any]:
    """MLflow's system-metric monitors that work here: none without ``psutil``; GPUs only
    with ``nvidia-ml-py`` and a GPU."""
    try:
        from mlflow.system_metrics.metrics.cpu_monitor import CPUMonitor
        from mlflow.system_metrics.metrics.disk_monitor import DiskMonitor
        from mlflow.system_metrics.metrics.network_monitor import NetworkMonitor
    except ImportError:  # psutil is not installed: no system metrics, as MLflow does
        return []
    monitors: list[Any] = [CPUMonitor(), DiskMonitor(), NetworkMonitor()]
    with contextlib.suppress(Exception):  # no nvidia-ml-py, no GPU, no driver
        from mlflow.system_metrics.metrics.gpu_monitor import GPUMonitor

        monitors.append(GPUMonitor())
    return monitors


@contextlib.contextmanager
def _signals_held() -> Iterator[list[int]]:
    """Hold SIGTERM and SIGINT back for the duration; then deliver the first that came.

    Yields the list the held signals are appended to. Delivered to the handler that was
    installed before (the train step's raises KeyboardInterrupt; the default one ends the
    process). Outside the main thread (where Python cannot set handlers) nothing is held.
    """
    held: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield held
        return
    previous: dict[int, Any] = {}

    def hold(signum: int, frame: Any) -> None:
        held.append(signum)

    try:
        for signum in (signal.SIGTERM, signal.SIGINT):
            previous[signum] = signal.signal(signum, hold)
        yield held
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
    if held:
        _deliver(held[0], previous.get(held[0]))


def _deliver(signum: int, handler: Any) -> None:
    if callable(handler):
        handler(signum, None)
    elif handler != signal.SIG_IGN:  # the default action (or a handler set outside Python)
        os.kill(os.getpid(), signum)


def _files_under(root: Path) -> list[tuple[Path, int]]:
    return sorted((path, path.stat().st_size) for path in root.rglob("*") if path.is_file())


@dataclass
class LiveRun:
    """The MLflow run of one training job (a fold of a cell), logged while it trains.

    Use it as a context manager around the training; it is the training's ``callback``.

    Args:
        tracking_uri: the store (``sqlite:///results/mlflow.db``, ``http://host:5000``).
        experiment: the experiment's name (created if missing).
        cell: the job's resolved cell (its ``--spec``, resolved): its settings become the run's params
            (top-level keys set to null by the rule are left out) and name the run's tags.
        key: the cell's key (:func:`~reranklab.tracking.mlflow_tracking.cell_key`, with the
            seed of a seed axis), the ``reranklab.cell`` tag ``track`` finds the run by.
        fold: the fold index.
        study: the study's name (the train job's cell leaves it out).
        datasets: the dataset inputs (:class:`DatasetSpec`).
        interval: seconds between two writes and two system-metric samples.
        system_metrics: sample system metrics (when ``psutil`` is installed).
        model_copy_max_bytes: a saved model up to this size is copied into the run whole.
        small_file_bytes: of a larger model, the files up to this size are copied (the others
            are listed in ``model/linked_files.json``).

    Example:
        >>> with LiveRun("sqlite:///results/mlflow.db", "study", cell, "wikiqa/pointwise/L256",
        ...              0, study="study") as run:  # doctest: +SKIP
        ...     stats = train_model(cell, examples, queries, corpus, out_dir, callback=run)
    """

    tracking_uri: str
    experiment: str
    cell: Mapping[str, Any]
    key: str
    fold: int
    study: str | None = None
    datasets: Sequence[DatasetSpec] = ()
    interval: float = INTERVAL_S
    system_metrics: bool = True
    model_copy_max_bytes: int = MODEL_COPY_MAX_BYTES
    small_file_bytes: int = SMALL_FILE_BYTES
    run_id: str | None = field(default=None, init=False)
    experiment_id: str | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.started_ms = int(time.time() * 1000)  # the job's start, not the run's creation
        self._queue: deque[tuple[str, float, int, int]] = deque()  # appends are thread-safe
        self._stop = threading.Event()
        self._created = threading.Event()
        self._write_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._client: Any = None
        self._failed = False
        self._model_dir: Path | None = None
        self._system_step = 0
        self._ended = False  # finish() has ended the run (or there was none to end)

    # -- the run's life -------------------------------------------------------------------

    def start(self) -> LiveRun:
        """Create the run and start logging, in the background (returns at once)."""
        self._thread = threading.Thread(target=self._work, name="mlflow-live-run", daemon=True)
        self._thread.start()
        return self

    def finish(self, status: str = "FINISHED") -> None:
        """Write what is left, log the model, and end the run with ``status``.

        Once only (a second call does nothing). SIGTERM and SIGINT are held back while the run
        is being ended and delivered after it: the run is never left RUNNING by a signal that
        lands mid-way, and one that came ends it ``KILLED`` (not ``FINISHED``, since the job
        that logged it is being stopped).
        """
        try:
            self._finish_holding_signals(status)
        except KeyboardInterrupt:
            if not self._ended:  # the signal came before it could be held back
                self._finish_holding_signals("KILLED")
            raise

    def _finish_holding_signals(self, status: str) -> None:
        if self._ended:
            return
        with _signals_held() as held:
            self._end(status, held)

    def _end(self, status: str, held: list[int]) -> None:
        if self._thread is not None:
            self._stop.set()
            # A job being stopped waits for the logging thread a bounded time: one stuck
            # creating its run (a store that does not answer) must not keep the process alive
            # after scancel; the thread is a daemon and dies with the process. Stopped means a
            # signal held back now, or one that came before and unwound the job (KILLED).
            stopping = bool(held) or status == "KILLED"
            self._thread.join(timeout=STOP_JOIN_S if stopping else None)
            if self._thread.is_alive():
                log.warning(
                    "MLflow: the run's logging thread did not stop within %s s of the signal; "
                    "leaving it (a run it creates is ended KILLED when the cell's `track` replaces it)",
                    STOP_JOIN_S,
                )
                self._ended = True
                return
            self._thread = None
        if self.run_id is None:
            self._ended = True
            return
        if self._failed:  # best effort: a run whose logging broke must not stay RUNNING
            with contextlib.suppress(Exception), self._store():
                _retry(self._client.set_terminated, self.run_id, "KILLED" if held else "FAILED")
            self._ended = True
            return
        try:
            with self._store():
                if self._model_dir is not None and status == "FINISHED" and not held:
                    self._log_model(self._model_dir)
                # A signal held back while the model was logged: the job is being stopped.
                ended = "KILLED" if held else status
                _retry(self._client.set_terminated, self.run_id, ended)
                if held and ended != "KILLED":  # it came while the run was being ended
                    _retry(self._client.set_terminated, self.run_id, "KILLED")
        except Exception as exc:
            self._give_up(exc)
        self._ended = True

    def __enter__(self) -> LiveRun:
        try:
            return self.start()
        except BaseException:  # a signal while starting: `with` calls no __exit__ then
            self.finish("KILLED")
            raise

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        try:
            status = "FINISHED"
            if kind is not None:
                status = "KILLED" if issubclass(kind, KeyboardInterrupt) else "FAILED"
            self.finish(status)
        except KeyboardInterrupt:  # a signal before finish held them back
            self.finish("KILLED")  # does nothing when the run is ended already
            raise

    # -- the training's hooks (TrainingCallback): append to the queue, nothing else ----------

    def on_train_begin(self, info: Mapping[str, Any]) -> None:
        """The loop is set up; ``restored_losses`` are the steps a resumed job already ran."""
        now = int(time.time() * 1000)
        for step, loss in enumerate(info.get("restored_losses") or (), start=1):
            self._queue.append(("train.loss", float(loss), step, now))
        for name in ("total_steps", "steps_per_epoch", "warmup_steps", "resumed_from_step"):
            if isinstance(info.get(name), int):
                self._queue.append((f"train.{name}", float(info[name]), 0, now))

    def on_step(self, step: int, epoch: int, loss: float, learning_rate: float) -> None:
        """One optimiser step done (``loss`` and ``learning_rate`` are Python floats)."""
        if self._failed:  # nothing will write them: do not let the queue grow
            return
        now = int(time.time() * 1000)
        self._queue.append(("train.loss", loss, step, now))
        self._queue.append(("train.learning_rate", learning_rate, step, now))

    def on_epoch_end(self, epoch: int, step: int, dev: Mapping[str, Any] | None) -> None:
        """Epoch ``epoch`` (1-based) done; ``dev``: its dev measures when the job validates."""
        if not dev:
            return
        now = int(time.time() * 1000)
        for name, value, at in validation_metrics({"validation": {"history": [dev]}}):
            self._queue.append((name, value, at, now))

    def on_train_end(self, stats: dict[str, Any]) -> None:
        """Training done, before the model is saved: records the run in ``stats``
        (``train_stats.json``), so that ``track`` completes this very run."""
        now = int(time.time() * 1000)
        self._created.wait(timeout=60.0)  # created within seconds of the job's start
        if self.run_id is not None and not self._failed:
            stats[STATS_KEY] = {
                "tracking_uri": self.tracking_uri,
                "experiment_id": self.experiment_id,
                "run_id": self.run_id,
            }
        plain = {k: v for k, v in stats.items() if k not in _LIVE_STATS}
        for name, value, at in stats_metrics(plain):
            self._queue.append((name, value, at, now))
        # The chosen and best epochs (the per-epoch measures went in as they came).
        for name, value, at in validation_metrics(stats):
            if at == 0:
                self._queue.append((name, value, at, now))

    def on_saved(self, out_dir: Path) -> None:
        """The model is saved in ``out_dir``: logged when the run finishes."""
        self._model_dir = Path(out_dir)

    # -- the writer thread ---------------------------------------------------------------------

    @contextlib.contextmanager
    def _store(self) -> Iterator[None]:
        # One writer at a time in this process, then one process at a time on a sqlite store.
        with self._write_lock, store_lock(self.tracking_uri):
            yield

    def _work(self) -> None:
        try:
            self._create()
        except Exception as exc:
            self._give_up(exc)
        finally:
            self._created.set()
        if self._failed:
            return
        try:
            self._log_datasets()
            monitors = system_monitors() if self.system_metrics else []
            self._sample(monitors, keep=False)  # CPU % counts from the previous call
            while not self._stop.wait(self.interval):
                self._sample(monitors)
                self._flush()
            self._sample(monitors)
            self._flush()
        except Exception as exc:
            self._give_up(exc)

    def _create(self) -> None:
        from mlflow.entities import Param

        cell = {
            **self.cell,
            "study": self.study if self.study is not None else self.cell.get("study"),
        }
        tags = {
            **source_tags("train"),
            **fold_tags(cell, self.key, self.fold, logged_by="train"),
            f"{TAG_PREFIX}pid": str(os.getpid()),
        }
        # The rule sets settings that do not change the model to null (study, protocol, ...):
        # not params of the run (track adds the cell's real ones).
        params = param_values({k: v for k, v in self.cell.items() if v is not None})
        params["fold"] = str(self.fold)
        with self._store():
            self._client = open_store(self.tracking_uri)
            self.experiment_id = ensure_experiment(self._client, self.experiment, self.tracking_uri)
            run = _retry(
                self._client.create_run,
                self.experiment_id,
                start_time=self.started_ms,
                tags=tags,
                run_name=f"fold{self.fold}",
            )
            self.run_id = run.info.run_id
            items = [Param(k, v) for k, v in params.items()]
            for start in range(0, len(items), PARAMS_PER_BATCH):
                _retry(
                    self._client.log_batch,
                    self.run_id,
                    params=items[start : start + PARAMS_PER_BATCH],
                )
        log.info("MLflow: logging this job to run %s (%s)", self.run_id, self.tracking_uri)

    def _log_datasets(self) -> None:
        # Hashed here, in the background: a large collection takes seconds to read.
        inputs = [_dataset_input(spec) for spec in self.datasets if spec.files]
        if inputs:
            with self._store():
                _retry(self._client.log_inputs, self.run_id, datasets=inputs)

    def _sample(self, monitors: Sequence[Any], keep: bool = True) -> None:
        values: dict[str, float] = {}
        for monitor in monitors:
            try:
                monitor.collect_metrics()
                values.update(monitor.aggregate_metrics())
            except Exception as exc:  # a monitor that breaks mid-run (GPU driver...) is dropped
                log.debug("system metrics: %s failed (%s)", type(monitor).__name__, exc)
            finally:
                monitor.clear_metrics()
        if not keep or not values:
            return
        now = int(time.time() * 1000)
        for name, value in values.items():
            self._queue.append((f"system/{name}", float(value), self._system_step, now))
        self._system_step += 1

    def _flush(self) -> None:
        from mlflow.entities import Metric

        points = []
        while self._queue:
            name, value, step, stamp = self._queue.popleft()
            points.append(Metric(metric_name(name), value, stamp, step))
        if not points:
            return
        with self._store():
            for start in range(0, len(points), METRICS_PER_BATCH):
                _retry(
                    self._client.log_batch,
                    self.run_id,
                    metrics=points[start : start + METRICS_PER_BATCH],
                )

    def _log_model(self, model_dir: Path) -> None:
        """The saved model under ``model/``: whole, or its small files and a list of the rest."""
        files = _files_under(model_dir)
        total = sum(size for _, size in files)
        _retry(self._client.set_tag, self.run_id, MODEL_DIR_TAG, str(model_dir.absolute()))
        if total <= self.model_copy_max_bytes:
            _retry(self._client.log_artifacts, self.run_id, str(model_dir), "model")
            return
        linked = []
        for path, size in files:
            relative = path.relative_to(model_dir)
            if size <= self.small_file_bytes:
                folder = Path("model", relative.parent).as_posix()
                _retry(self._client.log_artifact, self.run_id, str(path), folder)
            else:
                linked.append({"path": relative.as_posix(), "bytes": size})
        listing = {
            "model_dir": str(model_dir.absolute()),
            "bytes": total,
            "why": f"the model is {total / 2**20:.0f} MiB (over {self.model_copy_max_bytes / 2**20:.0f} MiB):"
            " its large files stay in model_dir",
            "linked": linked,
        }
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / LINKED_FILES
            path.write_text(json.dumps(listing, indent=2) + "\n", encoding="utf-8")
            _retry(self._client.log_artifact, self.run_id, str(path), "model")

    def _give_up(self, exc: BaseException) -> None:
        log.debug("MLflow: live logging failed", exc_info=exc)
        if not self._failed:
            log.warning(
                "MLflow: live logging of fold %d of %s stopped (%s: %s); training goes on, and"
                " the cell's track step will record the fold",
                self.fold,
                self.key,
                type(exc).__name__,
                exc,
            )
        self._failed = True
        self._queue.clear()


def training_datasets(
    dataset: str,
    fold: int,
    queries: str | os.PathLike[str],
    corpus: str | os.PathLike[str],
    examples: str | os.PathLike[str],
    dev_files: Sequence[str | os.PathLike[str]] = (),
) -> list[DatasetSpec]:
    """The dataset inputs of a ``train`` job: the prepared dataset, the fold's examples, its dev.

    The prepared dataset is named after the dataset and digested from its prepared files
    (queries, corpus and the ``qrels.txt`` beside them), so every job of a dataset shows the
    same digest, and a re-prepared dataset a new one.

    Example:
        >>> [s.name for s in training_datasets("wikiqa", 0, "q.tsv", "c.parquet", "e.parquet")]
        ['wikiqa', 'wikiqa/fold0/examples']
    """
    folder = Path(corpus).parent
    qrels = folder / "qrels.txt"
    prepared = [Path(queries), Path(corpus)] + ([qrels] if qrels.is_file() else [])
    specs = [
        DatasetSpec(dataset, prepared, "training", source=folder),
        DatasetSpec(f"{dataset}/fold{fold}/examples", [Path(examples)], "training"),
    ]
    if dev_files:
        specs.append(DatasetSpec(f"{dataset}/fold{fold}/dev", list(dev_files), "validation"))
    return specs
