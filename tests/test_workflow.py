"""The whole DAG through the Snakemake CLI (and DVC) on the shipped sample with a tiny BERT.

The study is the session's shared one (tests/conftest.py: ``sample_study``), run once by
``dvc repro``; the tests here read it, and a test that needs another config writes it outside.
"""

from __future__ import annotations

import csv
import json
import math
import re
import sqlite3
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import SAMPLE_STUDY_VARIANTS, tool_env

pytestmark = pytest.mark.integration

# The shared study's rows and MLflow cell runs: the first stage, then its re-rankers.
CELLS = [("bm25", "")] + [(variant, "64") for variant in SAMPLE_STUDY_VARIANTS]
RUN_NAMES = sorted(
    f"sample/{variant}/L{length}" if length else f"sample/{variant}" for variant, length in CELLS
)


def snakemake(
    workdir: Path, *args: str, config: str | Path = "config/test.yaml"
) -> subprocess.CompletedProcess:
    cmd = [
        "snakemake",
        "--cores",
        "2",
        "--resources",
        "gpu=1",
        "--configfile",
        str(config),
        *args,
    ]
    return subprocess.run(
        cmd, cwd=workdir, env=tool_env(), capture_output=True, text=True, timeout=900
    )


def job_counts(output: str) -> dict[str, int]:
    """The 'Job stats' table of a Snakemake (dry) run: rule -> count."""
    counts: dict[str, int] = {}
    table = output.split("Job stats:", 1)[-1]
    for line in table.splitlines():
        match = re.match(r"^(\w+)\s+(\d+)\s*$", line.strip())
        if match and match.group(1) != "total":
            counts[match.group(1)] = int(match.group(2))
    return counts


@pytest.fixture(scope="module")
def study(sample_study):
    return sample_study.path, sample_study.repro


def test_summary_has_a_row_per_cell(study):
    workdir, _ = study
    with open(workdir / "results/summary.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["dataset"], r["variant"], r["max_length"]) for r in rows] == [
        ("sample", variant, length) for variant, length in CELLS
    ]
    for row in rows:
        for measure in ("P@1", "MAP", "MRR", "MRR@10", "nDCG@10"):
            assert 0.0 <= float(row[measure]) <= 1.0
            assert row[f"{measure}_mean"] != "" and row[f"{measure}_std"] != ""
        assert int(row["n_folds"]) == 2
    # every test query of the two folds is evaluated once (the sample has no unjudged query)
    folds = json.loads((workdir / "results/splits/sample/folds.json").read_text())
    test_qids = {q for f in folds["folds"] for q in f["test"]}
    assert int(rows[0]["n_queries"]) + int(rows[0]["n_excluded"]) == len(test_qids)
    assert (workdir / "results/summary.md").read_text().count("| sample") == len(CELLS)
    assert json.loads((workdir / "results/summary.json").read_text())


def test_each_stage_leaves_canonical_files_and_a_log(study):
    workdir, _ = study
    results = workdir / "results"
    for path in [
        "data/sample/corpus.parquet",
        "data/sample/queries.tsv",
        "data/sample/qrels.txt",
        "first_stage/sample/candidates.run",
        "splits/sample/folds.json",
        "samples/sample/fold0/pointwise.parquet",
        "samples/sample/fold1/triplets.parquet",
        "models/sample/pointwise-L64/fold0/train_stats.json",
        "runs/sample/bertlets-L64/fold1.run",
        "metrics/sample/bm25/fold0.json",
        "cells/sample/pointwise-L64/run.txt",
    ]:
        assert (results / path).is_file(), path
    logs = {p.relative_to(results / "logs").parts[0] for p in (results / "logs").rglob("*.log")}
    assert logs >= {
        "download",
        "prepare",
        "index",
        "retrieve",
        "split",
        "sample",
        "train",
        "rerank",
        "baseline",
        "evaluate",
        "aggregate",
        "track",
        "summarize",
    }
    first_line = (
        (results / "runs/sample/pointwise-L64/fold0.run").read_text().splitlines()[0].split()
    )
    assert first_line[1] == "Q0" and first_line[3] == "1" and first_line[5] == "pointwise-L64"


