"""The fault soak's checks (scripts/soak.py): each one catches the fault it is there for.

The soak itself (a study killed and resumed N times) runs as `make soak`, and in CI as
`make soak N=3` (.ci/run); these tests hold its checks to real faults, without a study.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.helpers_scripts import load_script

SOAK = load_script(REPO / "scripts" / "soak.py", "soak")


def _write(root: Path, name: str, text: str = "x") -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_only_result_files_are_compared_and_every_change_is_named(tmp_path):
    _write(tmp_path, "results/runs/sample/bertlets-L64/fold0.run", "q1 Q0 p1 1 0.5 r\n")
    _write(tmp_path, "results/models/sample/bertlets-L64/fold0/model.safetensors", "w")
    _write(tmp_path, "results/summary.csv", "a,b\n")
    _write(tmp_path, "results/logs/train/sample/bertlets-L64/fold0.log", "took 3 s")
    _write(tmp_path, "results/models/sample/bertlets-L64/fold0/train_stats.json", "{}")
    reference = SOAK.digests(tmp_path)
    assert sorted(reference) == [
        "results/models/sample/bertlets-L64/fold0/model.safetensors",
        "results/runs/sample/bertlets-L64/fold0.run",
        "results/summary.csv",
    ]

    _write(tmp_path, "results/runs/sample/bertlets-L64/fold0.run", "q1 Q0 p1 1 0.6 r\n")
    (tmp_path / "results/summary.csv").unlink()
    _write(tmp_path, "results/runs/sample/bertlets-L64/fold1.run", "")
    _write(tmp_path, "results/logs/train/sample/bertlets-L64/fold0.log", "took 4 s")
    assert SOAK.differences(reference, SOAK.digests(tmp_path)) == [
        "results/runs/sample/bertlets-L64/fold0.run: differs",
        "results/runs/sample/bertlets-L64/fold1.run: extra",
        "results/summary.csv: missing",
    ]


def test_a_killed_writes_temporary_and_a_checkpoint_are_found(tmp_path):
    _write(tmp_path, "results/runs/sample/bm25/fold0.run")
    assert SOAK.leftovers(tmp_path) == []
    _write(tmp_path, "results/runs/sample/bm25/.fold1.run.k2j_9x0a.tmp")
    _write(tmp_path, "results/checkpoints/sample/bertlets-L64/fold0/step-5/manifest.json")
    _write(tmp_path, ".snakemake/incomplete/.x.abcdefgh.tmp")  # Snakemake's own, not ours
    assert SOAK.leftovers(tmp_path) == [
        "results/checkpoints/sample/bertlets-L64/fold0/step-5/manifest.json",
        "results/runs/sample/bm25/.fold1.run.k2j_9x0a.tmp",
    ]


def test_an_mlflow_run_left_running_is_found(tmp_path, monkeypatch):
    import mlflow

    store = tmp_path / "results" / "mlflow.db"
    store.parent.mkdir()
    monkeypatch.chdir(tmp_path)
    mlflow.set_tracking_uri(f"sqlite:///{store}")
    try:
        finished = mlflow.start_run()
        mlflow.end_run()
        left = mlflow.start_run()  # a job killed before it ended its run
        assert SOAK.running_mlflow_runs(tmp_path) == [left.info.run_id]
        mlflow.end_run("KILLED")
        assert SOAK.running_mlflow_runs(tmp_path) == []
        assert finished.info.run_id
    finally:
        mlflow.end_run()
        mlflow.set_tracking_uri(None)


def test_a_surviving_process_is_found_by_its_group_or_its_folder(tmp_path):
    folder = tmp_path / "kill-000"
    folder.mkdir()
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    in_group = subprocess.Popen(sleeper, start_new_session=True)
    in_folder = subprocess.Popen(sleeper, cwd=folder, start_new_session=True)
    try:
        assert any(
            line.startswith(f"{in_group.pid}:") for line in SOAK.survivors(in_group.pid, tmp_path)
        )
        found = SOAK.survivors(os.getpgid(os.getpid()) + 10**7, folder)  # no such group
        assert [line.split(":")[0] for line in found] == [str(in_folder.pid)]
    finally:
        for process in (in_group, in_folder):
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert SOAK._wait_gone(in_group.pid, folder, within_s=5) == []


def test_the_kills_are_drawn_from_the_seed_and_cover_both_signals_and_targets():
    kills = SOAK.plan_kills(20, seed=7, reference_s=60.0)
    assert [k.delay_s for k in kills] == [k.delay_s for k in SOAK.plan_kills(20, 7, 60.0)]
    assert [k.delay_s for k in kills] != [k.delay_s for k in SOAK.plan_kills(20, 8, 60.0)]
    assert {(k.signal, k.target) for k in kills} == {
        (s, t) for s in ("SIGKILL", "SIGTERM") for t in ("run", "job")
    }
    assert all(1.0 <= k.delay_s <= 54.0 for k in kills)


@pytest.mark.parametrize("failed", [False, True])
def test_a_kill_passes_only_when_every_check_does(failed):
    kill = SOAK.Kill(0, "SIGTERM", "run", 3.0, draw=1)
    kill.checks = {check: True for check in SOAK.CHECKS}
    kill.checks["identical"] = not failed
    assert kill.passed is not failed


def test_the_docs_block_is_rewritten_between_its_markers(tmp_path):
    kill = SOAK.Kill(0, "SIGTERM", "run", 3.0, draw=1, exit_s=1.5)
    kill.checks = dict.fromkeys(SOAK.CHECKS, True)
    report = {
        "command": "scripts/soak.py --kills 1",
        "started": "2026-12-05T18:00:00+0000",
        "cores": 2,
        "machine": "2 CPUs, x86_64",
        "reference_seconds": 41.0,
        "compared_files": 35,
        "kills": 1,
        "passed": 1,
        "missed": 0,
        "by_check": dict.fromkeys(SOAK.CHECKS, 1),
        "trials": [SOAK.asdict(kill)],
    }
    page = tmp_path / "development.md"
    page.write_text(f"# Dev\n\n{SOAK.DOCS_START}\nold\n{SOAK.DOCS_END}\n\nafter\n")
    SOAK.write_docs(page, report)
    text = page.read_text()
    assert "old" not in text and text.endswith(f"{SOAK.DOCS_END}\n\nafter\n")
    assert "**1 of 1 kills passed every check**" in text
    assert "| SIGTERM to the run | 1 | 1 |" in text and "exited 1.5-1.5 s after" in text
    page.write_text("no markers\n")
    with pytest.raises(SystemExit, match="no <!-- soak:start -->"):
        SOAK.write_docs(page, report)
