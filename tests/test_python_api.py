"""reranklab from Python: reranklab.load(...).score / .rerank and reranklab.evaluate."""

from __future__ import annotations

import numpy as np
import pytest
import pytrec_eval

import reranklab
from reranklab.models.reranker import CrossEncoderReranker
from reranklab.models.tiny import tiny_encoder

WORDS = ["who", "wrote", "hamlet", "shakespeare", "a", "dane", "prince"]


@pytest.fixture
def saved(tmp_path):
    encoder, tokenizer = tiny_encoder(WORDS)
    model = CrossEncoderReranker(
        encoder, tokenizer, variant="bertlets", num_outputs=1, score="logit", max_length=32
    )
    return model.save(tmp_path / "model")


def test_rerank_rescores_each_querys_top_candidates_with_the_models_scores(saved):
    model = reranklab.load(saved, device="cpu")
    run = {"q1": {"p1": 9.0, "p2": 8.0, "p3": 1.0}, "q2": {"p3": 2.0, "p2": 2.0}}
    queries = {"q1": "who wrote hamlet", "q2": "a dane prince"}
    corpus = {"p1": "shakespeare", "p2": "a prince", "p3": "hamlet a dane"}
    out = model.rerank(run, queries, corpus, depth=2)
    assert sorted(out["q1"]) == ["p1", "p2"] and sorted(out["q2"]) == ["p2", "p3"]
    # The same raw scores as predict and score on the same texts.
    expected = model.predict([(queries["q1"], corpus["p1"]), (queries["q1"], corpus["p2"])])
    # (to float rounding: the batches are padded differently)
    assert [out["q1"]["p1"], out["q1"]["p2"]] == pytest.approx(expected.tolist(), rel=1e-5)
    assert model.score(queries["q1"], [corpus["p1"], corpus["p2"]]) == pytest.approx(
        expected, rel=1e-5
    )
    with pytest.raises(ValueError, match="passage 'p9' has no text"):
        model.rerank({"q1": {"p9": 1.0}}, queries, corpus)


def test_evaluate_gives_per_query_values_as_trec_eval_and_the_datasets_protocol():
    run = {"q1": {"a": 0.9, "b": 0.5, "c": 0.1}, "q2": {"d": 0.3, "e": 0.8}, "q3": {"f": 1.0}}
    qrels = {"q1": {"b": 1, "c": 1}, "q2": {"d": 1, "e": 0}, "q3": {"f": 0}}
    frame = reranklab.evaluate(run, qrels, measures=["MAP", "MRR"])
    measured = pytrec_eval.RelevanceEvaluator(qrels, {"map", "recip_rank"}).evaluate(run)
    # trec_eval's protocol: q3 has no relevant passage and is left out.
    assert list(frame.index) == ["q1", "q2"] and frame.attrs["excluded"] == ["q3"]
    for qid in frame.index:
        assert frame.loc[qid, "MAP"] == pytest.approx(measured[qid]["map"])
        assert frame.loc[qid, "MRR"] == pytest.approx(measured[qid]["recip_rank"])
    assert frame.attrs["aggregate"]["MAP"] == pytest.approx(np.mean(frame["MAP"]))
    # WikiQA's official protocol: only questions with a judged correct and a judged incorrect
    # sentence (q1's unjudged 'a' is no incorrect one), as WikiQA-test-filtered.ref.
    wikiqa = reranklab.evaluate(run, qrels, "wikiqa")
    assert wikiqa.attrs["scoring"]["name"] == "filtered" and list(wikiqa.index) == ["q2"]
    with pytest.raises(Exception, match="no such scoring"):
        reranklab.evaluate(run, qrels, "wikiqa:nonsense")
