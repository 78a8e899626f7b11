"""The seed axis: names and paths, mean ± std over seeds, the summary, MLflow nesting, the DAG."""

from __future__ import annotations

import csv
import json
import re
import shutil
import statistics
import subprocess
from pathlib import Path

import pytest

from reranklab.errors import ConfigError, FormatError
from reranklab.evaluation import aggregate_folds, evaluate_run
from reranklab.evaluation.seeds import aggregate_seeds
from reranklab.io import read_json, write_json, write_run
from reranklab.report import paired_p_value, summarize
from reranklab.seeds import seed_dir, seed_from_dir, split_cell, study_seeds
from tests.conftest import tool_env

QRELS = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}, "q4": {"d": 1}}
FOLDS = [["q1", "q2"], ["q3", "q4"]]
# Rank of each query's relevant passage, per seed (MRR 0.75, 0.625, 1.0).
RANKS = {
    1: {"q1": 1, "q2": 2, "q3": 1, "q4": 2},
    2: {"q1": 2, "q2": 1, "q3": 2, "q4": 2},
    3: {"q1": 1, "q2": 1, "q3": 1, "q4": 1},
}
BM25_RANKS = {"q1": 2, "q2": 2, "q3": 3, "q4": 2}


def _run(ranks: dict[str, int]) -> dict[str, dict[str, float]]:
    """A run where each query's relevant passage is at the given rank among three."""
    run = {}
    for qid, rank in ranks.items():
        relevant = next(iter(QRELS[qid]))
        others = [f"{qid}-x", f"{qid}-y"]
        order = others[: rank - 1] + [relevant] + others[rank - 1 :]
        run[qid] = {pid: 3.0 - i for i, pid in enumerate(order)}
    return run


def _cell_metrics(root: Path, name: str, ranks: dict[str, int]) -> tuple[Path, list[dict]]:
    """Per-fold runs and metrics and their aggregate, as the workflow writes them."""
    run = _run(ranks)
    folds, runs, metrics = [], [], []
    for k, qids in enumerate(FOLDS):
        run_path, metrics_path = root / name / f"fold{k}.run", root / name / f"fold{k}.json"
        fold_run = {q: run[q] for q in qids}
        write_run(run_path, fold_run, tag=name)
        write_json(metrics_path, evaluate_run(fold_run, QRELS, qids=qids))
        runs.append(run_path)
        metrics.append(metrics_path)
        folds.append({"fold": k, "run": run_path, "metrics": metrics_path, "train_stats": None})
    aggregate_folds(runs, metrics, QRELS, 1, root / name / "run.txt", root / name / "metrics.json")
    return root / name / "metrics.json", folds


def test_names_and_paths():
    assert study_seeds({"seed": 42}) is None
    assert study_seeds({"seeds": [7, 3]}) == [7, 3]
    with pytest.raises(ConfigError, match="seeds"):
        study_seeds({"seeds": [1, 1]})
    assert (seed_dir(7), seed_dir(None)) == ("/seed7", "")
    assert (seed_from_dir("/seed7", 42), seed_from_dir("", 42)) == (7, 42)
    assert split_cell("pointwise-L256/seed3") == ("pointwise", 256, 3)
    assert split_cell("pointwise-L256") == ("pointwise", 256, None)
    assert split_cell("pool") == ("pool", None, None)
    with pytest.raises(ValueError):
        split_cell("pointwise-L256/3")


def test_aggregate_seeds_mean_std_and_per_query_means(tmp_path):
    paths = [_cell_metrics(tmp_path, f"seed{s}", RANKS[s])[0] for s in (1, 2, 3)]
    result = aggregate_seeds(paths, [1, 2, 3], tmp_path / "cell.json")
    assert read_json(tmp_path / "cell.json") == json.loads(json.dumps(result))
    assert [result["per_seed"][s]["MRR"] for s in ("1", "2", "3")] == [0.75, 0.625, 1.0]
    assert result["overall"]["MRR"] == pytest.approx(2.375 / 3)
    assert result["seed_std"]["MRR"] == pytest.approx(statistics.stdev([0.75, 0.625, 1.0]))
    assert result["seed_std"]["MRR"] == pytest.approx(0.190941, abs=1e-6)
    assert result["per_query"]["q1"]["MRR"] == pytest.approx((1 + 0.5 + 1) / 3)
    assert result["per_query"]["q4"]["P@1"] == pytest.approx(1 / 3)
    assert (result["n_seeds"], result["n_queries"], result["n_folds"]) == (3, 4, 2)
    # Fold spread: the mean over seeds of each seed's fold mean (MRR folds: .75/.75, .75/.5, 1/1).
    assert result["fold_mean"]["MRR"] == pytest.approx((0.75 + 0.625 + 1.0) / 3)
    assert result["fold_std"]["MRR"] == pytest.approx(statistics.stdev([0.75, 0.5]) / 3)