def test_mlflow_has_parent_and_child_runs(study):
    workdir, _ = study
    db = sqlite3.connect(workdir / "results/mlflow.db")
    (exp_id,) = db.execute("select experiment_id from experiments where name = 'itest'").fetchone()
    runs = db.execute(
        "select run_uuid, name from runs where experiment_id = ? and lifecycle_stage = 'active'",
        (exp_id,),
    ).fetchall()
    study_runs = {
        run_id
        for (run_id,) in db.execute(
            "select run_uuid from tags where key = 'reranklab.role' and value = 'study'"
        )
    }
    parents = {
        run_id: name
        for run_id, name in runs
        if run_id not in study_runs
        and not db.execute(
            "select 1 from tags where run_uuid = ? and key = 'mlflow.parentRunId'", (run_id,)
        ).fetchone()
    }
    assert sorted(parents.values()) == RUN_NAMES
    for parent in parents:
        children = db.execute(
            "select run_uuid from tags where key = 'mlflow.parentRunId' and value = ?", (parent,)
        ).fetchall()
        assert len(children) == 2
        metrics = {
            k
            for (k,) in db.execute("select key from metrics where run_uuid = ?", (children[0][0],))
        }
        assert metrics, "fold runs carry their metrics"
    n_params = db.execute(
        "select count(*) from params where run_uuid = ?", (next(iter(parents)),)
    ).fetchone()[0]
    assert n_params >= 10


def test_the_report_holds_every_table_and_figure(study):
    from reranklab.report.analyses.outputs import outputs

    workdir, _ = study
    report = workdir / "results/report"
    # The analyses that apply to the study's grid (a one-length grid has no sweep, say).
    rows = json.loads((workdir / "results/summary.json").read_text())["rows"]
    cells = [row for row in rows if row.get("max_length") is not None]
    shown = outputs({row["variant"] for row in cells}, {row["max_length"] for row in cells})
    assert shown, "the study's analyses"
    for name in shown:
        assert (report / "sample" / name).stat().st_size > 0, name
    for page in ("summary", "significance", "regression"):
        assert "<table>" in (report / f"{page}.html").read_text()
    significance = (workdir / "results/significance.csv").read_text().splitlines()
    assert len(significance) == 1 + math.comb(len(CELLS), 2) * 5  # every pair of rows x 5 measures
    result = snakemake(workdir, "--report", "results/report.html")
    assert result.returncode == 0, result.stderr[-3000:]
    assert (workdir / "results/report.html").stat().st_size > 100_000


def test_mlflow_holds_the_study_tables_and_the_cells_figures(study):
    from mlflow import MlflowClient

    workdir, _ = study
    record = json.loads((workdir / "results/report/mlflow.json").read_text())
    client = MlflowClient(f"sqlite:///{workdir / 'results/mlflow.db'}")
    tables = {a.path for a in client.list_artifacts(record["study_run_id"], "tables")}
    assert {"tables/summary.md", "tables/significance.csv", "tables/regression.md"} <= tables
    report = {a.path for a in client.list_artifacts(record["study_run_id"], "report/sample")}
    assert "report/sample/methods.png" in report
    assert sorted(record["cell_run_ids"]) == RUN_NAMES
    cell = record["cell_run_ids"]["sample/pointwise/L64"]
    files = {a.path for a in client.list_artifacts(cell)}
    assert {"run.txt", "metrics.json", "figures", "model_card"} <= files
    figures = {a.path for a in client.list_artifacts(cell, "figures")}
    assert "figures/query_delta.png" in figures


def _browser_or_skip() -> None:
    from tests.browser_pages import chromium_path

    pytest.importorskip("playwright.sync_api", reason="the browser tests need playwright")
    if chromium_path() is None:
        pytest.skip("no Chromium on PATH: apt-get install chromium (.ci/run installs it)")


