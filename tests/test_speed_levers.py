"""The speed levers change speed, not results: micro batches, workers, checkpointing, precision, feature cache."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from reranklab.errors import ConfigError
from reranklab.features import cache as cache_module
from reranklab.features.batch import collator_for
from reranklab.features.cache import (
    FeatureCache,
    feature_cache_scope,
    open_feature_cache,
    pair_keys,
    tokenizer_fingerprint,
)
from reranklab.features.featurize import encode_id_pairs
from reranklab.features.tokenize import encode_text_pairs
from reranklab.models.encoder import load_encoder
from reranklab.models.registry import get_variant
from reranklab.models.reranker import load_reranker
from reranklab.training.inference import rerank
from reranklab.training.precision import resolve_precision
from reranklab.training.steps import (
    StepCollator,
    StepRunner,
    accumulation_steps,
    count_tokens,
    non_embedding_parameters,
)
from reranklab.training.trainer import read_examples, seed_everything, train_model
from tests.helpers_models import (
    CORPUS,
    QIDS,
    QUERIES,
    build_toy_bert,
    candidates,
    toy_cell,
    write_examples,
)

TEXT_PAIRS = [
    (QUERIES[q], CORPUS[p]) for q in QIDS for p in CORPUS
]  # 64 pairs, 8 queries x 8 passages


@pytest.fixture(scope="module")
def toy_bert(tmp_path_factory) -> Path:
    return build_toy_bert(tmp_path_factory.mktemp("tiny") / "bert")


@pytest.fixture(scope="module")
def still_bert(tmp_path_factory) -> Path:
    """The toy BERT without dropout: training is then a deterministic function of the batches."""
    path = build_toy_bert(tmp_path_factory.mktemp("still") / "bert")
    config = json.loads((path / "config.json").read_text())
    config.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    (path / "config.json").write_text(json.dumps(config))
    return path


@pytest.fixture(scope="module")
def tokenizer(toy_bert):
    return load_encoder(str(toy_bert))[1]


class CountingTokenizer:
    """Delegates to a real tokenizer and counts the pairs it is asked to tokenise."""

    # No Rust tokenizer to copy: every pair goes through __call__, where it is counted.
    backend_tokenizer = None

    def __init__(self, tokenizer):
        self._tokenizer = tokenizer
        self.pair_calls = 0
        self.pairs = 0

    def __call__(self, text, text_pair=None, **kwargs):
        if text_pair is not None:
            self.pair_calls += 1
            self.pairs += len(text_pair)
        return self._tokenizer(text, text_pair, **kwargs)

    def __getattr__(self, name):
        return getattr(self._tokenizer, name)


def _weights(model_dir: Path) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in load_reranker(model_dir).state_dict().items()}


def _assert_same_weights(a: Path, b: Path, atol: float) -> None:
    wa, wb = _weights(a), _weights(b)
    assert wa.keys() == wb.keys()
    worst = max(float((wa[k] - wb[k]).abs().max()) for k in wa)
    assert worst <= atol, worst


# -- micro batches (gradient accumulation), workers, gradient checkpointing -------------------


def test_accumulation_steps_and_micro_batches():
    assert [accumulation_steps(16, m) for m in (None, 0, 16, 32, 8, 5, 1)] == [1, 1, 1, 1, 2, 4, 16]
    step = StepCollator(
        lambda rows: {"attention_mask": torch.ones(len(rows), 3, dtype=torch.long)},
        micro_batch_size=3,
    )(list(range(8)))
    assert (step.examples, [n for n, _ in step.micro]) == (8, [3, 3, 2])
    assert (step.tokens, step.padded_tokens) == (24, 24)
    assert count_tokens(
        {
            "positive": {"attention_mask": torch.tensor([[1, 1, 0]])},
            "negative": {"attention_mask": torch.tensor([[1, 0, 0]])},
        }
    ) == (3, 6)


def _step_gradients(
    bert: Path, tmp_path: Path, variant: str, micro: int | None
) -> tuple[float, dict[str, torch.Tensor]]:
    """The loss and gradients of one optimiser step over all toy examples (SGD with lr 0: weights stay)."""
    spec = get_variant(variant)
    training = toy_cell(variant, bert)["training"]
    seed_everything(1)
    # float64: the two sums of the same terms then agree far below any real mistake.
    model = spec.build(str(bert), training, 32).double()
    collator = collator_for(spec.example_kind)
    columns = read_examples(
        write_examples(tmp_path / f"{variant}.parquet", variant), collator.columns
    )
    index = encode_id_pairs(
        model.tokenizer, collator.pair_keys(columns), QUERIES, CORPUS, 32, progress=False
    )
    collate = collator.from_columns(columns, index)
    cpu = torch.device("cpu")
    run_step = StepRunner(
        model,
        spec.loss(model, training),
        torch.optim.SGD(model.parameters(), lr=0.0),
        resolve_precision("fp32", cpu),
        0.0,
        cpu,
    )
    loss = float(run_step(StepCollator(collate, micro)(list(range(len(collate))))))
    return loss, {name: p.grad.clone() for name, p in model.named_parameters()}


@pytest.mark.parametrize("variant", ["pointwise", "bertlets"])
def test_micro_batches_give_the_gradient_of_one_big_batch(still_bert, tmp_path, variant):
    loss, whole = _step_gradients(still_bert, tmp_path, variant, None)
    micro_loss, micro = _step_gradients(
        still_bert, tmp_path, variant, 5
    )  # 5, 5, ..., and a short last one
    assert micro_loss == pytest.approx(loss, rel=1e-6)
    scale = max(float(g.abs().max()) for g in whole.values())
    assert scale > 0
    # Equal up to rounding (the losses compute in float32 inside): a mean-vs-sum mistake would
    # be off by a factor of the number of micro batches.
    worst = max(float((whole[name] - micro[name]).abs().max()) for name in whole)
    assert worst <= 1e-5 * scale, (worst, scale)


def test_micro_batches_train_the_model_of_one_big_batch(still_bert, tmp_path, variant="pointwise"):
    examples = write_examples(tmp_path / "examples.parquet", variant)
    settings = {"epochs": 2, "learning_rate": 1e-3, "batch_size": 8, "precision": "fp32"}
    whole = train_model(
        toy_cell(variant, still_bert, **settings),
        examples,
        QUERIES,
        CORPUS,
        tmp_path / "whole",
        progress=False,
    )
    micro = train_model(
        toy_cell(variant, still_bert, micro_batch_size=3, **settings),
        examples,
        QUERIES,
        CORPUS,
        tmp_path / "micro",
        progress=False,
    )
    assert (
        whole["accumulation_steps"],
        micro["accumulation_steps"],
        micro["micro_batch_size"],
    ) == (1, 3, 3)
    assert micro["steps"] == whole["steps"] and micro["pairs_trained"] == whole["pairs_trained"]
    np.testing.assert_allclose(
        [p[1] for p in micro["loss_curve"]],
        [p[1] for p in whole["loss_curve"]],
        rtol=1e-5,
        atol=1e-6,
    )
    # Adam turns rounding noise of near-zero gradients into up to a fraction of a step (lr):
    # compare with a tolerance well below one step.
    _assert_same_weights(
        tmp_path / "whole", tmp_path / "micro", atol=0.2 * settings["learning_rate"]
    )
    # The weights did move (the comparison is not between two untouched models).
    trained = load_reranker(tmp_path / "whole").encoder.embeddings.word_embeddings.weight.detach()
    assert (
        float(
            (trained - load_encoder(str(still_bert))[0].embeddings.word_embeddings.weight.detach())
            .abs()
            .max()
        )
        > 2 * settings["learning_rate"]
    )
    # Micro batches are padded to their own longest pair, so no more padding is computed.
    assert (
        micro["tokens_trained"] == whole["tokens_trained"]
        and micro["tokens_padded"] <= whole["tokens_padded"]
    )


def test_dataloader_workers_and_gradient_checkpointing_do_not_change_the_model(
    still_bert, tmp_path
):
    examples = write_examples(tmp_path / "examples.parquet", "pointwise")
    settings = {"epochs": 1, "learning_rate": 1e-3, "batch_size": 8}
    plain = train_model(
        toy_cell("pointwise", still_bert, **settings),
        examples,
        QUERIES,
        CORPUS,
        tmp_path / "plain",
        progress=False,
    )
    workers = train_model(
        toy_cell("pointwise", still_bert, dataloader_workers=2, **settings),
        examples,
        QUERIES,
        CORPUS,
        tmp_path / "workers",
        progress=False,
    )
    assert workers["dataloader_workers"] == 2 and workers["loss_curve"] == plain["loss_curve"]
    _assert_same_weights(tmp_path / "plain", tmp_path / "workers", atol=0.0)
    checkpointed = train_model(
        toy_cell("pointwise", still_bert, gradient_checkpointing=True, **settings),
        examples,
        QUERIES,
        CORPUS,
        tmp_path / "ckpt",
        progress=False,
    )
    assert checkpointed["gradient_checkpointing"] is True
    _assert_same_weights(tmp_path / "plain", tmp_path / "ckpt", atol=1e-6)


# -- precision ---------------------------------------------------------------------------------


def test_precision_resolution():
    cpu = torch.device("cpu")
    assert resolve_precision("auto", cpu).name == "fp32"
    assert resolve_precision("bf16", cpu).dtype == torch.bfloat16
    assert resolve_precision("fp32", cpu).grad_scaler() is None
    with pytest.raises(ConfigError, match="fp16 is for CUDA"):
        resolve_precision("fp16", cpu)
    with pytest.raises(ConfigError, match="training.precision: 'half'"):
        resolve_precision("half", cpu)


def test_bf16_on_cpu_trains_with_an_fp32_head(toy_bert, tmp_path):
    examples = write_examples(tmp_path / "examples.parquet", "pointwise")
    stats = train_model(
        toy_cell("pointwise", toy_bert, epochs=3, learning_rate=3e-3, precision="bf16"),
        examples,
        QUERIES,
        CORPUS,
        tmp_path / "model",
        progress=False,
    )
    assert stats["precision"] == "bf16"
    assert (
        all(np.isfinite(stats["epoch_losses"]))
        and stats["epoch_losses"][-1] < stats["epoch_losses"][0]
    )
    model = load_reranker(tmp_path / "model")
    assert all(
        p.dtype == torch.float32 for p in model.parameters()
    )  # mixed precision: fp32 weights
    ids = torch.tensor([[2, 7, 3, 9, 3]])
    with resolve_precision("bf16", torch.device("cpu")).autocast():
        assert model.encode(ids, torch.ones_like(ids)).dtype == torch.bfloat16
        assert model(ids, torch.ones_like(ids)).dtype == torch.float32
    run = rerank(
        tmp_path / "model",
        candidates(),
        QIDS,
        QUERIES,
        CORPUS,
        batch_size=8,
        device="cpu",
        precision="bf16",
        progress=False,
    )
    assert sorted(run) == sorted(QIDS)


# -- feature cache -----------------------------------------------------------------------------


def test_cache_gives_what_tokenising_gives_and_tokenises_once(tokenizer, tmp_path):
    counting = CountingTokenizer(tokenizer)
    cache = FeatureCache(
        tmp_path / "c", max_length=12, query_max_length=4
    )  # cuts some queries and passages
    fresh = encode_text_pairs(tokenizer, TEXT_PAIRS, 12, query_max_length=4, progress=False)
    first = cache.encode(counting, TEXT_PAIRS, progress=False)
    assert (cache.last.hits, cache.last.misses) == (0, 64) and counting.pairs == 64
    assert fresh.query_cut > 0
    for name in ("input_ids", "token_type_ids", "offsets"):
        np.testing.assert_array_equal(getattr(first, name), getattr(fresh, name))
        assert getattr(first, name).dtype == getattr(fresh, name).dtype
    assert (first.query_truncated, first.query_cut, first.max_length) == (
        fresh.query_truncated,
        fresh.query_cut,
        12,
    )

    counting.pair_calls = counting.pairs = 0
    reordered = TEXT_PAIRS[::-1][:40] + [TEXT_PAIRS[0]]  # a subset, another order, a duplicate
    again = cache.encode(counting, reordered, progress=False)
    assert counting.pair_calls == 0 and (cache.last.hits, cache.last.misses) == (41, 0)
    expected = encode_text_pairs(tokenizer, reordered, 12, query_max_length=4, progress=False)
    np.testing.assert_array_equal(again.input_ids, expected.input_ids)
    np.testing.assert_array_equal(again.offsets, expected.offsets)
    assert (again.query_truncated, again.query_cut) == (
        expected.query_truncated,
        expected.query_cut,
    )

    # New pairs only are tokenised, into a second shard; nothing temporary is left.
    extra = [("a brand new question", CORPUS["p1"]), (QUERIES["q1"], "a passage never seen")]
    mixed = cache.encode(counting, extra + TEXT_PAIRS[:5], progress=False)
    assert (cache.last.hits, cache.last.misses, counting.pairs) == (5, 2, 2)
    np.testing.assert_array_equal(
        mixed.input_ids,
        encode_text_pairs(
            tokenizer, extra + TEXT_PAIRS[:5], 12, query_max_length=4, progress=False
        ).input_ids,
    )
    names = sorted(p.name for p in (tmp_path / "c").iterdir())
    assert names[0] == "meta.json" and [n.startswith("shard-") for n in names[1:]] == [True, True]


def test_cache_is_keyed_by_tokenizer_and_lengths(tokenizer, toy_bert, tmp_path):
    fingerprint = tokenizer_fingerprint(tokenizer)
    tokenizer(
        ["a"], ["b"], truncation="only_second", max_length=7
    )  # per-call state must not matter
    assert tokenizer_fingerprint(tokenizer) == fingerprint
    other = load_encoder(str(build_toy_bert(tmp_path / "other")))[1]
    assert tokenizer_fingerprint(other) == fingerprint  # same vocabulary and settings: same cache
    cased = load_encoder(str(toy_bert))[1]
    cased.backend_tokenizer.normalizer.lowercase = False
    assert tokenizer_fingerprint(cased) != fingerprint

    root = tmp_path / "features"
    dirs = {
        open_feature_cache(root, "toy", tokenizer, 32).directory,
        open_feature_cache(root, "toy", tokenizer, 64).directory,
        open_feature_cache(root, "toy", tokenizer, 32, query_max_length=8).directory,
        open_feature_cache(root, "toy", cased, 32).directory,
        open_feature_cache(root, "other", tokenizer, 32).directory,
    }
    assert len(dirs) == 5
    assert open_feature_cache(None, "toy", tokenizer, 32) is None
    counting = CountingTokenizer(tokenizer)
    with feature_cache_scope(root, "toy") as scope:
        encode_id_pairs(counting, [("q1", "p1"), ("q2", "p2")], QUERIES, CORPUS, 32, progress=False)
        encode_id_pairs(counting, [("q1", "p1"), ("q2", "p2")], QUERIES, CORPUS, 32, progress=False)
        assert (scope.stats.hits, scope.stats.misses, counting.pairs) == (2, 2, 2)
        encode_id_pairs(
            counting, [("q1", "p1")], QUERIES, CORPUS, 16, progress=False
        )  # another max length
        assert (scope.stats.misses, counting.pairs) == (3, 3)
    encode_id_pairs(
        counting, [("q1", "p1")], QUERIES, CORPUS, 32, progress=False
    )  # outside a scope: no cache
    assert counting.pairs == 4
    # A changed passage text is another key.
    assert not np.array_equal(pair_keys([("q", "p")]), pair_keys([("q", "p ")]))


def test_many_shards_are_merged(tokenizer, tmp_path, monkeypatch):
    monkeypatch.setattr(cache_module, "MERGE_ABOVE", 2)
    cache = FeatureCache(tmp_path / "c", max_length=16)
    for start in range(0, 32, 8):
        cache.encode(tokenizer, TEXT_PAIRS[start : start + 8], progress=False)
    shards = cache.shard_dirs()
    assert len(shards) <= 2
    counting = CountingTokenizer(tokenizer)
    merged = cache.encode(counting, TEXT_PAIRS[:32], progress=False)
    assert counting.pairs == 0
    np.testing.assert_array_equal(
        merged.input_ids,
        encode_text_pairs(tokenizer, TEXT_PAIRS[:32], 16, progress=False).input_ids,
    )
    assert not [p for p in (tmp_path / "c").iterdir() if p.name.startswith(".")]


def test_train_and_rerank_share_the_cache_and_get_the_same_model(toy_bert, tmp_path):
    root = tmp_path / "features"
    cached = toy_cell("pointwise", toy_bert, epochs=1, learning_rate=1e-3, feature_cache=str(root))
    examples = write_examples(tmp_path / "pointwise.parquet", "pointwise")
    first = train_model(cached, examples, QUERIES, CORPUS, tmp_path / "a", progress=False)
    assert (first["feature_cache_hits"], first["feature_cache_misses"]) == (0, 32)
    assert first["feature_cache"] == str(root / "toy")
    # The other variant trains on the same 32 pairs: nothing is tokenised again.
    triplets = write_examples(tmp_path / "triplets.parquet", "bertlets")
    second = train_model(
        dict(cached, variant="bertlets"), triplets, QUERIES, CORPUS, tmp_path / "b", progress=False
    )
    assert (second["feature_cache_hits"], second["feature_cache_misses"]) == (32, 0)
    # Bit-identical to a model trained without the cache.
    plain = train_model(
        toy_cell("pointwise", toy_bert, epochs=1, learning_rate=1e-3),
        examples,
        QUERIES,
        CORPUS,
        tmp_path / "c",
        progress=False,
    )
    assert plain["feature_cache"] is None and plain["loss_curve"] == first["loss_curve"]
    _assert_same_weights(tmp_path / "a", tmp_path / "c", atol=0.0)
    with_cache = rerank(
        tmp_path / "a",
        candidates(),
        QIDS,
        QUERIES,
        CORPUS,
        8,
        device="cpu",
        feature_cache=root,
        dataset="toy",
        progress=False,
    )
    without = rerank(
        tmp_path / "a", candidates(), QIDS, QUERIES, CORPUS, 8, device="cpu", progress=False
    )
    assert with_cache == without
    assert len(list((root / "toy").iterdir())) == 1  # one tokenizer, one max length


def test_non_embedding_parameters(toy_bert):
    model, _ = load_encoder(str(toy_bert))
    embeddings = sum(
        p.numel()
        for m in model.modules()
        if isinstance(m, torch.nn.Embedding)
        for p in m.parameters()
    )
    assert (
        non_embedding_parameters(model)
        == sum(p.numel() for p in model.parameters()) - embeddings
        > 0
    )


def test_step_losses_are_read_from_the_device_in_batches_not_every_step(
    still_bert, tmp_path, monkeypatch
):
    """No host sync per step: losses stay on the device until a log line, curve point,
    checkpoint or epoch end needs them, then are read together, every one of them, in order."""
    from reranklab.training import steps as steps_module

    reads: list[int] = []
    original = steps_module.PendingLosses.flush

    def counting_flush(self):
        if len(self):
            reads.append(len(self))
        original(self)

    monkeypatch.setattr(steps_module.PendingLosses, "flush", counting_flush)
    seen: list[tuple[int, float]] = []

    class Callback:
        def on_step(self, step, epoch, loss, lr):
            seen.append((step, loss))

        def __getattr__(self, name):  # the other hooks: nothing to record
            return lambda *args: None

    examples = write_examples(tmp_path / "examples.parquet", "pointwise")
    stats = train_model(
        toy_cell("pointwise", still_bert, epochs=8, batch_size=1, learning_rate=1e-4),
        examples,
        QUERIES,
        CORPUS,
        tmp_path / "model",
        progress=False,
        callback=Callback(),
    )
    steps = stats["steps"]
    assert steps >= 200 and sum(reads) == steps  # every loss read once
    assert len(reads) <= steps // 2  # ... in far fewer device syncs than steps
    assert [step for step, _ in seen] == list(range(1, steps + 1))  # in step order
    assert stats["mean_loss"] == pytest.approx(sum(loss for _, loss in seen) / steps)


def test_compiled_encoders_train_and_score_as_the_eager_ones(still_bert, tmp_path):
    """training.compile: the same model and scores (to float rounding), saved as the eager one."""
    from reranklab.models.registry import load_model
    from reranklab.training.compile import compile_encoders

    examples = write_examples(tmp_path / "examples.parquet", "pointwise")
    settings = {"epochs": 1, "learning_rate": 1e-3, "batch_size": 8, "precision": "fp32"}
    runs = {}
    for compiled in (False, True):
        out = tmp_path / f"compile-{compiled}"
        train_model(
            toy_cell("pointwise", still_bert, compile=compiled, **settings),
            examples,
            QUERIES,
            CORPUS,
            out,
            progress=False,
        )
        runs[compiled] = rerank(
            out, candidates(), QIDS, QUERIES, CORPUS, batch_size=16, device="cpu",
            progress=False, compile_model=compiled,
        )  # fmt: skip
    for qid in QIDS:
        for pid, score in runs[False][qid].items():
            assert runs[True][qid][pid] == pytest.approx(score, abs=1e-4), (qid, pid)
    # Compiled in place: the saved parameters keep their names, so the folder loads eagerly.
    eager = load_model(tmp_path / "compile-True")
    assert not any("_orig_mod" in name for name in eager.state_dict())
    with pytest.raises(ConfigError, match="has no pre-trained encoder to compile"):
        compile_encoders(torch.nn.Linear(2, 2))
