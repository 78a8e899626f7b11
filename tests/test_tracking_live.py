"""Live MLflow runs: a training job logs its fold's run while it trains; track completes it.

Real training (the tiny BERT), a real sqlite store, real processes; no MLflow mocks.
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import torch
import yaml

from reranklab.evaluation import aggregate_folds, evaluate_run
from reranklab.evaluation.protocol import default_scoring
from reranklab.io import read_json, write_json, write_qrels, write_run
from reranklab.resources import STUDY as STUDY_TEMPLATE
from reranklab.tracking.live import LiveRun, dataset_digest, training_datasets
from reranklab.tracking.mlflow_tracking import ensure_experiment, open_store, track_cell
from reranklab.tracking.ui import EXPERIMENT_KIND_TAG, MACHINE_LEARNING_KIND, runs_link
from reranklab.training.trainer import train_model
from reranklab.training.validation import DevSet
from tests.conftest import assert_group_gone, tool_env
from tests.helpers_models import (
    CORPUS,
    QIDS,
    QUERIES,
    build_toy_bert,
    candidates,
    model_spec,
    negatives,
    positive,
    toy_cell,
)

mlflow = pytest.importorskip("mlflow")
from mlflow import MlflowClient  # noqa: E402
from mlflow.entities import ViewType  # noqa: E402

EXPERIMENT = "live-exp"
STUDY = "toy-study"
KEY = "toy/pointwise/L32"
WAIT_S = 600
# 8 queries x 4 point-wise examples, batch 4: 8 steps an epoch; a rate at which losses move.
TRAINING = {"epochs": 2, "learning_rate": 3e-3, "deterministic": True, "threads": 1}
TRUE = {qid: {positive(qid): 1} for qid in QIDS}


@pytest.fixture(autouse=True)
def _restore_determinism():
    # train_model(deterministic=True) switches torch globally; leave other tests as they were.
    enabled, cublas = (
        torch.are_deterministic_algorithms_enabled(),
        os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
    )
    yield
    torch.use_deterministic_algorithms(enabled)
    if cublas is None:
        os.environ.pop("CUBLAS_WORKSPACE_CONFIG", None)


def _examples(path: Path, qids: list[str]) -> Path:
    rows: dict[str, list[Any]] = {"qid": [], "pid": [], "label": []}
    for qid in qids:
        for pid, label in [(positive(qid), 1)] + [(pid, 0) for pid in negatives(qid)]:
            rows["qid"].append(qid)
            rows["pid"].append(pid)
            rows["label"].append(label)
    pd.DataFrame(rows).to_parquet(path, index=False)
    return path


@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> dict[str, Path]:
    """A prepared toy dataset (data/toy/...), two folds' examples and the tiny BERT."""
    work = tmp_path_factory.mktemp("live")
    data = work / "data" / "toy"
    data.mkdir(parents=True)
    (data / "queries.tsv").write_text("".join(f"{q}\t{t}\n" for q, t in QUERIES.items()))
    pd.DataFrame({"pid": list(CORPUS), "text": list(CORPUS.values())}).to_parquet(
        data / "corpus.parquet", index=False
    )
    write_qrels(data / "qrels.txt", TRUE)
    return {
        "work": work,
        "data": data,
        "bert": build_toy_bert(work / "bert"),
        "fold0": _examples(work / "fold0.parquet", QIDS),  # 8 steps an epoch
        "fold1": _examples(work / "fold1.parquet", QIDS[:4]),  # other losses: 4 steps an epoch
    }


def _cell(toy, **training: Any) -> dict[str, Any]:
    # As the train rule passes it: the study and the protocol left out (set to null).
    cell = toy_cell("pointwise", toy["bert"], **{**TRAINING, **training})
    return {**cell, "study": None, "protocol": None, "retrieval": None}


def _full_cell(toy) -> dict[str, Any]:
    # As the track rule passes it: the whole resolved cell.
    cell = toy_cell("pointwise", toy["bert"], **TRAINING)
    return {**cell, "study": STUDY, "protocol": {"metrics": ["MAP", "MRR"], "first_stage": "bm25"}}


