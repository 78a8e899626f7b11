"""aggregate_folds: concatenated run, overall vs fold mean/std, disjoint folds."""

from __future__ import annotations

import math

import pytest

from reranklab.errors import FormatError
from reranklab.evaluation import aggregate_folds, evaluate_run
from reranklab.io import read_json, read_run, write_json, write_run

QRELS = {
    "q1": {"a": 1},
    "q2": {"b": 1},
    "q3": {"c": 0},  # no relevant passage: excluded
    "q4": {"d": 1},  # relevant, but fold 1's run has no candidates for it: counts 0
    "q5": {"e": 1},
    "q6": {"f": 1},
}
FOLD_TESTS = [["q1", "q2"], ["q3", "q4", "q5", "q6"]]
FOLD_RUNS = [
    # q1: a first -> P@1 1, MRR 1.  q2: b second -> P@1 0, MRR 1/2.
    {"q1": {"a": 2.0, "z": 1.0}, "q2": {"z": 2.0, "b": 1.0}},
    # q5: e third -> P@1 0, MRR 1/3.  q6: f first -> P@1 1, MRR 1.  q4 missing -> 0.
    {"q3": {"c": 1.0}, "q5": {"y": 3.0, "x": 2.0, "e": 1.0}, "q6": {"f": 1.0}},
]


def _write_folds(tmp_path, runs=FOLD_RUNS, tests=FOLD_TESTS):
    run_paths, metric_paths = [], []
    for k, (run, qids) in enumerate(zip(runs, tests, strict=True)):
        run_path, metrics_path = tmp_path / f"fold{k}.run", tmp_path / f"fold{k}.json"
        write_run(run_path, run, tag="pointwise-L256")
        write_json(metrics_path, evaluate_run(run, QRELS, qids=qids))
        run_paths.append(run_path)
        metric_paths.append(metrics_path)
    return run_paths, metric_paths


def test_two_folds_concatenate_and_summarise(tmp_path):
    runs, metrics = _write_folds(tmp_path)
    result = aggregate_folds(runs, metrics, QRELS, 1, tmp_path / "cell.run", tmp_path / "cell.json")

    combined = read_run(tmp_path / "cell.run")
    assert combined == {**FOLD_RUNS[0], **FOLD_RUNS[1]}
    assert all(
        line.split()[5] == "pointwise-L256"
        for line in (tmp_path / "cell.run").read_text().splitlines()
    )

    # Overall, over q1 q2 q4 q5 q6 (q3 excluded):
    #   P@1 = (1 + 0 + 0 + 0 + 1) / 5 = 0.4;  MRR = (1 + 1/2 + 0 + 1/3 + 1) / 5 = 0.56667
    assert result["n_queries"] == 5
    assert result["n_excluded"] == 1
    assert result["excluded"] == ["q3"]
    assert result["overall"]["P@1"] == pytest.approx(0.4)
    assert result["overall"]["MRR"] == pytest.approx((1 + 0.5 + 0 + 1 / 3 + 1) / 5)
    assert result["per_query"]["q4"]["MRR"] == 0.0

    # Folds: fold0 P@1 1/2, MRR 3/4; fold1 (q4 q5 q6) P@1 1/3, MRR (0 + 1/3 + 1)/3 = 4/9.
    assert [f["n_queries"] for f in result["folds"]] == [2, 3]
    assert [f["n_excluded"] for f in result["folds"]] == [0, 1]
    assert result["folds"][1]["metrics"]["MRR"] == pytest.approx(4 / 9)
    # Mean of the folds: MRR (3/4 + 4/9) / 2 = 43/72; sample std |3/4 - 4/9| / sqrt(2).
    assert result["fold_mean"]["MRR"] == pytest.approx(43 / 72)
    assert result["fold_std"]["MRR"] == pytest.approx((3 / 4 - 4 / 9) / math.sqrt(2))
    assert result["fold_mean"]["P@1"] == pytest.approx(5 / 12)
    assert result["fold_std"]["P@1"] == pytest.approx((1 / 2 - 1 / 3) / math.sqrt(2))
    assert result["std_ddof"] == 1
    assert result["n_folds"] == 2

    on_disk = read_json(tmp_path / "cell.json")
    assert set(on_disk) >= {
        "overall",
        "fold_mean",
        "fold_std",
        "folds",
        "n_queries",
        "n_excluded",
        "per_query",
    }
    assert on_disk == result


def test_single_fold_has_zero_spread(tmp_path):
    runs, metrics = _write_folds(tmp_path, runs=FOLD_RUNS[:1], tests=FOLD_TESTS[:1])
    result = aggregate_folds(runs, metrics, QRELS, 1, tmp_path / "cell.run", tmp_path / "cell.json")
    assert result["std_ddof"] == 0
    assert result["fold_std"]["MRR"] == 0.0
    assert result["fold_mean"]["MRR"] == result["overall"]["MRR"] == pytest.approx(0.75)


def test_overlapping_folds_are_an_error(tmp_path):
    runs = [FOLD_RUNS[0], {"q2": {"b": 1.0}, "q5": {"e": 1.0}}]
    run_paths, metric_paths = _write_folds(tmp_path, runs=runs, tests=[["q1", "q2"], ["q2", "q5"]])
    with pytest.raises(ValueError, match="query 'q2' is in the test set of fold 0 and of fold 1"):
        aggregate_folds(
            run_paths, metric_paths, QRELS, 1, tmp_path / "cell.run", tmp_path / "cell.json"
        )
    assert not (tmp_path / "cell.run").exists()


def test_bad_inputs(tmp_path):
    runs, metrics = _write_folds(tmp_path)
    with pytest.raises(ValueError, match="2 fold runs but 1 fold metrics"):
        aggregate_folds(runs, metrics[:1], QRELS, 1, tmp_path / "c.run", tmp_path / "c.json")
    with pytest.raises(ValueError, match="relevance threshold 1, aggregating with 2"):
        aggregate_folds(runs, metrics, QRELS, 2, tmp_path / "c.run", tmp_path / "c.json")
    write_json(metrics[1], {"MRR": 0.5})
    with pytest.raises(FormatError, match="fold1.json: not a metrics file"):
        aggregate_folds(runs, metrics, QRELS, 1, tmp_path / "c.run", tmp_path / "c.json")
