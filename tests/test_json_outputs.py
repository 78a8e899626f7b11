"""Every ``--json`` of the command line prints JSON alone on stdout, so ``reranklab X --json | jq``
works: each command runs as a user runs it (its own process, stdout and stderr apart) on tiny
inputs (the shipped sample, a tiny BERT), and ``json.loads(stdout)`` must succeed. ``bench`` runs
the Hugging Face Trainer peer, whose end-of-training metric dicts were printed on stdout."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

import pytest

from reranklab.cli import build_parser
from tests.conftest import tool_env

SAMPLE_QRELS = files("reranklab.data") / "sample_data" / "qrels.txt"
# The options named --json that are not "print JSON": bench-suite's keeps each run's report in
# a folder (its stdout is the Markdown table; tests/test_bench.py checks the folder).
NOT_PRINTING = {"bench-suite"}


def _commands_with_json() -> dict[str, argparse.Action]:
    parser = build_parser()
    (subparsers,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return {
        name: action
        for name, sub in subparsers.choices.items()
        for action in sub._actions
        if "--json" in action.option_strings
    }


def _argv(command: str, tmp_path: Path, tiny_bert: Path) -> list[str]:
    """The smallest run of ``command`` with --json (to stdout)."""
    if command == "datasets":
        empty = tmp_path / "empty"
        empty.mkdir()
        return ["datasets", "--json", "--results-dir", str(empty), "--mirror", str(empty)]
    if command == "score":
        run = tmp_path / "tiny.run"
        run.write_text("S001 Q0 P0630 1 2.0 t\nS001 Q0 P0681 2 1.0 t\n", encoding="utf-8")
        return ["score", "--json", "--qrels", str(SAMPLE_QRELS), "--queries-from-run", str(run)]
    if command == "regress":
        return ["regress", "--json"]  # the packaged matrix and claims, nothing measured yet
    if command == "bench-data":
        return ["bench-data", "index", "--json", "--sizes", "300", "--queries", "5", "--depth",
                "5", "--vocabulary", "500", "--sides", "reranklab", "--work-dir", str(tmp_path)]  # fmt: skip
    if command == "bench":
        return ["bench", "train", "--variant", "pointwise", "--max-length", "32", "--device",
                "cpu", "--encoder", str(tiny_bert), "--pairs", "8", "--batch-size", "4",
                "--threads", "1", "--against", "trainer", "--json"]  # fmt: skip
    if command == "encoders":
        return ["encoders", "list", "--json", "--cache", str(tmp_path / "cache")]
    raise AssertionError(f"{command} --json: add its smallest run to this test")


def test_every_json_option_is_covered() -> None:
    # The parametrised test below runs every command that has --json (a new one fails there
    # until _argv gives its smallest run); these are the ones known today.
    commands = _commands_with_json()
    assert {"datasets", "score", "regress", "bench", "bench-data"} <= set(commands)
    assert commands["bench-suite"].dest == "json_dir"  # a folder, not a switch
    assert commands["bench"].const == "-"  # --json alone: the report on stdout


@pytest.mark.parametrize(
    "command", sorted(set(_commands_with_json()) - NOT_PRINTING), ids=lambda name: name
)
def test_json_is_all_that_stdout_carries(command: str, tmp_path: Path, tiny_bert: Path) -> None:
    if command == "bench":
        pytest.importorskip("accelerate", reason="the Trainer peer needs accelerate")
    work = tmp_path / "work"
    work.mkdir()
    argv = _argv(command, tmp_path, tiny_bert)
    result = subprocess.run(
        [sys.executable, "-m", "reranklab.cli", *argv],
        cwd=work,  # a folder without params.yaml, as a user's
        env=tool_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    try:
        document = json.loads(result.stdout)
    except json.JSONDecodeError as error:
        shown = result.stdout[:600]
        pytest.fail(f"reranklab {command} --json: stdout is not JSON ({error}):\n{shown}")
    assert document
    if command == "bench":
        # The Trainer peer ran; its metrics went to stderr with the log, not into the JSON.
        assert "trainer" in document["peers"] and "train_runtime" not in result.stdout