def _store(root: Path) -> str:
    return f"sqlite:///{root / 'results' / 'mlflow.db'}"


def _history(client: MlflowClient, run_id: str, name: str) -> list[tuple[int, float]]:
    return sorted((m.step, m.value) for m in client.get_metric_history(run_id, name))


def _active(client: MlflowClient, experiment_id: str) -> list:
    return client.search_runs([experiment_id], run_view_type=ViewType.ACTIVE_ONLY, max_results=1000)


def _artifacts(client: MlflowClient, run_id: str, folder: str | None = None) -> list[str]:
    return sorted(Path(f.path).name for f in client.list_artifacts(run_id, folder))


def _git_head() -> str | None:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=30
        )
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


class Probe:
    """The live run as the training's callback, looking at the store at the end of epoch 1."""

    def __init__(self, live: LiveRun) -> None:
        self.live = live
        self.seen: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.live, name)

    def on_epoch_end(self, epoch: int, step: int, dev: Any) -> None:
        self.live.on_epoch_end(epoch, step, dev)
        if epoch != 1:
            return
        # Not before the run exists: the store is then created (alembic migrations are not
        # thread-safe within one process; the training's own threads never touch MLflow).
        assert self.live._created.wait(timeout=120)
        client = MlflowClient(tracking_uri=self.live.tracking_uri)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the writer thread flushes every 0.1 s
            if self.live.run_id and len(_history(client, self.live.run_id, "dev.MAP")) == 1:
                break
            time.sleep(0.1)
        run = client.get_run(self.live.run_id)
        self.seen = {
            "status": run.info.status,
            "loss_steps": [s for s, _ in _history(client, self.live.run_id, "train.loss")],
            "dev": _history(client, self.live.run_id, "dev.MAP"),
        }


@pytest.fixture(scope="module")
def trained(toy, tmp_path_factory) -> dict[str, Any]:
    """Fold 0 trained in this process with validation, logged live (a write every 0.1 s)."""
    root = tmp_path_factory.mktemp("store")
    uri = _store(root)
    cell = _cell(toy, validation={"measure": "MAP"})
    dev = DevSet(list(QIDS), candidates(), TRUE, default_scoring(), "fold0")
    data = toy["data"]
    live = LiveRun(
        uri,
        EXPERIMENT,
        cell,
        KEY,
        0,
        study=STUDY,
        datasets=training_datasets(
            "toy", 0, data / "queries.tsv", data / "corpus.parquet", toy["fold0"]
        ),
        interval=0.1,
    )
    probe = Probe(live)
    before = int(time.time() * 1000)
    with live:
        stats = train_model(
            cell,
            toy["fold0"],
            QUERIES,
            CORPUS,
            root / "model",
            threads=1,
            progress=False,
            dev=dev,
            callback=probe,
        )
    after = int(time.time() * 1000)
    return {
        "root": root,
        "uri": uri,
        "stats": stats,
        "run_id": live.run_id,
        "seen": probe.seen,
        "before": before,
        "after": after,
    }


