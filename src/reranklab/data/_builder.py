"""The canonical form a dataset's reader fills file by file (WikiQA, TrecQA, SemEval, InsuranceQA)."""

from __future__ import annotations

from typing import Any

from reranklab.data.base import Prepared
from reranklab.io import Qrels, Run


class CanonicalForm:
    """Corpus, queries, qrels, pool and split as a reader accumulates them, with per-split stats.

    A dataset's own builder subclasses it, adds what it reads from each raw file, and hands the
    result over with :meth:`prepared`.

    Args:
        stats: the statistics kept per split, in the order ``stats.json`` lists them.

    Example:
        >>> form = CanonicalForm("pairs")
        >>> form.queries["q1"], form.stats["pairs"]["test"] = "why?", 0
        >>> form.prepared(source="x").extra_stats
        {'pairs': {'test': 0}, 'source': 'x'}
    """

    def __init__(self, *stats: str) -> None:
        self.corpus: dict[str, str] = {}
        self.queries: dict[str, str] = {}
        self.qrels: Qrels = {}
        self.pool: Run = {}
        self.split: dict[str, list[str]] = {}
        self.stats: dict[str, dict[str, Any]] = {name: {} for name in stats}

    def prepared(self, **extra: Any) -> Prepared:
        """The canonical form; its stats are the per-split ones, then ``extra``."""
        return Prepared(
            corpus=self.corpus,
            queries=self.queries,
            qrels=self.qrels,
            split=self.split,
            pool=self.pool,
            extra_stats={**self.stats, **extra},
        )
