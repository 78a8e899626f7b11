"""Do the two backends give the same first stage? Overlap@k of their top lists and the
difference of their MAP, on one corpus and one set of queries.

Needs a live cluster (``RERANKLAB_ES_URL``) for the Elasticsearch side::

    reranklab prepare --dataset sample --raw-dir raw --out-dir data   # or any prepared dataset
    python -m reranklab.retrieval.es_parity --corpus data/corpus.parquet \\
        --queries data/queries.tsv --qrels data/qrels.txt --depth 100 --k 10 100

Both backends use the same ``retrieval`` settings (``--params``: a JSON ``retrieval`` block;
default: reranklab's, whose bm25s analyzer is the closest bm25s gets to Lucene's English one).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from reranklab.evaluation.evaluate import evaluate_run
from reranklab.io import Qrels, Run, rank_order, read_qrels, read_queries
from reranklab.retrieval.backends import get_backend
from reranklab.retrieval.es_settings import retrieval_settings


def overlap_at_k(run_a: Run, run_b: Run, k: int, qids: Iterable[str] | None = None) -> float:
    """Mean over queries of ``|top_k(a) ∩ top_k(b)| / k`` (ties ranked by the seeded hash).

    A query with fewer than ``k`` candidates in both runs is divided by the longer of its
    two lists instead (two identical short lists overlap fully); two empty lists count 1.

    Example:
        >>> overlap_at_k({"q": {"a": 2.0, "b": 1.0}}, {"q": {"a": 5.0, "c": 4.0}}, k=2)
        0.5
    """
    queries = sorted(set(run_a) | set(run_b)) if qids is None else list(qids)
    if not queries:
        return 1.0
    total = 0.0
    for qid in queries:
        a = {pid for pid, _ in rank_order(run_a.get(qid, {}), qid)[:k]}
        b = {pid for pid, _ in rank_order(run_b.get(qid, {}), qid)[:k]}
        size = min(k, max(len(a), len(b)))
        total += 1.0 if size == 0 else len(a & b) / size
    return total / len(queries)


def compare_runs(
    run_a: Run, run_b: Run, qrels: Qrels, ks: Sequence[int] = (10, 100), relevance: int = 1
) -> dict[str, Any]:
    """Overlap@k for each ``k`` and MAP of both runs on the queries with a relevant passage.

    Returns:
        ``{"queries", "overlap": {k: value}, "map": {"a", "b", "difference"}}``, with
        ``difference = b - a``.

    Example:
        >>> a = {"q": {"p1": 2.0, "p2": 1.0}}
        >>> b = {"q": {"p2": 2.0, "p1": 1.0}}
        >>> compare_runs(a, b, {"q": {"p1": 1}}, ks=(1,))["map"]
        {'a': 1.0, 'b': 0.5, 'difference': -0.5}
    """
    qids = sorted(set(run_a) | set(run_b))
    measured = [
        evaluate_run(run, qrels, qids=qids, relevance_threshold=relevance, measures=["MAP"])
        for run in (run_a, run_b)
    ]
    map_a, map_b = (m["aggregate"]["MAP"] for m in measured)
    return {
        "queries": len(qids),
        "counted": measured[0]["n_queries"],
        "overlap": {int(k): overlap_at_k(run_a, run_b, int(k), qids) for k in ks},
        "map": {
            "a": map_a,
            "b": map_b,
            "difference": None if map_a is None or map_b is None else map_b - map_a,
        },
    }


def parity(
    corpus: Path,
    queries: Mapping[str, str],
    qrels: Qrels,
    settings: Mapping[str, Any],
    depth: int,
    ks: Sequence[int],
    work_dir: Path,
) -> dict[str, Any]:
    """Index ``corpus`` with bm25s and Elasticsearch under the same ``settings``, search both
    to ``depth`` and compare (``a`` = bm25s, ``b`` = Elasticsearch)."""
    runs = []
    for backend in ("bm25s", "elasticsearch"):
        retriever = get_backend({**settings, "backend": backend})
        retriever.build(corpus, work_dir / backend)
        runs.append(retriever.search(work_dir / backend, queries, depth))
    return {"depth": depth, **compare_runs(runs[0], runs[1], qrels, ks)}


def format_parity(result: Mapping[str, Any]) -> str:
    """The comparison as a few plain lines (4 decimals).

    Example:
        >>> print(format_parity({"depth": 10, "queries": 2, "counted": 2, "overlap": {10: 1.0},
        ...     "map": {"a": 0.5, "b": 0.5, "difference": 0.0}}))
        queries: 2 (2 with a relevant passage), depth 10
        overlap@10: 1.0000
        MAP bm25s 0.5000, elasticsearch 0.5000, difference (elasticsearch - bm25s) +0.0000
    """
    lines = [
        f"queries: {result['queries']} ({result['counted']} with a relevant passage), depth {result['depth']}"
    ]
    lines += [f"overlap@{k}: {value:.4f}" for k, value in result["overlap"].items()]
    m = result["map"]
    if m["difference"] is None:
        lines.append("MAP: no query with a relevant passage")
    else:
        lines.append(
            f"MAP bm25s {m['a']:.4f}, elasticsearch {m['b']:.4f}, "
            f"difference (elasticsearch - bm25s) {m['difference']:+.4f}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m reranklab.retrieval.es_parity``: print the comparison (and ``--json``)."""
    parser = argparse.ArgumentParser(
        prog="python -m reranklab.retrieval.es_parity", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--queries", type=Path, required=True)
    parser.add_argument("--qrels", type=Path, required=True)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--k", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--params", default="{}", help="the retrieval block as JSON")
    parser.add_argument("--work-dir", type=Path, default=None, help="default: a temporary folder")
    parser.add_argument("--json", action="store_true", help="print JSON instead")
    args = parser.parse_args(argv)
    settings = retrieval_settings(json.loads(args.params)).model_dump()
    with tempfile.TemporaryDirectory() as tmp:
        result = parity(
            args.corpus,
            read_queries(args.queries),
            read_qrels(args.qrels),
            settings,
            args.depth,
            args.k,
            args.work_dir or Path(tmp),
        )
    print(json.dumps(result, indent=2) if args.json else format_parity(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
