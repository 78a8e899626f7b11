"""reranklab.pyterrier: a reranklab model as a PyTerrier transformer, in a pipeline, no Java."""

from __future__ import annotations

import pandas as pd
import pytest

pt = pytest.importorskip("pyterrier", reason="the pyterrier extra is not installed")

import reranklab  # noqa: E402
from reranklab.io.trec import rank_order  # noqa: E402
from reranklab.models.reranker import CrossEncoderReranker  # noqa: E402
from reranklab.models.tiny import tiny_encoder  # noqa: E402
from reranklab.pyterrier import Reranker, frame_from_run, run_from_frame  # noqa: E402

WORDS = ["who", "wrote", "hamlet", "shakespeare", "a", "dane", "prince", "play"]
BM25 = pd.DataFrame(
    {
        "qid": ["q1", "q1", "q1", "q2", "q2"],
        "query": ["who wrote hamlet"] * 3 + ["a dane prince"] * 2,
        "docno": ["d1", "d2", "d3", "d2", "d3"],
        "text": ["shakespeare", "a prince", "hamlet a play", "a prince", "hamlet a play"],
        "score": [12.0, 11.0, 3.0, 5.0, 4.0],
        "rank": [0, 1, 2, 0, 1],
    }
)


@pytest.fixture
def model_dir(tmp_path):
    encoder, tokenizer = tiny_encoder(WORDS)
    model = CrossEncoderReranker(
        encoder, tokenizer, variant="bertlets", num_outputs=1, score="logit", max_length=32
    )
    return model.save(tmp_path / "model")


def test_a_bm25_frame_goes_through_a_pipeline_and_comes_out_reranked(model_dir):
    first_stage = pt.Transformer.from_df(BM25, uniform=True)
    pipeline = first_stage >> Reranker(model_dir, device="cpu")
    out = pipeline(
        pd.DataFrame({"qid": ["q1", "q2"], "query": ["who wrote hamlet", "a dane prince"]})
    )
    assert sorted(zip(out["qid"], out["docno"], strict=False)) == sorted(
        zip(BM25["qid"], BM25["docno"], strict=False)
    )
    # The model's raw scores, as reranklab.load(...).predict gives them.
    expected = reranklab.load(model_dir, device="cpu").predict(
        list(zip(out["query"], out["text"], strict=False))
    )
    assert out["score"].tolist() == pytest.approx(expected.tolist(), rel=1e-5)
    # Ranked best first per query, equal scores in the seeded order (never by docno).
    for qid, group in out.groupby("qid"):
        order = [
            d for d, _ in rank_order(dict(zip(group["docno"], group["score"], strict=False)), qid)
        ]
        assert group.sort_values("rank")["docno"].tolist() == order
        assert group["rank"].tolist() == list(range(len(group)))
    assert not pt.java.started()  # no Java was needed


def test_run_frames_convert_both_ways_and_a_frame_without_text_is_refused(model_dir):
    run = run_from_frame(BM25)
    assert run == {"q1": {"d1": 12.0, "d2": 11.0, "d3": 3.0}, "q2": {"d2": 5.0, "d3": 4.0}}
    back = frame_from_run(run)
    assert (
        back[["qid", "docno", "rank"]].values.tolist()
        == BM25[["qid", "docno", "rank"]].values.tolist()
    )
    with pytest.raises(ValueError, match="no column text"):
        Reranker(model_dir, device="cpu").transform(BM25.drop(columns="text"))
