"""Training examples of one fold: every positive, negatives down-sampled per positive.

Positives are a training query's judged passages of grade >= the relevance threshold;
negatives are its first-stage candidates that are not positive. Queries with no positive or no
negative cannot teach a ranking and are dropped (and counted).
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field

import pandas as pd

from reranklab.io import Qrels, Run, rank_order


@dataclass
class Examples:
    pointwise: pd.DataFrame  # qid, pid, label
    triplets: pd.DataFrame  # qid, pos_pid, neg_pid
    stats: dict = field(default_factory=dict)


def sample_examples(
    qids: Iterable[str],
    candidates: Run,
    qrels: Qrels,
    negatives_per_positive: int | str,
    threshold: int = 1,
    seed: int = 42,
    positives_from: str = "judged",
    planted: Iterable[str] = (),
) -> Examples:
    """Sample the point-wise examples and pair-wise triplets of ``qids``.

    With N negatives per positive, a query with P positives keeps min(N·P, available)
    negatives (a seeded sample); each positive is paired with its own N of them (cycling when
    there are fewer), so the triplets and the point-wise set use the same negatives. With
    ``"all"`` every negative is kept and every positive is paired with every negative.

    Args:
        qids: the fold's training queries.
        candidates: the first-stage run (negatives come from here).
        qrels: graded judgements (positives come from here).
        negatives_per_positive: N, or ``"all"``.
        threshold: smallest relevant grade.
        seed: one seed; the result depends only on it and the inputs.
        positives_from: ``judged`` (every judged relevant passage) or ``candidates`` (only
            those among the query's candidates: a re-ranker never sees a passage its first
            stage missed, so a positive it missed teaches "unlike the first stage's picks").
        planted: queries whose candidates got a planted answer (``inject_relevant``). Their
            first stage found no answer, so with ``candidates`` they have no positive: the
            planted one would teach the same cue, and Mass et al. plant answers only to
            evaluate (papers/mass2019.txt:104).

    Example:
        >>> ex = sample_examples(["q"], {"q": {"a": 3, "b": 2, "c": 1}}, {"q": {"a": 1}}, 1, seed=0)
        >>> len(ex.pointwise), len(ex.triplets)
        (2, 1)
        >>> sample_examples(["q"], {"q": {"b": 2, "c": 1}}, {"q": {"a": 1}}, 1,
        ...     positives_from="candidates").stats["dropped_no_positive"]
        1
        >>> sample_examples(["q"], {"q": {"a": 2, "c": 1}}, {"q": {"a": 1}}, 1,
        ...     positives_from="candidates", planted=["q"]).stats["dropped_no_positive"]
        1
    """
    rng = random.Random(seed)
    point_rows: list[tuple[str, str, int]] = []
    triplet_rows: list[tuple[str, str, str]] = []
    dropped_no_positive = dropped_no_negative = 0
    queries = sorted(set(qids))
    planted_set = set(planted)
    for qid in queries:
        positives = sorted(pid for pid, grade in qrels.get(qid, {}).items() if grade >= threshold)
        if positives_from == "candidates":
            found = {} if qid in planted_set else candidates.get(qid, {})
            positives = [pid for pid in positives if pid in found]
        positive_set = set(positives)
        negatives = [
            pid for pid, _ in rank_order(candidates.get(qid, {}), qid) if pid not in positive_set
        ]
        if not positives:
            dropped_no_positive += 1
            continue
        if not negatives:
            dropped_no_negative += 1
            continue
        if negatives_per_positive == "all":
            kept = negatives
            pairs = [(p, n) for p in positives for n in negatives]
        else:
            per = int(negatives_per_positive)
            kept = rng.sample(negatives, min(per * len(positives), len(negatives)))
            pairs = [
                (p, kept[(i * per + j) % len(kept)])
                for i, p in enumerate(positives)
                for j in range(per)
            ]
            # Dedupe while keeping order: with few negatives the cycle repeats pairs.
            pairs = list(dict.fromkeys(pairs))
        point_rows += [(qid, pid, 1) for pid in positives] + [(qid, pid, 0) for pid in kept]
        triplet_rows += [(qid, p, n) for p, n in pairs]
    pointwise = pd.DataFrame(point_rows, columns=["qid", "pid", "label"]).astype({"label": "int8"})
    triplets = pd.DataFrame(triplet_rows, columns=["qid", "pos_pid", "neg_pid"])
    stats = {
        "queries": len(queries),
        "queries_used": len(queries) - dropped_no_positive - dropped_no_negative,
        "dropped_no_positive": dropped_no_positive,
        "dropped_no_negative": dropped_no_negative,
        "positives": int((pointwise["label"] == 1).sum()),
        "negatives": int((pointwise["label"] == 0).sum()),
        "triplets": len(triplets),
        "negatives_per_positive": negatives_per_positive,
        "positives_from": positives_from,
    }
    return Examples(pointwise, triplets, stats)
