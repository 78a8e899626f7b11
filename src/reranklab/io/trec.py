"""TREC qrels and run files.

In memory both are ``dict[qid, dict[pid, value]]``, the shape pytrec_eval takes.

Runs are written with full-precision scores (``repr`` of the float64: it reads back as the same
number) and ranked by (-score, tie key), where the tie key is a seeded hash of (qid, pid)
(:func:`tie_key`). A tie is never broken by a passage id or by file order: on WikiQA ids follow
page order, which is itself a strong ranker, so a run full of ties would be silently helped by
it (and trec_eval would break ties by reverse docno). The hash is the same on every machine
and every Python (blake2b, not ``hash()``).
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Iterable, Iterator

from reranklab.errors import FormatError
from reranklab.io.atomic import atomic_path
from reranklab.io.text import text_lines

Qrels = dict[str, dict[str, int]]
Run = dict[str, dict[str, float]]

TIE_SEED = 0
"""The default seed of :func:`tie_key` (``reranklab score --tie-seed`` changes it)."""


EMPTY_RUN = "the run is empty"
EMPTY_QRELS = "the qrels file is empty (no judgement)"


def qrels_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, str, str, str, int]]:
    """The judgements of a TREC qrels file: ``(line number, qid, iteration, docid, grade)``.

    Raises:
        FormatError: a line without 4 fields, or a grade that is not an integer (file and line).

    Example:
        >>> import tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "qrels.txt")
        >>> _ = open(path, "w").write("q1 0 p1 2\\nq1 0 p2 high\\n")
        >>> next(qrels_lines(path))
        (1, 'q1', '0', 'p1', 2)
        >>> list(qrels_lines(path))
        Traceback (most recent call last):
        ...
        reranklab.errors.FormatError: .../qrels.txt:2: relevance grade 'high' is not an integer
    """
    for lineno, line in text_lines(path):
        parts = line.split()
        if len(parts) != 4:
            raise FormatError(
                path,
                lineno,
                f"wrong columns: expected 4 fields 'qid iteration docid grade' (TREC qrels), got {len(parts)}",
            )
        qid, iteration, docid, grade = parts
        try:
            value = int(grade)
        except ValueError:
            raise FormatError(
                path, lineno, f"relevance grade {grade!r} is not an integer"
            ) from None
        yield lineno, qid, iteration, docid, value


def read_qrels(path: str | os.PathLike[str], *, allow_empty: bool = True) -> Qrels:
    """Read ``qid iter pid grade`` lines (any whitespace); grades must be integers.

    A pair judged twice with the same grade is read once; with two grades it is an error (which
    one would count?). ``allow_empty=False``: a file without a judgement is an error too (every
    measure would be null).
    """
    qrels: Qrels = {}
    for lineno, qid, _, pid, value in qrels_lines(path):
        judged = qrels.setdefault(qid, {})
        if judged.get(pid, value) != value:
            raise FormatError(
                path,
                lineno,
                f"pair ({qid}, {pid}) is judged a second time, with grade {value} after {judged[pid]}",
            )
        judged[pid] = value
    if not qrels and not allow_empty:
        raise FormatError(path, None, EMPTY_QRELS)
    return qrels


def write_qrels(path: str | os.PathLike[str], qrels: Qrels) -> None:
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as out:
        for qid in sorted(qrels):
            for pid in sorted(qrels[qid]):
                out.write(f"{qid} 0 {pid} {int(qrels[qid][pid])}\n")


def tie_key(qid: str, pid: str, seed: int = TIE_SEED) -> int:
    """A 64-bit key that orders tied passages pseudo-randomly, the same on every machine.

    Example:
        >>> tie_key("q1", "d1") == tie_key("q1", "d1") != tie_key("q1", "d2")
        True
    """
    digest = hashlib.blake2b(f"{seed}\x1f{qid}\x1f{pid}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def rank_order(
    scores: dict[str, float], qid: str = "", seed: int = TIE_SEED
) -> list[tuple[str, float]]:
    """Passages of one query, best first; equal scores ordered by :func:`tie_key`, not by pid.

    Args:
        scores: ``{pid: score}`` of one query.
        qid: the query (part of the tie key, so two queries' ties are ordered independently).
        seed: the tie key's seed.

    Example:
        >>> [pid for pid, _ in rank_order({"a": 0.5, "b": 0.9, "c": 0.1}, "q1")]
        ['b', 'a', 'c']
    """
    return sorted(scores.items(), key=lambda item: (-item[1], tie_key(qid, item[0], seed)))


def count_ties(scores: dict[str, float]) -> int:
    """How many passages of one query share their score with another passage.

    Example:
        >>> count_ties({"a": 1.0, "b": 1.0, "c": 0.5})
        2
    """
    seen: dict[float, int] = {}
    for score in scores.values():
        seen[score] = seen.get(score, 0) + 1
    return sum(n for n in seen.values() if n > 1)


def add_score(
    run: Run, path: str | os.PathLike[str], lineno: int, qid: str, pid: str, score: float
) -> None:
    """Record one run line's score; a (qid, pid) pair listed twice is an error naming the line
    (which of its scores would rank it?). Shared by every run reader (``reranklab score``'s)."""
    scores = run.setdefault(qid, {})
    if pid in scores:
        raise FormatError(path, lineno, f"query {qid} lists passage {pid} a second time")
    scores[pid] = score


def read_run(path: str | os.PathLike[str], *, allow_empty: bool = True) -> Run:
    """Read a TREC run (``qid Q0 pid rank score tag``); a pair may be listed once.

    ``allow_empty=False``: a run without a line is an error (an empty run scores 0 everywhere,
    or re-ranks nothing).
    """
    run: Run = {}
    for lineno, line in text_lines(path):
        parts = line.split()
        if len(parts) != 6:
            raise FormatError(
                path, lineno, f"expected 6 fields 'qid Q0 pid rank score tag', got {len(parts)}"
            )
        qid, _, pid, _, score, _ = parts
        try:
            value = float(score)
        except ValueError:
            raise FormatError(path, lineno, f"score {score!r} is not a number") from None
        if math.isnan(value):
            raise FormatError(path, lineno, "score is NaN")
        add_score(run, path, lineno, qid, pid, value)
    if not run and not allow_empty:
        raise FormatError(path, None, EMPTY_RUN)
    return run


def write_run(
    path: str | os.PathLike[str],
    run: Run,
    tag: str = "reranklab",
    depth: int | None = None,
    qids: Iterable[str] | None = None,
) -> None:
    """Write ``run`` ranked by (-score, tie key), optionally cut at ``depth`` or to ``qids``.

    Scores are written as ``repr(float)``, the shortest text that reads back as the same float64.
    """
    keep = sorted(run) if qids is None else sorted(set(qids) & set(run))
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as out:
        for qid in keep:
            ranking = rank_order(run[qid], qid)
            if depth is not None:
                ranking = ranking[:depth]
            for rank, (pid, score) in enumerate(ranking, start=1):
                out.write(f"{qid} Q0 {pid} {rank} {float(score)!r} {tag}\n")
