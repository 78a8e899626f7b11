"""Reports: the study's summary table (CSV, Markdown, JSON for people and ``dvc metrics``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from reranklab.lazy import lazy_exports

if TYPE_CHECKING:
    from reranklab.report.summary import is_first_stage, paired_p_value, row_key, summarize

# Loaded when first asked for: the workflow plans with `report.analyses.outputs` in every
# Snakemake process, which must not pay for scipy and the summary (~1 s a process).
__all__ = ["is_first_stage", "paired_p_value", "row_key", "summarize"]
__getattr__ = lazy_exports(__name__, dict.fromkeys(__all__, "summary"))
