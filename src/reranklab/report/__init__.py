"""Reports: the study's summary table (CSV, Markdown, JSON for people and ``dvc metrics``)."""

from reranklab.report.summary import is_first_stage, paired_p_value, row_key, summarize

__all__ = ["is_first_stage", "paired_p_value", "row_key", "summarize"]
