"""Canonical files exchanged between the steps of the DAG.

Every step reads and writes only these formats, so any intermediate result can be inspected
with ordinary tools (``trec_eval``, ``pandas``, ``jq``, ``less``):

- qrels: TREC qrels, ``qid 0 pid grade`` (integer grades);
- runs: TREC run files, ``qid Q0 pid rank score tag``, ranks ordered by (-score, a seeded hash of (qid, pid));
- queries: TSV ``qid<TAB>text`` without a header;
- corpus: Parquet (or JSONL) with columns ``pid``, ``text``;
- folds: JSON (see :mod:`reranklab.io.folds`).
"""

from reranklab.io.atomic import atomic_path, atomic_write_bytes, atomic_write_text
from reranklab.io.corpus import iter_corpus, read_corpus, write_corpus
from reranklab.io.folds import Fold, Folds, read_folds, write_folds
from reranklab.io.json_io import read_json, write_json
from reranklab.io.queries import read_queries, write_queries
from reranklab.io.safe_pickle import load_pickle
from reranklab.io.trec import (
    Qrels,
    Run,
    count_ties,
    rank_order,
    read_qrels,
    read_run,
    tie_key,
    write_qrels,
    write_run,
)

__all__ = [
    "Fold",
    "Folds",
    "Qrels",
    "Run",
    "atomic_path",
    "atomic_write_bytes",
    "atomic_write_text",
    "count_ties",
    "iter_corpus",
    "load_pickle",
    "rank_order",
    "tie_key",
    "read_corpus",
    "read_folds",
    "read_json",
    "read_qrels",
    "read_queries",
    "read_run",
    "write_corpus",
    "write_folds",
    "write_json",
    "write_qrels",
    "write_queries",
    "write_run",
]
