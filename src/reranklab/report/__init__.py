"""Reports: the study's summary table (CSV, Markdown, JSON for people and ``dvc metrics``)."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reranklab.report.summary import is_first_stage, paired_p_value, row_key, summarize

# Loaded when first asked for: the workflow plans with `report.analyses.outputs` in every
# Snakemake process, which must not pay for scipy and the summary (~1 s a process).
__all__ = ["is_first_stage", "paired_p_value", "row_key", "summarize"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module("reranklab.report.summary"), name)
