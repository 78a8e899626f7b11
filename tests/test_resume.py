"""Checkpoint/resume: atomic checkpoints, corrupt ones skipped, pruning, and a training job
killed with SIGKILL mid-epoch that resumes to the very same model as an uninterrupted run."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import logging
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
import torch
from torch import nn

from reranklab.errors import ReranklabError
from reranklab.io import write_run
from reranklab.models.tiny import build_tiny_bert
from reranklab.training import checkpoint
from reranklab.training.checkpoint import (
    MANIFEST_FILE,
    STATE_FILE,
    DigestCache,
    FileCheckpointer,
    checkpointer_for,
    fingerprint,
    fingerprint_parts,
    list_checkpoints,
    read_manifest,
    save_state,
)
from reranklab.training.inference import rerank
from reranklab.training.trainer import TrainState, linear_schedule, make_optimizer, train_model
from tests.conftest import tool_env
from tests.helpers_models import (
    CORPUS,
    QIDS,
    QUERIES,
    build_toy_bert,
    candidates,
    model_spec,
    toy_cell,
    write_examples,
)

# 8 steps per epoch (32 toy examples, batch 4); checkpoints every 5 steps fall mid-epoch.
RESUME = {"epochs": 12, "learning_rate": 3e-3, "deterministic": True, "threads": 1}
WAIT_S = 120


# -- checkpoint files ------------------------------------------------------------------------


def _state(seed: int = 0) -> TrainState:
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.Linear(8, 1))
    optimizer = make_optimizer(model, 1e-2, 0.01)
    scheduler = linear_schedule(optimizer, 2, 20)
    return TrainState(model, nn.MSELoss(), optimizer, scheduler, total_steps=20, steps_per_epoch=10)


def _step(state: TrainState) -> None:
    x = torch.randn(3, 4)
    loss = state.model(torch.nn.functional.dropout(x, 0.5)).pow(2).mean()
    state.optimizer.zero_grad()
    loss.backward()
    state.optimizer.step()
    state.scheduler.step()
    state.losses.append(float(loss.detach()))
    state.global_step += 1
    state.step_in_epoch += 1
    if state.step_in_epoch == state.steps_per_epoch:
        state.epoch, state.step_in_epoch = state.epoch + 1, 0


def test_checkpoints_restore_everything_and_prune(tmp_path):
    state = _state()
    ckpt = FileCheckpointer(tmp_path / "ck", "fp", every=2, keep=2, delete_when_done=False)
    ckpt.restore(state)  # nothing yet: a fresh start
    assert ckpt.resumed_from is None
    for _ in range(6):
        _step(state)
        ckpt.step_done(state)
    assert ckpt.written == [2, 4, 6]
    assert [p.name for p in list_checkpoints(tmp_path / "ck")] == ["step-00000004", "step-00000006"]
    expected_weights = {k: v.clone() for k, v in state.model.state_dict().items()}
    expected_next = torch.rand(3)
    ckpt.finished(
        state, tmp_path / "model"
    )  # releases the lock; keeps the files (delete_when_done False)

    resumed = _state(seed=123)
    torch.manual_seed(999)  # the restored RNG state must win over whatever came before
    FileCheckpointer(tmp_path / "ck", "fp").restore(resumed)
    assert (resumed.global_step, resumed.epoch, resumed.step_in_epoch) == (6, 0, 6)
    assert resumed.losses == state.losses
    assert all(torch.equal(resumed.model.state_dict()[k], v) for k, v in expected_weights.items())
    assert (
        resumed.scheduler.last_epoch == 6
        and resumed.optimizer.param_groups[0]["lr"] == state.optimizer.param_groups[0]["lr"]
    )
    assert torch.equal(torch.rand(3), expected_next)
    # Continuing both gives identical weights: optimiser moments and dropout RNG came back too.
    rng = torch.get_rng_state()  # one global generator: give both the same draws
    _step(state)
    torch.set_rng_state(rng)
    _step(resumed)
    assert all(
        torch.equal(resumed.model.state_dict()[k], v) for k, v in state.model.state_dict().items()
    )


def test_a_corrupt_or_partial_checkpoint_falls_back_to_the_previous_one(tmp_path, caplog):
    state = _state()
    ckpt = FileCheckpointer(tmp_path, "fp", every=2, keep=3, delete_when_done=False)
    for _ in range(6):
        _step(state)
        ckpt.step_done(state)
    ckpt.finished(state, tmp_path)
    newest = tmp_path / "step-00000006"
    with open(newest / STATE_FILE, "r+b") as handle:  # a torn write: the tail is missing
        handle.truncate(os.path.getsize(newest / STATE_FILE) // 2)
    partial = (
        tmp_path / "step-00000008"
    )  # renamed into place but no manifest (cannot happen, still handled)
    partial.mkdir()
    (partial / STATE_FILE).write_bytes(b"junk")
    (tmp_path / ".step-00000010.abc.tmp").mkdir()  # a temporary directory of a killed writer

    with pytest.raises(ReranklabError, match="sha256|bytes"):
        read_manifest(newest)
    resumed = _state(seed=5)
    ckpt = FileCheckpointer(tmp_path, "fp")
    ckpt.restore(resumed)
    assert ckpt.resumed_from == 4 and resumed.global_step == 4
    assert "skipping checkpoint" in caplog.text
    # The bad ones and the temporary leftovers are cleared; the good one stays.
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != ".lock") == [
        "step-00000002",
        "step-00000004",
    ]


def test_checkpoints_of_other_settings_are_never_resumed(tmp_path):
    state = _state()
    ckpt = FileCheckpointer(tmp_path, "old-settings", every=1, delete_when_done=False)
    _step(state)
    ckpt.step_done(state)
    ckpt.finished(state, tmp_path)
    fresh = _state()
    other = FileCheckpointer(tmp_path, "new-settings")
    other.restore(fresh)
    assert other.resumed_from is None and fresh.global_step == 0
    assert list_checkpoints(tmp_path) == []


def test_one_writer_per_checkpoint_directory(tmp_path, monkeypatch):
    monkeypatch.setattr(checkpoint, "LOCK_WAIT_S", 0.3)
    first = FileCheckpointer(tmp_path, "fp")
    first.restore(_state())
    with pytest.raises(ReranklabError, match="in use by another training process"):
        FileCheckpointer(tmp_path, "fp").restore(_state())
    first.finished(_state(), tmp_path)
    assert not tmp_path.exists()  # delete_when_done: the checkpoints go once the model is saved


def test_a_rerun_waits_for_a_cancelled_writer_to_leave(tmp_path, monkeypatch):
    # A scancelled job still exiting holds the directory; its rerun waits, then trains alone.
    monkeypatch.setattr(checkpoint, "LOCK_WAIT_S", 30.0)
    survivor = FileCheckpointer(tmp_path, "fp", delete_when_done=False)
    survivor.restore(_state())
    leaves = threading.Timer(0.5, survivor._release_lock)
    leaves.start()
    started = time.monotonic()
    rerun = FileCheckpointer(tmp_path, "fp")
    rerun.restore(_state())
    assert 0.4 < time.monotonic() - started < 30
    leaves.join()
    rerun.finished(_state(), tmp_path)


def test_fingerprint_covers_settings_and_inputs_not_operational_keys(tmp_path):
    examples = tmp_path / "e.parquet"
    examples.write_bytes(b"a")
    cell = {"seed": 1, "training": {"epochs": 2, "checkpoint_every": 5, "keep_checkpoints": 2}}
    base = fingerprint(cell, [examples])
    assert base == fingerprint(
        {**cell, "training": {"epochs": 2, "checkpoint_every": 50, "keep_checkpoints": 9}},
        [examples],
    )
    assert base != fingerprint(
        {**cell, "training": {"epochs": 3, "checkpoint_every": 5}}, [examples]
    )
    examples.write_bytes(b"b")
    assert base != fingerprint(cell, [examples])


def test_a_deterministic_fingerprint_holds_the_pinned_thread_count():
    def cell(deterministic: bool, threads: int) -> dict:
        return {"seed": 1, "training": {"deterministic": deterministic, "threads": threads}}

    assert fingerprint(cell(True, 0)) == fingerprint(cell(True, 1))  # 0 pins one thread
    assert fingerprint(cell(True, 1)) != fingerprint(cell(True, 2))  # another model
    assert fingerprint(cell(False, 1)) == fingerprint(cell(False, 2))  # only speed


def test_the_fingerprint_covers_the_encoders_files_by_content(tmp_path, monkeypatch):
    from huggingface_hub import constants

    local = tmp_path / "bert"
    for name, data in (
        ("config.json", b"{}"),
        ("model.safetensors", b"w1"),
        ("vocab.txt", b"a"),
        ("README.md", b"x"),
    ):
        (local / name).parent.mkdir(parents=True, exist_ok=True)
        (local / name).write_bytes(data)
    parts = fingerprint_parts({"training": {"encoder": str(local)}})
    assert sorted(parts) == [
        "encoder config.json",
        "encoder model.safetensors",
        "encoder vocab.txt",
        "settings",
    ]
    (local / "README.md").write_text("docs")  # not read by the model: no change
    assert fingerprint_parts({"training": {"encoder": str(local)}}) == parts
    (local / "vocab.txt").write_text("b")  # the tokenizer is
    assert (
        fingerprint_parts({"training": {"encoder": str(local)}})["encoder vocab.txt"]
        != parts["encoder vocab.txt"]
    )

    # A hub id: the files of its snapshot in the local cache (offline), as transformers loads them.
    cache = tmp_path / "hub"
    snapshot = cache / "models--org--tiny" / "snapshots" / ("0" * 40)
    shutil.copytree(local, snapshot)
    (cache / "models--org--tiny" / "refs").mkdir()
    (cache / "models--org--tiny" / "refs" / "main").write_text("0" * 40)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    hub = fingerprint_parts({"training": {"encoder": "org/tiny"}})
    assert hub["encoder model.safetensors"] == hashlib.sha256(b"w1").hexdigest()
    assert list(fingerprint_parts({"training": {"encoder": "org/not-downloaded"}})) == ["settings"]


def test_input_digests_are_remembered_until_the_file_changes(tmp_path):
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"a" * 1000)
    cache = DigestCache(tmp_path / "digests.json")
    first = cache.sha256(weights)
    cache.save()
    again = DigestCache(tmp_path / "digests.json")  # a resumed job: nothing is hashed again
    assert again.sha256(weights) == first and again.hashed == 0
    # Rewritten in place, same size, its old mtime put back: the ctime still tells.
    before = weights.stat()
    weights.write_bytes(b"b" * 1000)
    os.utime(weights, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert again.sha256(weights) != first and again.hashed == 1


class _FillsUp(io.BytesIO):
    """A file on a disk that is full after 4 KiB."""

    def write(self, data) -> int:
        if self.tell() + len(memoryview(data)) > 4096:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return super().write(data)


def test_a_failed_state_write_reports_the_systems_reason():
    with pytest.raises(RuntimeError, match="unexpected pos"):  # all torch.save itself says
        torch.save({"weights": torch.zeros(100_000)}, _FillsUp())
    with pytest.raises(OSError) as error:
        save_state({"weights": torch.zeros(100_000)}, _FillsUp())
    assert error.value.errno == errno.ENOSPC


# -- a real training job, killed and resumed -------------------------------------------------


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


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """The toy inputs (as the prepare/sample steps write them) and the uninterrupted reference."""
    import pandas as pd

    work = tmp_path_factory.mktemp("resume")
    bert = build_toy_bert(work / "bert")
    examples = write_examples(work / "examples.parquet", "pointwise")
    (work / "queries.tsv").write_text("".join(f"{q}\t{t}\n" for q, t in QUERIES.items()))
    pd.DataFrame({"pid": list(CORPUS), "text": list(CORPUS.values())}).to_parquet(
        work / "corpus.parquet", index=False
    )
    enabled = torch.are_deterministic_algorithms_enabled()
    stats = train_model(
        toy_cell("pointwise", bert, **RESUME),
        examples,
        QUERIES,
        CORPUS,
        work / "reference",
        threads=1,
        progress=False,
    )
    torch.use_deterministic_algorithms(enabled)
    return {
        "work": work,
        "bert": bert,
        "examples": examples,
        "reference": work / "reference",
        "stats": stats,
        "run": _run_file(work / "reference", work / "reference.run"),
    }


def _run_file(model_dir: Path, path: Path) -> bytes:
    run = rerank(
        model_dir, candidates(), QIDS, QUERIES, CORPUS, batch_size=8, device="cpu", progress=False
    )
    write_run(path, run, tag="toy")
    return path.read_bytes()


def _env() -> dict[str, str]:
    env = tool_env()
    env["RERANKLAB_GPU_BINDING"] = "0"
    return env


def _kill_after_first_checkpoint(
    command: list[str], checkpoints: Path, log: Path, cwd: Path | None = None
) -> list[int]:
    """Start ``command``, SIGKILL its whole process group once a checkpoint is complete; the
    steps of the checkpoints it left."""
    with open(log, "w") as handle:
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env=_env(),
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + WAIT_S
        while not any((p / MANIFEST_FILE).is_file() for p in list_checkpoints(checkpoints)):
            if process.poll() is not None:
                raise AssertionError(
                    f"{command[0]} ended (status {process.returncode}) before a checkpoint: {log.read_text()[-2000:]}"
                )
            if time.monotonic() > deadline:
                raise AssertionError(f"no checkpoint in {checkpoints} within {WAIT_S} s")
            time.sleep(0.005)
        os.killpg(process.pid, signal.SIGSTOP)  # freeze it at once, then look, then kill
        steps = [
            read_manifest(p)["global_step"]
            for p in list_checkpoints(checkpoints)
            if (p / MANIFEST_FILE).is_file()
        ]
        os.killpg(process.pid, signal.SIGKILL)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=WAIT_S)
    assert process.returncode == -signal.SIGKILL
    return steps


def _check_resumed(
    toy, model_dir: Path, steps: list[int], log_text: str, checkpoints: Path, tmp_path: Path
) -> None:
    total = toy["stats"]["steps"]
    assert steps and 0 < max(steps) < total, steps
    stats = json.loads((model_dir / "train_stats.json").read_text())
    assert stats["resumed_from_step"] >= max(steps) and stats["steps"] == total
    assert "resumed from checkpoint" in log_text
    assert not checkpoints.exists(), "checkpoints are deleted once the model is saved"
    # Byte-identical: the re-ranked run of the resumed model and of the uninterrupted one.
    assert _run_file(model_dir, tmp_path / "resumed.run") == toy["run"]
    assert (
        stats["epoch_losses"] == toy["stats"]["epoch_losses"]
        and stats["loss_curve"] == toy["stats"]["loss_curve"]
    )


def test_sigkilled_training_resumes_to_the_same_model(toy, tmp_path):
    work = toy["work"]
    out, checkpoints = tmp_path / "model", tmp_path / "checkpoints"
    command = [
        "reranklab",
        "train",
        "--examples",
        str(toy["examples"]),
        "--queries",
        str(work / "queries.tsv"),
        "--corpus",
        str(work / "corpus.parquet"),
        "--out-dir",
        str(out),
        "--threads",
        "1",
        "--checkpoint-dir",
        str(checkpoints),
        "--checkpoint-every",
        "5",
        "--spec",
        model_spec(toy_cell("pointwise", toy["bert"], **RESUME)),
    ]
    steps = _kill_after_first_checkpoint(command, checkpoints, tmp_path / "killed.log")
    assert not out.exists(), "the job was killed before saving its model"

    result = subprocess.run(command, env=_env(), capture_output=True, text=True, timeout=WAIT_S)
    assert result.returncode == 0, result.stderr[-3000:]
    _check_resumed(toy, out, steps, result.stderr, checkpoints, tmp_path)


@pytest.mark.integration
def test_snakemake_unlock_and_rerun_incomplete_resume_the_killed_job(toy, repo, tmp_path):
    """The whole Snakemake run is SIGKILLed mid-epoch (as when a node dies), then
    ``snakemake --unlock`` and ``snakemake --rerun-incomplete`` finish the training job from its
    checkpoint, outside the rule's outputs, to the same model as an uninterrupted run."""
    for name in ("Snakefile", "envs", "params.yaml", "workflow"):
        (shutil.copytree if (repo / name).is_dir() else shutil.copy)(repo / name, tmp_path / name)
    # The train rule's inputs, as the prepare and sample steps leave them.
    for source, target in (
        (toy["examples"], "samples/sample/fold0/pointwise.parquet"),
        (toy["work"] / "queries.tsv", "data/sample/queries.tsv"),
        (toy["work"] / "corpus.parquet", "data/sample/corpus.parquet"),
    ):
        (tmp_path / "results" / target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, tmp_path / "results" / target)
    training = {
        k: v
        for k, v in toy_cell("pointwise", toy["bert"], **RESUME)["training"].items()
        if k in ("encoder", "device", "batch_size", *RESUME)
    }
    config = {
        "study": "resume",
        "seed": 1,
        "datasets": ["sample"],
        "grid": {"variant": ["pointwise"], "max_length": [32]},
        "training": {**training, "checkpoint_every": 5},
    }
    (tmp_path / "test.yaml").write_text(json.dumps(config))
    target = "results/models/sample/pointwise-L32/fold0"
    options = [
        "--cores",
        "1",
        "--configfile",
        "test.yaml",
        "--allowed-rules",
        "train",
    ]  # the inputs are there
    checkpoints = tmp_path / "results/checkpoints/sample/pointwise-L32/fold0"

    steps = _kill_after_first_checkpoint(
        ["snakemake", target, *options], checkpoints, tmp_path / "killed.log", cwd=tmp_path
    )
    assert not (tmp_path / target).exists() or not (tmp_path / target / "train_stats.json").exists()
    assert checkpoints.is_dir(), (
        "the checkpoints survive Snakemake's clean-up of the incomplete job"
    )

    for args in (["--unlock"], [target, "--rerun-incomplete"]):
        result = subprocess.run(
            ["snakemake", *args, *options],
            cwd=tmp_path,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=WAIT_S,
        )
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    log_text = (tmp_path / "results/logs/train/sample/pointwise-L32/fold0.log").read_text()
    _check_resumed(toy, tmp_path / target, steps, log_text, checkpoints, tmp_path)


