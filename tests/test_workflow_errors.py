"""A collection's broken or missing file is one line where a person looks: `validate-config`
reads the files before any run, a missing file stops the workflow as it loads, and a failed
job's own error reaches the terminal of a `snakemake` run (the Snakefile's onerror handler,
reranklab.workflow.failures), not only the job's log."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import assert_group_gone, tool_env

pytestmark = pytest.mark.integration

FILES = ("queries.tsv", "passages.jsonl", "qrels.txt", "split.json")


def _study(tmp_path: Path) -> Path:
    """A fresh study folder whose own collection's files are copies in mine/ (broken.yaml)."""
    study = tmp_path / "study"
    reranklab = [sys.executable, "-m", "reranklab.cli"]
    subprocess.run(
        [*reranklab, "init", str(study)], check=True, env=tool_env(), capture_output=True
    )
    (study / "mine").mkdir()
    for name in FILES:
        (study / "mine" / name).write_bytes((study / "studies/own-data" / name).read_bytes())
    config = yaml.safe_load((study / "config/own-data.yaml").read_text())
    entry = config["local"]["faq"]
    for key in ("queries", "passages", "qrels", "splits"):
        entry[key] = entry[key].replace("studies/own-data/", "mine/")
    (study / "broken.yaml").write_text(yaml.safe_dump(config))
    return study


def _run(study: Path, *command: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        list(command), cwd=study, env=tool_env(), capture_output=True, text=True, timeout=600
    )


def _validate(study: Path) -> subprocess.CompletedProcess:
    reranklab = [sys.executable, "-m", "reranklab.cli"]
    return _run(study, *reranklab, "validate-config", "params.yaml", "broken.yaml")


def test_a_broken_collection_file_is_one_line_on_the_terminal(tmp_path: Path):
    study = _study(tmp_path)
    assert _validate(study).returncode == 0
    with (study / "mine/queries.tsv").open("a") as queries:
        queries.write("a line without a tab\n")
    error = "mine/queries.tsv:31: expected 'query id<TAB>text', found no tab"
    # validate-config reads the files as prepare does, before any run.
    checked = _validate(study)
    assert checked.returncode == 2
    assert checked.stderr.strip() == f"reranklab validate-config: error: {error}"
    run = _run(study, "snakemake", "--cores", "1", "--configfile", "broken.yaml")
    assert run.returncode != 0
    lines = [line for line in run.stderr.splitlines() if line.startswith("reranklab: rule ")]
    assert lines == [f"reranklab: rule prepare: reranklab prepare: error: {error}"]


def test_a_missing_collection_file_is_one_line_before_any_job(tmp_path: Path):
    study = _study(tmp_path)
    (study / "mine/qrels.txt").unlink()
    expected = "local.faq.qrels: no such file mine/qrels.txt"
    assert expected in _validate(study).stderr
    run = _run(study, "snakemake", "-n", "--cores", "1", "--configfile", "broken.yaml")
    said = run.stdout + run.stderr  # a dry run says it on stdout
    assert run.returncode != 0 and expected in said
    assert "InputFunctionException" not in said and "Job stats" not in said


def test_an_encoder_train_could_not_load_is_refused_as_the_workflow_loads(tmp_path: Path):
    study = _study(tmp_path)
    (study / "encoder.yaml").write_text("training:\n  encoder: ./no-such-model\n")
    run = _run(
        study, "snakemake", "-n", "--cores", "1", "--configfile", "broken.yaml", "encoder.yaml"
    )
    assert run.returncode == 1 and "Job stats" not in run.stdout
    # One line, no traceback: reranklab.workflow.refusal stops the load with it.
    [line] = run.stderr.splitlines()
    assert line.startswith("reranklab: ") and line.endswith(
        "encoder.yaml: key training.encoder: encoder folder ./no-such-model does not exist"
    )


def test_a_yaml_error_in_params_yaml_is_one_line_naming_its_line_and_column(tmp_path: Path):
    """Snakemake's own reader of the Snakefile's configfile says "Config file is not valid JSON
    or YAML" and names neither the file nor the line."""
    study = _study(tmp_path)
    with (study / "params.yaml").open("a") as params:
        params.write("seeds: [1, 2\n")
    lines = (study / "params.yaml").read_text().count("\n")
    run = _run(study, "snakemake", "-n", "--cores", "1")
    assert run.returncode == 1
    assert run.stderr.splitlines() == [
        f"reranklab: params.yaml:{lines + 1}:1: invalid YAML: expected ',' or ']', but got "
        f"'<stream end>' (while parsing a flow sequence at line {lines}, column 8)"
    ]


def test_a_wrong_value_in_a_configfile_is_one_line(tmp_path: Path):
    study = _study(tmp_path)
    (study / "seeds.yaml").write_text("seeds: notalist\n")
    run = _run(study, "snakemake", "-n", "--cores", "1", "--configfile", "seeds.yaml")
    assert run.returncode == 1
    assert run.stderr.splitlines() == [
        "reranklab: seeds.yaml: key seeds: expected a list, got 'notalist'"
    ]


def test_a_sigterm_while_a_job_fails_ends_the_run_within_seconds(tmp_path: Path):
    """As SLURM's walltime or scancel does: SIGTERM to the run's whole process group while a job
    fails. Snakemake 9's own handler could hang for good here (tests/test_workflow_signals.py);
    the Snakefile's onstart defers it, and the run ends with nothing left running."""
    import os
    import signal
    import time

    study = _study(tmp_path)
    with (study / "mine/queries.tsv").open("a") as queries:
        queries.write("a line without a tab\n")
    run = subprocess.Popen(
        ["snakemake", "--cores", "1", "--configfile", "broken.yaml"],
        cwd=study,
        env=tool_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    logs = study / "results/logs/prepare"
    deadline = time.monotonic() + 300
    while run.poll() is None and not any(logs.glob("*.log")) and time.monotonic() < deadline:
        time.sleep(0.05)  # until the prepare job runs (onstart has run before it)
    signalled = time.monotonic()
    # Several signals, over the job's failure and clean-up, where one used to hang the run.
    while run.poll() is None and time.monotonic() - signalled < 30:
        try:
            os.killpg(run.pid, signal.SIGTERM)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    try:
        run.wait(timeout=max(1.0, 30 - (time.monotonic() - signalled)))
    except subprocess.TimeoutExpired:
        os.killpg(run.pid, signal.SIGKILL)
        pytest.fail("snakemake was still alive 30 s after SIGTERM")
    assert_group_gone(run.pid, 10, "snakemake ended")  # nothing of the run is left
