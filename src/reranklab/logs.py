"""Logging for the CLI steps: one readable stream per job (Snakemake sends it to the rule's log)."""

from __future__ import annotations

import logging
import os
import warnings


def setup_logging(verbose: bool = False) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    # Third-party chatter that says nothing about the study.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    for noisy in ("alembic", "urllib3", "filelock", "httpx", "mlflow", "bm25s"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", category=FutureWarning)
