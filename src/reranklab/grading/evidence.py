"""What a finished study leaves for grading: its summary rows, per-query values and epoch speeds.

Grading a number needs a summary row; grading a claim needs more: each row's per-query values
(a paired test) or its training speed (a ratio). Two layouts hold them:

- a study's ``results/`` as the workflow leaves it: ``summary.json`` whose rows name their
  ``metrics_path`` (``results/cells/<dataset>/<cell>/metrics.json``, with ``per_query``), and
  ``results/models/<dataset>/<cell>/**/train_stats.json`` (``epoch_speed``);
- a *recorded* study (:func:`record`, ``reranklab record``): a small folder that CI grades
  without re-running, e.g. ``studies/results/minilm-cpu/<study>/``, holding ``summary.json``,
  ``per_query.json`` (``{row key: {qid: {measure: value}}}``), ``timings.json`` (``{row key:
  [{epoch, steps, seconds, batches_per_s}, ...]}``), ``random_order.json`` (``{row key: {qid:
  {measure: expected value of a random ordering of the row's candidates}}}``),
  ``training.json`` (``{row key: [{fold, seed, fine_tuned, steps, epochs, loss_start,
  loss_end, loss_curve}, ...]}``: did each model's training loss fall; start and end are the
  means of the curve's first and last tenth), ``per_seed.json`` (``{row key:
  {seed: {measure: value}}}``, the cells run with several seeds), ``per_seed_query.json``
  (``{row key: {seed: {qid: {measure: value}}}}``) and ``provenance.json`` (commit, command,
  machine, wall time, and what else ran on the machine meanwhile). The summary's
  ``first_stages`` (or, for a study recorded before it had them, ``first_stages.json`` beside
  it) names each dataset's test queries that were given a planted answer.

A row missing from ``random_order.json`` or ``training.json`` (or a folder recorded before they
existed) has them *not recorded*: :class:`Evidence` answers ``None``, and the grading says so
rather than assume anything.

:func:`load_evidence` reads either into :class:`Evidence`.
"""

from __future__ import annotations

import os
import platform
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from hashlib import sha256
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from statistics import fmean
from typing import Any

from reranklab.errors import FormatError
from reranklab.io import atomic_write_text, read_json, write_json

PER_QUERY, TIMINGS, PROVENANCE, SUMMARY = (
    "per_query.json",
    "timings.json",
    "provenance.json",
    "summary.json",
)
RANDOM_ORDER, TRAINING, PER_SEED = ("random_order.json", "training.json", "per_seed.json")
# Each seed's per-query values (cells with a seed axis); and, for a summary written before the
# summary kept its first stages, the first-stage records made afterwards (first_stages.json).
PER_SEED_QUERY, FIRST_STAGES = "per_seed_query.json", "first_stages.json"
# Row fields that only locate files of the run that wrote them: a recorded summary drops them.
LOCAL_FIELDS = ("metrics_path", "summary")


@dataclass
class Evidence:
    """The rows of one or more summaries, with each row's per-query values and epoch speeds.

    Args:
        rows: summary rows (``study``, ``dataset``, ``variant``, ``key``, measures, ...).
        per_query: ``{id(row): {qid: {measure: value}}}`` where known.
        timings: ``{id(row): [epoch speed, ...]}`` where known (over every fold and seed).
        provenance: each summary's ``provenance.json`` by path, where recorded.
        random: ``{id(row): {qid: {measure: expected value of a random ordering}}}``.
        training: ``{id(row): [{fold, seed, fine_tuned, steps, epochs, loss_start, loss_end}]}``
            (an empty list: the row trained no model).
        per_seed: ``{id(row): {seed: {measure: value}}}`` for cells run with several seeds.
        per_seed_query: ``{id(row): {seed: {qid: {measure: value}}}}`` where recorded.
        planted: ``{id(row): qids}``: the test queries of the row's dataset given a planted
            answer (``inject_relevant``); an empty set where none was, absent where unknown.
    """

    rows: list[dict[str, Any]]
    per_query: dict[int, dict[str, dict[str, float]]] = field(default_factory=dict)
    timings: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    provenance: dict[str, dict[str, Any]] = field(default_factory=dict)
    random: dict[int, dict[str, dict[str, float]]] = field(default_factory=dict)
    training: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    per_seed: dict[int, dict[str, dict[str, float]]] = field(default_factory=dict)
    per_seed_query: dict[int, dict[str, dict[str, dict[str, float]]]] = field(default_factory=dict)
    planted: dict[int, frozenset[str]] = field(default_factory=dict)

    def planted_queries(self, row: Mapping[str, Any]) -> frozenset[str] | None:
        """The row's test queries given a planted answer (``None``: not recorded)."""
        return self.planted.get(id(row))

    def seed_queries(self, row: Mapping[str, Any]) -> dict[str, dict[str, dict[str, float]]]:
        """Each seed's per-query values (``{}``: one seed, or not recorded)."""
        return self.per_seed_query.get(id(row), {})

    def queries(self, row: Mapping[str, Any]) -> dict[str, dict[str, float]] | None:
        return self.per_query.get(id(row))

    def speeds(self, row: Mapping[str, Any]) -> list[dict[str, Any]]:
        return self.timings.get(id(row), [])

    def random_order(self, row: Mapping[str, Any]) -> dict[str, dict[str, float]] | None:
        """Each query's expected values under a random ordering (``None``: not recorded)."""
        return self.random.get(id(row))

    def trainings(self, row: Mapping[str, Any]) -> list[dict[str, Any]] | None:
        """Each model's training record of the row (``None``: not recorded)."""
        return self.training.get(id(row))

    def seed_values(self, row: Mapping[str, Any]) -> dict[str, dict[str, float]]:
        """Each seed's overall values (``{}`` for a row run with one seed)."""
        return self.per_seed.get(id(row), {})