def test_aggregate_seeds_refuses_seeds_on_other_queries(tmp_path):
    good = _cell_metrics(tmp_path, "a", RANKS[1])[0]
    other = read_json(good)
    other["per_query"].pop("q4")
    write_json(tmp_path / "other.json", other)
    with pytest.raises(FormatError, match="other queries"):
        aggregate_seeds([good, tmp_path / "other.json"], [1, 2])
    with pytest.raises(ValueError):
        aggregate_seeds([good], [1, 2])


def test_summary_reports_mean_and_std_over_seeds(tmp_path):
    bm25 = _cell_metrics(tmp_path, "bm25", BM25_RANKS)[0]
    seeds = [_cell_metrics(tmp_path, f"seed{s}", RANKS[s])[0] for s in (1, 2, 3)]
    aggregate_seeds(seeds, [1, 2, 3], tmp_path / "pointwise.json")
    cells = [
        {"dataset": "toy", "variant": "bm25", "max_length": None, "metrics_path": str(bm25)},
        {
            "dataset": "toy",
            "variant": "pointwise",
            "max_length": 64,
            "metrics_path": str(tmp_path / "pointwise.json"),
        },
    ]
    rows = summarize(cells, tmp_path / "s.csv", tmp_path / "s.md", tmp_path / "s.json", "seeds")
    mrr = rows[1]
    assert (mrr["n_seeds"], rows[0]["n_seeds"]) == (3, 1)
    assert mrr["MRR"] == pytest.approx(2.375 / 3) and mrr["MRR_seed_std"] == pytest.approx(
        0.190941, abs=1e-6
    )
    # The t-test pairs each query's mean over seeds with BM25 (RR 1/2, 1/2, 1/3, 1/2).
    seed_means = [(1 + 0.5 + 1) / 3, (0.5 + 1 + 1) / 3, (1 + 0.5 + 1) / 3, (0.5 + 0.5 + 1) / 3]
    assert mrr["MRR_p"] == pytest.approx(paired_p_value(seed_means, [0.5, 0.5, 1 / 3, 0.5]))
    markdown = (tmp_path / "s.md").read_text()
    assert re.search(
        r"\| toy \| b \| pointwise \| 64 \| .*0\.792†?\S* ± 0\.191 .*\| 4 \| 0 \| 2 \| 3 \|",
        markdown,
    ), markdown
    assert "| folds | seeds |" in markdown and "mean over seeds" in markdown
    with open(tmp_path / "s.csv") as handle:
        table = list(csv.DictReader(handle))
    assert table[1]["n_seeds"] == "3" and float(table[1]["MRR_seed_std"]) == pytest.approx(
        0.190941, abs=1e-6
    )
    assert table[0]["MRR_seed_std"] == ""


def test_single_seed_summary_is_unchanged(tmp_path):
    bm25 = _cell_metrics(tmp_path, "bm25", BM25_RANKS)[0]
    summarize(
        [{"dataset": "toy", "variant": "bm25", "max_length": None, "metrics_path": str(bm25)}],
        tmp_path / "s.csv",
        tmp_path / "s.md",
        tmp_path / "s.json",
        "one",
    )
    assert "seed" not in (tmp_path / "s.csv").read_text().splitlines()[0]
    assert "seeds" not in (tmp_path / "s.md").read_text()