def test_the_report_shows_its_tables_and_figures_in_a_browser(study, tmp_path):
    _browser_or_skip()
    from tests.browser_pages import report_views

    workdir, _ = study
    if not (workdir / "results/report.html").is_file():
        assert snakemake(workdir, "--report", "results/report.html").returncode == 0
    seen = report_views(workdir / "results/report.html", "sample", tmp_path)
    # The rendered summary table (not the HTML source): every row, with its values.
    assert "bm25" in seen["summary"] and "pointwise" in seen["summary"]
    assert "bertlets" in seen["summary"] and "MAP" in seen["summary"]
    assert seen["figure_width"] >= 500  # the methods figure, decoded and displayed
    for name in ("report-summary.png", "report-methods.png"):
        assert (tmp_path / name).stat().st_size > 20_000


def test_the_mlflow_ui_shows_the_grid_runs_in_a_browser(study, tmp_path):
    _browser_or_skip()
    from tests.browser_pages import mlflow_runs_view, mlflow_ui

    workdir, _ = study
    record = json.loads((workdir / "results/report/mlflow.json").read_text())
    wanted = [*RUN_NAMES, "study itest"]
    with mlflow_ui(workdir / "results/mlflow.db") as url:
        seen = mlflow_runs_view(url, record["experiment_id"], wanted, tmp_path / "mlflow.png")
    assert seen == dict.fromkeys(wanted, True)
    assert (tmp_path / "mlflow.png").stat().st_size > 20_000


def test_second_invocation_does_nothing(study):
    workdir, _ = study
    result = snakemake(workdir)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Nothing to be done" in result.stdout + result.stderr


def test_changing_one_parameter_reruns_only_its_dependents(study, tmp_path):
    workdir, _ = study
    config = yaml.safe_load((workdir / "config/test.yaml").read_text())
    # bertlets' margin; its alias bertlets_m05 sets a margin of its own, so it does not move.
    config["variants"]["bertlets"] = {"margin": 0.3}
    (tmp_path / "changed.yaml").write_text(yaml.safe_dump(config))  # the shared study stays
    result = snakemake(workdir, "--dry-run", config=tmp_path / "changed.yaml")
    assert result.returncode == 0, result.stderr[-3000:]
    counts = job_counts(result.stdout + result.stderr)
    assert counts == {
        "train": 2,
        "rerank": 2,
        "evaluate": 2,
        "aggregate": 1,
        "track": 1,
        "summarize": 1,
        "regress": 1,
        "analyze": 1,
        "report_page": 3,
        "track_report": 1,
        "collect_plots": 1,
        "all": 1,
    }


def test_bad_config_key_stops_before_any_job(study, tmp_path):
    workdir, _ = study
    (tmp_path / "bad.yaml").write_text("training:\n  epoch: 3\n")
    cmd = ["snakemake", "--cores", "1", "--dry-run", "--configfile", str(tmp_path / "bad.yaml")]
    result = subprocess.run(
        cmd, cwd=workdir, env=tool_env(), capture_output=True, text=True, timeout=300
    )
    assert result.returncode != 0
    assert "unknown key training.epoch" in result.stdout + result.stderr


def test_dvc_repro_reproduces_through_snakemake(sample_study):
    """`dvc repro` in a fresh git clone ran the study (its stages call Snakemake targets)."""
    workdir = sample_study.path
    lock = yaml.safe_load((workdir / "dvc.lock").read_text())
    assert set(lock["stages"]) == {"prepare", "first_stage", "study"}
    assert "--configfiles config/test.yaml" in lock["stages"]["study"]["cmd"]
    outs = {o["path"]: o for o in lock["stages"]["study"]["outs"]}
    assert outs["results/summary.json"]["md5"]
    shown = subprocess.run(
        ["dvc", "metrics", "show", "--json"],
        cwd=workdir,
        env=tool_env(),
        capture_output=True,
        text=True,
    )
    assert shown.returncode == 0 and "MAP" in shown.stdout
    again = sample_study.again  # run straight after the first, before any test here
    assert again.returncode == 0 and "didn't change" in again.stdout