def _resolve(path: str, summary: Path) -> Path:
    # metrics_path is relative to the study folder (the summary's parent's parent), never to the
    # working directory: a checkout's own results/ (the quick start's) holds files of the same
    # names, and reading those recorded a study's BM25 row with the quick start's 100 queries.
    candidate = Path(path)
    if candidate.is_absolute():
        return candidate
    return summary.parent.parent / candidate


def _epoch_speed(stats: Mapping[str, Any]) -> list[dict[str, Any]]:
    if stats.get("epoch_speed"):
        epochs = [dict(epoch) for epoch in stats["epoch_speed"]]
        if stats.get("encoder_pass_seconds") is not None:
            # a lite model's first epoch also holds its encoder pass (the encode rule's)
            for epoch in epochs:
                if epoch.get("epoch") == 1:
                    epoch["encoder_pass_seconds"] = stats["encoder_pass_seconds"]
        return epochs
    steps, seconds = stats.get("steps"), stats.get("train_seconds")
    if not steps or not seconds:
        return []
    return [{"epoch": None, "steps": steps, "seconds": seconds, "batches_per_s": steps / seconds}]


def live_timings(metrics_path: Path) -> list[dict[str, Any]]:
    """The epoch speeds of every fold and seed of the cell whose metrics file is given.

    ``results/cells/<dataset>/<cell>/metrics.json`` -> ``results/models/<dataset>/<cell>/``'s
    ``train_stats.json`` files (none for a first stage or a model without training).
    """
    cell_dir = metrics_path.parent
    models = cell_dir.parent.parent.parent / "models" / cell_dir.parent.name / cell_dir.name
    speeds: list[dict[str, Any]] = []
    for stats_path in sorted(models.glob("**/train_stats.json")):
        stats = read_json(stats_path)
        for epoch in _epoch_speed(stats):
            speeds.append({**epoch, "fold": stats.get("fold"), "device": stats.get("device")})
    return speeds


# The share of a loss curve averaged at each end to tell whether the loss fell. One point is the
# mean of a few steps (3 of 16 pairs in the MiniLM studies): too noisy to compare alone, and a
# falling curve (epoch means 0.64 -> 0.50) read as "did not fall" from its last window.
LOSS_WINDOW = 0.1


