"""The interface every BM25 backend implements (the registry of backends is :mod:`~reranklab.retrieval.backends`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reranklab.io import Run, write_run


class Retriever(ABC):
    """Build an index over a corpus file once; search it for many queries.

    A backend never holds the corpus as a whole: :meth:`build` streams ``corpus.parquet``
    (:func:`reranklab.io.iter_corpus`), so a collection of MS MARCO's size (8.8 M passages)
    indexes in bounded memory.

    Args:
        settings: the ``retrieval`` block of the config (backend, k1, b, stemmer, stopwords, ...).
    """

    threads: int = 0
    """CPU threads the job may use (0: all this process may run on); the CLI sets the rule's."""

    def __init__(self, settings: Mapping[str, Any]) -> None:
        self.settings = dict(settings)

    @abstractmethod
    def build(self, corpus_path: Path, index_dir: Path) -> dict[str, Any]:
        """Index the passages of corpus.parquet (streamed, bounded memory) into index_dir; returns stats
        (at least {"passages": int, "vocabulary": int | None})."""

    @abstractmethod
    def search(self, index_dir: Path, queries: Mapping[str, str], depth: int) -> Run:
        """Top-``depth`` passages per query (only passages that match at least one term)."""

    def search_to_file(
        self, index_dir: Path, queries: Mapping[str, str], depth: int, out: Path, tag: str
    ) -> dict[str, Any]:
        """Default: search() then write_run(); backends may stream the run (bm25s does).

        Args:
            index_dir: the index :meth:`build` wrote.
            queries: ``{qid: text}``.
            depth: passages per query at most.
            out: the TREC run file, written atomically (ranked by score, ties by the seeded hash).
            tag: the run's tag column.

        Returns:
            ``{"queries": int, "candidates": int, "empty": int}``: queries searched, lines
            written, queries without a matching passage.
        """
        run = self.search(index_dir, queries, depth)
        write_run(out, run, tag=tag)
        return {
            "queries": len(queries),
            "candidates": sum(len(c) for c in run.values()),
            "empty": sum(1 for q in queries if not run.get(q)),
        }
