"""The BERT-DMN paper's baselines: static word vectors, QA-LSTM and K-NRM."""

from __future__ import annotations

import gzip
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from reranklab.errors import ConfigError, FormatError
from reranklab.models.encoder import load_encoder
from reranklab.models.knrm import KNRM, MUS, SIGMAS, kernel_pooling
from reranklab.models.qa_lstm import QALSTM, masked_pool
from reranklab.models.registry import get_variant, load_model
from reranklab.models.word_vectors import (
    encoder_matrix,
    glove_matrix,
    read_glove,
    seeded_vector,
    word_tokens,
)
from reranklab.training.inference import rerank
from reranklab.training.trainer import train_model
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

GLOVE_SOURCE = {"kind": "glove", "path": "unused"}


@pytest.fixture(scope="module")
def toy_bert(tmp_path_factory) -> Path:
    return build_toy_bert(tmp_path_factory.mktemp("tiny") / "bert")


@pytest.fixture(scope="module")
def glove(tmp_path_factory) -> Path:
    """A GloVe-format file with random 16-d vectors for the toy words (all but "purr")."""
    words = sorted(
        {w for text in [*QUERIES.values(), *CORPUS.values()] for w in word_tokens(text)} - {"purr"}
    )
    rng = np.random.default_rng(0)
    path = tmp_path_factory.mktemp("glove") / "toy.16d.txt"
    lines = [
        f"{w} " + " ".join(f"{x:.5f}" for x in rng.normal(0, 0.5, 16)) for w in ["the", *words]
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _ranked_correctly(run: dict[str, dict[str, float]]) -> float:
    wins = [run[qid][positive(qid)] > run[qid][neg] for qid in QIDS for neg in negatives(qid)]
    return sum(wins) / len(wins)


def _inputs(query: list[list[int]], passage: list[list[int]]) -> dict[str, torch.Tensor]:
    def pad(rows):
        width = max(len(r) for r in rows)
        ids = torch.tensor([r + [0] * (width - len(r)) for r in rows])
        return ids, torch.tensor([[True] * len(r) + [False] * (width - len(r)) for r in rows])

    query_ids, query_mask = pad(query)
    passage_ids, passage_mask = pad(passage)
    return {
        "query_ids": query_ids,
        "query_mask": query_mask,
        "passage_ids": passage_ids,
        "passage_mask": passage_mask,
    }


# --- word vectors -----------------------------------------------------------------------------


def test_word_tokens_are_lower_cased_word_runs():
    assert word_tokens("Who wrote Hamlet? W. Shakespeare, 1603.") == [
        "who",
        "wrote",
        "hamlet",
        "w",
        "shakespeare",
        "1603",
    ]


def test_read_glove_skips_a_word2vec_header_reads_gzip_and_keeps_the_first_spelling(tmp_path):
    path = tmp_path / "vectors.txt.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write("3 2\nCat 1.0 2.0\ncat 3.0 4.0\ndog -1 0.5\n")
    dim, vectors = read_glove(path, {"cat", "bird"}, progress=False)
    assert dim == 2 and list(vectors) == ["cat"] and vectors["cat"].tolist() == [1.0, 2.0]


def test_a_malformed_vector_names_the_file_and_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("a 1 2 3\nb 1 2\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"bad.txt:2: expected a word and 3 numbers"):
        read_glove(path, {"b"}, progress=False)
    path.write_text("a 1 x 3\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"bad.txt:1: expected a word followed by"):
        read_glove(path, {"a"}, progress=False)
    with pytest.raises(ConfigError, match="training.embeddings_path: .*missing.txt does not exist"):
        read_glove(tmp_path / "missing.txt", {"a"}, progress=False)


def test_glove_matrix_pads_and_gives_unknown_words_their_own_fixed_vector(glove):
    matrix, missing = glove_matrix(["bees", "purr", "sky"], glove, progress=False)
    assert matrix.shape == (5, 16) and missing == 1
    assert not matrix[:2].any()  # [PAD] and [UNK] are zero
    _, found = read_glove(glove, {"bees"}, progress=False)
    assert np.array_equal(matrix[2], found["bees"])
    # "purr" is not in the file: a vector seeded by the word, at the scale of the found ones.
    assert np.array_equal(
        matrix[3], seeded_vector("purr", 16, float(np.std(np.stack([matrix[2], matrix[4]]))))
    )
    assert not np.array_equal(seeded_vector("purr", 16, 1.0), seeded_vector("purrs", 16, 1.0))


def test_encoder_matrix_rows_are_the_encoders_input_embeddings(toy_bert):
    encoder, tokenizer = load_encoder(str(toy_bert))
    matrix = encoder_matrix(["sky", "##s"], encoder, tokenizer)
    weights = encoder.get_input_embeddings().weight.detach().numpy()
    assert np.array_equal(matrix[2], weights[tokenizer.convert_tokens_to_ids("sky")])
    assert np.array_equal(matrix[3], weights[tokenizer.convert_tokens_to_ids("##s")])
    assert not matrix[:2].any()


# --- QA-LSTM ----------------------------------------------------------------------------------


def test_masked_pooling():
    states = torch.tensor(
        [[[1.0, -4.0], [3.0, -2.0], [9.0, 9.0]], [[-1.0, -1.0], [0.0, 0.0], [0.0, 0.0]]]
    )
    mask = torch.tensor([[True, True, False], [False, False, False]])
    assert masked_pool(states, mask, "max").tolist() == [[3.0, -2.0], [0.0, 0.0]]
    assert masked_pool(states, mask, "avg").tolist() == [[2.0, -3.0], [0.0, 0.0]]


def _qa_lstm(dim=8, **options) -> QALSTM:
    torch.manual_seed(0)
    model = QALSTM(dim, hidden=5, variant="qa_lstm", max_length=16, source=GLOVE_SOURCE, **options)
    model.set_vocabulary(
        [f"w{i}" for i in range(10)],
        np.random.default_rng(0).normal(size=(12, dim)).astype(np.float32),
    )
    return model.eval()


@pytest.mark.parametrize(("pooling", "attention"), [("max", True), ("avg", True), ("max", False)])
def test_qa_lstm_outputs_a_cosine_and_ignores_padding(pooling, attention):
    model = _qa_lstm(pooling=pooling, attention=attention)
    inputs = _inputs([[2, 3, 4], [5, 6]], [[7, 8, 9, 10], [11, 2]])
    with torch.no_grad():
        cos = model(**inputs)
        alone = model(**_inputs([[5, 6]], [[11, 2]]))
    assert cos.shape == (2,) and (cos.abs() <= 1).all()
    assert torch.allclose(cos[1], alone[0], atol=1e-6)  # padding of the batch changes nothing
    assert model.lstm.hidden_size == 5 and model.lstm.bidirectional


def test_qa_lstm_loss_is_the_hinge_on_fixed_cosines():
    model = _qa_lstm()
    fixed = {"p": torch.tensor([0.9, 0.1]), "n": torch.tensor([0.5, 0.3])}
    model.forward = lambda which, **_: fixed[which]
    loss = get_variant("qa_lstm").loss(model, {"margin": 0.2})
    # max(0, 0.2 − 0.9 + 0.5) = 0; 0.2 − 0.1 + 0.3 = 0.4.
    assert loss({"positive": {"which": "p"}, "negative": {"which": "n"}}).item() == pytest.approx(
        0.2
    )


def test_qa_lstm_frozen_vectors_get_no_gradient():
    model = _qa_lstm().train()
    model(**_inputs([[2, 3]], [[4, 5]])).sum().backward()
    assert model.embedding.weight.grad is None and not model.embedding.weight.requires_grad
    assert model.lstm.weight_ih_l0.grad is not None


# --- K-NRM ------------------------------------------------------------------------------------


def test_kernel_pooling_matches_hand_computation():
    matrix = torch.tensor(
        [[[1.0, 0.9, 0.0, 1.0], [0.5, 0.5, 0.5, 0.5]]]
    )  # 2 query words x 4 passage words
    query_mask = torch.tensor([[True, False]])
    passage_mask = torch.tensor([[True, True, True, False]])  # the last exact match is padding
    phi = kernel_pooling(
        matrix, query_mask, passage_mask, torch.tensor([1.0, 0.9]), torch.tensor([1e-3, 0.1])
    )
    # Exact kernel: one match → 0.01·log 1 = 0. Kernel 0.9: e^(−0.01/0.02) + e^0 + e^(−0.81/0.02).
    soft = math.exp(-0.5) + 1.0 + math.exp(-40.5)
    assert phi.tolist()[0] == pytest.approx([0.0, 0.01 * math.log(soft)], abs=1e-7)


def test_knrm_kernels_are_the_papers():
    assert MUS == (1.0, 0.9, 0.7, 0.5, 0.3, 0.1, -0.1, -0.3, -0.5, -0.7, -0.9)
    assert SIGMAS == (1e-3,) + (0.1,) * 10
    model = KNRM(4, variant="knrm", max_length=8, source=GLOVE_SOURCE)
    assert sum(p.numel() for p in model.parameters() if p.requires_grad) == 12


def test_knrm_exact_matches_and_shapes():
    model = KNRM(3, variant="knrm", max_length=8, source=GLOVE_SOURCE)
    model.set_vocabulary(
        ["a", "b", "c"],
        np.array([[0, 0, 0], [0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=np.float32),
    )
    inputs = _inputs([[2, 3], [2, 3]], [[2, 2, 4], [4, 4, 4]])
    phi = model.features(**inputs)
    assert phi.shape == (2, 11)
    # Query word "a" matches twice in passage 0, "b" never: 0.01·(log 2 + log 1e-10); passage 1 matches nothing.
    assert phi[0, 0].item() == pytest.approx(0.01 * (math.log(2) + math.log(1e-10)), rel=1e-5)
    assert phi[1, 0].item() == pytest.approx(0.02 * math.log(1e-10), rel=1e-5)
    assert model(**inputs).shape == (2,)


def test_knrm_loss_is_the_hinge_on_tanh_of_fixed_logits():
    model = KNRM(3, variant="knrm", max_length=8, source=GLOVE_SOURCE)
    fixed = {"p": torch.tensor([1.0, 0.0]), "n": torch.tensor([0.0, -1.0])}
    model.logits = lambda which, **_: fixed[which]
    loss = get_variant("knrm").loss(model, {"margin": 1.0})
    # 1 − tanh(1) + 0 and 1 − 0 + tanh(−1): both 0.2384.
    assert loss({"positive": {"which": "p"}, "negative": {"which": "n"}}).item() == pytest.approx(
        1 - math.tanh(1.0)
    )
    assert model.score({"which": "p"}).tolist() == [1.0, 0.0]


# --- featurizing, saving, the variants --------------------------------------------------------


def test_without_embeddings_path_the_encoders_word_pieces_are_the_vocabulary(toy_bert):
    spec = get_variant("knrm")
    model = spec.build(str(toy_bert), {}, 6)
    assert (
        model.source == {"kind": "encoder", "encoder": str(toy_bert)}
        and model.embedding.embedding_dim == 32
    )
    features = spec.featurizer()(
        model, [("q2", "p2"), ("q2", "p3"), ("q2", "p2")], QUERIES, CORPUS, progress=False
    )
    tokenizer = load_encoder(str(toy_bert))[1]
    pieces = {t for text in [*QUERIES.values(), *CORPUS.values()] for t in tokenizer.tokenize(text)}
    assert len(model.vocabulary) == len(pieces) + 2 and len(features) == 2
    batch = features.batch([0, 1])
    query = [model.vocabulary[t] for t in tokenizer.tokenize(QUERIES["q2"])[:6]]
    assert batch["query_ids"][0].tolist() == query and batch["query_mask"].all()
    assert batch["passage_ids"].shape == (2, 6)  # cut at max_length tokens
    assert features.summary()["tokens_out_of_vocabulary"] == 0


def test_with_embeddings_path_glove_words_are_the_vocabulary(toy_bert, glove):
    spec = get_variant("qa_lstm")
    model = spec.build(str(toy_bert), {"embeddings_path": str(glove), "lstm_hidden": 4}, 32)
    assert model.source == {"kind": "glove", "path": str(glove)} and model.tokenizer is None
    spec.featurizer()(model, [("q8", "p8")], QUERIES, CORPUS, progress=False)
    assert model.unknown_vectors == 1 and "purr" in model.vocabulary
    # A word first seen at re-ranking time is [UNK] (row 1, a zero vector).
    features = spec.featurizer()(
        model, [("q8", "p8")], {"q8": "why do zebras purr"}, CORPUS, progress=False
    )
    assert features.batch([0])["query_ids"][0].tolist() == [
        model.vocabulary[w] for w in ("why", "do")
    ] + [1, model.vocabulary["purr"]]
    assert features.summary()["tokens_out_of_vocabulary"] == 1


@pytest.mark.parametrize(("variant", "glove_vectors"), [("qa_lstm", False), ("knrm", True)])
def test_save_then_load_gives_identical_scores(toy_bert, glove, tmp_path, variant, glove_vectors):
    spec = get_variant(variant)
    training = {"lstm_hidden": 4, **({"embeddings_path": str(glove)} if glove_vectors else {})}
    model = spec.build(str(toy_bert), training, 16).eval()
    keys = [(q, p) for q in QIDS for p in candidates()[q]]
    features = spec.featurizer()(model, keys, QUERIES, CORPUS, progress=False)
    inputs = features.batch(list(range(len(features))))
    model.save(tmp_path / "m")
    again = load_model(tmp_path / "m")
    assert type(again) is type(model) and again.vocabulary == model.vocabulary
    assert (
        spec.featurizer()(again, keys, QUERIES, CORPUS, progress=False)
        .batch(list(range(len(keys))))["passage_ids"]
        .equal(inputs["passage_ids"])
    )
    with torch.no_grad():
        assert torch.equal(again.score(inputs), model.score(inputs))


def test_baseline_defaults():
    assert get_variant("knrm").defaults == {
        "learning_rate": 1e-3,
        "weight_decay": 0.0,
        "warmup_ratio": 0.0,
        "margin": 1.0,
    }
    qa = get_variant("qa_lstm").defaults
    assert (
        qa["lstm_hidden"],
        qa["lstm_pooling"],
        qa["lstm_attention"],
        qa["head_dropout"],
        qa["learning_rate"],
    ) == (256, "max", True, 0.5, 1e-3)


@pytest.mark.parametrize(
    ("variant", "settings", "glove_vectors"),
    [
        (
            "qa_lstm",
            {"epochs": 20, "learning_rate": 3e-3, "lstm_hidden": 16, "head_dropout": 0.0},
            False,
        ),
        ("knrm", {"epochs": 10, "learning_rate": 3e-2}, False),
        ("knrm", {"epochs": 10, "learning_rate": 3e-2}, True),
    ],
)
def test_baselines_learn_the_toy_set(toy_bert, glove, tmp_path, variant, settings, glove_vectors):
    if glove_vectors:
        settings = {**settings, "embeddings_path": str(glove)}
    cell = toy_cell(variant, toy_bert, threads=1, **settings)
    examples = write_triplet_examples(tmp_path / "triplets.parquet")
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
    assert _ranked_correctly(run) >= 0.9 and mrr(run) >= 0.9
    assert stats["epoch_losses"][-1] < 0.5 * stats["epoch_losses"][0]
