"""A failed job's one-line error reaches the terminal of a `snakemake` run (the Snakefile's
onerror handler, reranklab.workflow.failures), not only the job's log."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import tool_env

pytestmark = pytest.mark.integration


def test_a_broken_collection_file_is_one_line_on_the_terminal(tmp_path: Path):
    study = tmp_path / "study"
    env = tool_env()
    reranklab = [sys.executable, "-m", "reranklab.cli"]
    subprocess.run([*reranklab, "init", str(study)], check=True, env=env, capture_output=True)
    mine = study / "mine"
    mine.mkdir()
    for name in ("queries.tsv", "passages.jsonl", "qrels.txt", "split.json"):
        (mine / name).write_bytes((study / "studies/own-data" / name).read_bytes())
    with (mine / "queries.tsv").open("a") as queries:
        queries.write("a line without a tab\n")
    config = yaml.safe_load((study / "config/own-data.yaml").read_text())
    for key in ("queries", "passages", "qrels", "splits"):
        config["local"]["faq"][key] = config["local"]["faq"][key].replace(
            "studies/own-data/", "mine/"
        )
    (study / "broken.yaml").write_text(yaml.safe_dump(config))
    run = subprocess.run(
        ["snakemake", "--cores", "1", "--configfile", "broken.yaml"],
        cwd=study,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode != 0
    lines = [line for line in run.stderr.splitlines() if line.startswith("reranklab: rule ")]
    assert lines == [
        "reranklab: rule prepare: reranklab prepare: error: mine/queries.tsv:31: "
        "expected 'query id<TAB>text', found no tab"
    ]
