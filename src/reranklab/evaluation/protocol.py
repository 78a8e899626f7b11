"""Scoring protocols: how a dataset's official evaluation scores a run, declared as data.

A :class:`Scoring` says which queries count, the relevance level of the binary measures (each
measure may carry its own), the measures with their cut-offs, and what a counted query that is
missing from the run scores. Each dataset module declares its scorings (the official tool's or
the seed papers' first, under the name its users know), and a study chooses one by name in
``protocol.<dataset>.scoring``.

Which queries count (``queries``):

- ``judged``: every query of the split that has judgements, as ``trec_eval`` counts them
  (a query without a relevant passage scores 0) and as the SemEval scorer does;
- ``relevant``: only queries with at least one relevant passage (the re-ranking papers'
  usual choice: no ranking can score on the others);
- ``relevant_and_nonrelevant``: queries with at least one relevant *and* one non-relevant
  judged passage (WikiQA's ``*-filtered.ref``, TrecQA "clean"): a query whose every candidate
  is relevant scores 1 for any ranking.

A counted query that has no candidate in the run (``missing``) scores 0 (``zero``, as the MS
MARCO and SemEval scorers do) or is left out (``skip``, ``trec_eval`` without ``-c``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from reranklab.evaluation.measures import ALL, Measure, resolve_measures
from reranklab.io import Qrels, Run

QUERY_RULES = ("judged", "relevant", "relevant_and_nonrelevant")
MISSING_RULES = ("zero", "skip")
DROP_REASONS = {
    "not_judged": "no judged passage in the qrels",
    "no_relevant": "no passage graded at or above the relevance level",
    "only_relevant": "every judged passage is relevant (any ranking scores 1)",
    "not_in_run": "no candidate in the run (trec_eval leaves such a query out)",
}


@dataclass(frozen=True)
class Scoring:
    """One named way of scoring runs of a dataset.

    Args:
        name: what users write in ``protocol.<dataset>.scoring`` (``filtered``, ``official``).
        description: one line, with the resulting query counts where known.
        measures: the measures, in the order the papers report them.
        queries: which queries count (see the module docstring).
        relevance: smallest relevant grade for measures without their own ``rel``.
        missing: what a counted query without candidates scores: ``zero`` or ``skip``.
        source: the official tool or paper this follows.

    Example:
        >>> s = Scoring("filtered", "WikiQA filtered", queries="relevant_and_nonrelevant")
        >>> counted, dropped = s.counted({"q1": {"a": 1, "b": 0}, "q2": {"a": 1}, "q3": {"a": 0}}, ["q1", "q2", "q3"])
        >>> counted, sorted(dropped.items())
        (['q1'], [('no_relevant', ['q3']), ('only_relevant', ['q2'])])
    """

    name: str
    description: str = ""
    measures: tuple[Measure, ...] = ALL
    queries: str = "relevant"
    relevance: int = 1
    missing: str = "zero"
    source: str = ""

    def __post_init__(self) -> None:
        if self.queries not in QUERY_RULES:
            raise ValueError(
                f"scoring {self.name!r}: queries {self.queries!r} is not one of {list(QUERY_RULES)}"
            )
        if self.missing not in MISSING_RULES:
            raise ValueError(
                f"scoring {self.name!r}: missing {self.missing!r} is not one of {list(MISSING_RULES)}"
            )
        object.__setattr__(self, "measures", resolve_measures(self.measures))

    def level(self, measure: Measure) -> int:
        """The relevance level ``measure`` is computed with."""
        return self.relevance if measure.rel is None else int(measure.rel)

    def counted(
        self, qrels: Qrels, qids: Iterable[str], run: Run | None = None
    ) -> tuple[list[str], dict[str, list[str]]]:
        """The queries of ``qids`` that count, and those dropped by reason (each list sorted).

        Args:
            qrels: the dataset's qrels.
            qids: the split's (or fold's) queries.
            run: the run, needed only for ``missing: skip``.
        """
        counted: list[str] = []
        dropped: dict[str, list[str]] = {}
        for qid in sorted(set(map(str, qids))):
            reason = self._drop_reason(qrels.get(qid) or {}, run, qid)
            if reason is None:
                counted.append(qid)
            else:
                dropped.setdefault(reason, []).append(qid)
        return counted, dropped

    def _drop_reason(self, judged: dict[str, int], run: Run | None, qid: str) -> str | None:
        if not judged:
            return "not_judged"
        relevant = sum(1 for g in judged.values() if int(g) >= self.relevance)
        if self.queries != "judged" and relevant == 0:
            return "no_relevant"
        if self.queries == "relevant_and_nonrelevant" and relevant == len(judged):
            return "only_relevant"
        if self.missing == "skip" and run is not None and not run.get(qid):
            return "not_in_run"
        return None

    def as_dict(self) -> dict[str, Any]:
        """Plain data (for a ``--spec``, metrics files and MLflow)."""
        return {
            "name": self.name,
            "description": self.description,
            "measures": [m.as_dict() for m in self.measures],
            "queries": self.queries,
            "relevance": self.relevance,
            "missing": self.missing,
            "source": self.source,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Scoring:
        """The inverse of :meth:`as_dict`."""
        fields = {k: v for k, v in data.items() if k != "measures"}
        return cls(**fields, measures=tuple(Measure.from_dict(m) for m in data["measures"]))


def default_scoring(relevance: int = 1, measures: Iterable[Measure | str] = ALL) -> Scoring:
    """The re-ranking papers' usual scoring: queries with a relevant passage, all five measures."""
    return Scoring(
        "default",
        "queries with at least one relevant passage; trec_eval measures",
        measures=resolve_measures(measures),
        queries="relevant",
        relevance=int(relevance),
        source="trec_eval (pytrec_eval), as the re-ranking papers report it",
    )
