"""The SLURM profile (reranklab/workflow/profiles/slurm, shipped in the package): a dry run plans
the study, and the GPU jobs are submitted as the slurm executor plugin documents it
(``--gpus=<n>``, one task), checked with a stand-in ``sbatch`` that records its command line."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from reranklab.resources import PROFILES
from tests.conftest import tool_env

pytest.importorskip("snakemake_executor_plugin_slurm", reason="pip install -e '.[slurm]'")

PROFILE = str(PROFILES / "slurm")
STUDY = {
    "study": "slurm",
    "datasets": ["sample"],
    "grid": {"variant": ["pointwise"], "max_length": [64]},
    "protocol": {"sample": {"folds": 2}},
    "training": {"encoder": "unused", "epochs": 1},
}
RECORD = '#!/bin/sh\necho "$(basename "$0") $*" >> "$FAKE_SLURM_LOG"\n'


@pytest.fixture
def workdir(repo, tmp_path) -> Path:
    for name in ("Snakefile", "envs", "params.yaml", "workflow"):
        (shutil.copytree if (repo / name).is_dir() else shutil.copy)(repo / name, tmp_path / name)
    return tmp_path


def _jobs(output: str) -> dict[str, int]:
    return {
        m.group(1): int(m.group(2))
        for m in re.finditer(r"^(\w+)\s+(\d+)$", output.split("Job stats:")[-1], re.M)
    }


def test_dry_run_with_the_slurm_profile(workdir):
    (workdir / "study.yaml").write_text(json.dumps(STUDY))
    command = ["snakemake", "--dry-run", "--profile", PROFILE, "--configfile", "study.yaml"]
    result = subprocess.run(
        command, cwd=workdir, env=tool_env(), capture_output=True, text=True, timeout=300
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    assert f"Using profile {PROFILE}" in output
    jobs = _jobs(output)
    assert (jobs["train"], jobs["rerank"], jobs["summarize"]) == (2, 2, 1)
    # (the resources each job gets are checked on the submission itself, below)


def test_gpu_jobs_are_submitted_once_with_their_gpus(workdir):
    """A DDP training job (2 GPUs) becomes one sbatch call with --gpus=2 and one task."""
    fake = workdir / "fakebin"
    fake.mkdir()
    for name in ("sbatch", "sacct", "squeue", "sinfo", "scontrol", "sshare", "scancel", "srun"):
        (fake / name).write_text(
            RECORD
            + ('echo "sbatch: error: no cluster here" >&2\n' if name == "sbatch" else "")
            + "exit 1\n"
        )
        (fake / name).chmod(0o755)
    # The train job's inputs, so that it is the only job.
    for path in (
        "results/samples/sample/fold0/pointwise.parquet",
        "results/data/sample/queries.tsv",
        "results/data/sample/corpus.parquet",
    ):
        (workdir / path).parent.mkdir(parents=True, exist_ok=True)
        (workdir / path).touch()
    study = {**STUDY, "training": {**STUDY["training"], "distributed": "ddp", "gpus": 2}}
    (workdir / "ddp.yaml").write_text(json.dumps(study))
    env = {**tool_env(), "FAKE_SLURM_LOG": str(workdir / "calls.log")}
    env["PATH"] = f"{fake}:{env['PATH']}"
    command = [
        "snakemake",
        "results/models/sample/pointwise-L64/fold0",
        "--profile",
        PROFILE,
        "--configfile",
        "ddp.yaml",
        "--allowed-rules",
        "train",
        "--retries",
        "0",
        "--slurm-init-seconds-before-status-checks",
        "1",
    ]
    result = subprocess.run(
        command, cwd=workdir, env=env, capture_output=True, text=True, timeout=300
    )
    assert (
        result.returncode != 0 and "no cluster here" in result.stdout + result.stderr
    )  # the stand-in refused it
    calls = [
        line
        for line in (workdir / "calls.log").read_text().splitlines()
        if line.startswith("sbatch ")
    ]
    assert len(calls) == 1, calls
    sbatch = calls[0].split(" --wrap=")[0]
    assert (
        re.search(r" --gpus=2\b", sbatch) and " -p gpu " in sbatch and " --cpus-per-gpu=8" in sbatch
    )
    assert " -t 1440" in sbatch and " --mem 32000" in sbatch and " --requeue" in sbatch
    assert "--ntasks" not in sbatch and "--gres" not in sbatch  # one task: the script starts once
    # The job runs the one train job through the jobstep executor (which starts it with srun -n1).
    wrapped = calls[0].split(" --wrap=", 1)[1]
    assert (
        "--executor slurm-jobstep" in wrapped
        and "--target-jobs 'train:dataset=sample,variant=pointwise,max_length=64" in wrapped
    )


@pytest.mark.parametrize("name", ["slurm", "slurm-cpu"])
def test_every_request_is_made_from_the_named_cluster_settings(name):
    """Each profile's `cluster:` block names the cluster's shape; change one value there and
    every request made from it follows (YAML anchors), so nothing is hard-coded twice."""
    text = (PROFILES / name / "config.v8+.yaml").read_text()
    profile = yaml.safe_load(text)
    cluster, resources = profile["cluster"], profile["set-resources"]
    assert profile["default-resources"]["slurm_partition"] == cluster["partition"]
    assert profile["default-resources"]["mem_mb"] == cluster["mem_small_job_mb"]
    assert profile["max-threads"] == cluster["cpus_per_node"]
    for rule in ("prepare", "index", "retrieve"):
        assert resources[rule]["mem_mb"] == cluster["mem_per_job_mb"]
    for rule in ("train", "encode", "rerank"):
        if name == "slurm":  # one GPU each (the rules' `gpu`), its share of a GPU node
            assert resources[rule]["slurm_partition"] == cluster["gpu_partition"]
            assert resources[rule]["cpus_per_gpu"] == cluster["cpus_per_gpu"]
            assert resources[rule]["mem_mb"] == cluster["mem_per_gpu_job_mb"]
            assert profile["set-threads"][rule] == cluster["cpus_per_gpu"]
        else:  # no GPU: the node's CPUs
            assert resources[rule]["gpu"] == 0 and "slurm_partition" not in resources[rule]
            assert resources[rule]["mem_mb"] == cluster["mem_per_job_mb"]
            assert profile["set-threads"][rule] == cluster["cpus_per_node"]
    # Every anchored setting is read somewhere: a new value changes the requests made from it.
    for anchor, value in re.findall(r"&(\w+) (\S+)", text):
        changed = yaml.safe_load(text.replace(f"&{anchor} {value}", f"&{anchor} 12345", 1))
        assert changed != {**profile, "cluster": changed["cluster"]}, anchor
