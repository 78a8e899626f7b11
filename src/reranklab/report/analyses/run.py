"""All the analyses of one dataset of a finished study."""

from __future__ import annotations

from pathlib import Path

from reranklab.report.analyses.ap_distribution import ap_distribution
from reranklab.report.analyses.chunking import chunking
from reranklab.report.analyses.learning_curves import learning_curves
from reranklab.report.analyses.length_sweep import length_sweep
from reranklab.report.analyses.method_comparison import method_comparison
from reranklab.report.analyses.outputs import CHUNKING, SWEEP, outputs
from reranklab.report.analyses.query_delta import query_delta
from reranklab.report.analyses.study import StudyData
from reranklab.report.analyses.training_speed import training_speed


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
