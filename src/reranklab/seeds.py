"""The seed axis of a study: ``seeds: [1, 2, 3]`` runs every re-ranker cell once per seed.

Fine-tuned BERT re-rankers vary noticeably with the random seed (initialisation of the head,
dropout, data order, sampled negatives), so a single run can mislead. With ``seeds`` set, each
seed gets its own negative sampling, initialisation and data order, while the folds stay
those of the study ``seed``: every seed is evaluated on the same test queries, so seeds (and
cells) stay comparable query by query. The summary then reports each measure as the mean over
seeds ± the sample standard deviation over seeds.

Paths: without ``seeds`` nothing changes (``results/models/<ds>/<cell>/fold<k>``); with it, a
``seed<s>`` level sits under the cell (``results/models/<ds>/<cell>/seed<s>/fold<k>``, and
likewise samples, runs, metrics and the per-seed ``cells/<ds>/<cell>/seed<s>/``), and
``cells/<ds>/<cell>/metrics.json`` aggregates the seeds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reranklab.errors import ConfigError
from reranklab.settings.cell import Cell, seed_of_part, seed_part


def study_seeds(config: Mapping[str, Any]) -> list[int] | None:
    """The seeds of the seed axis, or None when the study runs the one ``seed``.

    Example:
        >>> study_seeds({"seed": 42}), study_seeds({"seed": 42, "seeds": [3, 1]})
        (None, [3, 1])
    """
    seeds = config.get("seeds")
    if seeds is None:
        return None
    if (
        not seeds
        or len(set(seeds)) != len(seeds)
        or any(isinstance(s, bool) or not isinstance(s, int) for s in seeds)
    ):
        raise ConfigError(f"seeds: expected a list of distinct integers, got {seeds!r}")
    if any(s < 0 for s in seeds):
        raise ConfigError(f"seeds: seeds must be >= 0, got {seeds!r}")
    return [int(s) for s in seeds]


def seed_dir(seed: int | None) -> str:
    """The path part of a seed: ``"/seed3"``, or ``""`` without a seed axis.

    Example:
        >>> seed_dir(3), seed_dir(None)
        ('/seed3', '')
    """
    return seed_part(seed)


def seed_from_dir(part: str, default: int) -> int:
    """The seed of a path part made by :func:`seed_dir` (``default`` for ``""``).

    Example:
        >>> seed_from_dir("/seed7", 42), seed_from_dir("", 42)
        (7, 42)
    """
    seed = seed_of_part(part)
    return int(default) if seed is None else seed


def split_cell(cell: str) -> tuple[str, int | None, int | None]:
    """``"pointwise-L256/seed3"`` -> ``("pointwise", 256, 3)``; ``"bm25"`` -> ``("bm25", None, None)``.

    Example:
        >>> split_cell("bertlets-L64/seed3"), split_cell("pointwise-L256"), split_cell("bm25")
        (('bertlets', 64, 3), ('pointwise', 256, None), ('bm25', None, None))
    """
    parsed = Cell.parse("", cell)
    return parsed.variant, parsed.max_length, parsed.seed