@pytest.mark.integration
def test_a_study_killed_while_retraining_is_whole_again_after_a_rerun(toy, repo, tmp_path):
    """A finished study, then ``--forcerun train`` SIGKILLed mid-training (Snakemake deletes
    the incomplete model folder on the next run): ``--unlock`` and a re-run of the same
    targets train the fold again from its checkpoint and re-rank with it, so every output is
    present and consistent, no checkpoint is left behind, the killed live MLflow run is not left
    RUNNING, and a further run has nothing to do.

    The study is the fewest jobs that show it: one cell, from the download to its MLflow
    record (``track`` completes the folds' live runs), without the first-stage row, the summary
    and the report, which only read what the cell left. Its targets name the model too, as the
    study's do (Snakemake rebuilds a missing file only where a target or a job to run needs it)."""
    from mlflow import MlflowClient
    from mlflow.entities import ViewType

    for name in ("Snakefile", "envs", "params.yaml", "workflow"):
        (shutil.copytree if (repo / name).is_dir() else shutil.copy)(repo / name, tmp_path / name)
    training = {
        k: v
        for k, v in toy_cell("pointwise", toy["bert"], **RESUME)["training"].items()
        if k in ("encoder", "device", "batch_size", *RESUME)
    }
    config = {
        "study": "killed",
        "datasets": ["sample"],
        "protocol": {"sample": {"folds": 2}},
        "grid": {"variant": ["pointwise"], "max_length": [32]},
        "training": {**training, "epochs": 2, "checkpoint_every": 5},
        "mlflow": {"tracking_uri": "sqlite:///results/mlflow.db"},
    }
    (tmp_path / "test.yaml").write_text(json.dumps(config))
    options = ["--cores", "1", "--resources", "gpu=1", "--configfile", "test.yaml"]
    model = tmp_path / "results/models/sample/pointwise-L32/fold0"
    evaluated = "results/metrics/sample/pointwise-L32/fold0.json"
    targets = [str(model.relative_to(tmp_path)), "results/cells/sample/pointwise-L32/mlflow.json"]

    def snakemake(*args: str) -> str:
        result = subprocess.run(
            ["snakemake", *args, *options], cwd=tmp_path, env=_env(), capture_output=True,
            text=True, timeout=WAIT_S * 3,
        )  # fmt: skip
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
        return result.stdout + result.stderr

    snakemake(*targets)
    checkpoints = tmp_path / "results/checkpoints/sample/pointwise-L32/fold0"
    _kill_after_first_checkpoint(
        ["snakemake", str(model.relative_to(tmp_path)), "--forcerun", "train", *options],
        checkpoints,
        tmp_path / "killed.log",
        cwd=tmp_path,
    )
    snakemake("--unlock")
    snakemake(*targets, "--rerun-incomplete")

    run = tmp_path / "results/runs/sample/pointwise-L32/fold0.run"
    assert (model / "train_stats.json").is_file()
    assert run.stat().st_mtime >= (model / "train_stats.json").stat().st_mtime  # re-ranked after
    assert (tmp_path / evaluated).stat().st_mtime >= run.stat().st_mtime  # and evaluated again
    assert not checkpoints.exists() or not any(checkpoints.iterdir())
    assert "Nothing to be done" in snakemake(*targets, "-n")
    client = MlflowClient(f"sqlite:///{tmp_path / 'results/mlflow.db'}")
    runs = client.search_runs(
        [e.experiment_id for e in client.search_experiments()], run_view_type=ViewType.ALL
    )
    assert runs and all(r.info.status != "RUNNING" for r in runs)


