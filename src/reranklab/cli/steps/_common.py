"""What several steps share: the retrieval backend, the scoring protocol, the frozen-feature
cache and the job's name on the status lines."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from reranklab.errors import ReranklabError
from reranklab.settings.job import ModelSpec, ScoringSpec


def retriever(args: argparse.Namespace, settings: dict[str, Any]) -> Any:
    """The first-stage backend of the spec's retrieval settings (index and retrieve)."""
    from reranklab.retrieval import get_backend

    backend = get_backend(settings)
    backend.threads = args.threads  # how the job runs (the rule's threads), not a setting
    return backend


def scoring(spec: ScoringSpec) -> Any:
    """The dataset's scoring protocol that the spec carries (evaluate and aggregate)."""
    from reranklab.evaluation.protocol import Scoring

    return Scoring.from_dict(spec.scoring)


def frozen_features(args: argparse.Namespace) -> Path | None:
    """The fold's cache of ``reranklab encode`` (lite variants), or None."""
    # The rules pass `--frozen-features {input.cache}`, which is empty for variants without a cache.
    paths = getattr(args, "frozen_features", None) or []
    if len(paths) > 1:
        raise ReranklabError(f"--frozen-features takes one directory, got {len(paths)}")
    return Path(paths[0]) if paths else None


def name_job(step: str, args: argparse.Namespace, fold: int | str) -> None:
    """Name the job on the step's status lines (:mod:`reranklab.progress`)."""
    # How the step's status lines name the job: "train wikiqa dmn-L256 fold0".
    from reranklab.progress import job_label, set_job

    spec: ModelSpec = args.spec
    set_job(job_label(step, spec.dataset, spec.cell().name, fold))
