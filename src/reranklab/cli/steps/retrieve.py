"""``reranklab retrieve``: the first-stage candidates, BM25's top k or the dataset's own pool
(the retrieve rule)."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from reranklab.cli._options import QRELS, add_inputs, add_spec, add_threads
from reranklab.cli.steps._common import retriever
from reranklab.errors import ReranklabError
from reranklab.settings.job import RetrieveSpec

NAME = "retrieve"
HELP = "first-stage candidates (BM25 top-k or the pool)"

log = logging.getLogger("reranklab")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_inputs(parser, "queries")
    parser.add_argument("--qrels", required=True, help=QRELS + "; for inject_relevant")
    parser.add_argument("--pool", required=True, help="pool.run: the dataset's own candidates")
    parser.add_argument("--out", required=True, help="the candidates run to write (TREC format)")
    parser.add_argument(
        "--out-record",
        help="first_stage.json to write: each query's recall at the depth and the queries given a planted answer",
    )
    parser.add_argument("--index-dir", help="the BM25 index (the index step's folder; bm25 only)")
    add_threads(parser)
    add_spec(parser, RetrieveSpec)


def run(args: argparse.Namespace) -> None:
    from reranklab.io import read_qrels, read_queries, read_run, write_json, write_run
    from reranklab.retrieval import first_stage_record, inject_relevant, pool_candidates

    spec: RetrieveSpec = args.spec
    protocol = spec.protocol.model_dump()
    queries = read_queries(args.queries)
    depth = protocol.get("depth")
    if protocol["first_stage"] == "bm25" and not args.index_dir:
        raise ReranklabError("the bm25 first stage needs --index-dir")
    if protocol["first_stage"] == "bm25" and not protocol.get("inject_relevant"):
        # Streamed to the file (MS MARCO: 6,980 queries x 1,000): the run is never held whole.
        stats = retriever(args, spec.retrieval or {}).search_to_file(
            Path(args.index_dir), queries, int(depth), Path(args.out), tag="bm25"
        )
        log.info(
            "bm25: %d queries, %d candidates, %d queries without candidates",
            stats["queries"],
            stats["candidates"],
            stats["empty"],
        )
        if args.out_record:
            # Read back: the streamed run was never held whole.
            record = first_stage_record(
                read_run(args.out), read_qrels(args.qrels), list(queries), protocol
            )
            write_json(Path(args.out_record), record)
        return
    if protocol["first_stage"] == "bm25":
        run = retriever(args, spec.retrieval or {}).search(
            Path(args.index_dir), queries, int(depth)
        )
    else:
        run = pool_candidates(read_run(args.pool), list(queries), depth)
    qrels = read_qrels(args.qrels)
    record = first_stage_record(run, qrels, list(queries), protocol)
    if protocol.get("inject_relevant"):
        if not depth:
            raise ReranklabError("inject_relevant needs a depth")
        run, injected = inject_relevant(
            run,
            qrels,
            int(depth),
            int(protocol["relevance_threshold"]),
            list(queries),
        )
        log.info("injected a relevant passage at rank %s for %d queries", depth, injected)
    empty = sum(1 for q in queries if not run.get(q))
    write_run(args.out, run, tag=protocol["first_stage"])
    if args.out_record:
        write_json(Path(args.out_record), record)
    log.info(
        "%s: %d queries, %d candidates, %d queries without candidates",
        protocol["first_stage"],
        len(run),
        sum(len(c) for c in run.values()),
        empty,
    )
