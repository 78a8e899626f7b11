"""Dataset options and raw-file checks shared by the dataset modules.

A dataset's options are a :class:`~reranklab.settings.base.DatasetOptions` model declared in its
module (types, ranges, defaults): ``reranklab validate-config`` checks them with the rest of the
config, and the module reads them typed (:meth:`reranklab.data.base.Dataset.read_options`).
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from pathlib import Path

from pydantic import Field

from reranklab.errors import DownloadError
from reranklab.settings.base import DatasetOptions, PositiveOrAll


class TrainSampleOptions(DatasetOptions):
    """A seeded sample of the judged training queries (MS MARCO-sized training sets)."""

    train_queries: PositiveOrAll = Field(
        20_000, description='judged training queries sampled, or "all"'
    )
    train_seed: int = Field(42, description="seed of that sample")


def count_or_all(value: int | str) -> int | None:
    """A :data:`~reranklab.settings.base.PositiveOrAll` value as a count, ``None`` for ``"all"``.

    Example:
        >>> count_or_all("all") is None, count_or_all(3)
        (True, 3)
    """
    return None if value == "all" else int(value)


def sample_ids(ids: list[str], n: int | None, seed: int) -> set[str]:
    """A seeded sample of ``n`` of ``ids`` (all when ``n`` is ``None`` or at least their number).

    The result depends only on the set of ids, ``n`` and ``seed``: ids are sorted before a
    seeded shuffle, as the k-fold splits do.

    Example:
        >>> sorted(sample_ids(["c", "a", "b"], 2, seed=1))
        ['b', 'c']
    """
    if n is None or n >= len(ids):
        return set(ids)
    ordered = sorted(set(ids))
    random.Random(seed).shuffle(ordered)
    return set(ordered[:n])


def require_files(raw_dir: Path, names: Iterable[str], dataset: str) -> None:
    """DownloadError naming every raw file that is not in ``raw_dir``.

    Example:
        >>> require_files(Path("raw/antique"), ["antique-collection.txt"], "antique")  # doctest: +SKIP
    """
    missing = [name for name in names if not (raw_dir / name).is_file()]
    if missing:
        raise DownloadError(
            f"{raw_dir}: missing {', '.join(missing)}; run the download step for {dataset} first"
        )