def test_the_fold_run_is_logged_while_training(trained, toy):
    client = MlflowClient(tracking_uri=trained["uri"])
    run_id, stats = trained["run_id"], trained["stats"]
    # At the end of epoch 1, while the job was still training, its run already held the first
    # epoch's 8 steps and its dev measure.
    seen = trained["seen"]
    assert seen["status"] == "RUNNING"
    assert seen["loss_steps"][:8] == list(range(1, 9))
    assert seen["dev"] == [(1, pytest.approx(stats["validation"]["history"][0]["MAP"]))]

    run = client.get_run(run_id)
    assert run.info.status == "FINISHED" and run.info.run_name == "fold0"
    # Real times: from the job's start to its end, not a second at track time.
    assert run.info.start_time <= trained["before"] + 1000
    assert trained["after"] - 5000 <= run.info.end_time <= trained["after"] + 1000
    assert run.info.end_time - run.info.start_time >= stats["train_seconds"] * 1000

    # Every step's loss (16 steps: the stats' curve has one point a step) and learning rate.
    losses = _history(client, run_id, "train.loss")
    assert [s for s, _ in losses] == list(range(1, 17))
    assert [v for _, v in losses] == pytest.approx([v for _, v in stats["loss_curve"]])
    rates = _history(client, run_id, "train.learning_rate")
    assert [s for s, _ in rates] == list(range(1, 17)) and rates[-1][1] == pytest.approx(0.0)
    assert max(v for _, v in rates) == pytest.approx(3e-3, rel=0.2)
    dev = [(e["epoch"], e["MAP"]) for e in stats["validation"]["history"]]
    assert _history(client, run_id, "dev.MAP") == [(e, pytest.approx(v)) for e, v in dev]
    metrics = run.data.metrics
    assert metrics["train.final_loss"] == pytest.approx(stats["final_loss"])
    assert metrics["dev.chosen_epoch"] == stats["validation"]["chosen_epoch"]
    if sys.modules.get("psutil") or _has("psutil"):
        assert "system/cpu_utilization_percentage" in metrics

    params, tags = run.data.params, run.data.tags
    assert params["variant"] == "pointwise" and params["fold"] == "0"
    assert params["training.learning_rate"] == "0.003"
    assert "study" not in params and "protocol" not in params  # null in the job's settings
    assert tags["reranklab.cell"] == KEY and tags["reranklab.fold"] == "0"
    assert tags["reranklab.study"] == STUDY and tags["reranklab.seed"] == "1"
    assert tags["reranklab.logged_by"] == "train" and tags["reranklab.role"] == "fold"
    assert tags["reranklab.encoder"] == str(toy["bert"])
    assert tags["mlflow.source.name"] == "reranklab train"
    assert tags.get("mlflow.source.git.commit") == _git_head()
    assert "mlflow.parentRunId" not in tags  # track sets it

    # The data, as MLflow dataset inputs: the prepared dataset's digest is its files'.
    data = toy["data"]
    inputs = {d.dataset.name: d for d in run.inputs.dataset_inputs}
    assert sorted(inputs) == ["toy", "toy/fold0/examples"]
    digest, files = dataset_digest(
        [data / "queries.tsv", data / "corpus.parquet", data / "qrels.txt"]
    )
    assert inputs["toy"].dataset.digest == digest
    assert json.loads(inputs["toy"].dataset.profile)["files"] == files
    assert {t.key: t.value for t in inputs["toy"].tags} == {"mlflow.data.context": "training"}

    # The model (tiny: copied whole), and the run named in its train_stats.json.
    model = trained["root"] / "model"
    assert tags["reranklab.model_dir"] == str(model.absolute())
    assert set(_artifacts(client, run_id, "model")) == {p.name for p in model.iterdir()}
    recorded = read_json(model / "train_stats.json")["mlflow"]
    assert recorded == {
        "tracking_uri": trained["uri"],
        "experiment_id": run.info.experiment_id,
        "run_id": run_id,
    }
    experiment = client.get_experiment(run.info.experiment_id)
    assert experiment.tags[EXPERIMENT_KIND_TAG] == MACHINE_LEARNING_KIND


def _has(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


QRELS = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}, "q4": {"d": 0}}
FOLD_RUNS = [
    {"q1": {"a": 2.0, "z": 1.0}, "q2": {"z": 2.0, "b": 1.0}},  # MRR 3/4
    {"q3": {"y": 2.0, "c": 1.0}, "q4": {"d": 1.0}},  # MRR 1/2 (q4 excluded)
]


def _fold_files(root: Path, stats: list[Path | None]) -> tuple[list[dict], Path, Path]:
    """The folds' test runs and metrics and the aggregated cell, as the workflow writes them."""
    root.mkdir(parents=True, exist_ok=True)
    folds, runs, metrics = [], [], []
    for k, stats_path in enumerate(stats):
        run_path, metrics_path = root / f"fold{k}.run", root / f"fold{k}.json"
        write_run(run_path, FOLD_RUNS[k], tag="toy")
        write_json(metrics_path, evaluate_run(FOLD_RUNS[k], QRELS))
        runs.append(run_path)
        metrics.append(metrics_path)
        folds.append(
            {"fold": k, "run": run_path, "metrics": metrics_path, "train_stats": stats_path}
        )
    aggregate_folds(runs, metrics, QRELS, 1, root / "run.txt", root / "metrics.json")
    return folds, root / "metrics.json", root / "run.txt"


