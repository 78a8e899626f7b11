"""The interface every BM25 backend implements (the registry of backends is :mod:`~reranklab.retrieval.backends`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reranklab.io import Run


class Retriever(ABC):
    """Build an index over a corpus once; search it for many queries.

    Args:
        settings: the ``retrieval`` block of the config (k1, b, stemmer, stopwords, ...).
    """

    def __init__(self, settings: Mapping[str, Any]) -> None:
        self.settings = dict(settings)

    @abstractmethod
    def build(self, corpus: Mapping[str, str], index_dir: Path) -> dict[str, Any]:
        """Index ``corpus`` ({pid: text}) into ``index_dir``; returns index statistics."""

    @abstractmethod
    def search(self, index_dir: Path, queries: Mapping[str, str], depth: int) -> Run:
        """Top-``depth`` passages per query (only passages that match at least one term)."""
