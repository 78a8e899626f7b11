"""The cross-encoder family: monobert, pairwise_ce, bertsel, chunked, marked, and the variant hooks."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from reranklab.cli import main as cli_main
from reranklab.config import resolve_cell, resolve_training, with_defaults
from reranklab.errors import FormatError
from reranklab.features.featurize import token_features
from reranklab.models.chunked import ChunkPooling, chunk_boundaries, split_passage
from reranklab.models.losses import (
    BertSelLoss,
    PairwiseSoftmaxCrossEntropyLoss,
    PointwiseCrossEntropyLoss,
    TripletSoftmaxHingeLoss,
    bertsel_loss,
    pairwise_softmax_cross_entropy,
)
from reranklab.models.marking import Marker, resolve_stopwords
from reranklab.models.registry import get_variant, load_model, variant_names
from reranklab.training.inference import rerank
from reranklab.training.trainer import train_model, warmup_steps_for
from tests.helpers_models import (
    CORPUS,
    QIDS,
    QUERIES,
    build_toy_bert,
    candidates,
    mrr,
    positive,
    toy_cell,
    write_examples,
)

MINE = ["monobert", "pairwise_ce", "bertsel", "chunked", "marked"]
HEADS = {"monobert": 2, "marked": 2, "pairwise_ce": 1, "bertsel": 1, "chunked": 1}
REPO = Path(__file__).resolve().parents[1]

# The MarkedBERT paper's example (Boualili et al. 2020, Figure 1).
GHOST_QUERY = "ghost meaning urban"
GHOST_PASSAGE = "ghost town, an urban area with a fixed boundary that is smaller than a city"


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    # One intra-op thread: the tiny models train several times faster on a loaded 2-core box,
    # and the caller's setting is put back for the tests after these.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def toy_bert(tmp_path_factory) -> Path:
    return build_toy_bert(tmp_path_factory.mktemp("tiny") / "bert")


def _training(variant: str, **overrides) -> dict:
    return resolve_training({"variants": {variant: {"device": "cpu", **overrides}}}, variant)


class FixedOutputs(nn.Module):
    """A stand-in model whose logits are the first input ids: the test chooses them."""

    def __init__(self, num_outputs: int) -> None:
        super().__init__()
        self.num_outputs = num_outputs

    def forward(self, input_ids, attention_mask, token_type_ids=None, chunk_mask=None):
        return input_ids[:, : self.num_outputs].float()


def _inputs(rows: list[list[float]]) -> dict:
    ids = torch.tensor(rows)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}


# --- losses on fixed logits -------------------------------------------------------------------


def test_pairwise_softmax_cross_entropy_matches_hand_computation():
    positive_scores = torch.tensor([2.0, 0.0, -1.0])
    negative_scores = torch.tensor([0.0, 1.0, -1.0])
    # -log softmax(s+, s-)[+] = log(1 + e^(s- - s+)): log(1 + e^-2), log(1 + e^1), log 2
    expected = (math.log1p(math.exp(-2)) + math.log1p(math.exp(1)) + math.log(2)) / 3
    assert pairwise_softmax_cross_entropy(positive_scores, negative_scores).item() == pytest.approx(
        expected, abs=1e-6
    )
    # Finite (and exact) where a naive log(softmax) would give inf.
    far = torch.tensor([0.0], requires_grad=True)
    value = pairwise_softmax_cross_entropy(far, torch.tensor([200.0]))
    value.backward()
    assert value.item() == pytest.approx(200.0) and far.grad.item() == pytest.approx(-1.0)


def test_bertsel_loss_matches_hand_computation():
    z_pos, z_neg, margin = [2.0, -1.0], [0.0, 1.0], 0.2

    def sigmoid(z):
        return 1 / (1 + math.exp(-z))

    expected = []
    for zp, zn in zip(z_pos, z_neg, strict=True):
        y_pos, y_neg = sigmoid(zp), sigmoid(zn)
        cross_entropy = -math.log(y_pos) - math.log(1 - y_neg)
        expected.append(0.5 * cross_entropy + 0.5 * max(0.0, margin - y_pos + y_neg))
    # First triplet: hinge inactive (0.2 - 0.8808 + 0.5 < 0); second: active (0.6622).
    assert expected[0] == pytest.approx(0.5 * (math.log1p(math.exp(-2)) + math.log(2)), abs=1e-9)
    value = bertsel_loss(torch.tensor(z_pos), torch.tensor(z_neg), margin)
    assert value.item() == pytest.approx(sum(expected) / 2, abs=1e-6)
    assert math.isfinite(bertsel_loss(torch.tensor([-300.0]), torch.tensor([300.0])).item())


@pytest.mark.parametrize("variant", MINE)
def test_each_variant_loss_on_fixed_logits(variant):
    spec = get_variant(variant)
    training = _training(variant, margin=0.3)
    loss = spec.loss(FixedOutputs(HEADS[variant]), training)
    if spec.example_kind == "pointwise":
        assert isinstance(loss, PointwiseCrossEntropyLoss)
        value = loss({"features": _inputs([[2, 0], [0, 1]]), "labels": torch.tensor([1, 0])})
        expected = (math.log1p(math.exp(2)) + math.log1p(math.exp(1))) / 2  # -log softmax(z)[y]
    else:
        batch = {"positive": _inputs([[2], [0]]), "negative": _inputs([[0], [1]])}
        value = loss(batch)
        gaps = [2.0, -1.0]  # s+ - s-
        if variant == "pairwise_ce":
            assert isinstance(loss, PairwiseSoftmaxCrossEntropyLoss)
            expected = sum(math.log1p(math.exp(-g)) for g in gaps) / 2
        elif variant == "bertsel":
            assert isinstance(loss, BertSelLoss) and loss.margin == 0.3
            s = [1 / (1 + math.exp(-z)) for z in (2, 0, 0, 1)]  # y+ of both, then y- of both
            expected = (
                0.5 * (-math.log(s[0]) - math.log(1 - s[2]))
                + 0.5 * max(0, 0.3 - s[0] + s[2])
                + 0.5 * (-math.log(s[1]) - math.log(1 - s[3]))
                + 0.5 * max(0, 0.3 - s[1] + s[3])
            ) / 2
        else:  # chunked: the BERTlets hinge on softmax(s+, s-), i.e. max(0, m - tanh(gap / 2))
            assert isinstance(loss, TripletSoftmaxHingeLoss) and loss.margin == 0.3
            expected = sum(max(0.0, 0.3 - math.tanh(g / 2)) for g in gaps) / 2
    assert value.item() == pytest.approx(expected, abs=1e-6)


# --- settings ---------------------------------------------------------------------------------


def test_monobert_preset_and_layering():
    config = {"datasets": ["sample"], "grid": {"variant": ["monobert", "pointwise"]}}
    training = resolve_cell(config, "sample", "monobert", 512)["training"]
    assert (
        training["learning_rate"],
        training["warmup_steps"],
        training["query_max_length"],
        training["weight_decay"],
    ) == (
        3e-6,
        10000,
        64,
        0.01,
    )
    plain = resolve_cell(config, "sample", "pointwise", 512)["training"]
    assert (plain["learning_rate"], plain["warmup_steps"], plain["query_max_length"]) == (
        2e-5,
        None,
        None,
    )
    # A config that restates the schema's defaults (params.yaml, with_defaults) keeps the presets.
    restated = with_defaults({**config, "training": {"learning_rate": 2e-5, "warmup_steps": None}})
    assert resolve_cell(restated, "sample", "monobert", 512)["training"] == training
    # The shared training block does not undo a preset; variants.<name> changes it.
    config = {
        **config,
        "training": {"learning_rate": 1e-5, "epochs": 3},
        "variants": {"monobert": {"warmup_steps": None}},
    }
    training = resolve_cell(config, "sample", "monobert", 512)["training"]
    assert (
        training["learning_rate"],
        training["warmup_steps"],
        training["query_max_length"],
        training["epochs"],
    ) == (3e-6, None, 64, 3)
    assert resolve_cell(config, "sample", "pointwise", 512)["training"]["learning_rate"] == 1e-5


def test_variant_presets():
    assert {
        k: _training("chunked")[k] for k in ("chunks", "chunk_length", "pooling", "attention_size")
    } == {
        "chunks": 2,
        "chunk_length": 128,
        "pooling": "attention",
        "attention_size": 192,
    }
    assert (_training("marked")["markers"], _training("marked")["marker_stopwords"]) == (32, "en")


def test_warmup_steps_win_over_the_ratio():
    assert warmup_steps_for({"warmup_ratio": 0.1, "warmup_steps": None}, 95) == 10
    assert warmup_steps_for({"warmup_ratio": 0.1, "warmup_steps": 7}, 95) == 7
    assert warmup_steps_for({"warmup_ratio": 0.1, "warmup_steps": 10000}, 95) == 10000


# --- marking ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def marked_model(toy_bert):
    return get_variant("marked").build(str(toy_bert), _training("marked"), 48)


def test_marked_text_of_the_worked_example(marked_model):
    marker = Marker(marked_model.tokenizer, 32, resolve_stopwords("en"))
    query, passage = marker(GHOST_QUERY, GHOST_PASSAGE)
    # "meaning" has no match: unmarked, but it is still the 2nd distinct term.
    assert query == "[e1] ghost [/e1] meaning [e3] urban [/e3]"
    assert (
        passage
        == "[e1] ghost [/e1] town, an [e3] urban [/e3] area with a fixed boundary that is smaller than a city"
    )


def test_marking_compares_lower_cased_basic_tokens(marked_model):
    marker = Marker(marked_model.tokenizer, 32)
    query, passage = marker("Ghost meaning URBÁN?", "Urban ghost-town. GHOST!")
    assert query == "[e1] Ghost [/e1] meaning [e3] URBÁN [/e3]?"
    assert passage == "[e3] Urban [/e3] [e1] ghost [/e1]-town. [e1] GHOST [/e1]!"
    assert marker("why do cats purr", "bees make honey") == ("why do cats purr", "bees make honey")


def test_marking_stopwords_and_marker_limit(marked_model):
    tokenizer = marked_model.tokenizer
    every = Marker(tokenizer, 32)
    assert every("what is the cat", "the cat is here") == (
        "what [e2] is [/e2] [e3] the [/e3] [e4] cat [/e4]",
        "[e3] the [/e3] [e4] cat [/e4] [e2] is [/e2] here",
    )
    # Stop words are neither marked nor counted.
    assert Marker(tokenizer, 32, resolve_stopwords("en"))("what is the cat", "the cat is here") == (
        "what is the [e2] cat [/e2]",
        "the [e2] cat [/e2] is here",
    )
    assert Marker(tokenizer, 2)(GHOST_QUERY, GHOST_PASSAGE)[0] == "[e1] ghost [/e1] meaning urban"


def test_marked_featurizer_feeds_the_markers_as_single_new_tokens(marked_model):
    tokenizer = marked_model.tokenizer
    assert marked_model.encoder.get_input_embeddings().num_embeddings == len(tokenizer)
    assert tokenizer.convert_tokens_to_ids(["[e1]", "[/e32]"]) == [
        len(tokenizer) - 64,
        len(tokenizer) - 1,
    ]
    corpus = {"p": "Cats purr, when content."}
    features = get_variant("marked").featurizer()(
        marked_model, [("q8", "p")], QUERIES, corpus, progress=False
    )
    tokens = tokenizer.convert_ids_to_tokens(features.encoded.ids(0))
    # "why do cats purr": cats and purr (terms 3 and 4) occur in the passage.
    assert tokens == [
        "[CLS]",
        "why",
        "do",
        "[e3]",
        "cats",
        "[/e3]",
        "[e4]",
        "purr",
        "[/e4]",
        "[SEP]",
        "[e3]",
        "cats",
        "[/e3]",
        "[e4]",
        "purr",
        "[/e4]",
        ",",
        "when",
        "content",
        ".",
        "[SEP]",
    ]


# --- chunks -----------------------------------------------------------------------------------


def test_chunk_boundaries_of_worked_examples():
    assert chunk_boundaries(7, 3) == [(0, 3), (3, 5), (5, 7)]
    assert chunk_boundaries(6, 2) == [(0, 3), (3, 6)]
    assert chunk_boundaries(1, 3) == [(0, 1), (1, 1), (1, 1)]
    assert split_passage(GHOST_PASSAGE, 3) == [
        "ghost town, an urban area",
        "with a fixed boundary that",
        "is smaller than a city",
    ]
    assert split_passage(GHOST_PASSAGE, 2) == [
        "ghost town, an urban area with a fixed",
        "boundary that is smaller than a city",
    ]


def test_chunked_features_one_sequence_per_chunk(toy_bert):
    model = get_variant("chunked").build(
        str(toy_bert), _training("chunked", chunks=3, chunk_length=11), 256
    )
    assert (model.max_length, model.inputs) == (11, {"chunks": 3, "chunk_length": 11})
    corpus = {
        "long": CORPUS["p5"],
        "one": "honey",
    }  # "the surface of the sun is about five thousand degrees"
    features = get_variant("chunked").featurizer()(
        model, [("q5", "long"), ("q6", "one")], QUERIES, corpus, progress=False
    )
    tokens = [model.tokenizer.convert_ids_to_tokens(features.encoded.ids(i)) for i in range(3)]
    query = ["[CLS]", "how", "hot", "is", "the", "sun", "[SEP]"]
    assert tokens[0] == [*query, "the", "surface", "of", "[SEP]"]  # "the surface of the", cut at 11
    assert tokens[1] == [*query, "sun", "is", "about", "[SEP]"]
    assert tokens[2] == [*query, "five", "thousand", "degrees", "[SEP]"]
    assert features.chunk_mask.tolist() == [[True, True, True], [True, False, False]]
    assert features.lengths.tolist() == [
        11,
        len(model.tokenizer(QUERIES["q6"], "honey")["input_ids"]),
    ]
    batch = features.batch([1, 0])
    assert batch["input_ids"].shape == batch["attention_mask"].shape == (2, 3, 11)
    assert batch["chunk_mask"].tolist() == [[True, False, False], [True, True, True]]
    assert features.summary()["empty_chunks"] == 2


def test_chunk_pooling_ignores_empty_chunks():
    torch.manual_seed(0)
    vectors = torch.randn(2, 3, 4)
    mask = torch.tensor([[True, True, False], [True, False, False]])
    attention = ChunkPooling(4, "attention", attention_size=5, initializer_range=1.0)
    weights = attention.weights(vectors, mask)
    assert (
        torch.allclose(weights.sum(dim=1), torch.ones(2))
        and weights[0, 2] == 0
        and weights[1, 0] == 1
    )
    u = torch.tanh(attention.projection(vectors[0, :2])) @ attention.context
    assert torch.allclose(weights[0, :2], torch.softmax(u, dim=0))
    changed = vectors.clone()
    changed[0, 2] = 100.0  # what an empty chunk holds must not matter
    assert torch.allclose(attention(vectors, mask), attention(changed, mask))
    pooled = ChunkPooling(4, "max")(changed, mask)
    assert torch.equal(pooled, torch.stack([vectors[0, :2].amax(dim=0), vectors[1, 0]]))


# --- built models: shapes, scores, save and load ----------------------------------------------


@pytest.mark.parametrize("variant", MINE)
def test_forward_shapes_scores_and_save_load(toy_bert, tmp_path, variant):
    spec = get_variant(variant)
    torch.manual_seed(0)
    model = spec.build(
        str(toy_bert),
        _training(variant, chunk_length=None, pooling="max" if variant == "chunked" else None),
        24,
    )
    torch.nn.init.normal_(model.head.weight)
    model.eval()
    keys = [("q1", "p1"), ("q2", "p5"), ("q8", "p8")]
    features = spec.featurizer()(model, keys, QUERIES, CORPUS, progress=False)
    inputs = features.batch(range(3))
    expected_ids = (
        (3, 2, inputs["input_ids"].shape[-1])
        if variant == "chunked"
        else (3, inputs["input_ids"].shape[-1])
    )
    assert inputs["input_ids"].shape == expected_ids
    with torch.no_grad():
        logits = model(**inputs)
        scores = model.score(inputs)
    assert logits.shape == (3, HEADS[variant]) and scores.shape == (3,)
    # The raw float64 score: the margin l1 - l0 (monobert, marked), else the logit (bertsel's
    # sigmoid is increasing: its logit ranks as its probability, without saturating at 1.0).
    double = logits.double()
    reference = double[:, 1] - double[:, 0] if HEADS[variant] == 2 else double[:, 0]
    assert scores.dtype == torch.float64 and torch.equal(scores, reference)
    model.save(tmp_path / "model")
    loaded = load_model(tmp_path / "model")
    assert (type(loaded), loaded.variant, loaded.inputs, loaded.training) == (
        type(model),
        variant,
        model.inputs,
        False,
    )
    again = spec.featurizer()(loaded, keys, QUERIES, CORPUS, progress=False)
    with torch.no_grad():
        assert torch.equal(loaded.score(again.batch(range(3))), scores)


def test_query_max_length_cuts_the_query_first(toy_bert):
    model = get_variant("monobert").build(
        str(toy_bert), _training("monobert", query_max_length=3), 12
    )
    assert model.inputs == {"query_max_length": 3}
    features = token_features(model, [("q2", "p2"), ("q3", "p3")], QUERIES, CORPUS, progress=False)
    tokens = model.tokenizer.convert_ids_to_tokens(features.encoded.ids(0))
    # "how many legs does a spider have" -> its first 3 word pieces; the passage fills the rest.
    assert tokens == [
        "[CLS]",
        "how",
        "many",
        "legs",
        "[SEP]",
        "a",
        "spider",
        "has",
        "eight",
        "legs",
        "[SEP]",
    ]
    assert model.tokenizer.convert_ids_to_tokens(features.encoded.ids(1))[:5] == [
        "[CLS]",
        "who",
        "wrote",
        "hamlet",
        "[SEP]",
    ]
    assert features.summary()["pairs_query_cut"] == 1


# --- hooks and registry -----------------------------------------------------------------------


def test_variants_are_discovered_and_listed(capsys):
    assert set(MINE) <= set(variant_names())
    assert cli_main(["variants"]) in (0, None)
    listed = {
        line.split()[0]: line.split()[1]
        for line in capsys.readouterr().out.splitlines()
        if line.strip()
    }
    assert {name: listed[name] for name in MINE} == {
        name: f"[{get_variant(name).example_kind}]" for name in MINE
    }


def test_default_hooks_and_load_model_errors(tmp_path):
    from reranklab.models.reranker import load_reranker

    assert get_variant("pairwise_ce").featurizer() is token_features
    assert get_variant("bertsel").loader() is load_reranker
    assert get_variant("chunked").loader() is get_variant("chunked").load
    with pytest.raises(FormatError, match="reranker.json"):
        load_model(tmp_path)


def test_the_loop_never_names_a_variant():
    src = REPO / "src" / "reranklab"
    for path in [
        src / "training" / "trainer.py",
        src / "training" / "inference.py",
        *sorted((src / "features").glob("*.py")),
    ]:
        source = path.read_text(encoding="utf-8")
        for name in MINE:
            assert not re.search(rf"[\"']{name}[\"']", source), (
                f"{path.name} names the variant {name}"
            )


# --- learning ---------------------------------------------------------------------------------

# A few steps on the toy set (8 questions, their answer and 3 negatives each), per variant.
LEARN = {
    "pairwise_ce": {"epochs": 20, "learning_rate": 1e-3},
    "bertsel": {"epochs": 15, "learning_rate": 2e-3},
    "chunked": {"epochs": 20, "learning_rate": 3e-3, "chunk_length": 32},
    "marked": {"epochs": 10, "learning_rate": 3e-3},
    "monobert": {"epochs": 30, "learning_rate": 3e-3, "warmup_steps": 4},
}


@pytest.mark.parametrize("variant", MINE)
def test_training_makes_answers_outrank_negatives(toy_bert, tmp_path, variant):
    kind = get_variant(variant).example_kind
    examples = write_examples(
        tmp_path / "examples.parquet", "pointwise" if kind == "pointwise" else "bertlets"
    )
    cell = toy_cell(variant, toy_bert, threads=1, **LEARN[variant])
    stats = train_model(cell, examples, QUERIES, CORPUS, tmp_path / "model", progress=False)
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
    first = [
        qid
        for qid in QIDS
        if max(run[qid], key=lambda pid: (run[qid][pid], pid == positive(qid))) == positive(qid)
    ]
    assert len(first) >= 7, f"the answer ranks first for {len(first)} of 8 training queries"
    assert mrr(run) >= 0.9
    mean_positive = np.mean([run[q][positive(q)] for q in QIDS])
    mean_negative = np.mean([s for q in QIDS for pid, s in run[q].items() if pid != positive(q)])
    assert mean_positive > mean_negative
    assert stats["epoch_losses"][-1] < stats["epoch_losses"][0]
    if variant == "monobert":
        assert stats["warmup_steps"] == 4


# --- what the head reads: [CLS] or the mean of the pair's tokens ------------------------------


def test_mean_pair_pooling_reads_the_mean_of_the_real_tokens_and_survives_a_save(tmp_path):
    from reranklab.models.bi_encoder import pool
    from reranklab.models.reranker import CrossEncoderReranker, load_reranker
    from reranklab.models.tiny import tiny_encoder

    model = CrossEncoderReranker(
        *tiny_encoder(["who", "is", "it", "me"]),
        variant="pairwise_ce",
        num_outputs=1,
        score="logit",
        max_length=16,
        pooling="mean",
    ).eval()
    features = model.tokenizer(
        ["who is it", "who"], ["me", "it is me"], return_tensors="pt", padding=True
    )
    hidden = model.encoder(**features).last_hidden_state
    mask = features["attention_mask"]
    expected = pool(hidden, mask, "mean")
    # By hand: the first pair's padding is left out of its mean.
    first = hidden[0, mask[0].bool()].mean(dim=0)
    assert torch.allclose(expected[0], first, atol=1e-6)
    assert torch.allclose(model.encode(**features), expected, atol=1e-6)
    # Not a standard [CLS] checkpoint, and no packing (packing reads each pair's [CLS]).
    assert "mean of the pair's token vectors" in model.standard_checkpoint_problem()
    assert not model.supports_packing
    saved = load_reranker(model.save(tmp_path / "m"))
    assert saved.pair_pooling == "mean"
    assert torch.allclose(saved.score(features), model.score(features), atol=1e-6)
    with pytest.raises(ValueError, match="unknown pooling"):
        CrossEncoderReranker(*tiny_encoder(["who"]), variant="x", num_outputs=1, score="logit",
                             max_length=8, pooling="max")  # fmt: skip


def test_pair_pooling_is_a_setting_of_every_token_cross_encoder():
    assert _training("pairwise_ce", pair_pooling="mean")["pair_pooling"] == "mean"
    assert _training("monobert")["pair_pooling"] is None
