"""The measures reranklab reports, declared as data: display name -> how pytrec_eval computes it.

Each :class:`Measure` names a trec_eval measure and, optionally, the depth at which the run
is cut before evaluating it. The cut is how ``MRR@10`` is defined (the reciprocal rank of the
first relevant passage within the top 10, else 0): trec_eval's ``recip_rank`` has no cut-off
of its own.

Binary measures (P@1, MAP, MRR, MRR@10) count a passage as relevant when its grade is at
least the relevance threshold (trec_eval's ``-l``); nDCG@10 uses the grades themselves as
gains, as trec_eval does, whatever the threshold (negative grades gain nothing).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Measure:
    """One reported measure.

    Args:
        name: display name used in metrics files and reports (``"MRR@10"``).
        trec_name: pytrec_eval measure and result key (``"recip_rank"``).
        cutoff: evaluate on the run cut at this rank; ``None`` evaluates the whole ranking.
        description: one line for reports.

    Example:
        >>> Measure("MRR@10", "recip_rank", cutoff=10).trec_name
        'recip_rank'
    """

    name: str
    trec_name: str
    cutoff: int | None = None
    description: str = ""


P_AT_1 = Measure("P@1", "P_1", description="precision of the top-ranked passage")
MAP = Measure("MAP", "map", description="mean average precision over the whole ranking")
MRR = Measure("MRR", "recip_rank", description="reciprocal rank of the first relevant passage")
MRR_AT_10 = Measure("MRR@10", "recip_rank", cutoff=10, description="MRR within the top 10 (else 0)")
NDCG_AT_10 = Measure("nDCG@10", "ndcg_cut_10", description="graded nDCG of the top 10")

ALL: tuple[Measure, ...] = (P_AT_1, MAP, MRR, MRR_AT_10, NDCG_AT_10)
BY_NAME: dict[str, Measure] = {m.name: m for m in ALL}
NAMES: tuple[str, ...] = tuple(m.name for m in ALL)


def resolve_measures(measures: Iterable[Measure | str]) -> tuple[Measure, ...]:
    """Turn display names (or Measure objects) into Measures, keeping order, dropping repeats.

    Args:
        measures: e.g. ``["P@1", "MAP"]`` (a dataset protocol's ``metrics``) or ``ALL``.

    Example:
        >>> [m.trec_name for m in resolve_measures(["P@1", "MRR@10"])]
        ['P_1', 'recip_rank']
    """
    resolved: list[Measure] = []
    for item in measures:
        if isinstance(item, Measure):
            measure = item
        else:
            try:
                measure = BY_NAME[item]
            except KeyError:
                raise ValueError(f"unknown measure {item!r}; known measures: {', '.join(NAMES)}") from None
        if measure not in resolved:
            resolved.append(measure)
    if not resolved:
        raise ValueError("no measures to evaluate")
    return tuple(resolved)
