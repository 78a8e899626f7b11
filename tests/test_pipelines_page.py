"""docs/pipelines.md: its PyTerrier and Pyserini examples run as written, on a tiny model and
files in the formats the page names (a Pyserini JSONL collection, a TREC run, queries TSV)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from reranklab.io import read_run, write_run
from reranklab.models.reranker import CrossEncoderReranker
from reranklab.models.tiny import tiny_encoder

PAGE = Path(__file__).resolve().parents[1] / "docs" / "pipelines.md"
WORDS = ["who", "wrote", "hamlet", "shakespeare", "a", "dane", "prince", "play"]
PASSAGES = {"d1": "shakespeare", "d2": "a prince", "d3": "hamlet a play"}
QUERIES = {"q1": "who wrote hamlet", "q2": "a dane prince"}
BM25 = {"q1": {"d1": 12.0, "d2": 11.0, "d3": 3.0}, "q2": {"d2": 5.0, "d3": 4.0}}
# As WikiQA judges them: every candidate sentence, correct (1) or not (0).
QRELS = "q1 0 d1 1\nq1 0 d2 0\nq1 0 d3 0\nq2 0 d2 1\nq2 0 d3 0\n"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    encoder, tokenizer = tiny_encoder(WORDS)
    model = CrossEncoderReranker(
        encoder, tokenizer, variant="bertlets", num_outputs=1, score="logit", max_length=32
    )
    return model.save(tmp_path / "model")


def test_the_page_has_its_two_examples() -> None:
    blocks = _blocks()
    assert len(blocks) == 2
    assert "Reranker(model_dir" in blocks[0] and "model.rerank(" in blocks[1]


def test_the_pyterrier_example_runs(model_dir: Path) -> None:
    pytest.importorskip("pyterrier", reason="the pyterrier extra is not installed")
    results = pd.DataFrame(
        [
            (qid, QUERIES[qid], docno, PASSAGES[docno], score)
            for qid, scores in BM25.items()
            for docno, score in scores.items()
        ],
        columns=["qid", "query", "docno", "text", "score"],
    )
    topics = pd.DataFrame({"qid": list(QUERIES), "query": list(QUERIES.values())})
    scope = {"results": results, "topics": topics, "model_dir": model_dir}
    exec(_blocks()[0], scope)
    assert set(scope["reranked"].columns) >= {"qid", "query", "docno", "text", "score", "rank"}
    assert {q: set(c) for q, c in scope["run"].items()} == {q: set(c) for q, c in BM25.items()}


def test_the_pyserini_example_runs(model_dir: Path, tmp_path: Path) -> None:
    collection = tmp_path / "collection.jsonl"
    collection.write_text(
        "".join(json.dumps({"id": d, "contents": t}) + "\n" for d, t in PASSAGES.items())
    )
    topics_tsv = tmp_path / "topics.tsv"
    topics_tsv.write_text("".join(f"{q}\t{t}\n" for q, t in QUERIES.items()))
    pyserini_run = tmp_path / "run.txt"
    write_run(pyserini_run, BM25, tag="Anserini")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(QRELS)
    out_run = tmp_path / "reranked.run"
    scope = {
        "model_dir": model_dir,
        "collection": collection,
        "topics_tsv": topics_tsv,
        "pyserini_run": pyserini_run,
        "qrels": qrels,
        "out_run": out_run,
    }
    exec(_blocks()[1], scope)
    written = read_run(out_run)
    assert {q: set(c) for q, c in written.items()} == {q: set(c) for q, c in BM25.items()}
    for qid, scores in scope["reranked"].items():
        assert written[qid] == pytest.approx(scores, rel=1e-9)  # full precision on disk
    assert sorted(scope["per_query"].index) == ["q1", "q2"]
