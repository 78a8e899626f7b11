"""The interface every BM25 backend implements, and the backend registry."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reranklab.errors import ConfigError
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


def get_backend(settings: Mapping[str, Any]) -> Retriever:
    from reranklab.retrieval.bm25s_backend import Bm25sRetriever

    backends: dict[str, type[Retriever]] = {"bm25s": Bm25sRetriever}
    name = settings.get("backend", "bm25s")
    try:
        return backends[name](settings)
    except KeyError:
        raise ConfigError(f"retrieval.backend: unknown backend {name!r} (known: {', '.join(backends)})") from None
