"""The three evaluation protocols the dataset modules declare, each with the values it fixes.

Answer selection re-ranks each question's own candidate list on the dataset's split; passage
ranking re-ranks BM25's top-depth on the dataset's split with one negative per positive (as
MS MARCO's training triples); a dataset without a split is cross-validated over BM25's
candidates. A dataset module names its protocol and gives only the values its papers choose,
so what a protocol fixes is written once and cannot drift between the datasets that share it.
"""

from __future__ import annotations

from typing import Any

from reranklab.data.base import Protocol
from reranklab.settings.base import PositiveOrAll
from reranklab.settings.protocol import Measure


def _with_options(options: dict[str, Any] | None) -> dict[str, Any]:
    # A dataset without options leaves the field to its default, as if it were not named.
    return {} if options is None else {"options": options}


def answer_selection(
    metrics: tuple[Measure, ...],
    negatives_per_positive: PositiveOrAll = "all",
    options: dict[str, Any] | None = None,
) -> Protocol:
    """Each question's candidate pool re-ranked whole, on the dataset's predefined split.

    Example:
        >>> answer_selection(("MAP", "MRR")).first_stage, answer_selection(("MAP",)).depth
        ('pool', None)
    """
    return Protocol(
        first_stage="pool",
        depth=None,
        inject_relevant=False,
        split="predefined",
        negatives_per_positive=negatives_per_positive,
        relevance_threshold=1,
        metrics=metrics,
        **_with_options(options),
    )


def passage_ranking(
    depth: int, relevance_threshold: int, metrics: tuple[Measure, ...], options: dict[str, Any]
) -> Protocol:
    """BM25's top-``depth`` re-ranked on the dataset's predefined split, one negative per positive.

    Example:
        >>> passage_ranking(1000, 1, ("MRR@10",), {}).negatives_per_positive
        1
    """
    return Protocol(
        first_stage="bm25",
        depth=depth,
        inject_relevant=False,
        split="predefined",
        negatives_per_positive=1,
        relevance_threshold=relevance_threshold,
        metrics=metrics,
        options=options,
    )


def cross_validated(
    depth: int,
    inject_relevant: bool,
    negatives_per_positive: PositiveOrAll,
    metrics: tuple[Measure, ...],
    options: dict[str, Any] | None = None,
) -> Protocol:
    """BM25's top-``depth`` re-ranked in 5-fold cross-validation by query (no split of its own).

    Example:
        >>> cross_validated(10, True, 2, ("P@1",)).split
        'cv'
    """
    return Protocol(
        first_stage="bm25",
        depth=depth,
        inject_relevant=inject_relevant,
        split="cv",
        folds=5,
        negatives_per_positive=negatives_per_positive,
        relevance_threshold=1,
        metrics=metrics,
        **_with_options(options),
    )
