"""Candidate lists that do not come from BM25: the dataset's own pools, and injection."""

from __future__ import annotations

from reranklab.io import Qrels, Run, rank_order


def pool_candidates(pool: Run, qids: list[str] | None = None, depth: int | None = None) -> Run:
    """The dataset's own candidate lists, optionally cut to the top ``depth`` of each."""
    keep = pool if qids is None else {q: pool[q] for q in qids if q in pool}
    if depth is None:
        return {q: dict(c) for q, c in keep.items()}
    return {q: dict(rank_order(c, q)[:depth]) for q, c in keep.items()}


def inject_relevant(
    run: Run, qrels: Qrels, depth: int, threshold: int = 1, qids: list[str] | None = None
) -> tuple[Run, int]:
    """Put the first relevant passage missing from each query's top-``depth`` at position ``depth``.

    The protocol of Mass et al. for nfL6 and WebAP: a query whose top-``depth`` holds no
    relevant passage gets its best-graded relevant passage (ties: smallest pid) in place of the
    candidate at rank ``depth``, so every test query can be re-ranked to a relevant answer.
    Queries with no relevant passage are left alone; ``qids`` (default: the run's) may name
    queries BM25 found nothing for. Returns the new run and how many were injected.

    Example:
        >>> run = {"q": {"a": 3.0, "b": 2.0}}
        >>> inject_relevant(run, {"q": {"z": 1}}, depth=2)
        ({'q': {'a': 3.0, 'z': 2.999}}, 1)
    """
    injected = 0
    out: Run = {}
    for qid in run if qids is None else qids:
        ranking = rank_order(run.get(qid, {}), qid)[:depth]
        relevant = {pid: g for pid, g in qrels.get(qid, {}).items() if g >= threshold}
        if not relevant or any(pid in relevant for pid, _ in ranking):
            out[qid] = dict(ranking)
            continue
        best = min(relevant, key=lambda pid: (-relevant[pid], pid))
        if len(ranking) >= depth:
            ranking = ranking[: depth - 1]
        # Score just below the last kept candidate so the injected passage sits at rank `depth`.
        score = ranking[-1][1] - 1e-3 if ranking else 1.0
        ranking.append((best, score))
        out[qid] = dict(ranking)
        injected += 1
    return out, injected


def recall_at_depth(run: Run, qrels: Qrels, threshold: int = 1) -> dict[str, float]:
    """Each judged query's recall in its candidates: the share of its relevant passages there.

    The ceiling a re-ranker of these candidates can reach; a query with no relevant passage of
    grade >= ``threshold`` has no recall and is left out.

    Example:
        >>> recall_at_depth({"q": {"a": 2.0, "b": 1.0}, "r": {"c": 1.0}},
        ...                 {"q": {"a": 1, "z": 1}, "r": {"y": 2}, "s": {"x": 1}})
        {'q': 0.5, 'r': 0.0, 's': 0.0}
    """
    recall = {}
    for qid in sorted(qrels):
        relevant = {pid for pid, grade in qrels[qid].items() if grade >= threshold}
        if relevant:
            found = relevant & set(run.get(qid, {}))
            recall[qid] = len(found) / len(relevant)
    return recall


def first_stage_record(
    run: Run,
    qrels: Qrels,
    qids: list[str],
    protocol: dict,
) -> dict:
    """What a first stage gave each query, before any answer was planted.

    ``recall``: each judged query's recall at the depth (:func:`recall_at_depth`);
    ``planted``: the queries :func:`inject_relevant` gives a relevant passage (those whose
    candidates held none), empty where the protocol plants none. The summary reads it to report
    the first stage's recall and every cell on the questions that had an answer to find.

    Example:
        >>> record = first_stage_record({"q": {"a": 1.0}, "r": {"b": 1.0}},
        ...     {"q": {"a": 1}, "r": {"c": 1}}, ["q", "r"],
        ...     {"first_stage": "bm25", "depth": 1, "inject_relevant": True, "relevance_threshold": 1})
        >>> record["planted"], record["recall"]
        (['r'], {'q': 1.0, 'r': 0.0})
    """
    threshold = int(protocol.get("relevance_threshold") or 1)
    wanted = set(qids)
    judged = {q: grades for q, grades in qrels.items() if q in wanted}
    recall = recall_at_depth(run, judged, threshold)
    planted = bool(protocol.get("inject_relevant"))
    return {
        "first_stage": protocol["first_stage"],
        "depth": protocol.get("depth"),
        "planted_answers": planted,
        "relevance_threshold": threshold,
        "planted": sorted(q for q, r in recall.items() if planted and r == 0.0),
        "recall": recall,
    }
