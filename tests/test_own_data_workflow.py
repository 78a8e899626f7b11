"""A collection of one's own through the whole DAG, from a folder made by ``reranklab init``.

The worked example (``config/own-data.yaml``: 30 questions, 150 passages, qrels, a split, all
under ``studies/own-data/``) runs with a tiny BERT instead of MiniLM: prepare, BM25, the split,
sampling, training, re-ranking, evaluation, MLflow, the summary and ``regress``, which grades
the study's BM25 row against ``studies/expected.yaml``. ``reranklab score --qrels`` on the run
it wrote then gives the summary's numbers.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import tool_env

pytestmark = pytest.mark.integration


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, env=tool_env(), capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def own_study(tmp_path_factory, tiny_bert):
    root = tmp_path_factory.mktemp("own")
    study = root / "my-study"
    made = _run(["reranklab", "init", str(study)], root)
    assert made.returncode == 0, made.stderr
    # The example as shipped, with one small model: a tiny BERT, one epoch, short inputs.
    (study / "config" / "tiny.yaml").write_text(
        yaml.safe_dump(
            {
                "grid": {"variant": ["pointwise"], "max_length": [64]},
                "training": {
                    "encoder": str(tiny_bert),
                    "epochs": 1,
                    "batch_size": 16,
                    "learning_rate": 1e-3,
                },
                "mlflow": {"log_training": False},
            }
        )
    )
    configs = ["--configfile", "config/own-data.yaml", "config/tiny.yaml"]
    result = _run(["snakemake", "--cores", "2", "--resources", "gpu=1", *configs], study)
    assert result.returncode == 0, result.stderr[-5000:]
    return study


def test_the_study_runs_every_step_on_the_files_named_in_one_entry(own_study):
    stats = json.loads((own_study / "results/data/faq/stats.json").read_text())
    assert (stats["queries"], stats["passages"], stats["judgements"]) == (30, 150, 105)
    manifest = json.loads((own_study / "results/data/faq/raw/manifest.json").read_text())
    assert manifest["source"] == "local" and len(manifest["files"]) == 4
    summary = json.loads((own_study / "results/summary.json").read_text())
    rows = {(r["dataset"], r["variant"]): r for r in summary["rows"]}
    assert set(rows) == {("faq", "bm25"), ("faq", "pointwise")}
    for row in rows.values():
        assert row["n_queries"] == 10  # the split's test queries
        for measure in ("P@1", "MAP", "MRR", "nDCG@10", "R@20"):  # the entry's measures
            assert 0.0 <= row[measure] <= 1.0


def test_regress_grades_the_study(own_study):
    graded = (own_study / "results/regression.md").read_text()
    lines = [line for line in graded.splitlines() if "| own-data |" in line]
    # The BM25 row is deterministic: studies/expected.yaml pins its four measures.
    assert len(lines) == 4 and all(line.startswith("| OK |") for line in lines), graded


def test_score_with_the_study_s_qrels_gives_the_summary_s_numbers(own_study):
    summary = json.loads((own_study / "results/summary.json").read_text())
    rows = {r["variant"]: r for r in summary["rows"]}
    run = "results/runs/faq/pointwise-L64/fold0.run"
    for how in (
        ["--qrels", "results/data/faq/qrels.txt", "--queries-from-run"],
        ["--prepared", "results/data/faq", "--split", "test"],
    ):
        scored = _run(["reranklab", "score", "--json", *how, run], own_study)
        assert scored.returncode == 0, scored.stderr
        result = json.loads(scored.stdout)
        assert result["queries"] == 10
        for measure in ("P@1", "MAP", "MRR", "nDCG@10"):
            assert result["measures"][measure] == pytest.approx(rows["pointwise"][measure])
