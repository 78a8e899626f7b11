"""The README's quick-start table, written from the recorded quick start, never by hand.

``make quickstart-record`` keeps the quick start's summary, per-query values and wall time in
``studies/results/quickstart-cpu/quickstart/``; ``reranklab regress --readme README.md`` (``make
readme-tables``) writes this table between ``<!-- regress:quickstart:start -->`` and
``<!-- regress:quickstart:end -->`` from that folder, with the significance marks the summary
computed (a paired t-test against the first stage, and the Holm-corrected comparisons of every
pair of rows).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reranklab.grading.evidence import Evidence
from reranklab.report.summary_text import _superscript

STUDY = "quickstart"
MEASURES = ("P@1", "MAP", "MRR", "nDCG@10")
ALPHA = 0.05


def _cell(row: Mapping[str, Any]) -> str:
    length = row.get("max_length")
    return str(row["variant"]) + ("" if length is None else f"-L{length}")


def _value(row: Mapping[str, Any], measure: str) -> str:
    text = f"{row[measure]:.3f}"
    p = row.get(f"{measure}_p")
    if p is not None and p < ALPHA:
        text += "†"
    beats = row.get(f"{measure}_beats") or []
    return text + (_superscript(beats) if beats else "")


def _provenance_line(evidence: Evidence) -> str:
    for provenance in evidence.provenance.values():
        if provenance.get("study") != STUDY:
            continue
        machine = provenance.get("machine") or {}
        wall = provenance.get("wall_seconds")
        took = "" if wall is None else f", {int(wall) // 60} min {int(wall) % 60} s"
        return (
            f"Recorded {str(provenance.get('recorded', '?'))[:10]} by `{provenance.get('command')}`"
            f" ({machine.get('cpus', '?')} CPU cores, torch {machine.get('torch', '?')}{took};"
            f" commit {str(provenance.get('commit', '?'))[:7]})."
        )
    return ""


def _protocol_line(rows: Sequence[Mapping[str, Any]]) -> str:
    """What the rows re-rank: the first stage, its depth and recall, and any planted answers."""
    first = next((row for row in rows if row.get("first_stage")), None)
    if first is None or first.get("recall_at_depth") is None:
        return ""
    depth = first.get("depth")
    planted = int(first.get("n_planted") or 0)
    n = first.get("n_queries")
    line = (
        f"Protocol: every row re-ranks {first['variant']}'s top {depth} candidates of each of the "
        f"{n} test questions (recall@{depth} {first['recall_at_depth']:.3f}: the share of "
        "their answers in the candidates, the ceiling of any re-ranker)"
    )
    if not planted:
        return line + "; no answer planted."
    return line + (
        f"; a missed answer was planted at rank {depth} for {planted} of them (inject_relevant)."
    )


def format_quickstart(evidence: Evidence, measures: Sequence[str] = MEASURES) -> str | None:
    """The quick start's rows as a Markdown table and a line saying where they come from.

    Returns ``None`` when ``evidence`` holds no row of the quick start.

    Example:
        >>> row = {"study": "quickstart", "row": "a", "variant": "bm25", "max_length": None,
        ...        "MAP": 0.2429, "MAP_p": None, "MAP_beats": []}
        >>> print(format_quickstart(Evidence(rows=[row]), ["MAP"]))
        | row | cell | MAP |
        |---|---|---:|
        | a | bm25 | 0.243 |
        <BLANKLINE>
    """
    rows = [row for row in evidence.rows if row.get("study") == STUDY]
    if not rows:
        return None
    lines = [
        "| row | cell | " + " | ".join(measures) + " |",
        "|---|---|" + "---:|" * len(measures),
    ]
    for row in rows:
        values = " | ".join(_value(row, measure) for measure in measures)
        lines.append(f"| {row.get('row', '–')} | {_cell(row)} | {values} |")
    notes = [note for note in (_protocol_line(rows), _provenance_line(evidence)) if note]
    return "\n".join([*lines, *(part for note in notes for part in ("", note))]) + "\n"