def _losses(stats: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """The training loss near the start and at the end: the mean of the first and of the last
    tenth of the loss curve's points (at least one each; every point the mean of a window of
    steps), else the first and last epoch's mean loss.

    Example:
        A falling curve whose very last window spikes (20 points: the tenth is 2 of them):

        >>> losses = [0.70, 0.68] + [0.60] * 16 + [0.40, 0.93]
        >>> [round(x, 3) for x in _losses({"loss_curve": list(enumerate(losses))})]
        [0.69, 0.665]
        >>> _losses({"loss_curve": [[1, 0.7]], "epoch_losses": [0.64, 0.5]})
        (0.64, 0.5)
    """
    curve = [point[1] for point in stats.get("loss_curve") or [] if point[1] is not None]
    if len(curve) < 2:
        curve = [loss for loss in stats.get("epoch_losses") or [] if loss is not None]
    if len(curve) < 2:
        return None, None
    width = max(1, int(len(curve) * LOSS_WINDOW))
    return fmean(curve[:width]), fmean(curve[-width:])


def live_training(metrics_path: Path) -> list[dict[str, Any]]:
    """Each fold (and seed) model's training record of the cell whose metrics file is given."""
    cell_dir = metrics_path.parent
    models = cell_dir.parent.parent.parent / "models" / cell_dir.parent.name / cell_dir.name
    records = []
    for stats_path in sorted(models.glob("**/train_stats.json")):
        stats = read_json(stats_path)
        start, end = _losses(stats)
        records.append(
            {
                "fold": stats.get("fold", stats_path.parent.name),
                "seed": stats.get("seed"),
                "fine_tuned": stats.get("fine_tuned", True),
                "steps": stats.get("steps"),
                "epochs": stats.get("epochs"),
                "train_queries": stats.get("train_queries"),
                "loss_start": start,
                "loss_end": end,
                # Kept so that a recorded study's check can be recomputed (LOSS_WINDOW).
                "loss_curve": stats.get("loss_curve"),
            }
        )
    return records


def _recorded(folder: Path, name: str) -> dict[str, Any] | None:
    return read_json(folder / name) if (folder / name).is_file() else None


def _load_live(row: dict[str, Any], path: Path, evidence: Evidence) -> None:
    """A workflow's row: its cell's metrics file and model folders."""
    if not row.get("metrics_path"):
        return
    metrics_path = _resolve(str(row["metrics_path"]), path)
    if metrics_path.is_file():
        metrics = read_json(metrics_path)
        evidence.per_query[id(row)] = metrics.get("per_query", {})
        if metrics.get("random"):
            evidence.random[id(row)] = metrics["random"]
        if len(metrics.get("per_seed") or {}) >= 2:
            evidence.per_seed[id(row)] = metrics["per_seed"]
        if len(metrics.get("per_seed_query") or {}) >= 2:
            evidence.per_seed_query[id(row)] = metrics["per_seed_query"]
    if row.get("first_stage"):
        evidence.training[id(row)] = []
    else:
        evidence.timings[id(row)] = live_timings(metrics_path)
        evidence.training[id(row)] = live_training(metrics_path)


def _load_one(path: Path, evidence: Evidence) -> None:
    from reranklab.grading.regress import load_summaries

    rows = load_summaries([path])
    folder = path.parent
    recorded_queries = _recorded(folder, PER_QUERY)
    recorded = {
        name: _recorded(folder, name)
        for name in (TIMINGS, RANDOM_ORDER, TRAINING, PER_SEED, PER_SEED_QUERY)
    }
    first_stages = read_json(path).get("first_stages") or _recorded(folder, FIRST_STAGES) or {}
    for row in rows:
        if row.get("dataset") in first_stages:
            planted = first_stages[row["dataset"]].get("planted") or []
            evidence.planted[id(row)] = frozenset(planted)
    if (folder / PROVENANCE).is_file():
        evidence.provenance[str(path)] = read_json(folder / PROVENANCE)
    for row in rows:
        key = row.get("key")
        if recorded_queries is None:
            _load_live(row, path, evidence)
            evidence.rows.append(row)
            continue
        if key in recorded_queries:
            evidence.per_query[id(row)] = recorded_queries[key]
        if recorded[TIMINGS] is not None:
            evidence.timings[id(row)] = list(recorded[TIMINGS].get(key, []))
        if recorded[RANDOM_ORDER] is not None and key in recorded[RANDOM_ORDER]:
            evidence.random[id(row)] = recorded[RANDOM_ORDER][key]
        if recorded[TRAINING] is not None and (key in recorded[TRAINING] or row.get("first_stage")):
            evidence.training[id(row)] = list(recorded[TRAINING].get(key, []))
        if recorded[PER_SEED] is not None and key in recorded[PER_SEED]:
            evidence.per_seed[id(row)] = recorded[PER_SEED][key]
        if recorded[PER_SEED_QUERY] is not None and key in recorded[PER_SEED_QUERY]:
            evidence.per_seed_query[id(row)] = recorded[PER_SEED_QUERY][key]
        evidence.rows.append(row)


def load_evidence(paths: Iterable[str | os.PathLike[str]]) -> Evidence:
    """Read summaries (a study's ``results/summary.json`` or a recorded folder's).

    Args:
        paths: ``summary.json`` files, or folders that hold one.

    Raises:
        FormatError: a file that is missing or not a summary.
    """
    evidence = Evidence(rows=[])
    for given in paths:
        path = Path(given)
        _load_one(path / SUMMARY if path.is_dir() else path, evidence)
    return evidence


def _git_commit(cwd: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip() or None


def _machine(devices: Iterable[str]) -> dict[str, Any]:
    # The report layer never loads torch: the training device comes from train_stats.json.
    try:
        torch_version = version("torch")
    except PackageNotFoundError:
        torch_version = None
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "devices": sorted(set(devices)),
        "torch": torch_version,
        "python": platform.python_version(),
    }


def record(
    summary: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    command: str,
    wall_seconds: float | None = None,
    shared: str | None = None,
    study_file: str | os.PathLike[str] | None = None,
    commit: str | None = None,
    looks: int = 1,
    looks_note: str | None = None,
) -> list[Path]:
    """Write a study's results as a recorded folder (see the module docstring).

    Args:
        summary: the finished study's ``results/summary.json``.
        out_dir: the folder to write (created; its files are replaced).
        command: the command that produced the results (for the reader who regenerates them).
        wall_seconds: how long that command took.
        shared: what else ran on the machine meanwhile (None: it had the machine to itself).
        study_file: the configuration file it ran with: its path and sha256 are kept, so that
            the record can be checked against the file at its start commit.
        commit: the commit the study started from (default: the working directory's now).
        looks: how many times the study's claims have been graded on these test questions,
            this record included (an earlier record on the same or a held subset counts): the
            claims grade it at alpha / looks (:func:`reranklab.grading.claims.study_alphas`).
        looks_note: what the earlier looks were (kept beside ``looks``).

    Returns:
        The files written.

    Raises:
        FormatError: the summary is missing, or a row's per-query values are.
    """
    summary = Path(summary)
    evidence = load_evidence([summary])
    document = read_json(summary)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    per_query: dict[str, Any] = {}
    timings: dict[str, Any] = {}
    random_order: dict[str, Any] = {}
    training: dict[str, Any] = {}
    per_seed: dict[str, Any] = {}
    per_seed_query: dict[str, Any] = {}
    for row in evidence.rows:
        key = row["key"]
        values = evidence.queries(row)
        if values is None:
            raise FormatError(
                row.get("metrics_path") or summary, None, "no per-query values for this row"
            )
        if row.get("n_queries") is not None and len(values) != row["n_queries"]:
            raise FormatError(
                row.get("metrics_path") or summary,
                None,
                f"{len(values)} per-query values for a row of {row['n_queries']} queries ({key})",
            )
        per_query[key] = values
        if evidence.speeds(row):
            timings[key] = evidence.speeds(row)
        # Kept only where the study computed them: a row left out reads as "not recorded".
        if evidence.random_order(row) is not None:
            random_order[key] = evidence.random_order(row)
        if evidence.trainings(row):
            training[key] = evidence.trainings(row)
        if evidence.seed_values(row):
            per_seed[key] = evidence.seed_values(row)
        if evidence.seed_queries(row):
            per_seed_query[key] = evidence.seed_queries(row)
    document["rows"] = [
        {k: v for k, v in row.items() if k not in LOCAL_FIELDS} for row in document.get("rows", [])
    ]
    provenance = {
        "study": document.get("title"),
        "commit": commit or _git_commit(Path.cwd()),
        "command": command,
        "wall_seconds": wall_seconds,
        "machine_shared": shared,
        "recorded": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": _machine(
            str(epoch["device"])
            for speeds in timings.values()
            for epoch in speeds
            if epoch.get("device")
        ),
    }
    if looks > 1 or looks_note:  # a note on one look says why a re-run is no new one
        provenance["looks"] = looks
        provenance["looks_note"] = looks_note
    if study_file is not None:
        provenance["study_file"] = str(study_file)
        provenance["study_file_sha256"] = sha256(Path(study_file).read_bytes()).hexdigest()
    written = []
    for name, content in (
        (SUMMARY, document),
        (PER_QUERY, per_query),
        (TIMINGS, timings),
        (RANDOM_ORDER, random_order),
        (TRAINING, training),
        (PER_SEED, per_seed),
        (PER_SEED_QUERY, per_seed_query),
        (PROVENANCE, provenance),
    ):
        write_json(out / name, content)
        written.append(out / name)
    readme = out / "README.md"
    atomic_write_text(
        readme,
        f"# {document.get('title')}: recorded results\n\n"
        f"Regenerate with `{command}`"
        + (f" ({wall_seconds / 60:.0f} min)" if wall_seconds else "")
        + (f"; the machine was shared: {shared}" if shared else "")
        + ". Grade with `reranklab regress --summary "
        f"{out}`.\n",
    )
    return [*written, readme]
