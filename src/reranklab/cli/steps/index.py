"""``reranklab index``: build the BM25 index of a corpus (the index rule)."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from reranklab.cli._options import add_inputs, add_spec, add_threads
from reranklab.cli.steps._common import retriever
from reranklab.settings.job import IndexSpec

NAME = "index"
HELP = "build the BM25 index of a corpus"

log = logging.getLogger("reranklab")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_inputs(parser, "corpus")
    parser.add_argument("--out-dir", required=True, help="folder for the index")
    add_threads(parser)
    add_spec(parser, IndexSpec)


def run(args: argparse.Namespace) -> None:
    # The backend streams the corpus file: the collection is never held as a whole.
    stats = retriever(args, args.spec.retrieval).build(Path(args.corpus), Path(args.out_dir))
    log.info("indexed %d passages (vocabulary %s)", stats["passages"], stats["vocabulary"])
