"""dvc.yaml from a fresh clone: the plan, status, and metrics/params/plots diffs between commits.

The clone is the working tree as it would be committed (tracked and new, unignored files) in a
new git repository. No stage runs Snakemake here: outputs are written by the test and recorded
with ``dvc commit`` (what DVC offers for results made outside ``dvc repro``), so the real
dvc.yaml is exercised in seconds; tests/test_workflow.py runs ``dvc repro`` end to end.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import tool_env

STAGES = ("prepare", "first_stage", "study")
TARGET = {"prepare": "prepared", "first_stage": "first_stage", "study": "all"}
# What each stage of dvc.yaml records (outs and metrics), as files or folders.
OUT_DIRS = (
    "results/data",
    "results/index",
    "results/first_stage",
    "results/splits",
    "results/samples",
    "results/models",
    "results/runs",
    "results/metrics",
    "results/cells",
    "results/report",
)


def run(cwd: Path, *cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        list(cmd), cwd=cwd, env=tool_env(), capture_output=True, text=True, timeout=120
    )
    if check:
        assert result.returncode == 0, f"{cmd}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def git_commit(clone: Path, message: str) -> None:
    run(clone, "git", "add", "-A")
    run(clone, "git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message)


@pytest.fixture
def clone(tmp_path: Path, repo: Path) -> Path:
    """The working tree's files (tracked, and new ones git does not ignore) in a new repository."""
    listed = run(repo, "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard").stdout
    target = tmp_path / "clone"
    for name in filter(None, listed.split("\0")):
        source = repo / name
        if source.is_file():  # a tracked file deleted in the working tree is not copied
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    run(target, "git", "init", "-q")
    git_commit(target, "fresh")
    return target


def write_results(clone: Path, pointwise_map: float) -> None:
    """Stand-ins for what `dvc repro` leaves under results/: one file per folder, the summary."""
    for folder in OUT_DIRS:
        (clone / folder).mkdir(parents=True, exist_ok=True)
        (clone / folder / "part.txt").write_text(f"{folder}\n")
    # What `dvc plots show` renders: the sweep and the per-query differences.
    plots = clone / "results/plots"
    plots.mkdir(parents=True, exist_ok=True)
    (plots / "length_sweep.csv").write_text(
        f"dataset,variant,max_length,MAP,MRR\nsample,pointwise,128,{pointwise_map},0.5\n"
    )
    (plots / "query_delta.csv").write_text(
        "dataset,cell,base,rank,qid,delta_MRR\nsample,pointwise-L128,bm25,1,q1,0.5\n"
    )

    rows = {"sample/bm25": 0.49, "sample/pointwise/L128": pointwise_map}
    summary = {"title": "quickstart", "rows": []} | {key: {"MAP": v} for key, v in rows.items()}
    (clone / "results/summary.json").write_text(json.dumps(summary))
    (clone / "results/summary.csv").write_text(
        f"dataset,variant,max_length,MAP\nsample,bm25,,0.49\nsample,pointwise,128,{pointwise_map}\n"
    )
    (clone / "results/summary.md").write_text("| summary |\n")
    (clone / "results/regression.md").write_text("| regression |\n")
    (clone / "results/significance.md").write_text("| significance |\n")
    (clone / "results/significance.csv").write_text("dataset,measure,a,b,p\n")


def status(clone: Path) -> dict[str, list]:
    return json.loads(run(clone, "dvc", "status", "--json").stdout)


def test_repro_dry_from_a_fresh_clone_prints_the_plan(clone: Path) -> None:
    plan = run(clone, "dvc", "repro", "--dry").stdout
    commands = [line[2:].split() for line in plan.splitlines() if line.startswith("> ")]
    # The active config is the quick start (params.yaml's dvc.configfiles, committed).
    assert commands == [
        [
            "snakemake",
            TARGET[stage],
            "--cores",
            "all",
            "--resources",
            "gpu=1",
            "--configfiles",
            "config/quickstart.yaml",
        ]
        for stage in STAGES
    ]
    assert not (clone / "results").exists()

    # The study of params.yaml alone through DVC: an experiment with `dvc.configfiles` emptied.
    before = (clone / "params.yaml").read_text()
    paper = run(clone, "dvc", "exp", "run", "--dry", "-S", "dvc.configfiles=[]").stdout
    assert "> snakemake all --cores all --resources gpu=1" in map(str.rstrip, paper.splitlines())
    assert (clone / "params.yaml").read_text() == before