def test_track_completes_the_live_fold_run_and_never_duplicates(trained, toy, tmp_path):
    uri, live_id = trained["uri"], trained["run_id"]
    # Fold 1 was trained without live logging (a model from before, or log_training off).
    old_stats = tmp_path / "fold1" / "train_stats.json"
    write_json(old_stats, {"loss": [0.9, 0.5], "seconds": 30.0, "examples": 16})
    folds, cell_metrics, cell_run = _fold_files(
        tmp_path / "cell", [trained["root"] / "model" / "train_stats.json", old_stats]
    )
    first = track_cell(
        _full_cell(toy), folds, cell_metrics, cell_run, uri, EXPERIMENT, tmp_path / "m1.json"
    )
    assert first["child_run_ids"]["fold0"] == live_id and first["live_run_ids"] == [live_id]
    assert first["ui"] == runs_link(uri, first["experiment_id"])
    assert first["ui"].endswith(
        f"/#/experiments/{first['experiment_id']}/runs?workflowType=machine_learning"
    )

    client = MlflowClient(tracking_uri=uri)
    live = client.get_run(live_id)
    assert live.data.tags["mlflow.parentRunId"] == first["parent_run_id"]
    assert live.data.metrics["MRR"] == pytest.approx(0.75)  # the test measures, added
    assert len(_history(client, live_id, "train.loss")) == 16  # the curve, not logged again
    assert live.data.params["study"] == STUDY  # the cell's settings the job did not have
    assert live.data.params["protocol.first_stage"] == "bm25"
    assert _artifacts(client, live_id) == ["fold0.json", "fold0.run", "model"]
    made = client.get_run(first["child_run_ids"]["fold1"])
    assert made.data.tags["reranklab.logged_by"] == "track"
    assert _history(client, made.info.run_id, "train.loss") == [(0, 0.9), (1, 0.5)]
    # Its times come from its train_stats.json: written at the end of 30 s of training.
    assert made.info.end_time - made.info.start_time == pytest.approx(30_000, abs=2)
    parent = client.get_run(first["parent_run_id"])
    assert parent.info.start_time == live.info.start_time  # the cell began with its training
    assert parent.data.tags["mlflow.source.name"] == "reranklab track"

    # Track again (the job re-ran): the same live run, a new cell run, nothing duplicated.
    second = track_cell(
        _full_cell(toy), folds, cell_metrics, cell_run, uri, EXPERIMENT, tmp_path / "m2.json"
    )
    assert second["child_run_ids"]["fold0"] == live_id
    assert sorted(second["replaced_run_ids"]) == sorted(
        [first["parent_run_id"], first["child_run_ids"]["fold1"]]
    )
    runs = _active(client, second["experiment_id"])
    fold_runs = [r for r in runs if r.data.tags.get("reranklab.role") == "fold"]
    assert sorted(r.data.tags["reranklab.fold"] for r in fold_runs) == ["0", "1"]
    assert all(r.data.tags["mlflow.parentRunId"] == second["parent_run_id"] for r in fold_runs)
    assert len(runs) == 3


def _train_command(toy, uri: str, fold: int, study: str = STUDY) -> list[str]:
    data = toy["data"]
    return [
        "reranklab",
        "train",
        "--examples",
        str(toy[f"fold{fold}"]),
        "--queries",
        str(data / "queries.tsv"),
        "--corpus",
        str(data / "corpus.parquet"),
        "--out-dir",
        str(Path(uri.removeprefix("sqlite:///")).parent / f"model{fold}"),
        "--threads",
        "1",
        "--tracking-uri",
        uri,
        "--experiment",
        EXPERIMENT,
        "--study",
        study,
        "--cell-key",
        KEY,
        "--fold",
        str(fold),
        "--spec",
        model_spec(_cell(toy)),
    ]


