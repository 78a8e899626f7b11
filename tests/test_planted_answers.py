"""Planted answers (inject_relevant) and the first stage's recall: which questions got one,
what each cell scores without them, and the summary that shows both."""

from __future__ import annotations

import json

import pytest
from scipy import stats

from reranklab.report.summary import summarize
from reranklab.retrieval import first_stage_record, inject_relevant, recall_at_depth
from tests.helpers_metrics import metrics_file

QRELS = {"q1": {"a": 1}, "q2": {"b": 1, "x": 1}, "q3": {"c": 1}, "q4": {"d": 1}, "q5": {"e": 1}}
# BM25's top 2: q1 holds its answer, q2 one of its two, q3, q4 and q5 none.
BM25 = {
    "q1": {"a": 2.0, "n1": 1.0},
    "q2": {"n2": 2.0, "b": 1.0},
    "q3": {"n3": 2.0, "n4": 1.0},
    "q4": {"n5": 2.0, "n6": 1.0},
    "q5": {"n7": 2.0, "n8": 1.0},
}
PROTOCOL = {"first_stage": "bm25", "depth": 2, "inject_relevant": True, "relevance_threshold": 1}


def test_recall_at_depth_is_the_share_of_relevant_passages_among_the_candidates():
    assert recall_at_depth(BM25, QRELS) == {"q1": 1.0, "q2": 0.5, "q3": 0.0, "q4": 0.0, "q5": 0.0}
    # A grade under the threshold is not relevant; a query without a relevant one has no recall.
    assert recall_at_depth({"q": {"a": 1.0}}, {"q": {"a": 1, "b": 2}}, threshold=2) == {"q": 0.0}
    assert recall_at_depth({}, {"q": {"a": 0}}) == {}


def test_the_record_names_exactly_the_questions_inject_relevant_plants_an_answer_for():
    record = first_stage_record(BM25, QRELS, list(BM25), PROTOCOL)
    _, injected = inject_relevant(BM25, QRELS, depth=2)
    assert record["planted"] == ["q3", "q4", "q5"]
    assert len(record["planted"]) == injected == 3
    assert record["recall"]["q2"] == 0.5 and record["depth"] == 2
    # A protocol without planted answers plants none, whatever the recall.
    plain = first_stage_record(BM25, QRELS, list(BM25), {**PROTOCOL, "inject_relevant": False})
    assert plain["planted"] == [] and plain["planted_answers"] is False
    # Only the step's queries are recorded.
    assert set(first_stage_record(BM25, QRELS, ["q1"], PROTOCOL)["recall"]) == {"q1"}


# Eight questions: q5..q8 got a planted answer (BM25 ranks it last: 1/20), q1..q4 held one.
BM25_MAP = {
    "q1": 1.0,
    "q2": 0.5,
    "q3": 0.5,
    "q4": 0.25,
    "q5": 0.05,
    "q6": 0.05,
    "q7": 0.05,
    "q8": 0.05,
}
# The re-ranker wins only on the planted questions, and loses on the others.
CE_MAP = {"q1": 0.5, "q2": 0.5, "q3": 0.25, "q4": 0.2, "q5": 1.0, "q6": 1.0, "q7": 0.5, "q8": 1.0}


@pytest.fixture
def summary(tmp_path):
    cells = [
        {"dataset": "d", "variant": "bm25", "max_length": None,
         "metrics_path": metrics_file(tmp_path / "bm25.json", {q: {"MAP": v} for q, v in BM25_MAP.items()})},
        {"dataset": "d", "variant": "pairwise_ce", "max_length": 64,
         "metrics_path": metrics_file(tmp_path / "ce.json", {q: {"MAP": v} for q, v in CE_MAP.items()})},
    ]  # fmt: skip
    record = {
        "first_stage": "bm25",
        "depth": 20,
        "planted_answers": True,
        "planted": ["q5", "q6", "q7", "q8", "q9"],  # q9: not a test question of the table
        "recall": {**{q: 1.0 for q in ("q1", "q2", "q3")}, "q4": 0.5, "q9": 0.0}
        | {q: 0.0 for q in ("q5", "q6", "q7", "q8")},
    }
    path = tmp_path / "first_stage.json"
    path.write_text(json.dumps(record))
    out = tmp_path / "s.json"
    summarize(cells, tmp_path / "s.csv", tmp_path / "s.md", out, "t", first_stages={"d": path})
    return json.loads(out.read_text()), (tmp_path / "s.md").read_text()