def test_mlflow_nests_folds_under_seeds_under_the_cell(tmp_path):
    pytest.importorskip("mlflow")
    from mlflow import MlflowClient

    from reranklab.tracking.mlflow_tracking import track_cell
    from reranklab.tracking.seeds import track_seeds

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    cell = {
        "study": "unit",
        "seed": 42,
        "seeds": [1, 2],
        "dataset": "toy",
        "variant": "pointwise",
        "max_length": 64,
        "training": {"epochs": 1},
    }
    tracked, metrics = [], []
    for seed in (1, 2):
        path, folds = _cell_metrics(tmp_path, f"seed{seed}", RANKS[seed])
        out = tmp_path / f"seed{seed}" / "mlflow.json"
        track_cell({**cell, "seed": seed}, folds, path, path.with_name("run.txt"), uri, "unit", out)
        tracked.append(out)
        metrics.append(path)
    aggregate_seeds(metrics, [1, 2], tmp_path / "cell.json")
    result = track_seeds(
        cell, tracked, tmp_path / "cell.json", uri, "unit", tmp_path / "mlflow.json"
    )

    client = MlflowClient(tracking_uri=uri)
    parent = client.get_run(result["parent_run_id"])
    assert parent.info.run_name == "toy/pointwise/L64"
    assert parent.data.metrics["MRR"] == pytest.approx(0.6875)
    assert parent.data.metrics["MRR_seed_std"] == pytest.approx(statistics.stdev([0.75, 0.625]))
    assert parent.data.params["seeds"] == "[1, 2]" and parent.data.metrics["n_seeds"] == 2
    for seed in (1, 2):
        seed_run = client.get_run(result["seed_run_ids"][f"seed{seed}"])
        assert seed_run.info.run_name == f"toy/pointwise/L64/seed{seed}"
        assert seed_run.data.tags["mlflow.parentRunId"] == parent.info.run_id
        assert seed_run.data.tags["reranklab.seed"] == str(seed)
        children = client.search_runs(
            [parent.info.experiment_id],
            filter_string=f"tags.mlflow.parentRunId = '{seed_run.info.run_id}'",
        )
        assert sorted(run.info.run_name for run in children) == ["fold0", "fold1"]
    # Tracking the cell again replaces its cell run; the seeds stay nested under the new one.
    again = track_seeds(
        cell, tracked, tmp_path / "cell.json", uri, "unit", tmp_path / "mlflow.json"
    )
    assert again["replaced_run_ids"] == [parent.info.run_id]
    assert (
        client.get_run(result["seed_run_ids"]["seed1"]).data.tags["mlflow.parentRunId"]
        == again["parent_run_id"]
    )


def test_the_dag_gets_a_seed_level(repo, tmp_path):
    for name in ("Snakefile", "envs", "params.yaml", "workflow"):
        (shutil.copytree if (repo / name).is_dir() else shutil.copy)(repo / name, tmp_path / name)
    config = {
        "study": "s",
        "datasets": ["sample"],
        "seeds": [1, 2, 3],
        "grid": {"variant": ["pointwise"], "max_length": [64]},
        "protocol": {"sample": {"folds": 2}},
        "training": {"encoder": "unused", "epochs": 1},
    }
    (tmp_path / "seeds.yaml").write_text(json.dumps(config))
    command = [
        "snakemake",
        "--dry-run",
        "--cores",
        "2",
        "--resources",
        "gpu=1",
        "--configfile",
        "seeds.yaml",
    ]
    result = subprocess.run(
        command, cwd=tmp_path, env=tool_env(), capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    output = result.stdout + result.stderr
    counts = {
        m.group(1): int(m.group(2))
        for m in re.finditer(r"^(\w+)\s+(\d+)$", output.split("Job stats:")[-1], re.M)
    }
    # 3 seeds x 2 folds of sampling, training, re-ranking; one fold aggregate per seed (+ BM25's).
    assert {
        k: counts[k]
        for k in (
            "sample",
            "train",
            "rerank",
            "evaluate",
            "aggregate",
            "track",
            "aggregate_seeds",
            "track_seeds",
            "split",
        )
    } == {
        "sample": 6,
        "train": 6,
        "rerank": 6,
        "evaluate": 8,
        "aggregate": 4,
        "track": 4,
        "aggregate_seeds": 1,
        "track_seeds": 1,
        "split": 1,
    }
    for path in (
        "results/samples/sample/seed2/fold1/pointwise.parquet",
        "results/models/sample/pointwise-L64/seed3/fold0",
        "results/runs/sample/pointwise-L64/seed1/fold1.run",
        "results/cells/sample/pointwise-L64/seed2/metrics.json",
        "results/cells/sample/pointwise-L64/metrics.json",
        "results/metrics/sample/bm25/fold0.json",
    ):
        assert path in output, path
    assert "results/models/sample/pointwise-L64/fold0" not in output