# -- what a job does when its inputs change or its disk is full --------------------------------


def _toy_job(tmp_path: Path, bert: Path, every: int = 5) -> tuple[dict, Path, Path]:
    """A short deterministic job (2 epochs of 8 steps) and its examples and checkpoint dir."""
    cell = toy_cell("pointwise", bert, epochs=2, learning_rate=3e-3, deterministic=True, threads=1)
    return (
        cell,
        write_examples(tmp_path / "examples.parquet", "pointwise"),
        tmp_path / "checkpoints",
    )


def _weights(model_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(model_dir.glob("*.safetensors"))}


def test_an_encoder_changed_in_place_starts_the_job_over(tmp_path, caplog):
    words = list(QUERIES.values()) + list(CORPUS.values())
    bert = build_tiny_bert(tmp_path / "bert", words, seed=0)
    cell, examples, checkpoints = _toy_job(tmp_path, bert)

    def job(out: Path) -> tuple[dict, FileCheckpointer]:
        ckpt = checkpointer_for(
            cell, checkpoints, [examples], every=5, keep=2, delete_when_done=False
        )
        return train_model(
            cell, examples, QUERIES, CORPUS, out, checkpointer=ckpt, progress=False
        ), ckpt

    job(tmp_path / "old")  # leaves its checkpoints (steps 10 and 15 of 16), as a killed job would
    assert [read_manifest(p)["global_step"] for p in list_checkpoints(checkpoints)] == [10, 15]

    # Other weights in place: same path, shapes, size, tokenizer, and the old mtime put back.
    weights = bert / "model.safetensors"
    before = weights.stat()
    build_tiny_bert(bert, words, seed=1)
    os.utime(weights, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert weights.stat().st_size == before.st_size

    caplog.set_level(logging.INFO, logger="reranklab.training.checkpoint")
    stats, ckpt = job(tmp_path / "new")
    assert ckpt.resumed_from is None and stats["resumed_from_step"] == 0
    assert "encoder model.safetensors changed (sha256" in caplog.text  # the log says why
    reference = tmp_path / "reference"  # the new encoder, trained without any checkpoint
    train_model(cell, examples, QUERIES, CORPUS, reference, progress=False)
    assert _weights(tmp_path / "new") == _weights(reference) != _weights(tmp_path / "old")


def test_a_checkpoint_that_cannot_be_written_is_skipped_and_training_goes_on(
    tmp_path, toy, monkeypatch, caplog
):
    cell, examples, checkpoints = _toy_job(tmp_path, toy["bert"])
    real_write = checkpoint.write_state

    def disk_full_at_step_10(payload, path):
        if ".step-00000010." in str(path):  # the disk fills up while this one is written
            Path(path).write_bytes(b"PK\x03\x04 a torn")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real_write(payload, path)

    monkeypatch.setattr(checkpoint, "write_state", disk_full_at_step_10)
    ckpt = checkpointer_for(cell, checkpoints, [examples], every=5, keep=2, delete_when_done=False)
    stats = train_model(
        cell, examples, QUERIES, CORPUS, tmp_path / "model", checkpointer=ckpt, progress=False
    )

    assert stats["steps"] == 16 and (tmp_path / "model" / "train_stats.json").is_file()
    assert (ckpt.written, ckpt.failed) == ([5, 8, 15], [10])
    assert (
        "checkpoint at step 10 NOT written" in caplog.text
        and "No space left on device [ENOSPC]" in caplog.text
    )
    assert "the previous checkpoint step-00000008 is kept and training goes on" in caplog.text
    # No torn checkpoint nor temporary directory is left; the one before the failure is intact.
    assert sorted(p.name for p in checkpoints.iterdir()) == [
        ".lock",
        "digests.json",
        "step-00000008",
        "step-00000015",
    ]
    assert read_manifest(checkpoints / "step-00000008")["global_step"] == 8
    payload = torch.load(
        checkpoints / "step-00000008" / STATE_FILE, map_location="cpu", weights_only=True
    )
    assert payload["position"]["global_step"] == 8


def test_a_model_that_cannot_be_written_stops_with_a_clear_error(
    tmp_path, toy, monkeypatch, capsys
):
    from reranklab import cli
    from reranklab.models import saved

    def disk_full(module, path):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(saved, "save_tensors", disk_full)
    monkeypatch.setenv("RERANKLAB_GPU_BINDING", "0")
    cell, examples, checkpoints = _toy_job(tmp_path, toy["bert"])
    out = tmp_path / "model"
    code = cli.main(
        [
            "train",
            "--examples",
            str(examples),
            "--queries",
            str(toy["work"] / "queries.tsv"),
            "--corpus",
            str(toy["work"] / "corpus.parquet"),
            "--out-dir",
            str(out),
            "--threads",
            "1",
            "--checkpoint-dir",
            str(checkpoints),
            "--checkpoint-every",
            "5",
            "--spec",
            model_spec(cell),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert f"cannot write the trained model to {out}: No space left on device" in err
    assert "Traceback" not in err
    assert (
        not out.exists()
        and [p.name for p in out.parent.iterdir() if p.name.startswith(".model")] == []
    )
    # The checkpoints stay for the next run to resume from.
    assert [read_manifest(p)["global_step"] for p in list_checkpoints(checkpoints)] == [10, 15]
