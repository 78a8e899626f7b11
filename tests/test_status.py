"""`reranklab status` (the grid's state from the result files) and the status lines of long
steps (reranklab.progress): their text, and their way to the terminal through RERANKLAB_STATUS_FD."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from reranklab.cli import main as cli_main
from reranklab.progress import STATUS_FD_ENV, Status, emit, set_job
from reranklab.report.status import cell_rows, format_table, summary_note
from reranklab.settings.cell import Cell

REPO = Path(__file__).resolve().parents[1]
CELLS = [
    (Cell("sample", "bm25"), 2),
    (Cell("sample", "pointwise", 64), 2),
    (Cell("sample", "biencoder_zeroshot", 64), 2),
]
CONFIG = {
    "study": "toy-status",
    "datasets": ["sample"],
    "protocol": {"sample": {"folds": 2}},
    "grid": {"variant": ["pointwise", "biencoder_zeroshot"], "max_length": [64]},
}


def _touch(root: Path, path: str) -> None:
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    (root / path).write_text("x")


@pytest.fixture()
def study(tmp_path: Path) -> Path:
    root = tmp_path / "study"
    # The first stage done; pointwise: both folds trained, fold 0 re-ranked and evaluated;
    # biencoder_zeroshot: fold 0 training, its log holding status lines.
    for k in range(2):
        _touch(root, f"results/runs/sample/bm25/fold{k}.run")
        _touch(root, f"results/metrics/sample/bm25/fold{k}.json")
        _touch(root, f"results/models/sample/pointwise-L64/fold{k}/reranker.json")
    _touch(root, "results/cells/sample/bm25/mlflow.json")
    _touch(root, "results/runs/sample/pointwise-L64/fold0.run")
    _touch(root, "results/metrics/sample/pointwise-L64/fold0.json")
    log = root / "results/logs/train/sample/biencoder_zeroshot-L64/fold0.log"
    log.parent.mkdir(parents=True)
    log.write_text(
        "05:01:02 INFO reranklab.training.trainer: training ...\n"
        "05:01:14 INFO reranklab.progress: train sample biencoder_zeroshot-L64 fold0: step 4/12, 33%, 8.0 pairs/s, eta 24 s\n"
        "05:01:26 INFO reranklab.progress: train sample biencoder_zeroshot-L64 fold0: step 8/12, 66%, 8.0 pairs/s, eta 12 s\n"
    )
    return root


def test_rows_count_the_result_files(study: Path) -> None:
    rows = {row.cell.name: row for row in cell_rows(CELLS, study)}
    assert list(rows) == ["bm25", "pointwise-L64", "biencoder_zeroshot-L64"]
    assert rows["bm25"].done == {"trained": None, "re-ranked": 2, "evaluated": 2, "tracked": 1}
    assert rows["bm25"].complete
    assert rows["pointwise-L64"].done == {
        "trained": 2,
        "re-ranked": 1,
        "evaluated": 1,
        "tracked": 0,
    }
    assert not rows["pointwise-L64"].complete and not rows["pointwise-L64"].note
    assert rows["biencoder_zeroshot-L64"].done["trained"] == 0
    assert rows["biencoder_zeroshot-L64"].note.startswith(
        "train sample biencoder_zeroshot-L64 fold0: step 8/12, 66%"
    )


def test_table_and_cli(study: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = format_table(cell_rows(CELLS, study), summary_note("toy-status", study))
    lines = table.splitlines()
    assert lines[0].split() == ["dataset", "cell", "trained", "re-ranked", "evaluated", "tracked"]
    assert lines[1].split() == ["sample", "bm25", "(first", "stage)", "-", "2/2", "2/2", "yes"]
    assert lines[2].split() == ["sample", "pointwise-L64", "2/2", "1/2", "1/2", "no"]
    assert lines[3].split() == ["sample", "biencoder_zeroshot-L64", "0/2", "0/2", "0/2", "no"]
    assert lines[4].startswith("  now: train sample biencoder_zeroshot-L64 fold0: step 8/12")
    assert lines[-1] == "1/3 rows complete; results/summary.md not written yet"
    override = tmp_path / "override.yaml"
    override.write_text(yaml.safe_dump(CONFIG))
    assert (
        cli_main(
            [
                "status",
                "--params-file",
                str(REPO / "params.yaml"),
                "--configfile",
                str(override),
                "--root",
                str(study),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert out.startswith("study 'toy-status'\n") and "pointwise-L64" in out


def test_quickstart_status_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["status", "--params-file", str(REPO / "params.yaml"), "--root", str(tmp_path)]
    assert cli_main([*args, "--configfile", str(REPO / "config/quickstart.yaml")]) == 0
    out = capsys.readouterr().out
    assert "0/" in out and "results/summary.md not written yet" in out


def test_status_says_whose_summary_it_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """results/ is shared: after the quick start, `status` without --configfile asks about
    params.yaml's study and must not call the quick start's summary that study's."""
    results = tmp_path / "results"
    results.mkdir()
    (results / "summary.md").write_text("| row |\n")
    (results / "summary.json").write_text(json.dumps({"title": "quickstart", "rows": []}))
    args = ["status", "--params-file", str(REPO / "params.yaml"), "--root", str(tmp_path)]
    assert cli_main(args) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert "results/summary.md is study 'quickstart''s, not this one's" in last
    assert "written" not in last
    assert cli_main([*args, "--configfile", str(REPO / "config/quickstart.yaml")]) == 0
    assert capsys.readouterr().out.splitlines()[-1].endswith("results/summary.md is this study's")


