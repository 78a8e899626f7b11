"""TREC qrels and run files.

In memory both are ``dict[qid, dict[pid, value]]``, the shape pytrec_eval takes.
Runs are always written and evaluated in the order (-score, pid): trec_eval would otherwise
break score ties by document id in its own (reverse) way, and equal scores are common for
pooled candidates and saturated models.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable

from reranklab.errors import FormatError
from reranklab.io.atomic import atomic_path

Qrels = dict[str, dict[str, int]]
Run = dict[str, dict[str, float]]


def read_qrels(path: str | os.PathLike[str]) -> Qrels:
    """Read ``qid iter pid grade`` lines (any whitespace); grades must be integers."""
    qrels: Qrels = {}
    with open(path, encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            parts = line.split()
            if len(parts) != 4:
                raise FormatError(path, lineno, f"expected 4 fields 'qid iter pid grade', got {len(parts)}")
            qid, _, pid, grade = parts
            try:
                qrels.setdefault(qid, {})[pid] = int(grade)
            except ValueError:
                raise FormatError(path, lineno, f"relevance grade {grade!r} is not an integer") from None
    return qrels


def write_qrels(path: str | os.PathLike[str], qrels: Qrels) -> None:
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as out:
        for qid in sorted(qrels):
            for pid in sorted(qrels[qid]):
                out.write(f"{qid} 0 {pid} {int(qrels[qid][pid])}\n")


def rank_order(scores: dict[str, float]) -> list[tuple[str, float]]:
    """Passages of one query, best first; ties broken by pid so the order is reproducible."""
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def read_run(path: str | os.PathLike[str]) -> Run:
    """Read a TREC run (``qid Q0 pid rank score tag``)."""
    run: Run = {}
    with open(path, encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            parts = line.split()
            if len(parts) != 6:
                raise FormatError(path, lineno, f"expected 6 fields 'qid Q0 pid rank score tag', got {len(parts)}")
            qid, _, pid, _, score, _ = parts
            try:
                value = float(score)
            except ValueError:
                raise FormatError(path, lineno, f"score {score!r} is not a number") from None
            if math.isnan(value):
                raise FormatError(path, lineno, "score is NaN")
            run.setdefault(qid, {})[pid] = value
    return run


def write_run(
    path: str | os.PathLike[str],
    run: Run,
    tag: str = "reranklab",
    depth: int | None = None,
    qids: Iterable[str] | None = None,
) -> None:
    """Write ``run`` ranked by (-score, pid), optionally cut at ``depth`` or to ``qids``."""
    keep = sorted(run) if qids is None else sorted(set(qids) & set(run))
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as out:
        for qid in keep:
            ranking = rank_order(run[qid])
            if depth is not None:
                ranking = ranking[:depth]
            for rank, (pid, score) in enumerate(ranking, start=1):
                out.write(f"{qid} Q0 {pid} {rank} {score:.8g} {tag}\n")
