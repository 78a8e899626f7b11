"""Runs hold raw, ranking-equivalent float64 scores (margins, logits), never saturating probabilities.

A confident model gives many candidates P(relevant) == 1.0 (sigmoid(x) == 1.0 in float64 for
x > ~37): ranked by probability they tie, ranked by the raw score they do not. Each test sets a
variant's last layer so that three candidates get logits 40, 50 and 45 and checks the run.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

from reranklab.config import resolve_training
from reranklab.models.encoder import load_encoder
from reranklab.models.registry import get_variant, load_model
from reranklab.models.reranker import RANKING_SCORES, SCORE_FUNCTIONS
from reranklab.training.inference import rerank
from reranklab.training.precision import resolve_precision
from tests.helpers_models import CORPUS, QIDS, QUERIES, build_toy_bert, candidates

# The scorer of each variant: its last linear layer and how its paper reads that layer's output.
LAST_LAYER = {
    "pointwise": "head",  # 2-way softmax: P(relevant) = sigmoid(l1 - l0)
    "bertsel": "head",  # sigmoid of a scalar
    "bertlets": "head",  # the scalar itself
    "chunked": "head",  # the scalar on pooled chunks
    "dmn": "head.answer",  # a = sigmoid(W[c; Q; m] + b)
    "dmn_lite": "head.answer",
    "bert_lite": "head.linear",  # a = sigmoid(w.c + b)
    "knrm": "dense",  # f = tanh(w.phi + b)
}
KEYS = [("q1", "p1"), ("q1", "p2"), ("q1", "p3")]
TARGETS = [40.0, 50.0, 45.0]  # every probability (and tanh) of these is exactly 1.0 in float64
SMALL = {
    "memory_hidden": 8,
    "episodes": 2,
    "head_dropout": 0.0,
    "chunk_length": None,
    "lstm_hidden": 4,
}


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def mixing_bert(tmp_path_factory) -> Path:
    """The toy BERT re-initialised at std 0.3, so that its outputs depend on the input.

    At BERT's 0.02 the tiny model's [CLS] barely varies over the toy pairs (see
    tests/test_variants_dmn.py), and a layer fitted to three distinct logits would need huge,
    cancelling weights.
    """
    from transformers import BertModel

    toy = build_toy_bert(tmp_path_factory.mktemp("tiny") / "bert")
    out = tmp_path_factory.mktemp("mixing") / "bert"
    model = BertModel.from_pretrained(toy)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        for module in model.modules():
            if isinstance(module, nn.Linear | nn.Embedding):
                nn.init.normal_(module.weight, std=0.3)
    model.save_pretrained(out)
    load_encoder(str(toy))[1].save_pretrained(out)
    return out


def _build(variant: str, encoder: Path) -> Any:
    training = resolve_training({"variants": {variant: {"device": "cpu", **SMALL}}}, variant)
    torch.manual_seed(0)
    return get_variant(variant).build(str(encoder), training, 32).eval()


def _batch(model: Any, keys: list[tuple[str, str]]) -> dict[str, Any]:
    features = get_variant(model.variant).featurizer()(model, keys, QUERIES, CORPUS, progress=False)
    return features.batch([features[key] for key in keys])


def _last_layer(model: Any, variant: str) -> nn.Linear:
    return model.get_submodule(LAST_LAYER[variant])


def _fit_last_layer(model: Any, variant: str, targets: list[float]) -> None:
    """Set the last layer so that the pairs of KEYS get the logits (or margins) ``targets``."""
    layer = _last_layer(model, variant)
    seen: list[torch.Tensor] = []
    handle = layer.register_forward_hook(lambda _m, args, _out: seen.append(args[0].detach()))
    with torch.no_grad():
        model(**_batch(model, KEYS))
    handle.remove()
    inputs = seen[0].double()
    # The minimum-norm weights w with inputs @ w = targets (the inputs' rows are independent).
    weights = torch.linalg.lstsq(
        inputs, torch.tensor(targets, dtype=torch.float64).unsqueeze(1), driver="gelsd"
    ).solution
    with torch.no_grad():
        layer.weight.zero_()
        layer.bias.zero_()
        layer.weight[-1] = weights[:, 0].float()  # the last output row: "relevant" of a 2-way head


def _logits(model: Any, batch: dict[str, Any]) -> torch.Tensor:
    """The raw value each variant's run must hold, from its own forward pass, in float64."""
    with torch.no_grad():
        if hasattr(model, "score_function"):  # the cross-encoders: [B, outputs] logits
            out = model(**batch).double()
            return out[:, 1] - out[:, 0] if out.shape[1] == 2 else out[:, 0]
        return model.logits(**batch).double()


def _probabilities(model: Any, batch: dict[str, Any]) -> torch.Tensor:
    """What each variant's paper reads from the logits: P(relevant), a, or K-NRM's tanh."""
    with torch.no_grad():
        if hasattr(model, "score_function"):
            return SCORE_FUNCTIONS[model.score_function](model(**batch))
        return model(**batch).double()


# --- the scorer functions ---------------------------------------------------------------------


def test_a_two_way_heads_run_score_is_the_margin():
    logits = torch.tensor([[0.0, 40.0], [-5.0, 45.0], [10.0, 60.0], [3.0, -1.0]])
    margins = RANKING_SCORES["p_relevant"](logits)
    assert margins.dtype == torch.float64 and margins.tolist() == [40.0, 50.0, 50.0, -4.0]
    assert SCORE_FUNCTIONS["p_relevant"](logits)[:3].tolist() == [1.0, 1.0, 1.0]  # saturated: ties
    # softmax(l)[1] = sigmoid(l1 - l0): the same order wherever probabilities are distinct.
    moderate = torch.tensor([[0.3, -1.0], [2.0, 2.5], [-3.0, 1.0], [0.0, 0.0]])
    assert torch.allclose(
        RANKING_SCORES["p_relevant"](moderate).sigmoid(), SCORE_FUNCTIONS["p_relevant"](moderate)
    )


