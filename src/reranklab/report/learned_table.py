"""The did-each-model-learn table (the README's and findings page's ``regress:learned``
section), from the checks of :func:`reranklab.grading.learned.learned_rows`.
"""

from __future__ import annotations

from collections.abc import Sequence

from reranklab.grading.learned import MEASURE, Learned, counts


def _f(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _p(value: float | None) -> str:
    if value is None:
        return "–"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def _seeds_text(learned: Learned) -> str:
    if not learned.seeds:
        return "not recorded without planted answers" if learned.planted else "1 seed"
    above = len(learned.seeds) - len(learned.seeds_below)
    each = ", ".join(f"{seed}: {value:.3f}" for seed, value in sorted(learned.seeds.items()))
    return f"{above}/{len(learned.seeds)} ({each})"


def _loss_text(learned: Learned) -> str:
    if learned.loss is None:
        return "not recorded"
    start, end = learned.loss
    return f"{start:.3f} → {end:.3f}" + ("" if learned.loss_fell else " (a model's did not fall)")


def format_markdown(checked: Sequence[Learned], measure: str = MEASURE) -> str:
    """The table of the checks, after a line counting the verdicts.

    Example:
        >>> format_markdown([])
        'No trained cell was recorded.'
    """
    if not checked:
        return "No trained cell was recorded."
    tally = ", ".join(f"{n} {verdict}" for verdict, n in counts(checked).items() if n)
    cleared = sum(c.clears_bar for c in checked)
    lines = [
        f"{len(checked)} trained cells: {tally} ({measure}; p one-sided, its variance holding the "
        "seeds' spread as well as the queries' (the claims' seed-aware test), Holm-corrected over "
        "each study's trained cells; seeds: how many are above the first stage, and each one's "
        "value).",
        "Every comparison with the first stage leaves out the questions given a planted answer "
        "(column planted: how many; – where the study did not record which): the first stage "
        "ranks a planted answer last, so a win on them is no win over its candidates.",
        f"{cleared} of {len(checked)} clear their bar: a fine-tuned cross-encoder its first stage, "
        "any other trained model a random ordering (a verdict in bold does not).",
        "",
        f"| verdict | bar | study | cell | {measure} | first stage | {measure} (first stage) | p | "
        f"random order | p | seeds above first stage | training loss | n | planted |",
        "|---|---|---|---|---:|---|---:|---:|---:|---:|---|---|---:|---:|",
    ]
    for c in checked:
        verdict = c.verdict if c.clears_bar else f"**{c.verdict}**"
        lines.append(
            f"| {verdict} | {c.bar} | {c.study} | {c.key} | {_f(c.value)} | {c.first_stage or '–'} | "
            f"{_f(c.first_value)} | {_p(c.p_first)} | {_f(c.random_value)} | {_p(c.p_random)} | "
            f"{_seeds_text(c)} | {_loss_text(c)} | {c.n or '–'} | "
            f"{'–' if c.planted is None else c.planted} |"
        )
    return "\n".join(lines)