def test_status_is_clean_once_the_results_are_recorded(clone: Path) -> None:
    fresh = status(clone)
    assert sorted(fresh) == sorted(STAGES)  # everything to run, and no error on missing results/

    write_results(clone, 0.37)
    run(clone, "dvc", "commit", "--force")
    lock = yaml.safe_load((clone / "dvc.lock").read_text())
    assert sorted(lock["stages"]) == sorted(STAGES)
    assert status(clone) == {}

    # What running and testing Python leaves in the source folders changes no dependency.
    run(clone, "python", "-m", "compileall", "-q", "src/reranklab")
    (clone / "src/reranklab/.pytest_cache").mkdir()
    (clone / "src/reranklab/.pytest_cache/README.md").write_text("cache\n")
    assert any((clone / "src/reranklab").rglob("__pycache__/*.pyc"))
    assert status(clone) == {}

    # A second run of the same study differs only in its timings and MLflow run ids, which
    # .dvcignore keeps out of the outputs' hashes.
    for name in ("results/models/part/train_stats.json", "results/cells/part/mlflow.json"):
        (clone / name).parent.mkdir(parents=True, exist_ok=True)
        (clone / name).write_text('{"seconds": 12.5}')
    assert status(clone) == {}
    (clone / "results/models/part/model.safetensors").write_text("other weights")
    assert "study" in status(clone)
    (clone / "results/models/part/model.safetensors").unlink()

    # An override file is a dependency of every stage (it may be the active config).
    with open(clone / "config/quickstart.yaml", "a", encoding="utf-8") as handle:
        handle.write("seed: 7\n")
    changed = status(clone)
    assert sorted(changed) == sorted(STAGES)
    assert {"changed deps": {"config": "modified"}} in changed["study"]


def test_metrics_params_and_plots_diff_between_two_commits(clone: Path) -> None:
    write_results(clone, 0.37)
    run(clone, "dvc", "commit", "--force")
    git_commit(clone, "first study")

    params = (clone / "params.yaml").read_text()
    assert "  epochs: 2\n" in params
    (clone / "params.yaml").write_text(params.replace("  epochs: 2\n", "  epochs: 3\n", 1))
    write_results(clone, 0.41)
    run(clone, "dvc", "commit", "--force")
    git_commit(clone, "three epochs")
    assert status(clone) == {}

    params_diff = json.loads(run(clone, "dvc", "params", "diff", "HEAD~1", "--json").stdout)
    assert params_diff == {"params.yaml": {"training.epochs": {"old": 2, "new": 3, "diff": 1}}}

    metrics_diff = json.loads(run(clone, "dvc", "metrics", "diff", "HEAD~1", "--json").stdout)
    change = metrics_diff["results/summary.json"]
    assert list(change) == ["sample/pointwise/L128.MAP"]  # bm25 did not move
    assert change["sample/pointwise/L128.MAP"]["old"] == 0.37
    assert change["sample/pointwise/L128.MAP"]["new"] == 0.41

    plots = json.loads(run(clone, "dvc", "plots", "diff", "HEAD~1", "--json").stdout)
    assert "errors" not in plots, plots
    sweep = plots["data"]["results/plots/length_sweep.csv"]
    assert sweep and sweep[0]["content"]["encoding"]["color"]["field"] == "line"
    (plot,) = plots["data"]["results/summary.csv"]
    values = plot["content"]["data"]["values"]
    assert sorted((v["rev"], v["variant"], v["MAP"]) for v in values) == [
        ("HEAD~1", "bm25", "0.49"),
        ("HEAD~1", "pointwise", "0.37"),
        ("workspace", "bm25", "0.49"),
        ("workspace", "pointwise", "0.41"),
    ]
    # The template names each bar by its cell, so datasets and lengths never share a bar.
    assert plot["content"]["encoding"]["y"]["field"] == "cell"