def test_the_margin_is_taken_in_float64():
    # In float32, 1e8 - (-1.5) rounds back to 1e8: the two logits are cast before subtracting.
    logits = torch.tensor([[-1.5, 1e8]], dtype=torch.float32)
    assert (logits[:, 1] - logits[:, 0]).item() == 1e8
    assert RANKING_SCORES["p_relevant"](logits).item() == 100000001.5


@pytest.mark.parametrize("kind", ["sigmoid", "logit"])
def test_a_scalar_heads_run_score_is_the_logit(kind):
    logits = torch.tensor([[40.0], [50.0], [45.0], [-2.0]])
    scores = RANKING_SCORES[kind](logits)
    assert scores.dtype == torch.float64 and scores.tolist() == [40.0, 50.0, 45.0, -2.0]
    assert SCORE_FUNCTIONS["sigmoid"](logits)[:3].tolist() == [1.0, 1.0, 1.0]


def test_every_head_kind_has_a_ranking_score():
    assert set(RANKING_SCORES) == set(SCORE_FUNCTIONS)


# --- every variant, end to end on the tiny BERT -----------------------------------------------


@pytest.mark.parametrize("variant", list(LAST_LAYER))
def test_huge_logits_give_distinct_ordered_float64_run_scores(mixing_bert, tmp_path, variant):
    model = _build(variant, mixing_bert)
    _fit_last_layer(model, variant, TARGETS)
    batch = _batch(model, KEYS)
    logits = _logits(model, batch)
    assert logits.tolist() == pytest.approx(TARGETS, abs=0.5)
    if variant not in ("bertlets", "chunked"):  # their papers rank by the scalar itself
        # Read as their papers read them, all three are exactly 1.0: a three-way tie.
        assert _probabilities(model, batch).tolist() == [1.0, 1.0, 1.0]
    model.save(tmp_path / "model")
    run = rerank(
        tmp_path / "model",
        {"q1": {pid: 0.0 for _, pid in KEYS}},
        ["q1"],
        QUERIES,
        CORPUS,
        batch_size=8,
        device="cpu",
        progress=False,
    )
    scores = [run["q1"][pid] for _, pid in KEYS]
    assert all(type(score) is float for score in scores)  # float64
    assert len(set(scores)) == 3 and sorted(run["q1"], key=run["q1"].get, reverse=True) == [
        "p2",
        "p3",
        "p1",
    ]
    # The run holds the logits (margins) themselves, as the model computes them in float64.
    assert scores == pytest.approx(logits.tolist(), rel=1e-6)


@pytest.mark.parametrize("variant", [*LAST_LAYER, "qa_lstm"])
def test_the_run_ranks_as_the_probabilities_where_they_are_distinct(mixing_bert, tmp_path, variant):
    model = _build(variant, mixing_bert)
    keys = [(qid, pid) for qid in QIDS[:4] for pid in candidates()[qid]]
    batch = _batch(model, keys)
    probabilities = _probabilities(model, batch).numpy()
    assert len(set(probabilities.tolist())) == len(keys)  # the random heads do not saturate
    model.save(tmp_path / "model")
    run = rerank(
        tmp_path / "model",
        candidates(),
        QIDS[:4],
        QUERIES,
        CORPUS,
        batch_size=8,
        device="cpu",
        progress=False,
    )
    scores = np.array([run[qid][pid] for qid, pid in keys])
    for qid in QIDS[:4]:
        rows = [i for i, (q, _) in enumerate(keys) if q == qid]
        assert list(np.argsort(-scores[rows], kind="stable")) == list(
            np.argsort(-probabilities[rows], kind="stable")
        )
    if variant == "qa_lstm":  # its raw score is the cosine itself
        assert scores == pytest.approx(probabilities, rel=1e-6)


def test_the_saved_head_kind_is_unchanged_and_ranks_by_the_margin(mixing_bert, tmp_path):
    # reranker.json keeps the head kinds it always had ("p_relevant", "sigmoid", "logit"): models
    # saved before raw scores load unchanged and rank by the raw value of their kind.
    model = _build("pointwise", mixing_bert)
    _fit_last_layer(model, "pointwise", TARGETS)
    model.save(tmp_path / "model")
    meta = json.loads((tmp_path / "model" / "reranker.json").read_text())
    assert meta["head"]["score"] == "p_relevant"
    loaded = load_model(tmp_path / "model")
    with torch.no_grad():
        scores = loaded.score(_batch(loaded, KEYS))
    assert scores.dtype == torch.float64 and scores.tolist() == pytest.approx(TARGETS, abs=0.5)


@pytest.mark.parametrize("variant", ["pointwise", "chunked", "dmn", "bert_lite", "knrm"])
def test_the_last_layer_is_fp32_under_bf16_autocast(mixing_bert, variant):
    # A bf16 logit keeps ~3 significant digits: 40, 40.1 and 40.2 would all be 40.0.
    model = _build(variant, mixing_bert)
    dtypes: list[torch.dtype] = []
    _last_layer(model, variant).register_forward_hook(
        lambda _m, _args, out: dtypes.append(out.dtype)
    )
    batch = _batch(model, KEYS)
    with torch.no_grad(), resolve_precision("bf16", torch.device("cpu")).autocast():
        scores = model.score(batch)
    assert dtypes == [torch.float32] and scores.dtype == torch.float64
    assert all(math.isfinite(s) for s in scores.tolist())
