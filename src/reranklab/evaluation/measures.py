"""The measures reranklab reports, declared as data: display name -> how it is computed.

Each :class:`Measure` names a trec_eval measure (computed by pytrec_eval) or one of the official
scorers' own definitions (:data:`OFFICIAL`), the depth at which the run is cut before evaluating
it, and optionally its own relevance level. The cut is how ``MRR@10`` is defined (the reciprocal
rank of the first relevant passage within the top 10, else 0): trec_eval's ``recip_rank`` has no
cut-off of its own.

Binary measures count a passage as relevant when its grade is at least the measure's ``rel``,
or, when it has none, the scoring protocol's relevance level (trec_eval's ``-l``); nDCG uses the
grades themselves as gains, as trec_eval does, whatever the level (negative grades gain nothing).
A dataset's :class:`~reranklab.evaluation.protocol.Scoring` lists the measures it reports, so the
same display name (``MAP``) can mean the official scorer's definition on one dataset (SemEval's
AP over the top 10) and trec_eval's on another.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Measure:
    """One reported measure.

    Args:
        name: display name used in metrics files and reports (``"MRR@10"``).
        trec_name: pytrec_eval measure and result key (``"recip_rank"``), or the name of an
            official scorer's definition in :data:`OFFICIAL` when ``official`` is true.
        cutoff: evaluate on the run cut at this rank; ``None`` evaluates the whole ranking.
        rel: smallest grade this measure counts as relevant; ``None`` = the scoring protocol's.
        official: ``trec_name`` names a function of :data:`OFFICIAL`, not a trec_eval measure.
        description: one line for reports.

    Example:
        >>> Measure("MRR@10", "recip_rank", cutoff=10).trec_name
        'recip_rank'
        >>> Measure("MAP", "map", rel=2).rel
        2
    """

    name: str
    trec_name: str
    cutoff: int | None = None
    rel: int | None = None
    official: bool = False
    description: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Measure:
        return cls(**data)


def semeval_average_precision(relevant: Sequence[bool]) -> float:
    """AP as the SemEval 2016/2017 Task 3 scorer (v2.2+) computes it over a cut ranking.

    The mean of the precisions at the ranks of the relevant passages *found* in the (already
    cut) ranking: unlike trec_eval's ``map_cut``, it divides by the number of relevant passages
    retrieved, not by all relevant ones, and a query with none retrieved scores 0.

    Example:
        >>> semeval_average_precision([False, True, False, True])
        0.5
    """
    found = 0
    precisions = []
    for rank, is_relevant in enumerate(relevant, start=1):
        if is_relevant:
            found += 1
            precisions.append(found / rank)
    return sum(precisions) / len(precisions) if precisions else 0.0


OFFICIAL: dict[str, Callable[[Sequence[bool]], float]] = {"semeval_ap": semeval_average_precision}
"""Official scorers' measures that trec_eval has no equivalent of: name -> f(relevant flags)."""

P_AT_1 = Measure("P@1", "P_1", description="precision of the top-ranked passage")
MAP = Measure("MAP", "map", description="mean average precision over the whole ranking")
MRR = Measure("MRR", "recip_rank", description="reciprocal rank of the first relevant passage")
MRR_AT_10 = Measure("MRR@10", "recip_rank", cutoff=10, description="MRR within the top 10 (else 0)")
NDCG_AT_10 = Measure("nDCG@10", "ndcg_cut_10", description="graded nDCG of the top 10")

R_AT_1000 = Measure(
    "R@1000", "recall_1000", description="recall of the relevant passages in the top 1000"
)

ALL: tuple[Measure, ...] = (P_AT_1, MAP, MRR, MRR_AT_10, NDCG_AT_10)
"""The five measures every scoring reports unless it says otherwise."""
BY_NAME: dict[str, Measure] = {m.name: m for m in (*ALL, R_AT_1000)}
NAMES: tuple[str, ...] = tuple(m.name for m in ALL)


def resolve_measures(measures: Iterable[Measure | str]) -> tuple[Measure, ...]:
    """Turn display names (or Measure objects) into Measures, keeping order, dropping repeats.

    Args:
        measures: e.g. ``["P@1", "MAP"]`` or ``ALL``.

    Raises:
        ValueError: an unknown name (all unknown names are listed), two different measures
            under one display name, or nothing to evaluate.

    Example:
        >>> [m.trec_name for m in resolve_measures(["P@1", "MRR@10"])]
        ['P_1', 'recip_rank']
    """
    resolved: list[Measure] = []
    unknown: list[str] = []
    for item in measures:
        measure = item if isinstance(item, Measure) else BY_NAME.get(item)
        if measure is None:
            unknown.append(repr(item))
            continue
        clash = next((m for m in resolved if m.name == measure.name and m != measure), None)
        if clash is not None:
            raise ValueError(
                f"two different measures are named {measure.name!r}: {clash} and {measure}"
            )
        if measure not in resolved:
            resolved.append(measure)
    if unknown:
        raise ValueError(
            f"unknown measure(s) {', '.join(unknown)}; known measures: {', '.join(NAMES)}"
        )
    if not resolved:
        raise ValueError("no measures to evaluate")
    return tuple(resolved)
