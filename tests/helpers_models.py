"""Toy re-ranking data and a tiny BERT for the model/training tests (no downloads)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

import pyarrow as pa
import pyarrow.parquet as pq

from reranklab.config import resolve_training
from reranklab.models.tiny import build_tiny_bert
from reranklab.settings.job import ModelSpec

# Eight questions, each with its one answer; the other queries' answers are its negatives.
TOPICS = {
    "q1": ("what colour is the sky", "the sky is blue on a clear day"),
    "q2": ("how many legs does a spider have", "a spider has eight legs"),
    "q3": ("who wrote hamlet", "hamlet was written by william shakespeare"),
    "q4": ("what is the capital of france", "paris is the capital of france"),
    "q5": ("how hot is the sun", "the surface of the sun is about five thousand degrees"),
    "q6": ("what do bees make", "bees make honey and wax"),
    "q7": ("when did the war end", "the war ended in nineteen forty five"),
    "q8": ("why do cats purr", "cats purr when they are content or healing"),
}
QIDS = list(TOPICS)
QUERIES = {qid: query for qid, (query, _) in TOPICS.items()}
CORPUS = {f"p{qid[1:]}": answer for qid, (_, answer) in TOPICS.items()}


def positive(qid: str) -> str:
    return f"p{qid[1:]}"


def negatives(qid: str, k: int = 3) -> list[str]:
    number = int(qid[1:])
    return [f"p{(number + offset - 1) % len(TOPICS) + 1}" for offset in range(1, k + 1)]


def candidates() -> dict[str, dict[str, float]]:
    """A first-stage run: each query's answer and three negatives (first-stage scores unused)."""
    return {qid: {pid: 0.0 for pid in [positive(qid), *negatives(qid)]} for qid in QIDS}


def write_pointwise_examples(path: Path) -> Path:
    rows: dict[str, list[Any]] = {"qid": [], "pid": [], "label": []}
    for qid in QIDS:
        for pid, label in [(positive(qid), 1)] + [(pid, 0) for pid in negatives(qid)]:
            rows["qid"].append(qid)
            rows["pid"].append(pid)
            rows["label"].append(label)
    pq.write_table(pa.table(rows), path)
    return path


def write_triplet_examples(path: Path) -> Path:
    rows: dict[str, list[str]] = {"qid": [], "pos_pid": [], "neg_pid": []}
    for qid in QIDS:
        for pid in negatives(qid):
            rows["qid"].append(qid)
            rows["pos_pid"].append(positive(qid))
            rows["neg_pid"].append(pid)
    pq.write_table(pa.table(rows), path)
    return path


def write_examples(path: Path, variant: str) -> Path:
    return (
        write_pointwise_examples(path) if variant == "pointwise" else write_triplet_examples(path)
    )


def build_toy_bert(directory: Path) -> Path:
    """The tiny BERT whose vocabulary holds every word of the toy queries and answers."""
    return build_tiny_bert(directory, list(QUERIES.values()) + list(CORPUS.values()))


def toy_cell(
    variant: str, encoder: Path, max_length: int = 32, seed: int = 1, **training: Any
) -> dict[str, Any]:
    """A resolved cell (as ``resolve_cell`` gives) training ``variant`` on the tiny BERT, on CPU."""
    # One thread: tiny models gain nothing from more, and lose a lot on a loaded machine.
    overrides = {
        "encoder": str(encoder),
        "device": "cpu",
        "batch_size": 4,
        "threads": 1,
        **training,
    }
    return {
        "study": "toy",
        "seed": seed,
        "dataset": "toy",
        "variant": variant,
        "max_length": max_length,
        "protocol": {},
        "retrieval": {},
        # Under variants.<name>: the test's settings win over the variant's paper presets.
        "training": resolve_training({"variants": {variant: overrides}}, variant),
    }


def model_spec(cell: dict[str, Any]) -> str:
    """A resolved cell as a train, encode or rerank job's ``--spec``: its ModelSpec JSON."""
    keys = ("variant", "base", "max_length", "dataset", "seed", "training", "scoring")
    return ModelSpec(**{k: cell[k] for k in keys if cell.get(k) is not None}).to_json()


def mrr(run: dict[str, dict[str, float]]) -> float:
    """Mean reciprocal rank of each query's answer, ties broken by pid as the run writer does."""
    total = 0.0
    for qid, scores in run.items():
        ranking = sorted(scores, key=lambda pid: (-scores[pid], pid))
        total += 1.0 / (ranking.index(positive(qid)) + 1)
    return total / len(run)
