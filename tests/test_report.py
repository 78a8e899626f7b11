"""summarize: row order, columns, paired t-test p-values, Markdown and JSON."""

from __future__ import annotations

import csv
import json
import math

import pytest

from reranklab.errors import FormatError
from reranklab.evaluation.measures import NAMES
from reranklab.io import write_json
from reranklab.report import paired_p_value, summarize

QIDS = ["q1", "q2", "q3", "q4"]
# Per-query MRR of the re-ranker and of BM25: differences 0.25, 0.5, 0, 0.5.
RERANK_MRR = [0.5, 1.0, 0.2, 0.7]
BM25_MRR = [0.25, 0.5, 0.2, 0.2]


def _t_test_p(diffs: list[float]) -> float:
    """Two-sided paired t-test for 3 degrees of freedom, in closed form (no scipy).

    t = mean(d) / (sd(d) / sqrt(n)); for df = 3 the t CDF is
    1/2 + (x / (1 + x^2) + atan(x)) / pi with x = t / sqrt(3).
    """
    n = len(diffs)
    assert n == 4
    mean = sum(diffs) / n
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
    x = mean / (sd / math.sqrt(n)) / math.sqrt(3)
    return 1 - 2 * (x / (1 + x * x) + math.atan(x)) / math.pi


def _metrics(tmp_path, name, per_query, n_folds=2, n_excluded=1, scale=1.0):
    """An aggregate metrics file: every measure takes the per-query value (times ``scale``)."""
    values = {q: {m: v * scale for m in NAMES} for q, v in per_query.items()}
    overall = {m: sum(v[m] for v in values.values()) / len(values) for m in NAMES}
    document = {
        "overall": overall,
        "fold_mean": {m: overall[m] + 0.01 for m in NAMES},
        "fold_std": {m: 0.02 for m in NAMES},
        "folds": [{"fold": k, "n_queries": 2, "metrics": overall} for k in range(n_folds)],
        "n_folds": n_folds,
        "n_queries": len(values),
        "n_excluded": n_excluded,
        "excluded": ["q9"][:n_excluded],
        "relevance_threshold": 1,
        "per_query": values,
    }
    path = tmp_path / f"{name}.json"
    write_json(path, document)
    return path


@pytest.fixture
def cells(tmp_path):
    bm25 = _metrics(tmp_path, "wikiqa-bm25", dict(zip(QIDS, BM25_MRR, strict=True)))
    pointwise = _metrics(tmp_path, "wikiqa-pw", dict(zip(QIDS, RERANK_MRR, strict=True)))
    # A clearly better re-ranker: +0.3 to +0.5 on every query -> significant.
    better = _metrics(
        tmp_path,
        "wikiqa-bl",
        {q: b + 0.3 + 0.05 * i for i, (q, b) in enumerate(zip(QIDS, BM25_MRR, strict=True))},
    )
    pool = _metrics(tmp_path, "other-pool", {"a": 0.5, "b": 0.5}, n_folds=1, n_excluded=0)
    same = _metrics(tmp_path, "other-pw", {"a": 0.5, "b": 0.5}, n_folds=1, n_excluded=0)
    # Given in grid order, first stages last: the report must put them first per dataset.
    return [
        {
            "dataset": "wikiqa",
            "variant": "pointwise",
            "max_length": 256,
            "metrics_path": str(pointwise),
        },
        {
            "dataset": "wikiqa",
            "variant": "bertlets",
            "max_length": 256,
            "metrics_path": str(better),
        },
        {"dataset": "other", "variant": "pointwise", "max_length": 128, "metrics_path": str(same)},
        {"dataset": "wikiqa", "variant": "bm25", "max_length": None, "metrics_path": str(bm25)},
        {"dataset": "other", "variant": "pool", "max_length": None, "metrics_path": str(pool)},
    ]


def test_paired_p_value_matches_closed_form():
    diffs = [a - b for a, b in zip(RERANK_MRR, BM25_MRR, strict=True)]
    expected = _t_test_p(diffs)
    assert expected == pytest.approx(0.0796050, abs=1e-6)
    assert paired_p_value(RERANK_MRR, BM25_MRR) == pytest.approx(expected, rel=1e-9)
    assert paired_p_value([0.1, 0.2], [0.1, 0.2]) == 1.0
    assert paired_p_value([0.1], [0.2]) is None


