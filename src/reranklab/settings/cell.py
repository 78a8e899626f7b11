"""A cell of the grid, and the one place its name is written and read.

A re-ranker cell is ``<variant>-L<max length>`` (``pointwise-L256``), with ``/seed<s>`` when the
study has a seed axis (``pointwise-L256/seed3``); a first-stage row is its first stage's name
(``bm25``, ``pool``). The name is the cell's folder under ``results/{runs,metrics,cells,...}/<dataset>/``;
its key (``wikiqa/pointwise/L256/seed3``) names its MLflow run and its summary row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import ClassVar

SEED_PART = re.compile(r"^/seed(\d+)$")
VARIANT = r"[a-z][a-z0-9_]*"


def seed_part(seed: int | None) -> str:
    """The path part of a seed: ``"/seed3"``, or ``""`` without a seed axis.

    Example:
        >>> seed_part(3), seed_part(None)
        ('/seed3', '')
    """
    return "" if seed is None else f"/seed{int(seed)}"


def seed_of_part(part: str) -> int | None:
    """The seed of a path part made by :func:`seed_part` (``None`` for ``""``).

    Raises:
        ValueError: not such a part.

    Example:
        >>> seed_of_part("/seed7"), seed_of_part("")
        (7, None)
    """
    if not part:
        return None
    match = SEED_PART.match(part)
    if match is None:
        raise ValueError(f"not a seed path part: {part!r}")
    return int(match.group(1))


@dataclass(frozen=True)
class Cell:
    """One row of the study: a dataset, a variant, a max length (none for a first stage), a seed.

    Args:
        dataset: the dataset's registered name.
        variant: a registered variant, or the first stage (``bm25``, ``pool``).
        max_length: the cell's max length; ``None`` for a first-stage row.
        seed: the seed of a study's seed axis; ``None`` without one (or for the cell as a whole).

    Example:
        >>> cell = Cell.parse("wikiqa", "pointwise-L256/seed3")
        >>> cell.name, cell.key, cell.without_seed().name
        ('pointwise-L256/seed3', 'wikiqa/pointwise/L256/seed3', 'pointwise-L256')
        >>> Cell("wikiqa", "bm25").name, Cell("wikiqa", "bm25").key
        ('bm25', 'wikiqa/bm25')
    """

    dataset: str
    variant: str
    max_length: int | None = None
    seed: int | None = None

    NAME: ClassVar[re.Pattern[str]] = re.compile(
        rf"^(?P<variant>{VARIANT})(?:-L(?P<max_length>\d+)(?P<seed>/seed\d+)?)?$"
    )
    # The parts of a re-ranker cell's name as Snakemake wildcards (rule paths, e.g.
    # "results/models/{dataset}/" + Cell.WILDCARDS + "/fold{fold}"); SEED_WILDCARD adds the seed.
    WILDCARDS: ClassVar[str] = "{variant}-L{max_length}"
    SEED_WILDCARD: ClassVar[str] = "{seed_dir}"

    def __post_init__(self) -> None:
        if self.max_length is None and self.seed is not None:
            raise ValueError(f"a first-stage cell has no seed: {self!r}")

    @property
    def is_first_stage(self) -> bool:
        """Whether the row is the first stage itself (no max length)."""
        return self.max_length is None

    @property
    def name(self) -> str:
        """The folder name: ``pointwise-L256``, ``pointwise-L256/seed3`` or ``bm25``."""
        if self.max_length is None:
            return self.variant
        return f"{self.variant}-L{int(self.max_length)}{seed_part(self.seed)}"

    @property
    def key(self) -> str:
        """The MLflow run name and summary row key: ``wikiqa/pointwise/L256[/seed3]``, ``wikiqa/bm25``."""
        if self.max_length is None:
            return f"{self.dataset}/{self.variant}"
        return f"{self.dataset}/{self.variant}/L{int(self.max_length)}{seed_part(self.seed)}"

    def without_seed(self) -> Cell:
        """The cell as a whole (over all its seeds)."""
        return replace(self, seed=None)

    def path(self, kind: str, *parts: str, root: str = "results") -> str:
        """``results/<kind>/<dataset>/<name>[/<parts>...]``, e.g. ``path("cells", "metrics.json")``.

        Example:
            >>> Cell("wikiqa", "pointwise", 256).path("checkpoints", "fold0")
            'results/checkpoints/wikiqa/pointwise-L256/fold0'
        """
        return "/".join((root, kind, self.dataset, self.name, *parts))

    @classmethod
    def parse(cls, dataset: str, name: str) -> Cell:
        """The cell of ``dataset`` whose folder is ``name``.

        Raises:
            ValueError: ``name`` is not a cell's name.

        Example:
            >>> Cell.parse("sample", "bertlets-L64")
            Cell(dataset='sample', variant='bertlets', max_length=64, seed=None)
        """
        match = cls.NAME.match(name)
        if match is None:
            raise ValueError(
                f"not a cell name: {name!r} (expected <variant>-L<max length>[/seed<s>] or a first stage)"
            )
        length = match.group("max_length")
        return cls(
            dataset,
            match.group("variant"),
            None if length is None else int(length),
            seed_of_part(match.group("seed") or ""),
        )

    @staticmethod
    def pattern(seeds: bool) -> str:
        """The regex of a ``{cell}`` wildcard: with a seed axis a re-ranker cell names its seed.

        Example:
            >>> Cell.pattern(False)
            '[a-z][a-z0-9_]*(-L\\\\d+)?'
        """
        return rf"{VARIANT}(-L\d+/seed\d+)?" if seeds else rf"{VARIANT}(-L\d+)?"
