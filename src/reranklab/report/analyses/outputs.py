"""What the analyses write for a grid: the names the workflow declares as `analyze`'s outputs.

Kept apart from the analyses (matplotlib, scipy) because every Snakemake run, and every job of a
cluster run, plans with it.
"""

from __future__ import annotations

from collections.abc import Collection

PAIRS = (("bertlets", "chunked"),)  # (passage cut at the max length, passage in chunks)

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
# chunking table a chunked cell beside BERTlets (PAIRS). Without it, it is left out
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
