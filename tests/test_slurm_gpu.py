"""The GPU SLURM profile (workflow/profiles/slurm) against a live SLURM: the one-node cluster of
scripts/slurm-local.sh, whose node has two GPUs as GRES (stand-in device files; the jobs compute
on the CPUs). The profile's named cluster settings are fitted to that node, as its header tells
a user to; the data steps run locally first, then the model jobs of two folds (train, rerank)
go through sbatch. sacct then shows that each asked for and got one GPU of the GPU partition,
and that the two trainings shared the node's two GPUs at once, each on its own."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest
import yaml

from tests.conftest import cluster_to_itself, tool_env
from tests.test_slurm_cluster import _cluster_or_skip, _rule, _study

pytestmark = [pytest.mark.integration, pytest.mark.slurm]

pytest.importorskip("snakemake_executor_plugin_slurm", reason="pip install -e '.[slurm]'")

WORKFLOW_FILES = ["Snakefile", "envs", "params.yaml", "workflow"]
PROFILE = "workflow/profiles/slurm"
FOLDS = ("fold0", "fold1")
# The model jobs' outputs: each fold's run needs its trained model (train, then rerank).
TARGETS = [f"results/runs/sample/pointwise-L64/{fold}.run" for fold in FOLDS]
# What they read, made on this host first: data, first stage, folds, training examples.
INPUTS = [
    "results/first_stage/sample/candidates.run",
    "results/splits/sample/folds.json",
    *(f"results/samples/sample/{fold}/pointwise.parquet" for fold in FOLDS),
]
TIMEOUT_S = 900
FIELDS = [
    "JobID",
    "State",
    "Comment",
    "WorkDir",
    "Partition",
    "Start",
    "End",
    "ReqTRES",
    "AllocTRES",
]


def _gpu_node() -> tuple[int, int, int]:
    """CPUs, memory (MB) and GPUs of a node of the ``gpu`` partition (skips without two GPUs)."""
    out = subprocess.run(
        ["sinfo", "-h", "-p", "gpu", "-o", "%c %m %G"], capture_output=True, text=True
    ).stdout.split()
    gpus = re.match(r"gpu:(?:[A-Za-z]\w*:)?(\d+)", out[2]) if len(out) == 3 else None
    if gpus is None or int(gpus.group(1)) < 2:
        pytest.skip(
            f"no partition gpu with two GPUs per node (sinfo: {' '.join(out)!r}):"
            " scripts/slurm-local.sh start"
        )
    return int(out[0].rstrip("+")), int(out[1].rstrip("+")), int(gpus.group(1))


def _fit_profile(profile: Path) -> dict[str, int]:
    """The profile's named cluster settings from this node (``sinfo -o "%c %m %G"``): each GPU
    gets its share of the node's CPUs and memory, so that two GPU jobs fit at once."""
    cpus, memory_mb, gpus = _gpu_node()
    usable_mb = memory_mb * 3 // 4  # the submitting Snakemake and the daemons run here too
    values = {
        "cpus_per_node": cpus,
        "mem_per_job_mb": min(32000, usable_mb),
        "mem_small_job_mb": min(8000, usable_mb // 4),
        "gpus_per_node": gpus,
        "cpus_per_gpu": cpus // gpus,
        "mem_per_gpu_job_mb": min(32000, usable_mb // gpus),
    }
    text = profile.read_text()
    for name, value in values.items():
        text, count = re.subn(rf"(?m)^(  {name}: (?:&\w+ )?)\d+", rf"\g<1>{value}", text)
        assert count == 1, f"{profile}: no setting {name}"
    profile.write_text(text)
    return values


def _snakemake(workdir: Path, targets: list[str], *args: str) -> subprocess.CompletedProcess:
    command = ["snakemake", *targets, "--configfile", "config/test.yaml", *args]
    return subprocess.run(
        command, cwd=workdir, env=tool_env(), capture_output=True, text=True, timeout=TIMEOUT_S
    )


def _jobs(workdir: Path) -> list[dict[str, str]]:
    """The SLURM jobs (allocations) run in ``workdir``, as sacct reports them."""
    out = subprocess.run(
        ["sacct", "-X", "-n", "-P", "-S", "now-1days", "-o", ",".join(f"{f}%300" for f in FIELDS)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    jobs = [dict(zip(FIELDS, line.split("|"), strict=True)) for line in out.splitlines() if line]
    return [job for job in jobs if Path(job["WorkDir"]) == workdir]


@pytest.fixture(scope="module")
def run(tmp_path_factory, repo, tiny_bert):
    """Two folds' model jobs through the GPU profile (the data steps run locally first)."""
    _cluster_or_skip()
    workdir = tmp_path_factory.mktemp("slurm-gpu")
    for name in WORKFLOW_FILES:
        (shutil.copytree if (repo / name).is_dir() else shutil.copy)(repo / name, workdir / name)
    (workdir / "config").mkdir()
    (workdir / "config/test.yaml").write_text(yaml.safe_dump(_study(tiny_bert)))
    settings = _fit_profile(workdir / PROFILE / "config.v8+.yaml")
    local = _snakemake(workdir, INPUTS, "--cores", "2")
    assert local.returncode == 0, (local.stdout + local.stderr)[-5000:]
    with cluster_to_itself(tmp_path_factory):  # both GPUs free for this run's two trainings
        result = _snakemake(
            workdir,
            TARGETS,
            "--profile",
            str(workdir / PROFILE),
            # The plugin waits 40 s before its first status check: too long for tiny jobs.
            "--slurm-init-seconds-before-status-checks",
            "1",
            "--seconds-between-status-checks",
            "1",
        )
    assert result.returncode == 0, (result.stdout + result.stderr)[-5000:]
    return {"workdir": workdir, "settings": settings, "jobs": _jobs(workdir)}


def test_the_model_jobs_ask_for_and_get_one_gpu_each(run):
    jobs, settings = run["jobs"], run["settings"]
    assert Counter(_rule(job) for job in jobs if job["State"] == "COMPLETED") == {
        "train": 2,
        "rerank": 2,
    }, jobs
    for job in jobs:
        assert job["Partition"] == "gpu", job
        # The request (sbatch --gpus=1 --cpus-per-gpu=<n> --mem <m>) and what SLURM allocated.
        for tres in (job["ReqTRES"], job["AllocTRES"]):
            assert "gres/gpu=1" in tres.split(","), job
        assert f"cpu={settings['cpus_per_gpu']}" in job["AllocTRES"].split(","), job
    for fold in FOLDS:
        assert (run["workdir"] / "results/runs/sample/pointwise-L64" / f"{fold}.run").is_file()


def test_two_gpu_jobs_share_the_node_at_once_each_on_its_own_gpu(run):
    trains = [job for job in run["jobs"] if _rule(job) == "train"]
    spans = [(datetime.fromisoformat(j["Start"]), datetime.fromisoformat(j["End"])) for j in trains]
    # The node's two GPUs (and each one's share of CPUs and memory) take both folds at once.
    assert max(start for start, _ in spans) < min(end for _, end in spans), trains
    # SLURM gave each its own device (CUDA_VISIBLE_DEVICES), which the step bound to.
    bound = set()
    for fold in FOLDS:
        log = run["workdir"] / "results/logs/train/sample/pointwise-L64" / f"{fold}.log"
        bound |= set(re.findall(r"bound to GPU (\d+)", log.read_text()))
    assert bound == {"0", "1"}, bound
