"""The reproduction matrix's grades as text, Markdown and the README's section.

``reranklab regress`` prints :func:`format_text`, writes :func:`format_markdown` to
``results/regression.md`` and :func:`format_readme` between the README's markers; the grades
come from :mod:`reranklab.grading.regress`.
"""

from __future__ import annotations

from collections.abc import Sequence

from reranklab.grading.matrix_file import FAIL, MEASURES, NOT_RUN, OK, STATUSES, Entry
from reranklab.grading.regress import Grade, counts


def _num(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "–"
    return f"{value:+.4f}" if signed else f"{value:.4f}"


def _value(entry: Entry) -> str:
    # A count, a throughput or a percentage reads best as the paper printed it.
    if entry.measure not in MEASURES:
        return str(entry.info.get("printed", entry.value))
    return _num(entry.value)


def _tally(grades: Sequence[Grade]) -> str:
    return ", ".join(f"{n} {status}" for status, n in counts(grades).items())


def format_text(grades: Sequence[Grade]) -> str:
    """One line per entry: status, condition, measure, value, measured, difference, why."""
    lines = []
    for g in grades:
        e = g.entry
        text = f"{g.status:<7}  {e.kind:<9}  {e.condition}  {e.measure} {_value(e)}"
        if g.measured is not None:
            text += f"  measured {g.measured:.4f}  diff {g.diff:+.4f}  (tolerance {e.tolerance:g})"
        if g.reason:
            text += f"  ({g.reason})"
        lines.append(text)
    lines.append(f"{len(grades)} entries: {_tally(grades)}")
    return "\n".join(lines) + "\n"


def format_markdown(grades: Sequence[Grade], title: str = "Reproduction matrix") -> str:
    """The Markdown table of ``results/regression.md``."""
    header = [
        "status",
        "kind",
        "study",
        "dataset",
        "variant",
        "max length",
        "model",
        "measure",
        "value",
        "measured",
        "diff",
        "tolerance",
        "reference",
        "note",
    ]
    lines = [
        f"# {title}",
        "",
        f"{len(grades)} entries: {_tally(grades)}.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---"] * 8 + ["---:"] * 4 + ["---"] * 2) + "|",
    ]
    for g in grades:
        e = g.entry
        note = "; ".join(x for x in (g.reason, str(e.info.get("note", ""))) if x)
        cells = [
            f"**{g.status}**" if g.status == FAIL else g.status,
            e.kind,
            e.study,
            e.dataset,
            e.variant or "–",  # None: a not-reproducible entry with no reranklab variant
            "–" if e.max_length is None else str(e.max_length),
            e.model or "–",
            e.measure,
            _value(e),
            _num(g.measured),
            _num(g.diff, signed=True),
            f"{e.tolerance:g}",
            e.reference,
            note,
        ]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    lines += [
        "",
        "OK: within the tolerance; FAIL: outside it, or the entry matches several rows; "
        "NOT COMPARABLE: measured with another encoder than the paper's (shown, not graded); "
        "NOT RUN: no given summary holds the condition (e.g. a study that needs a GPU); "
        "QUOTED: another work's number that the paper prints; NOT REPRODUCIBLE: reranklab has "
        "no variant, data or measure for it (the note says which).",
        "",
    ]
    return "\n".join(lines)


def format_readme(grades: Sequence[Grade]) -> str:
    """The README's matrix section: a tally per paper and study, then every entry folded.

    Written between ``<!-- regress:matrix:start -->`` and ``<!-- regress:matrix:end -->`` by
    ``reranklab regress --readme README.md``.
    """
    groups: dict[tuple[str, str], list[Grade]] = {}
    for g in grades:
        groups.setdefault((str(g.entry.paper or "–"), g.entry.study), []).append(g)
    statuses = [s for s in STATUSES if any(g.status == s for g in grades)] or [OK, FAIL, NOT_RUN]
    lines = [
        "| paper | study | entries | " + " | ".join(statuses) + " |",
        "|---|---|---:|" + "---:|" * len(statuses),
    ]
    for (paper, study), members in groups.items():
        tally = [str(sum(g.status == s for g in members)) for s in statuses]
        lines.append(f"| {paper} | {study} | {len(members)} | " + " | ".join(tally) + " |")
    lines += [
        "",
        f"<details><summary>Every entry ({len(grades)})</summary>",
        "",
        "| status | id or study | cite / source | dataset | variant | measure | value | measured | why |",
        "|---|---|---|---|---|---|---:|---:|---|",
    ]
    for g in grades:
        e = g.entry
        name = str(e.info.get("id") or e.study)
        variant = (e.variant or "–") + ("" if e.max_length is None else f"-L{e.max_length}")
        cells = [
            g.status,
            name,
            e.reference,
            e.dataset,
            variant,
            e.measure,
            _value(e),
            _num(g.measured),
            g.reason,
        ]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    lines += ["", "</details>", ""]
    return "\n".join(lines)
