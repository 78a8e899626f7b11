"""The bi-encoder variants: mean pooling and cosine as sentence-transformers computes them, the
in-batch-negatives loss by hand, save/load, zero-shot through the train step untouched, and
fine-tuning that learns (tiny BERT, no downloads)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from reranklab.config import resolve_training
from reranklab.io import read_json
from reranklab.models.bi_encoder import BiEncoder, bi_encoder_features, load_bi_encoder
from reranklab.models.encoder import load_encoder
from reranklab.models.losses.in_batch_negatives import (
    InBatchNegativesLoss,
    excluded_pairs,
    in_batch_negatives_loss,
)
from reranklab.models.registry import get_variant, load_model
from reranklab.training.inference import rerank
from reranklab.training.trainer import train_model
from tests.helpers_models import (
    CORPUS,
    QIDS,
    QUERIES,
    build_toy_bert,
    candidates,
    mrr,
    toy_cell,
    write_triplet_examples,
)


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def toy_bert(tmp_path_factory) -> Path:
    return build_toy_bert(tmp_path_factory.mktemp("tiny") / "bert")


def test_registered_with_fine_tune_settings():
    tuned, zero = get_variant("biencoder"), get_variant("biencoder_zeroshot")
    assert (tuned.example_kind, zero.example_kind) == ("triplet", "triplet")
    assert tuned.trains(resolve_training({}, "biencoder"))
    assert not zero.trains(resolve_training({}, "biencoder_zeroshot"))
    # The setting decides, whatever the variant's name: variants.<name> wins over the preset.
    on = resolve_training(
        {"variants": {"biencoder_zeroshot": {"fine_tune": True}}}, "biencoder_zeroshot"
    )
    off = resolve_training({"variants": {"biencoder": {"fine_tune": False}}}, "biencoder")
    assert zero.trains(on) and not tuned.trains(off)
    assert get_variant("pointwise").trains({})


def test_scores_are_cosines_of_mean_pooled_texts_encoded_apart(toy_bert):
    model = BiEncoder.from_encoder(str(toy_bert), variant="biencoder", max_length=32).eval()
    pairs = [("q1", "p1"), ("q1", "p2"), ("q2", "p1")]
    features = bi_encoder_features(model, pairs, QUERIES, CORPUS, progress=False)
    assert features.summary()["distinct_queries"] == 2
    assert features.summary()["distinct_passages"] == 2
    with torch.no_grad():
        scores = model.score(features.batch([features[p] for p in pairs]))
    # By hand, the sentence-transformers way: each text alone, mean over real tokens, cosine.
    encoder, tokenizer = load_encoder(str(toy_bert))
    encoder.eval()

    def sentence(text: str) -> torch.Tensor:
        inputs = tokenizer([text], return_tensors="pt")
        with torch.no_grad():
            hidden = encoder(**inputs).last_hidden_state[0]
        return hidden.mean(dim=0)

    expected = [
        F.cosine_similarity(sentence(QUERIES[q]), sentence(CORPUS[p]), dim=0).item()
        for q, p in pairs
    ]
    assert scores.dtype == torch.float64
    np.testing.assert_allclose(scores.numpy(), expected, atol=1e-5)


def test_in_batch_negatives_loss_by_hand():
    queries = F.normalize(torch.tensor([[1.0, 0.0], [0.6, 0.8]]), dim=-1)
    passages = F.normalize(torch.tensor([[1.0, 0.1], [0.0, 1.0], [1.0, 1.0], [-1.0, 0.0]]), dim=-1)
    logits = 20 * queries @ passages.T
    by_hand = np.mean(
        [-torch.log_softmax(logits[i], dim=0)[i].item() for i in range(2)]
    )  # MultipleNegativesRankingLoss: the own positive among every passage
    assert in_batch_negatives_loss(queries, passages, 20.0).item() == pytest.approx(
        by_hand, rel=1e-5
    )
    # A column known relevant to the query is no negative of it.
    excluded = torch.zeros(2, 4, dtype=torch.bool)
    excluded[0, 2] = True
    kept = torch.cat([logits[0, :2], logits[0, 3:]])
    first = -torch.log_softmax(kept, dim=0)[0].item()
    second = -torch.log_softmax(logits[1], dim=0)[1].item()
    assert in_batch_negatives_loss(queries, passages, 20.0, excluded).item() == pytest.approx(
        (first + second) / 2, rel=1e-5
    )


def test_relevant_in_batch_passages_are_excluded():
    # Rows 0 and 1 are two positives of one query; row 2's negative is row 0's positive.
    positive = {"query_id": torch.tensor([0, 0, 1]), "passage_id": torch.tensor([5, 6, 7])}
    negative = {"query_id": torch.tensor([0, 0, 1]), "passage_id": torch.tensor([8, 9, 5])}
    excluded = excluded_pairs(positive, negative)
    assert excluded.tolist() == [
        [False, True, False, False, False, True],
        [True, False, False, False, False, True],
        [False, False, False, False, False, False],
    ]


def test_loss_trains_the_encoder(toy_bert):
    model = BiEncoder.from_encoder(str(toy_bert), variant="biencoder", max_length=32)
    features = bi_encoder_features(
        model, [("q1", "p1"), ("q1", "p2"), ("q2", "p2"), ("q2", "p3")], QUERIES, CORPUS
    )
    batch = {"positive": features.batch([0, 2]), "negative": features.batch([1, 3])}
    loss = InBatchNegativesLoss(model, scale=20.0)(batch)
    loss.backward()
    assert torch.isfinite(loss)
    grads = [p.grad for p in model.encoder.parameters() if p.grad is not None]
    assert grads and any(float(g.abs().sum()) > 0 for g in grads)


def test_save_and_load(toy_bert, tmp_path):
    model = BiEncoder.from_encoder(
        str(toy_bert), variant="biencoder", max_length=32, query_max_length=8, pooling="cls"
    ).eval()
    saved = model.save(tmp_path / "model")
    meta = read_json(saved / "reranker.json")
    assert {k: meta[k] for k in ("variant", "max_length", "query_max_length", "pooling")} == {
        "variant": "biencoder",
        "max_length": 32,
        "query_max_length": 8,
        "pooling": "cls",
    }
    loaded = load_model(saved)
    assert isinstance(loaded, BiEncoder) and not loaded.training
    features = bi_encoder_features(loaded, [("q3", "p3"), ("q3", "p4")], QUERIES, CORPUS)
    with torch.no_grad():
        assert torch.equal(
            loaded.score(features.batch([0, 1])), model.score(features.batch([0, 1]))
        )
    assert load_bi_encoder(saved).query_max_length == 8


def test_zero_shot_goes_through_train_and_rerank_untouched(toy_bert, tmp_path):
    examples = write_triplet_examples(tmp_path / "triplets.parquet")
    cell = toy_cell("biencoder_zeroshot", toy_bert)
    stats = train_model(cell, examples, QUERIES, CORPUS, tmp_path / "model", progress=False)
    assert (stats["steps"], stats["epochs"], stats["fine_tuned"]) == (0, 0, False)
    saved = load_file(str(tmp_path / "model" / "model.safetensors"))
    original = load_file(str(toy_bert / "model.safetensors"))
    for name, tensor in saved.items():
        assert torch.equal(tensor, original[name]), name
    run = rerank(
        tmp_path / "model",
        candidates(),
        QIDS,
        QUERIES,
        CORPUS,
        batch_size=8,
        device="cpu",
        progress=False,
    )
    scores = [s for q in run.values() for s in q.values()]
    assert len(scores) == 32 and all(-1.0 <= s <= 1.0 for s in scores)


def test_fine_tuning_with_in_batch_negatives_learns(toy_bert, tmp_path):
    examples = write_triplet_examples(tmp_path / "triplets.parquet")
    zero = toy_cell("biencoder_zeroshot", toy_bert)
    train_model(zero, examples, QUERIES, CORPUS, tmp_path / "zero", progress=False)
    tuned = toy_cell("biencoder", toy_bert, epochs=15, learning_rate=3e-3, batch_size=8)
    stats = train_model(tuned, examples, QUERIES, CORPUS, tmp_path / "tuned", progress=False)
    assert stats["fine_tuned"] and stats["steps"] == 15 * 3
    assert stats["epoch_losses"][-1] < stats["epoch_losses"][0]
    runs = {
        name: rerank(
            tmp_path / name,
            candidates(),
            QIDS,
            QUERIES,
            CORPUS,
            batch_size=8,
            device="cpu",
            progress=False,
        )
        for name in ("zero", "tuned")
    }
    assert mrr(runs["tuned"]) >= 0.9
    assert mrr(runs["tuned"]) > mrr(runs["zero"])


def test_scoring_encodes_each_distinct_text_once(toy_bert):
    model = BiEncoder.from_encoder(str(toy_bert), variant="biencoder", max_length=32).eval()
    pairs = [("q1", "p1"), ("q1", "p2"), ("q2", "p1"), ("q1", "p3")]
    features = bi_encoder_features(model, pairs, QUERIES, CORPUS, progress=False)
    batch = features.batch(list(range(4)))
    with torch.enable_grad():
        direct = model(**batch)[:, 0].detach()
    calls = []
    model.encoder.register_forward_hook(
        lambda module, args, kwargs, output: calls.append(len(kwargs["input_ids"])),
        with_kwargs=True,
    )
    with torch.inference_mode():
        cached = model.score(batch)
        again = model.score(batch)
    assert calls == [2, 3]  # q1, q2; then p1, p2, p3; nothing for the second call
    torch.testing.assert_close(cached, direct.double(), atol=1e-6, rtol=0)
    assert torch.equal(cached, again)
    model.train()
    assert not model._vectors  # new weights may follow: the vectors are dropped
