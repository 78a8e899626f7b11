"""All the analyses of one dataset of a finished study."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from reranklab.report.analyses.ap_distribution import ap_distribution
from reranklab.report.analyses.chunking import PAIRS, chunking
from reranklab.report.analyses.learning_curves import learning_curves
from reranklab.report.analyses.length_sweep import length_sweep
from reranklab.report.analyses.method_comparison import method_comparison
from reranklab.report.analyses.query_delta import query_delta
from reranklab.report.analyses.study import StudyData
from reranklab.report.analyses.training_speed import training_speed

# What `analyze` writes for a dataset (the workflow declares exactly these outputs).
# Every table is a CSV (for programs and DVC plots) and an HTML page beside it (for the report).
FIGURES = (
    "methods.png",
    "length_sweep.png",
    "query_delta.png",
    "learning_curves.png",
    "ap_distribution.png",
)
TABLES = (
    "methods",
    "length_sweep",
    "chunking",
    "query_delta",
    "by_query_length",
    "by_query_type",
    "training_speed",
    "learning_curves",
)
OUTPUTS = FIGURES + tuple(f"{name}.{ext}" for name in TABLES for ext in ("csv", "html"))
"""Everything the analyses can write: what a grid with every analysis to show gets."""

# An analysis that needs more than every grid has: the sweep needs two max lengths, the
# chunking table a chunked cell beside BERTlets (chunking.PAIRS). Without it, it is left out
# (no one-point line, no empty table in the report).
SWEEP = ("length_sweep.png", "length_sweep.csv", "length_sweep.html")
CHUNKING = ("chunking.csv", "chunking.html")


def outputs(variants: Collection[str], max_lengths: Collection[int | None]) -> tuple[str, ...]:
    """The files the analyses write for a grid of ``variants`` x ``max_lengths`` (the workflow
    declares these, from the configuration; :func:`analyze` writes them, from the summary).

    Example:
        >>> "length_sweep.png" in outputs(["pairwise_ce"], [64])
        False
        >>> sorted(set(OUTPUTS) - set(outputs(["bertlets", "chunked"], [64, 128])))
        []
    """
    lengths = {length for length in max_lengths if length is not None}
    left_out = set() if len(lengths) > 1 else set(SWEEP)
    if not any({base, chunked} <= set(variants) for base, chunked in PAIRS):
        left_out |= set(CHUNKING)
    return tuple(name for name in OUTPUTS if name not in left_out)


def analyze(
    summary: Path,
    dataset: str,
    out_dir: Path,
    results: Path = Path("results"),
    reference: str | None = None,
) -> list[Path]:
    """Write every analysis of ``dataset`` that has something to show into ``out_dir`` (see
    :func:`outputs`) and return the files written.

    Args:
        summary: the study's ``summary.json``.
        dataset: one of its datasets.
        out_dir: the folder of its figures and tables (created).
        results: the results folder (queries, fold models).
        reference: the base of the per-query Δ (a row key); ``None`` = the first stage.

    Example:
        >>> analyze(Path("results/summary.json"), "insuranceqa",
        ...         Path("results/report/insuranceqa"))  # doctest: +SKIP
    """
    study = StudyData(summary, results)
    if dataset not in study.datasets():
        raise ValueError(
            f"{summary} has no row of dataset {dataset!r} ({', '.join(study.datasets())})"
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    cells = [row for row in study.rows(dataset) if not row.first_stage]
    wanted = outputs({row.variant for row in cells}, {row.max_length for row in cells})
    written = [
        *method_comparison(study, dataset, out_dir),
        *(length_sweep(study, dataset, out_dir) if SWEEP[0] in wanted else []),
        *(chunking(study, dataset, out_dir) if CHUNKING[0] in wanted else []),
        *query_delta(study, dataset, out_dir, reference=reference),
        *training_speed(study, dataset, out_dir),
        *learning_curves(study, dataset, out_dir),
        *ap_distribution(study, dataset, out_dir),
    ]
    assert sorted(p.name for p in written) == sorted(wanted), "outputs() and the analyses differ"
    return written
