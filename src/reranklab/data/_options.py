"""Dataset options and raw-file checks shared by the dataset modules.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from reranklab.errors import ConfigError, DownloadError


def positive_int_or_all(options: dict[str, Any], key: str, dataset: str) -> int | None:
    """An option that is a positive integer or ``"all"`` (→ ``None``).

    Args:
        options: the dataset's options.
        key: the option.
        dataset: the dataset name, for the message.

    Raises:
        ConfigError: any other value.

    Example:
        >>> positive_int_or_all({"train_queries": "all"}, "train_queries", "msmarco-passage") is None
        True
    """
    value = options.get(key)
    if value == "all":
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"protocol.{dataset}.options.{key}: expected a positive integer or 'all', got {value!r}")
    return value


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


def check_options(dataset: str, options: dict[str, Any], known: Iterable[str]) -> None:
    """Refuse options the dataset does not know (a typo would silently change nothing).

    Example:
        >>> check_options("antique", {"dev_queries": 100}, ("dev_queries", "dev_seed"))
    """
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ConfigError(f"protocol.{dataset}.options: unknown option(s) {unknown}; known: {sorted(known)}")


def require_files(raw_dir: Path, names: Iterable[str], dataset: str) -> None:
    """DownloadError naming every raw file that is not in ``raw_dir``.

    Example:
        >>> require_files(Path("raw/antique"), ["antique-collection.txt"], "antique")  # doctest: +SKIP
    """
    missing = [name for name in names if not (raw_dir / name).is_file()]
    if missing:
        raise DownloadError(f"{raw_dir}: missing {', '.join(missing)}; run the download step for {dataset} first")