def test_status_line_text_and_timing() -> None:
    clock = [100.0]
    lines: list[str] = []
    status = Status(
        "rerank",
        2000,
        unit="pairs",
        rate_unit="pairs",
        interval=12,
        clock=lambda: clock[0],
        sink=lines.append,
    )
    clock[0] = 105.0
    status.update(500)
    assert lines == []  # not yet due
    clock[0] = 113.0
    status.update(300)
    assert lines == ["rerank: pairs 800/2000, 40%, 61.5 pairs/s, eta 20 s"]
    clock[0] = 132.5
    status.update(1200)
    status.close()
    status.close()
    assert lines[-1] == "rerank: pairs 2000/2000, 100%, 61.5 pairs/s, done in 32 s"
    assert len(lines) == 3
    set_job("rerank sample pointwise-L64 fold1")
    try:
        assert status.line(132.5).startswith("rerank sample pointwise-L64 fold1: pairs 2000/2000")
    finally:
        set_job(None)
    quiet = Status("train", 3, interval=0, sink=lines.append, enabled=False)
    quiet.update(3)
    quiet.close()
    assert len(lines) == 3


def test_status_lines_reach_the_status_descriptor(tmp_path: Path) -> None:
    # As a rule runs a step: stderr to the log, fd 3 on the terminal (here a pipe).
    read, write = os.pipe()
    code = (
        "import logging, sys; from reranklab.progress import emit; "
        "logging.basicConfig(level=logging.INFO, stream=sys.stderr); emit('train x: step 1/2')"
    )
    log = tmp_path / "job.log"
    with open(log, "w") as handle:
        subprocess.run(
            [sys.executable, "-c", code],
            stderr=handle,
            env={**os.environ, STATUS_FD_ENV: str(write)},
            pass_fds=(write,),
            check=True,
        )
    os.close(write)
    with os.fdopen(read) as terminal:
        assert terminal.read() == "train x: step 1/2\n"
    assert "train x: step 1/2" in log.read_text()


def test_no_descriptor_no_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(STATUS_FD_ENV, "987")  # not open: the line only goes to the log
    emit("train x: step 1/2")
    monkeypatch.setenv(STATUS_FD_ENV, "not-a-number")
    emit("train x: step 2/2")


def test_the_workflow_opens_the_descriptor_outside_the_rules_text() -> None:
    from reranklab.resources import WORKFLOW

    common = (Path(WORKFLOW) / "rules" / "common.smk").read_text()
    assert 'shell.prefix("set -euo pipefail; exec 3>&2; export RERANKLAB_STATUS_FD=3; ")' in common