def _env() -> dict[str, str]:
    env = tool_env()
    env["RERANKLAB_GPU_BINDING"] = "0"
    return env


def test_parallel_training_jobs_log_into_one_store_and_track_reuses_their_runs(toy, tmp_path):
    uri = _store(tmp_path)  # no store yet: the jobs race to create it and the experiment
    jobs = [
        subprocess.Popen(
            _train_command(toy, uri, fold),
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for fold in (0, 1)
    ]
    for job in jobs:
        output, _ = job.communicate(timeout=WAIT_S)
        assert job.returncode == 0, output[-3000:]
        assert "MLflow: logging this job to run" in output

    results = tmp_path / "results"
    stats = [read_json(results / f"model{k}" / "train_stats.json") for k in (0, 1)]
    client = MlflowClient(tracking_uri=uri)
    assert [e.name for e in client.search_experiments()].count(EXPERIMENT) == 1
    for k, fold_stats in enumerate(stats):
        run_id = fold_stats["mlflow"]["run_id"]
        run = client.get_run(run_id)
        assert run.info.status == "FINISHED" and run.data.tags["reranklab.fold"] == str(k)
        # Each run holds its own job's losses, every step of them: nothing lost or mixed.
        losses = _history(client, run_id, "train.loss")
        assert losses == [(s, pytest.approx(v)) for s, v in fold_stats["loss_curve"]]
    assert stats[0]["steps"] == 16 and stats[1]["steps"] == 8

    folds, cell_metrics, cell_run = _fold_files(
        tmp_path / "cell", [results / f"model{k}" / "train_stats.json" for k in (0, 1)]
    )
    out = track_cell(
        _full_cell(toy), folds, cell_metrics, cell_run, uri, EXPERIMENT, tmp_path / "mlflow.json"
    )
    assert out["child_run_ids"] == {f"fold{k}": s["mlflow"]["run_id"] for k, s in enumerate(stats)}
    assert len(_active(client, out["experiment_id"])) == 3


def _synthetic_job(args: tuple[str, str, int, int]) -> str:
    """A training job's logging without the training: distinct losses, many batched writes."""
    uri, key, fold, steps = args
    cell = {
        "dataset": "toy",
        "variant": key.split("/")[1],
        "max_length": 32,
        "seed": 1,
        "training": {"encoder": "tiny"},
    }
    with LiveRun(uri, EXPERIMENT, cell, key, fold, study=STUDY, interval=0.02) as live:
        live.on_train_begin({"total_steps": steps, "restored_losses": []})
        for step in range(1, steps + 1):
            live.on_step(step, 1, float(f"{fold}.{step:04d}"), 1e-3)
            if step % 50 == 0:
                time.sleep(0.01)  # let the writer interleave with the other processes
        stats: dict[str, Any] = {"steps": steps}
        live.on_train_end(stats)
    return live.run_id or ""


def test_parallel_logging_processes_never_lose_or_mix_points(tmp_path):
    uri = _store(tmp_path)
    jobs = [
        (uri, f"toy/{variant}/L32", fold, 300)
        for variant in ("pointwise", "bertlets")
        for fold in (0, 1)
    ]
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        run_ids = pool.map(_synthetic_job, jobs)
    client = MlflowClient(tracking_uri=uri)
    assert len(set(run_ids)) == 4 and all(run_ids)
    for (_, key, fold, steps), run_id in zip(jobs, run_ids, strict=True):
        run = client.get_run(run_id)
        assert run.data.tags["reranklab.cell"] == key and run.data.tags["reranklab.fold"] == str(
            fold
        )
        assert run.info.status == "FINISHED"
        assert _history(client, run_id, "train.loss") == [
            (s, float(f"{fold}.{s:04d}")) for s in range(1, steps + 1)
        ]


def test_a_failed_job_leaves_a_failed_run_that_track_replaces(tmp_path, toy):
    uri = _store(tmp_path)
    cell = _cell(toy)
    live = LiveRun(uri, EXPERIMENT, cell, KEY, 0, study=STUDY, interval=0.05)
    with pytest.raises(RuntimeError, match="out of memory"), live:
        live.on_step(1, 1, 0.7, 1e-3)
        raise RuntimeError("out of memory")
    client = MlflowClient(tracking_uri=uri)
    failed = client.get_run(live.run_id)
    assert failed.info.status == "FAILED" and failed.info.end_time is not None
    assert _history(client, live.run_id, "train.loss") == [(1, 0.7)]

    # The job's re-run trained without live logging: track makes fold 0's run, drops the failed.
    stats = tmp_path / "stats" / "train_stats.json"
    write_json(stats, {"loss": [0.5], "seconds": 3.0})
    folds, cell_metrics, cell_run = _fold_files(tmp_path / "cell", [stats])
    out = track_cell(
        _full_cell(toy), folds, cell_metrics, cell_run, uri, EXPERIMENT, tmp_path / "m.json"
    )
    assert out["live_run_ids"] == [] and live.run_id in out["replaced_run_ids"]
    assert client.get_run(live.run_id).info.lifecycle_stage == "deleted"
    assert len(_active(client, out["experiment_id"])) == 2


def test_an_unusable_store_never_fails_training(tmp_path, toy, caplog):
    broken = tmp_path / "results" / "mlflow.db"
    broken.parent.mkdir()
    broken.write_bytes(b"this is not a database, and it holds something" * 100)
    live = LiveRun(f"sqlite:///{broken}", EXPERIMENT, _cell(toy), KEY, 0, study=STUDY)
    with caplog.at_level(logging.WARNING), live:
        live.on_step(1, 1, 0.5, 1e-3)
        stats: dict[str, Any] = {"steps": 1}
        live.on_train_end(stats)
    assert "mlflow" not in stats and live.run_id is None
    assert "live logging of fold 0 of toy/pointwise/L32 stopped" in caplog.text


def test_without_tracking_training_never_imports_mlflow(toy, tmp_path):
    command = _train_command(toy, _store(tmp_path), 1)
    at = command.index("--tracking-uri")
    command = command[:at] + command[at + 8 :]  # no --tracking-uri, --experiment, --study...
    assert "--tracking-uri" not in command and "--spec" in command
    script = (
        "import sys; from reranklab.cli import main; code = main(sys.argv[1:]);"
        " print('mlflow loaded:', 'mlflow' in sys.modules); sys.exit(code)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, *command[1:]],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "mlflow loaded: False" in done.stdout
    model = Path(command[command.index("--out-dir") + 1])
    assert "mlflow" not in read_json(model / "train_stats.json")
    assert not (tmp_path / "results" / "mlflow.db").exists()


def test_an_existing_experiment_is_switched_to_the_runs_view(tmp_path):
    uri = _store(tmp_path)
    (tmp_path / "results").mkdir()
    client = open_store(uri)
    experiment_id = client.create_experiment("made-by-hand")
    assert EXPERIMENT_KIND_TAG not in client.get_experiment(experiment_id).tags
    assert ensure_experiment(client, "made-by-hand", uri) == experiment_id
    assert (
        client.get_experiment(experiment_id).tags[EXPERIMENT_KIND_TAG] == "custom_model_development"
    )
    client.set_experiment_tag(experiment_id, EXPERIMENT_KIND_TAG, "genai_development")
    ensure_experiment(client, "made-by-hand", uri)  # someone's own choice is kept
    assert client.get_experiment(experiment_id).tags[EXPERIMENT_KIND_TAG] == "genai_development"
    assert runs_link(uri, experiment_id) == (
        f"http://127.0.0.1:5000/#/experiments/{experiment_id}/runs?workflowType=machine_learning"
    )
    assert runs_link("http://mlflow:5000/", "7") == (
        "http://mlflow:5000/#/experiments/7/runs?workflowType=machine_learning"
    )


@pytest.mark.integration
def test_the_train_rule_logs_live_unless_log_training_is_off(repo, tmp_path):
    (tmp_path / "Snakefile").write_text((STUDY_TEMPLATE / "Snakefile").read_text())
    (tmp_path / "params.yaml").write_text((repo / "params.yaml").read_text())
    config = {
        "study": "live",
        "datasets": ["sample"],
        "grid": {"variant": ["pointwise"], "max_length": [64]},
        "protocol": {"sample": {"folds": 2}},
    }

    def trains(extra: dict) -> list[str]:
        (tmp_path / "v.yaml").write_text(yaml.safe_dump({**config, **extra}))
        done = subprocess.run(
            [
                "snakemake",
                "--cores",
                "1",
                "--dry-run",
                "--printshellcmds",
                "--configfile",
                "v.yaml",
            ],
            cwd=tmp_path,
            env=tool_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return [line for line in done.stdout.splitlines() if "reranklab train" in line]

    on = trains({})
    assert len(on) == 2 and all(
        "--tracking-uri sqlite:///results/mlflow.db --experiment live --study live"
        " --cell-key sample/pointwise/L64" in c
        for c in on
    )
    assert sorted(c.split("--fold ")[1].split()[0] for c in on) == ["0", "1"]
    off = trains({"mlflow": {"log_training": False}})
    assert len(off) == 2 and not any("--tracking-uri" in c for c in off)


@pytest.mark.integration
def test_a_finished_study_prints_the_link_to_its_runs(repo, tmp_path):
    # The study's Snakefile, and one quick rule to run so that the workflow succeeds.
    (tmp_path / "Snakefile").write_text(
        (STUDY_TEMPLATE / "Snakefile").read_text()
        + '\n\nrule noop:\n    output:\n        touch("noop.done")\n'
    )
    (tmp_path / "params.yaml").write_text((repo / "params.yaml").read_text())
    (tmp_path / "v.yaml").write_text(
        yaml.safe_dump(
            {"study": "live", "datasets": ["sample"], "grid": {"variant": ["pointwise"]}}
        )
    )
    record = {"tracking_uri": "sqlite:///results/mlflow.db", "experiment_id": "3"}
    for first_stage in ("bm25", "pool"):
        write_json(tmp_path / "results" / "cells" / "sample" / first_stage / "mlflow.json", record)
    done = subprocess.run(
        ["snakemake", "--cores", "1", "noop.done", "--configfile", "v.yaml"],
        cwd=tmp_path,
        env=tool_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (
        "MLflow: mlflow ui --backend-store-uri sqlite:///results/mlflow.db --workers 1, then open"
        " http://127.0.0.1:5000/#/experiments/3/runs?workflowType=machine_learning"
    ) in done.stdout + done.stderr


def test_a_resumed_job_logs_its_whole_curve_and_a_large_model_is_linked(tmp_path, toy):
    model = tmp_path / "model"
    (model / "head").mkdir(parents=True)
    (model / "config.json").write_text('{"hidden_size": 8}')
    (model / "head" / "head.json").write_text("{}")
    (model / "model.safetensors").write_bytes(b"w" * 50_000)
    live = LiveRun(
        _store(tmp_path),
        EXPERIMENT,
        _cell(toy),
        KEY,
        0,
        study=STUDY,
        interval=0.05,
        model_copy_max_bytes=20_000,
        small_file_bytes=10_000,
    )
    with live:
        # A job resumed from a checkpoint after step 2: its run still gets the whole curve.
        live.on_train_begin(
            {"total_steps": 3, "resumed_from_step": 2, "restored_losses": [0.9, 0.8]}
        )
        live.on_step(3, 1, 0.7, 1e-3)
        live.on_saved(model)
    client = MlflowClient(tracking_uri=live.tracking_uri)
    assert _history(client, live.run_id, "train.loss") == [(1, 0.9), (2, 0.8), (3, 0.7)]
    assert client.get_run(live.run_id).data.metrics["train.resumed_from_step"] == 2
    assert _artifacts(client, live.run_id, "model") == ["config.json", "head", "linked_files.json"]
    assert _artifacts(client, live.run_id, "model/head") == ["head.json"]
    listing = json.loads(
        Path(
            client.download_artifacts(live.run_id, "model/linked_files.json", str(tmp_path))
        ).read_text()
    )
    assert listing["model_dir"] == str(model.absolute())
    assert listing["linked"] == [{"path": "model.safetensors", "bytes": 50_000}]
    assert client.get_run(live.run_id).data.tags["reranklab.model_dir"] == str(model.absolute())


def test_a_training_stopped_by_sigterm_ends_its_live_run_killed(toy, tmp_path):
    """Snakemake stopping a job, scancel and a preemption send SIGTERM: the train step unwinds
    (as on Ctrl-C) and ends its live run KILLED instead of leaving it RUNNING for ever."""
    uri = _store(tmp_path)
    command = _train_command(toy, uri, 0)
    command[-1] = model_spec(_cell(toy, epochs=500))  # long enough to be stopped mid-way
    job = subprocess.Popen(
        command, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    client, deadline = MlflowClient(uri), time.monotonic() + WAIT_S
    while not _metric_logged(client):
        assert job.poll() is None and time.monotonic() < deadline, "no live run came up"
        time.sleep(0.2)
    job.send_signal(signal.SIGTERM)
    output, _ = job.communicate(timeout=WAIT_S)
    assert job.returncode != 0, output[-2000:]
    (experiment,) = [e for e in client.search_experiments() if e.name == EXPERIMENT]
    (run,) = client.search_runs([experiment.experiment_id], run_view_type=ViewType.ALL)
    assert run.info.status == "KILLED", output[-2000:]


def _metric_logged(client: MlflowClient) -> bool:
    """Whether the live run exists and has logged a training loss (the loop is running)."""
    try:
        experiments = [e for e in client.search_experiments() if e.name == EXPERIMENT]
        runs = client.search_runs([experiments[0].experiment_id]) if experiments else []
    except Exception:  # the store is being created by the job
        return False
    return any("train.loss" in run.data.metrics for run in runs)


def test_a_stopped_job_does_not_wait_forever_for_a_stuck_logging_thread(tmp_path, monkeypatch):
    # The logging thread is stuck creating its run (a store that does not answer) when the job
    # is signalled: finish() waits STOP_JOIN_S for it, then lets the process end.
    import threading

    from reranklab.tracking import live

    release = threading.Event()
    monkeypatch.setattr(live.LiveRun, "_create", lambda self: release.wait(60))
    monkeypatch.setattr(live, "STOP_JOIN_S", 0.5)
    run = LiveRun(f"sqlite:///{tmp_path / 'mlflow.db'}", "e", {"variant": "x"}, "d/x/L64", 0)
    run.start()
    started = time.monotonic()
    run._end("FINISHED", held=[signal.SIGTERM])
    assert time.monotonic() - started < 5 and run._ended
    release.set()


# The train job as Snakemake (and SLURM) runs it: bash, then python. Its whole process group
# gets SIGTERM (scancel) at the moment the live run's logging thread starts, and that thread
# then hangs on a store that does not answer.
SIGNALLED_AT_THREAD_START = """
import os, signal, sys, threading
from reranklab.tracking import live

def create(self):
    os.killpg(0, signal.SIGTERM)  # the job's whole group, as scancel sends it
    threading.Event().wait(300)  # a store that does not answer

live.LiveRun._create = create
from reranklab.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_job_signalled_as_its_tracking_thread_starts_leaves_no_process(toy, tmp_path):
    from reranklab.tracking.live import STOP_JOIN_S

    uri = _store(tmp_path)
    command = _train_command(toy, uri, 0)
    job = subprocess.Popen(
        ["bash", "-c", f'"{sys.executable}" -c "$0" "$@"; echo ended', SIGNALLED_AT_THREAD_START]
        + command[1:],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    started = time.monotonic()
    try:
        output, _ = job.communicate(timeout=WAIT_S)
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)
        pytest.fail("the signalled job did not end")
    # Process start and imports, then at most STOP_JOIN_S for the stuck thread: before the
    # join was bounded for a run ended KILLED too, the job waited out the store (300 s here).
    assert time.monotonic() - started < 120, output[-2000:]
    assert job.returncode != 0, output[-2000:]
    assert_group_gone(job.pid, STOP_JOIN_S + 10, f"the job ended: {output[-2000:]}")
    assert not (tmp_path / "model0").exists()  # no model from a cancelled job