def test_the_summary_shows_every_cell_without_the_planted_answers(summary):
    document, markdown = summary
    bm25, ce = document["rows"]
    # On all eight the re-ranker looks better; on the four that held an answer it is worse.
    assert ce["MAP"] > bm25["MAP"]
    kept = ["q1", "q2", "q3", "q4"]
    assert ce["MAP_without_planted"] == pytest.approx(sum(CE_MAP[q] for q in kept) / 4)
    assert bm25["MAP_without_planted"] == pytest.approx(sum(BM25_MAP[q] for q in kept) / 4)
    expected = stats.ttest_rel([CE_MAP[q] for q in kept], [BM25_MAP[q] for q in kept]).pvalue
    assert ce["MAP_without_planted_p"] == pytest.approx(expected, rel=1e-9)
    assert ce["n_without_planted"] == 4 and bm25["MAP_without_planted_p"] is None
    # The first-stage row: its recall at the depth over the table's queries, the planted count.
    assert bm25["recall_at_depth"] == pytest.approx(3.5 / 8)
    assert bm25["n_planted"] == 4 and bm25["depth"] == 20
    assert document["first_stages"]["d"]["planted"] == ["q5", "q6", "q7", "q8"]
    assert "planted at rank 20 for 4 of them" in markdown
    assert "## d: without planted answers" in markdown


def test_a_summary_without_planted_answers_only_reports_the_recall(tmp_path):
    path = metrics_file(tmp_path / "bm25.json", {"q1": {"MAP": 0.5}, "q2": {"MAP": 0.25}})
    record = tmp_path / "first_stage.json"
    record.write_text(
        json.dumps({"first_stage": "bm25", "depth": 10, "planted_answers": False,
                    "planted": [], "recall": {"q1": 1.0, "q2": 0.0}})
    )  # fmt: skip
    cells = [{"dataset": "d", "variant": "bm25", "max_length": None, "metrics_path": path}]
    out = tmp_path / "s.json"
    summarize(cells, tmp_path / "s.csv", tmp_path / "s.md", out, "t", first_stages={"d": record})
    row = json.loads(out.read_text())["rows"][0]
    assert row["recall_at_depth"] == 0.5 and row["n_planted"] == 0
    assert "MAP_without_planted" not in row
    assert "no answer planted" in (tmp_path / "s.md").read_text()


def test_a_record_that_is_not_one_names_its_file(tmp_path):
    from reranklab.errors import FormatError

    path = metrics_file(tmp_path / "bm25.json", {"q1": {"MAP": 0.5}})
    bad = tmp_path / "first_stage.json"
    bad.write_text("{}")
    cells = [{"dataset": "d", "variant": "bm25", "max_length": None, "metrics_path": path}]
    with pytest.raises(FormatError, match="first_stage.json"):
        summarize(
            cells, tmp_path / "a", tmp_path / "b", tmp_path / "c", "t", first_stages={"d": bad}
        )


def test_the_csv_carries_the_recall_and_the_measures_without_planted_answers(summary, tmp_path):
    import csv

    rows = list(csv.DictReader((tmp_path / "s.csv").open(encoding="utf-8")))
    assert rows[0]["recall_at_depth"] == repr(3.5 / 8) and rows[0]["n_planted"] == "4"
    assert float(rows[1]["MAP_without_planted"]) == pytest.approx(
        sum(CE_MAP[q] for q in ("q1", "q2", "q3", "q4")) / 4
    )
