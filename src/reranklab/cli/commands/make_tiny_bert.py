"""``reranklab make-tiny-bert``: build a tiny random BERT whose vocabulary is the words of the
given files (for tests and dry runs; no hub)."""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "make-tiny-bert"
HELP = "build a tiny random BERT (for tests and dry runs), no hub"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out-dir", required=True, help="folder for the model and its tokenizer")
    parser.add_argument(
        "--corpus", nargs="*", help="corpus.parquet files whose words make the vocabulary"
    )
    parser.add_argument(
        "--queries", nargs="*", help="queries.tsv files whose words make the vocabulary"
    )


def run(args: argparse.Namespace) -> None:
    from reranklab.io import read_corpus, read_queries
    from reranklab.models.tiny import build_tiny_bert

    words: list[str] = []
    for path in args.corpus or []:
        words += " ".join(read_corpus(path).values()).lower().split()
    for path in args.queries or []:
        words += " ".join(read_queries(path).values()).lower().split()
    print(build_tiny_bert(Path(args.out_dir), words))
