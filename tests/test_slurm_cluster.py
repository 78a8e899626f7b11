"""The CPU-only SLURM profile (workflow/profiles/slurm-cpu) against a live SLURM: the one-node
cluster of scripts/slurm-local.sh (started by .ci/run; tests never install or start it). A small
study (the shipped sample, a tiny BERT) runs through the profile while one training job is
cancelled with scancel after its first checkpoint (as a preemption or node failure would); then:
every job but the local rules went through sbatch, the retried training resumed from its
checkpoint, the runs and the summary equal those of a local `snakemake --cores 2` run byte for
byte, and a second invocation has nothing to do."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from reranklab.training.checkpoint import MANIFEST_FILE, list_checkpoints, read_manifest
from tests.conftest import cluster_to_itself, tool_env

pytestmark = [pytest.mark.integration, pytest.mark.slurm]

pytest.importorskip("snakemake_executor_plugin_slurm", reason="pip install -e '.[slurm]'")

WORKFLOW_FILES = ["Snakefile", "envs", "params.yaml", "workflow"]
TARGET = "results/summary.json"  # the runs, the cells and the summary (no report: saves a minute)
# The Snakefile's local rules: they run on the submitting host, every other job through sbatch.
LOCAL_RULES = {"download", "baseline", "evaluate", "aggregate", "track", "summarize"}
SBATCH_JOBS = {"prepare": 1, "index": 1, "split": 1, "retrieve": 1, "sample": 2, "train": 2}
SBATCH_JOBS["rerank"] = 2
CANCELLED = "sample/pointwise-L64/fold0"  # the training job cancelled mid-way
TIMEOUT_S = 900


def _cluster_or_skip() -> None:
    if shutil.which("sinfo") is None or shutil.which("sbatch") is None:
        pytest.skip("no SLURM here (sinfo/sbatch not on PATH): scripts/slurm-local.sh start")
    result = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True)
    states = result.stdout.split()
    if result.returncode != 0 or not {"idle", "mixed"} & set(states):
        pytest.skip(
            f"the SLURM cluster is not up (sinfo: {(result.stdout + result.stderr).strip()!r}):"
            " scripts/slurm-local.sh start"
        )


def _study(tiny_bert: Path) -> dict:
    return {
        "study": "slurmtest",
        "datasets": ["sample"],
        "grid": {"variant": ["pointwise"], "max_length": [64]},
        "protocol": {"sample": {"folds": 2}},
        "training": {
            "encoder": str(tiny_bert),
            "epochs": 1,
            "batch_size": 16,
            "learning_rate": 1e-3,
            # A resumed training equals an uninterrupted one bit for bit only when deterministic.
            "deterministic": True,
            "checkpoint_every": 5,
        },
    }


def _workdir(base: Path, repo: Path, tiny_bert: Path) -> Path:
    for name in WORKFLOW_FILES:
        (shutil.copytree if (repo / name).is_dir() else shutil.copy)(repo / name, base / name)
    (base / "config").mkdir()
    (base / "config/test.yaml").write_text(yaml.safe_dump(_study(tiny_bert)))
    _fit_profile(base / "workflow/profiles/slurm-cpu/config.v8+.yaml")
    return base


def _fit_profile(profile: Path) -> None:
    """Set the profile's named cluster settings from this cluster's node, as its header tells a
    user to (``sinfo -o "%c %m"``): a CI machine with less memory than 16 GB still fits."""
    cpus, memory = subprocess.run(
        ["sinfo", "-h", "-o", "%c %m"], capture_output=True, text=True, check=True
    ).stdout.split()[:2]
    memory_mb = int(memory.rstrip("+"))
    values = {
        "cpus_per_node": int(cpus.rstrip("+")),
        "mem_per_job_mb": min(16000, memory_mb * 3 // 4),
        "mem_small_job_mb": min(4000, memory_mb // 4),
    }
    text = profile.read_text()
    for name, value in values.items():
        text, count = re.subn(rf"(&{name}) \d+", rf"\g<1> {value}", text)
        assert count == 1, f"{profile}: no setting {name}"
    profile.write_text(text)


def _snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    command = ["snakemake", TARGET, "--configfile", "config/test.yaml", *args]
    return subprocess.run(
        command, cwd=workdir, env=tool_env(), capture_output=True, text=True, timeout=TIMEOUT_S
    )


def _through_slurm(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    return _snakemake(
        workdir,
        "--profile",
        str(workdir / "workflow/profiles/slurm-cpu"),
        # The plugin waits 40 s before its first status check: too long for a test's tiny jobs.
        "--slurm-init-seconds-before-status-checks",
        "1",
        "--seconds-between-status-checks",
        "1",
        *args,
    )


def _jobs(workdir: Path) -> list[dict[str, str]]:
    """The SLURM jobs (allocations) run in ``workdir``, as sacct reports them."""
    fields = ["JobID", "JobName", "State", "Comment", "WorkDir"]
    out = subprocess.run(
        ["sacct", "-X", "-n", "-P", "-S", "now-1days", "-o", ",".join(f"{f}%300" for f in fields)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    jobs = [dict(zip(fields, line.split("|"), strict=True)) for line in out.splitlines() if line]
    return [job for job in jobs if Path(job["WorkDir"]) == workdir]


def _rule(job: dict[str, str]) -> str:
    # The plugin names a job by the run's UUID and writes rule_<rule>[_wildcards_<...>] as its comment.
    return job["Comment"].removeprefix("rule_").split("_wildcards_")[0]


def _train_processes(workdir: Path) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            cwd = os.readlink(proc / "cwd")
        except OSError:
            continue
        if Path(cwd) == workdir and b"train" in argv and any(b"reranklab" in a for a in argv):
            pids.append(int(proc.name))
    return pids


def _cancel_after_first_checkpoint(workdir: Path, record: dict) -> None:
    """Watches the fold-0 training: at its first complete checkpoint, freezes the process (the
    whole training takes a second) and cancels its SLURM job with scancel."""
    checkpoints = workdir / "results/checkpoints" / CANCELLED
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline and not record.get("stop"):
        done = [p for p in list_checkpoints(checkpoints) if (p / MANIFEST_FILE).is_file()]
        if done:
            pids = _train_processes(workdir)
            for pid in pids:
                os.kill(pid, signal.SIGSTOP)
            record["steps"] = [read_manifest(p)["global_step"] for p in done]
            queue = subprocess.run(
                ["squeue", "-h", "-o", "%i|%k|%Z"], capture_output=True, text=True
            ).stdout
            ids = [
                line.split("|")[0]
                for line in queue.splitlines()
                if line.split("|")[1].startswith("rule_train_")
                and Path(line.split("|")[2]) == workdir
                and line.split("|")[1].endswith("__0")
            ]
            record["cancelled"] = ids
            subprocess.run(["scancel", *ids], check=False)
            for pid in pids:  # let SLURM's SIGTERM/SIGKILL reach them
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)
            return
        time.sleep(0.005)


@pytest.fixture(scope="module")
def runs(tmp_path_factory, repo, tiny_bert):
    """The study through SLURM (one training cancelled mid-way) and locally. The local run goes
    on while the SLURM one mostly waits on the scheduler: both at once save the suite a minute."""
    _cluster_or_skip()
    slurm = _workdir(tmp_path_factory.mktemp("slurm"), repo, tiny_bert)
    local = _workdir(tmp_path_factory.mktemp("local"), repo, tiny_bert)
    record: dict = {}
    watcher = threading.Thread(target=_cancel_after_first_checkpoint, args=(slurm, record))
    with cluster_to_itself(tmp_path_factory), ThreadPoolExecutor(1) as background:
        reference = background.submit(_snakemake, local, "--cores", "2", "--resources", "gpu=1")
        watcher.start()
        try:
            result = _through_slurm(slurm)
        finally:
            record["stop"] = True
            watcher.join()
    assert result.returncode == 0, (result.stdout + result.stderr)[-5000:]
    assert reference.result().returncode == 0, reference.result().stderr[-5000:]
    return {"slurm": slurm, "local": local, "result": result, "record": record}


def test_every_job_but_the_local_rules_went_through_sbatch(runs):
    jobs = _jobs(runs["slurm"])
    completed = Counter(_rule(job) for job in jobs if job["State"] == "COMPLETED")
    assert completed == SBATCH_JOBS, jobs
    assert not LOCAL_RULES & {_rule(job) for job in jobs}
    assert len({job["JobName"] for job in jobs}) == 1  # one run UUID: one Snakemake invocation


def test_a_cancelled_training_job_is_retried_and_resumes(runs):
    record, slurm = runs["record"], runs["slurm"]
    assert record.get("cancelled"), "the fold-0 training was never caught after a checkpoint"
    states = {job["JobID"]: job["State"] for job in _jobs(slurm)}
    assert all(states[i].startswith("CANCELLED") for i in record["cancelled"]), states
    stats = json.loads((slurm / "results/models" / CANCELLED / "train_stats.json").read_text())
    assert stats["resumed_from_step"] >= max(record["steps"]) > 0, (stats, record)
    assert not (slurm / "results/checkpoints" / CANCELLED).exists()


def test_runs_and_summary_equal_a_local_run_byte_for_byte(runs):
    slurm, local = runs["slurm"], runs["local"]
    files = sorted(
        str(p.relative_to(local))
        for pattern in ("results/runs/**/*.run", "results/cells/**/run.txt", "results/summary.*")
        for p in local.glob(pattern)
    )
    assert len(files) >= 6, files
    different = [f for f in files if (slurm / f).read_bytes() != (local / f).read_bytes()]
    assert not different


def test_second_invocation_has_nothing_to_do(runs):
    result = _through_slurm(runs["slurm"])
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Nothing to be done" in result.stdout + result.stderr