def test_rows_order_columns_and_p_values(tmp_path, cells):
    out_csv, out_md, out_json = tmp_path / "s.csv", tmp_path / "s.md", tmp_path / "s.json"
    rows = summarize(cells, out_csv, out_md, out_json, "my study")
    assert [(r["dataset"], r["variant"], r["max_length"]) for r in rows] == [
        ("wikiqa", "bm25", None),
        ("wikiqa", "pointwise", 256),
        ("wikiqa", "bertlets", 256),
        ("other", "pool", None),
        ("other", "pointwise", 128),
    ]
    with open(out_csv, newline="", encoding="utf-8") as handle:
        table = list(csv.DictReader(handle))
    header = list(table[0])
    assert header[:9] == [
        "dataset",
        "row",
        "variant",
        "max_length",
        "P@1",
        "MAP",
        "MRR",
        "MRR@10",
        "nDCG@10",
    ]
    assert header[-3:] == ["n_queries", "n_excluded", "n_folds"]
    assert {f"{m}_{s}" for m in NAMES for s in ("mean", "std", "p")} <= set(header)
    assert [r["variant"] for r in table] == ["bm25", "pointwise", "bertlets", "pool", "pointwise"]

    bm25, pointwise, bertlets, pool, other = table
    assert bm25["max_length"] == "" and bm25["MRR_p"] == ""
    assert float(pointwise["MRR"]) == pytest.approx(sum(RERANK_MRR) / 4)
    assert float(pointwise["MRR_mean"]) == pytest.approx(sum(RERANK_MRR) / 4 + 0.01)
    assert float(pointwise["MRR_std"]) == pytest.approx(0.02)
    assert float(pointwise["MRR_p"]) == pytest.approx(0.0796050, abs=1e-6)
    assert float(bertlets["MAP_p"]) < 0.05
    assert float(other["MRR_p"]) == 1.0  # identical per-query values
    assert (pointwise["n_queries"], pointwise["n_excluded"], pointwise["n_folds"]) == (
        "4",
        "1",
        "2",
    )


def test_markdown_marks_and_explains(tmp_path, cells):
    out_md = tmp_path / "s.md"
    summarize(cells, tmp_path / "s.csv", out_md, tmp_path / "s.json", "my study")
    text = out_md.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines[0] == "# my study"
    bertlets = next(line for line in lines if "| bertlets |" in line)
    pointwise = next(line for line in lines if "| wikiqa | b | pointwise |" in line)
    bm25 = next(line for line in lines if "| bm25 |" in line)
    # bertlets: MRR = mean(0.55, 0.85, 0.60, 0.65) = 0.6625 (significant), folds 0.6725 ± 0.02.
    assert "0.662†ᵃ (0.672 ± 0.020)" in bertlets  # beats bm25 (row a), not pointwise (b)
    assert "†" not in pointwise and "0.600 (0.610 ± 0.020)" in pointwise  # MRR 2.4 / 4
    assert "†" not in bm25 and "| – |" in bm25  # no max length
    # Single-fold rows show the value alone.
    other = next(line for line in lines if "| other | b | pointwise |" in line)
    assert "| 0.500 |" in other and "±" not in other
    assert "† p < 0.05: two-sided paired t-test" in text
    assert "wikiqa/bm25" in text and "other/pool" in text
    assert "Excluded queries, wikiqa: 1 of 5 test queries have no passage of grade ≥ 1" in text


def test_json_for_people_and_dvc(tmp_path, cells):
    out_json = tmp_path / "s.json"
    summarize(cells, tmp_path / "s.csv", tmp_path / "s.md", out_json, "my study")
    document = json.loads(out_json.read_text(encoding="utf-8"))
    assert document["title"] == "my study"
    assert [r["key"] for r in document["rows"]] == [
        "wikiqa/bm25",
        "wikiqa/pointwise/L256",
        "wikiqa/bertlets/L256",
        "other/pool",
        "other/pointwise/L128",
    ]
    assert document["rows"][1]["MRR_p"] == pytest.approx(0.0796050, abs=1e-6)
    assert document["rows"][1]["baseline"] == "wikiqa/bm25"
    # Flat entries: dvc metrics show displays scalars and dicts (it skips the lists).
    assert document["wikiqa/pointwise/L256"] == pytest.approx(
        {m: sum(RERANK_MRR) / 4 for m in NAMES}
    )
    scalar_or_dict = {k for k, v in document.items() if not isinstance(v, list)}
    assert scalar_or_dict == {"title"} | {r["key"] for r in document["rows"]}


def test_bad_cells_are_errors(tmp_path, cells):
    with pytest.raises(ValueError, match="cells listed twice: wikiqa/bm25"):
        summarize(
            cells + cells[3:4], tmp_path / "s.csv", tmp_path / "s.md", tmp_path / "s.json", "t"
        )
    write_json(tmp_path / "fold.json", {"aggregate": {"MAP": 0.5}})
    wrong = [{**cells[0], "metrics_path": str(tmp_path / "fold.json")}]
    with pytest.raises(FormatError, match="fold.json: not a cell metrics file"):
        summarize(wrong, tmp_path / "s.csv", tmp_path / "s.md", tmp_path / "s.json", "t")
    assert not (tmp_path / "s.csv").exists()
