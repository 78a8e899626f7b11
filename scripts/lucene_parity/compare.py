"""reranklab's bm25s backend against Lucene's BM25 run of the same corpus (see run.sh).

usage: python scripts/lucene_parity/compare.py WORK_DIR DATASET_DIR...

For each prepared dataset (corpus.parquet, queries.tsv, qrels.txt) it builds the bm25s index
with params.yaml's retrieval settings (k1 0.9, b 0.4, Lucene tokenizer, Porter, Lucene length
norms) and with bm25s' own analysis (the defaults before: \\w\\w+ words, Snowball, exact
lengths), searches every query to depth 100 over the whole corpus, and compares each run
with Lucene's (WORK_DIR/<name>/lucene.run, unrounded scores): overlap@10 and @100, MAP of both.
Prints a Markdown table.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from reranklab.config import schema_defaults
from reranklab.io import rank_order, read_qrels, read_queries, read_run
from reranklab.retrieval.backends import get_backend
from reranklab.retrieval.es_parity import compare_runs
from reranklab.retrieval.streamed_index import BM25S_ANALYSIS

DEPTH = 100
SETTINGS = {
    "default (Lucene tokenizer, Porter, Lucene norms)": {},
    "bm25s analysis (\\w\\w+, Snowball, exact lengths)": BM25S_ANALYSIS,
}


def cut(run: dict[str, dict[str, float]], depth: int) -> dict[str, dict[str, float]]:
    """Each query's top ``depth`` in reranklab's order (ties by the seeded hash, not by id)."""
    return {qid: dict(rank_order(scores, qid)[:depth]) for qid, scores in run.items()}


def main(work: Path, datasets: list[Path]) -> None:
    retrieval = schema_defaults()["retrieval"]
    print("| corpus | bm25s settings | overlap@10 | overlap@100 | MAP bm25s | MAP Lucene |")
    print("|---|---|---:|---:|---:|---:|")
    for data in datasets:
        queries = read_queries(data / "queries.tsv")
        qrels = read_qrels(data / "qrels.txt")
        lucene = cut(read_run(work / data.name / "lucene.run"), DEPTH)
        for label, overrides in SETTINGS.items():
            settings = {**retrieval, **overrides, "backend": "bm25s"}
            with tempfile.TemporaryDirectory() as tmp:
                retriever = get_backend(settings)
                retriever.build(data / "corpus.parquet", Path(tmp) / "index")
                ours = retriever.search(Path(tmp) / "index", queries, DEPTH)
            result = compare_runs(ours, lucene, qrels, ks=(10, 100))
            o, m = result["overlap"], result["map"]
            print(
                f"| {data.name} | {label} | {o[10]:.4f} | {o[100]:.4f} | {m['a']:.4f} | {m['b']:.4f} |"
            )


if __name__ == "__main__":
    main(Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]])
