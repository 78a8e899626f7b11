"""All the analyses of one dataset of a finished study."""

from __future__ import annotations

from pathlib import Path

from reranklab.report.analyses.ap_distribution import ap_distribution
from reranklab.report.analyses.chunking import chunking
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


def analyze(
    summary: Path,
    dataset: str,
    out_dir: Path,
    results: Path = Path("results"),
    reference: str | None = None,
) -> list[Path]:
    """Write every analysis of ``dataset`` into ``out_dir`` and return the files written.

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
    written = [
        *method_comparison(study, dataset, out_dir),
        *length_sweep(study, dataset, out_dir),
        *chunking(study, dataset, out_dir),
        *query_delta(study, dataset, out_dir, reference=reference),
        *training_speed(study, dataset, out_dir),
        *learning_curves(study, dataset, out_dir),
        *ap_distribution(study, dataset, out_dir),
    ]
    assert sorted(p.name for p in written) == sorted(OUTPUTS), "OUTPUTS and the analyses differ"
    return written
