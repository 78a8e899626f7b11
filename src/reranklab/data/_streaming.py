"""Datasets whose collection is too large to hold in memory (MS MARCO, TREC DL, TREC-CAR): the
corpus is streamed to Parquet in row groups, with a progress bar and a duplicate-id check.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from reranklab.data._text_files import split_id_text
from reranklab.data.base import Dataset, Prepared
from reranklab.errors import FormatError
from reranklab.io import Qrels, atomic_path, write_json, write_qrels, write_queries, write_run
from reranklab.io.corpus import SCHEMA as CORPUS_SCHEMA
from reranklab.io.text import decode_line, open_binary

log = logging.getLogger(__name__)

ROW_GROUP = (
    20_000  # passages per Parquet row group: ~7 MB of MS MARCO text; peak RSS grows ~1 KB per row
)

# (position, pid, text): position is a line number for text files, a record number for CBOR.
CorpusRecord = tuple[int, str, str]


def tsv_corpus_records(
    path: str | Path, progress: Callable[[int], None] | None = None
) -> Iterator[CorpusRecord]:
    """Passages of a ``pid<TAB>text`` collection (MS MARCO, ANTIQUE), line by line.

    Args:
        path: the collection file (plain or gzip).
        progress: called with the number of bytes read since the last call (for a progress bar).

    Raises:
        FormatError: bad UTF-8, a line without a tab, or a pid that is empty or has whitespace.

    Example:
        >>> next(tsv_corpus_records("raw/msmarco-passage/collection.tsv"))[:2]  # doctest: +SKIP
        (1, '0')
    """
    lineno = 0
    pending = 0
    with open_binary(path) as handle:
        for lineno, raw in enumerate(handle, start=1):
            pending += len(raw)
            if progress is not None and pending >= 1 << 22:
                progress(pending)
                pending = 0
            line = decode_line(raw, path, lineno).rstrip("\n").rstrip("\r")
            if lineno == 1:
                line = line.removeprefix("\ufeff")
            if not line.strip():
                continue
            pid, text = split_id_text(path, lineno, line, "passage")
            yield lineno, pid, text
    if progress is not None and pending:
        progress(pending)


@dataclass
class CorpusStats:
    """What :func:`stream_corpus` saw: counts, and which of the wanted pids were in the corpus."""

    passages: int = 0
    empty_passages: int = 0
    found: set[str] = field(default_factory=set)


RecordSource = Callable[[Callable[[int], None] | None], Iterator[CorpusRecord]]


def stream_corpus(
    out_path: str | Path,
    records: RecordSource,
    source: str | Path,
    *,
    wanted: Iterable[str] = (),
    total_bytes: int | None = None,
    row_group: int = ROW_GROUP,
    progress: bool = True,
) -> CorpusStats:
    """Write a corpus to Parquet (``pid``, ``text``) while reading it, in bounded memory.

    Passages go out in row groups of ``row_group``; memory holds one row group, the wanted pids,
    and one 64-bit hash per passage (about 70 MB for MS MARCO, 240 MB for TREC-CAR) with which
    duplicate pids are found at the end. Only then is a duplicate looked up again in ``source``
    to name both places; the file is renamed into place only when the whole corpus is valid.

    Args:
        out_path: the corpus Parquet file (written atomically).
        records: ``records(progress_callback)`` yields ``(position, pid, text)``; it is called a
            second time only to locate a duplicate pid.
        source: the raw file, for messages.
        wanted: pids to look out for (e.g. the judged ones); :attr:`CorpusStats.found` holds those seen.
        total_bytes: size of the raw file, for the progress bar.
        row_group: passages per row group.
        progress: show a tqdm bar (bytes of the raw file).

    Returns:
        The counts and the wanted pids that were found.

    Raises:
        FormatError: a malformed record, or a pid that occurs twice (with both positions).

    Example:
        >>> stats = stream_corpus("corpus.parquet", lambda cb: tsv_corpus_records("collection.tsv", cb),
        ...                       "collection.tsv")  # doctest: +SKIP
        >>> stats.passages  # doctest: +SKIP
        8841823
    """
    wanted_set = set(wanted)
    stats = CorpusStats()
    hashes = np.empty(1 << 16, dtype=np.int64)
    pids: list[str] = []
    texts: list[str] = []
    bar = tqdm(
        total=total_bytes,
        unit="B",
        unit_scale=True,
        unit_divisor=1024,
        desc=f"corpus {Path(source).name}",
        disable=not progress,
    )
    target = Path(out_path)
    with bar, atomic_path(target) as tmp:
        writer = pq.ParquetWriter(tmp, CORPUS_SCHEMA)
        try:
            for _, pid, text in records(bar.update):
                if stats.passages == len(hashes):
                    hashes = np.resize(hashes, len(hashes) * 2)
                hashes[stats.passages] = hash(pid)
                stats.passages += 1
                if not text.strip():
                    stats.empty_passages += 1
                if pid in wanted_set:
                    stats.found.add(pid)
                pids.append(pid)
                texts.append(text)
                if len(pids) >= row_group:
                    writer.write_table(pa.table({"pid": pids, "text": texts}, schema=CORPUS_SCHEMA))
                    pids, texts = [], []
            if pids:
                writer.write_table(pa.table({"pid": pids, "text": texts}, schema=CORPUS_SCHEMA))
            pids, texts = [], []
        finally:
            writer.close()
        _check_unique(hashes[: stats.passages], records, source)
    return stats


def _check_unique(hashes: np.ndarray, records: RecordSource, source: str | Path) -> None:
    ordered = np.sort(hashes)
    repeated = ordered[1:][ordered[1:] == ordered[:-1]]
    if not len(repeated):
        return
    # A repeated hash is almost surely a repeated pid; a second pass names it (or clears a collision).
    suspects = {int(h) for h in repeated[:1000]}
    first: dict[str, int] = {}
    for position, pid, _ in records(None):
        if hash(pid) not in suspects:
            continue
        if pid in first:
            raise FormatError(
                source, position, f"duplicate passage id {pid!r} (first at {first[pid]})"
            )
        first[pid] = position


class StreamingCorpusDataset(Dataset):
    """A dataset whose corpus is too large to hold in memory.

    Subclasses read everything but the corpus in :meth:`parse_topics` and say how to read the
    corpus (:attr:`corpus_file`, :meth:`corpus_records`). :meth:`prepare` streams the corpus to
    ``corpus.parquet`` (:func:`stream_corpus`) and writes the small files after it;
    :meth:`parse` builds the same canonical form in memory, for small collections and tests.
    """

    corpus_file: str

    def parse_topics(self, raw_dir: Path, options: dict[str, Any]) -> Prepared:
        """Queries, qrels, split and pool (``corpus`` left empty)."""
        raise NotImplementedError

    def corpus_records(
        self, path: Path, progress: Callable[[int], None] | None = None
    ) -> Iterator[CorpusRecord]:
        return tsv_corpus_records(path, progress)

    def split_judgements(
        self, raw_dir: str | Path, split: str, options: dict[str, Any] | None = None
    ) -> tuple[list[str], Qrels]:
        """As :meth:`Dataset.split_judgements`, from :meth:`parse_topics`: the collection is not read."""
        self.check_splits([split])
        prepared = self.parse_topics(Path(raw_dir), {**self.protocol.options, **(options or {})})
        return self._split_of(prepared.split, prepared.qrels, split, list(prepared.queries))

    def parse(self, raw_dir: Path, options: dict[str, Any]) -> Prepared:
        """The canonical form in memory (corpus included): only for small collections.

        Example:
            >>> MsMarcoPassage().parse(Path("tests/fixtures/msmarco"), {}).stats()["passages"]  # doctest: +SKIP
            12
        """
        raw_dir = Path(raw_dir)
        prepared = self.parse_topics(raw_dir, {**self.protocol.options, **options})
        source = raw_dir / self.corpus_file
        corpus: dict[str, str] = {}
        origin: dict[str, int] = {}
        empty = 0
        for position, pid, text in self.corpus_records(source):
            if pid in corpus:
                raise FormatError(
                    source, position, f"duplicate passage id {pid!r} (first at {origin[pid]})"
                )
            corpus[pid] = text
            origin[pid] = position
            empty += not text.strip()
        prepared.corpus = corpus
        judged = {pid for judged in prepared.qrels.values() for pid in judged}
        self._corpus_stats(
            prepared, CorpusStats(len(corpus), empty, judged & corpus.keys()), judged
        )
        return prepared

    def prepare(
        self, raw_dir: str | Path, out_dir: str | Path, options: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Stream the corpus to ``corpus.parquet``, then write the other canonical files.

        Example:
            >>> get_dataset("msmarco-passage").prepare("raw", "data/msmarco-passage")  # doctest: +SKIP
            {'passages': 8841823, 'queries': 26980, ...}
        """
        raw_dir, out = Path(raw_dir), Path(out_dir)
        merged = {**self.protocol.options, **(options or {})}
        prepared = self.parse_topics(raw_dir, merged)
        judged = {pid for judged in prepared.qrels.values() for pid in judged}
        source = raw_dir / self.corpus_file
        out.mkdir(parents=True, exist_ok=True)
        corpus_stats = stream_corpus(
            out / "corpus.parquet",
            lambda progress: self.corpus_records(source, progress),
            source,
            wanted=judged,
            total_bytes=source.stat().st_size,
        )
        self._corpus_stats(prepared, corpus_stats, judged)
        write_queries(out / "queries.tsv", prepared.queries)
        write_qrels(out / "qrels.txt", prepared.qrels)
        write_json(out / "split.json", prepared.split)
        write_run(out / "pool.run", prepared.pool or {}, tag="pool")
        stats = prepared.stats()
        stats["passages"] = corpus_stats.passages
        write_json(out / "stats.json", stats)
        return stats

    def _corpus_stats(self, prepared: Prepared, corpus: CorpusStats, judged: set[str]) -> None:
        missing = len(judged - corpus.found)
        if missing:
            # Judged passages that are not in the collection can never be retrieved; say so.
            log.warning(
                "%s: %d judged passage(s) are not in %s", self.name, missing, self.corpus_file
            )
        prepared.extra_stats["empty_passages"] = corpus.empty_passages
        prepared.extra_stats["judged_passages_not_in_corpus"] = missing
