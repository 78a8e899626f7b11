"""BM25 with bm25s (Lucene's formula), PyStemmer stemming, and a memory-mapped saved index.

The index is built from the corpus streamed in chunks (:mod:`~reranklab.retrieval.streamed_index`,
bounded memory, the same arrays as bm25s' in-memory ``index``) and searched memory-mapped with
bm25s' numba backend on all the job's cores (its numpy backend for small jobs, where compiling
the numba kernels would take longer than the search: both sum the same float32 weights in the
same order, so the scores are equal).

The top ``depth`` never depends on bm25s' own order among equal scores (its numba and numpy
top-k keep different passages of a tie): each query is searched deep enough to hold every
passage tied with the one at rank ``depth``, then ranked by (-score, the seeded hash of (qid,
pid)) and cut, as :func:`reranklab.io.write_run` orders a run.

At scale (1,000 queries x top 1,000 over millions of passages, ``reranklab bench-data index``)
the Python around bm25s' kernels mattered as much as the kernels: the queries' terms are looked
up in the index's terms file (Arrow, memory-mapped) rather than by reading its JSON vocabulary,
only tied passages are hashed (the prefix hash copied per pid), and each query's lines are
written at once, a score's ``repr`` computed once per distinct score. The run file is the same
byte for byte (tests/test_scale_retrieval.py).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from reranklab.errors import FormatError, ReranklabError
from reranklab.io import Run, atomic_path, atomic_write_text
from reranklab.io.trec import TIE_SEED
from reranklab.retrieval.analyzer import Analyzer
from reranklab.retrieval.base import Retriever
from reranklab.retrieval.streamed_index import (
    PIDS_FILE,
    TERMS_FILE,
    build_streamed_index,
    read_terms,
)

log = logging.getLogger("reranklab")

SETTINGS_FILE = "reranklab.json"
INDEX_FORMAT = 2  # 1: bm25s' own save + pids.json, built from an in-memory {pid: text}
CHUNK = 100_000  # passages tokenised at once while indexing
QUERY_BATCH = 2_048  # queries scored at once (one numba call, parallel over its queries)
# Below this many (query x passage) scores, bm25s' numpy backend finishes before numba's kernels
# compile (~3 s serial, ~8 s parallel): ~26 CPU ms per query per million passages.
NUMBA_FROM = 300_000_000
# The index step caches numba's kernels for an index that a retrieve of this many queries would
# search with numba (reranklab.retrieval.numba_cache).
WARM_QUERIES = 1_000


def available_cores() -> int:
    """The cores this process may run on (its affinity mask, as Snakemake and SLURM set it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


class Bm25sRetriever(Retriever):
    """bm25s backend; the index directory holds bm25s' arrays, the pid order and the settings.

    Besides :attr:`threads`, :attr:`scorer` says which bm25s backend scores: ``auto`` (numba
    for jobs large enough to repay compiling its kernels), ``numba`` or ``numpy``; the results
    are the same.

    Example:
        >>> import tempfile
        >>> from reranklab.io import write_corpus
        >>> tmp = Path(tempfile.mkdtemp())
        >>> _ = write_corpus(tmp / "corpus.parquet", {"p1": "baking bread", "p2": "wet roads"})
        >>> bm25 = Bm25sRetriever({"k1": 0.9, "b": 0.4, "stemmer": "english", "stopwords": "en"})
        >>> bm25.build(tmp / "corpus.parquet", tmp / "index")["passages"]
        2
        >>> bm25.search(tmp / "index", {"q": "baked breads"}, depth=10)
        {'q': {'p1': 0.7296286225318909}}
    """

    scorer: str = "auto"
    scoring_seconds: float = 0.0
    """Wall seconds the last search spent in bm25s' scoring and top-k (the rest is Python)."""
    open_seconds: float = 0.0
    """Wall seconds the last search spent opening the index (mostly reading its vocabulary)."""

    def _threads(self) -> int:
        return int(self.threads or 0) or available_cores()

    def build(self, corpus_path: Path, index_dir: Path) -> dict[str, Any]:
        from reranklab.io import iter_corpus

        corpus_path, index_dir = Path(corpus_path), Path(index_dir)
        total = None
        if corpus_path.suffix != ".jsonl":
            import pyarrow.parquet as pq

            try:
                total = pq.ParquetFile(corpus_path).metadata.num_rows
            except Exception:  # iter_corpus names the file and the problem
                total = None
        # Build beside the target and rename, so a killed job never leaves a half index.
        staging = index_dir.with_name(index_dir.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        staging.parent.mkdir(parents=True, exist_ok=True)
        try:
            stats = build_streamed_index(
                iter_corpus(corpus_path, CHUNK), staging, self.settings, total
            )
        except ValueError as exc:
            shutil.rmtree(staging, ignore_errors=True)
            raise FormatError(corpus_path, None, str(exc)) from None
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        stats = {**stats, "format": INDEX_FORMAT, "settings": self.settings}
        atomic_write_text(staging / SETTINGS_FILE, json.dumps(stats, indent=2, sort_keys=True))
        shutil.rmtree(index_dir, ignore_errors=True)
        staging.rename(index_dir)
        self._warm(index_dir, int(stats["passages"]))
        return stats

    def _warm(self, index_dir: Path, passages: int) -> None:
        """Compile bm25s' numba kernels into numba's disk cache now, for an index its retrieve
        jobs will search with numba (reranklab.retrieval.numba_cache): they load them instead.
        Best effort: a kernel that cannot be cached is compiled by the retrieve job."""
        if choose_scorer(self.scorer, queries=WARM_QUERIES, passages=passages) != "numba":
            return
        from reranklab.retrieval.numba_cache import warm_kernels

        started = time.perf_counter()
        try:
            warm_kernels(self._open(index_dir, WARM_QUERIES)[0])
        except Exception as exc:  # never fail an index over a cache
            log.warning("bm25s' numba kernels not cached (%s): retrieve compiles them", exc)
            return
        log.info("bm25s' numba kernels cached in %.1f s", time.perf_counter() - started)

    def _open(self, index_dir: Path, queries: int):
        """(bm25s model memory-mapped, its vocabulary, pids memory-mapped) of a built index."""
        import bm25s

        index_dir = Path(index_dir)
        record = index_dir / SETTINGS_FILE
        try:
            stats = json.loads(record.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ReranklabError(
                f"{index_dir}: not a reranklab bm25s index ({exc}); build it with `reranklab index`"
            ) from None
        if stats.get("format") != INDEX_FORMAT:
            raise ReranklabError(
                f"{record}: index format {stats.get('format', 1)}, this reranklab reads "
                f"{INDEX_FORMAT}: rebuild it with `reranklab index`"
            )
        scorer = choose_scorer(self.scorer, queries, int(stats["passages"]))
        if scorer == "numba":
            from reranklab.retrieval.numba_cache import use_cached_kernels

            use_cached_kernels()  # load the kernels compiled before, not compile them again
        terms = index_dir / TERMS_FILE
        model = bm25s.BM25.load(
            str(index_dir),
            mmap=True,
            show_progress=False,
            backend=scorer,
            load_vocab=not terms.is_file(),  # indexes built before the terms file
        )
        vocabulary = _Vocabulary(read_terms(terms) if terms.is_file() else model.vocab_dict)
        # retrieve() keeps the ids in this set: every id of the vocabulary (a range: no 3 M-int set).
        model.unique_token_ids_set = range(len(vocabulary.terms))
        pids = np.load(index_dir / PIDS_FILE, mmap_mode="r")
        return model, vocabulary, pids

    def _ranked(
        self, index_dir: Path, queries: Mapping[str, str], depth: int
    ) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
        """(qid, its top ``depth`` pids (UTF-8 bytes) and scores (float32), best first) for
        every query, in sorted qid order."""
        qids = sorted(queries)
        started = time.perf_counter()
        model, vocabulary, pids = self._open(index_dir, len(qids))
        self.open_seconds = time.perf_counter() - started
        passages = len(pids)
        depth = min(int(depth), passages)
        if depth < 1:
            raise ReranklabError(f"retrieval depth must be >= 1, got {depth}")
        # A little deeper than asked, so a tie across rank `depth` is seldom searched again.
        first_k = min(passages, depth + max(16, depth // 8))
        analyzer = Analyzer(self.settings)
        threads = self._threads()
        if model.backend == "numba":
            import numba

            # numba refuses more threads than its pool has (the machine's CPUs by default).
            threads = min(threads, numba.config.NUMBA_NUM_THREADS)
        search = _Searcher(model, threads)
        for start in tqdm(
            range(0, len(qids), QUERY_BATCH),
            desc="bm25",
            unit="batch",
            disable=len(qids) <= QUERY_BATCH,
        ):
            batch = qids[start : start + QUERY_BATCH]
            ids = vocabulary.ids(analyzer.terms([queries[q] for q in batch]))
            asked = [row for row, query in enumerate(ids) if query]  # bm25s rejects empty queries
            found: dict[int, tuple[np.ndarray, np.ndarray]] = {}
            if asked:
                docs, scores = search([ids[row] for row in asked], first_k)
                for i, row in enumerate(asked):
                    found[row] = (docs[i], scores[i])
            # The tie at rank `depth` may go on past what was retrieved: search those queries
            # deeper (together, so on all threads) until each tie ends or the index does.
            deeper = [row for row, (_, scores) in found.items() if _tie_runs_on(scores, depth)]
            k = first_k
            while deeper and k < passages:
                k = min(passages, 2 * k)
                docs, scores = search([ids[row] for row in deeper], k)
                for i, row in enumerate(deeper):
                    found[row] = (docs[i], scores[i])
                deeper = [row for row in deeper if _tie_runs_on(found[row][1], depth)]
            for row, qid in enumerate(batch):
                if row not in found:
                    yield qid, _NO_PIDS, _NO_SCORES
                else:
                    yield (qid, *_top(qid, *found[row], depth, pids))
        self.scoring_seconds = search.seconds

    def search(self, index_dir: Path, queries: Mapping[str, str], depth: int) -> Run:
        """Top-``depth`` passages per query (only passages that match at least one term)."""
        return {
            qid: dict(zip(_decoded(names), scores.astype(np.float64).tolist(), strict=True))
            for qid, names, scores in self._ranked(index_dir, queries, depth)
        }

    def search_to_file(
        self, index_dir: Path, queries: Mapping[str, str], depth: int, out: Path, tag: str
    ) -> dict[str, Any]:
        """The run of :meth:`search`, written batch by batch (atomically: renamed at the end).

        The file is the one :func:`reranklab.io.write_run` writes for :meth:`search`'s run,
        byte for byte; only one batch of queries is held at a time. The stats add
        ``scoring_s``: the seconds spent in bm25s' scoring (:attr:`scoring_seconds`), and
        ``open_s``: in opening the index (:attr:`open_seconds`).
        """
        stats = {"queries": 0, "candidates": 0, "empty": 0}
        with atomic_path(out) as tmp, open(tmp, "w", encoding="utf-8") as handle:
            for qid, names, scores in self._ranked(index_dir, queries, depth):
                stats["queries"] += 1
                stats["candidates"] += len(names)
                stats["empty"] += not len(names)
                handle.write(_run_lines(qid, names, scores, tag))
        return {
            **stats,
            "scoring_s": round(self.scoring_seconds, 3),
            "open_s": round(self.open_seconds, 3),
        }


class _Vocabulary:
    """Term -> id of an index: its terms column (ids = positions) or, for an index built before
    that file, bm25s' vocabulary dict."""

    def __init__(self, terms: Any) -> None:
        self.terms = terms

    def ids(self, queries: list[list[str]]) -> list[list[int]]:
        """Each query's term ids, in its order and with its repeats; unknown terms dropped."""
        if isinstance(self.terms, dict):
            return [[self.terms[t] for t in query if t in self.terms] for query in queries]
        import pyarrow as pa
        import pyarrow.compute as pc

        wanted = sorted({t for query in queries for t in query})
        found = pc.index_in(pa.array(wanted, type=pa.large_string()), value_set=self.terms)
        known = {t: i for t, i in zip(wanted, found.to_pylist(), strict=True) if i is not None}
        return [[known[t] for t in query if t in known] for query in queries]


class _Searcher:
    """bm25s' retrieve on token ids, with the job's threads; counts the seconds it takes."""

    def __init__(self, model: Any, threads: int) -> None:
        self.model, self.threads, self.seconds = model, threads, 0.0

    def __call__(self, ids: list[list[int]], k: int) -> tuple[np.ndarray, np.ndarray]:
        started = time.perf_counter()
        docs, scores = self.model.retrieve(
            ids, k=k, show_progress=False, n_threads=self.threads if self.threads > 1 else 0
        )
        self.seconds += time.perf_counter() - started
        return np.asarray(docs), np.asarray(scores)


def _tie_runs_on(scores: np.ndarray, depth: int) -> bool:
    """Whether the passages tied with rank ``depth`` may go on past the ``len(scores)`` retrieved."""
    return len(scores) > depth - 1 and scores[depth - 1] > 0 and scores[-1] == scores[depth - 1]


_NO_PIDS = np.array([], dtype=np.bytes_)
_NO_SCORES = np.array([], dtype=np.float32)


def _top(
    qid: str, docs: np.ndarray, scores: np.ndarray, depth: int, pids: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The matching passages best first, ties by the seeded hash, cut at ``depth``: (pids, scores).

    ``scores`` come sorted, best first, and hold every passage tied with rank ``depth``. The
    order is :func:`reranklab.io.rank_order`'s: score descending, then :func:`~reranklab.io.tie_key`
    ascending; the key is computed only for passages that share their score (most do not).
    """
    matching = int(np.count_nonzero(scores > 0))  # bm25s pads with zero scores; Lucene does not
    if matching > depth:
        # Keep the whole tie at rank `depth`: which of its passages make the cut is the hash's call.
        matching = int(np.count_nonzero(scores >= scores[depth - 1]))
    values = np.asarray(scores[:matching])
    names = np.asarray(pids[docs[:matching]])
    same = values[1:] == values[:-1]  # sorted: equal scores are neighbours
    tied = np.zeros(matching, dtype=bool)
    tied[1:] |= same
    tied[:-1] |= same
    keys = np.zeros(matching, dtype=np.uint64)
    where = np.flatnonzero(tied)
    if len(where):
        keys[where] = tie_keys(qid, names[where].tolist())
    order = np.lexsort((keys, -values))[:depth]  # by score descending, then by the tie key
    return names[order], values[order]


def tie_keys(qid: str, pids: list[bytes], seed: int = TIE_SEED) -> np.ndarray:
    """:func:`reranklab.io.tie_key` of many UTF-8 pids of one query at once (uint64).

    The hash of the common prefix is computed once and copied for each pid.

    Example:
        >>> from reranklab.io import tie_key
        >>> tie_keys("q1", [b"d1", "caf\u00e9".encode()]).tolist() == [
        ...     tie_key("q1", "d1"), tie_key("q1", "caf\u00e9")]
        True
    """
    prefix = hashlib.blake2b(f"{seed}\x1f{qid}\x1f".encode(), digest_size=8)
    digests = bytearray()
    for pid in pids:
        one = prefix.copy()
        one.update(pid)
        digests += one.digest()
    return np.frombuffer(bytes(digests), dtype=">u8").astype(np.uint64)


def _decoded(names: np.ndarray) -> list[str]:
    """UTF-8 pids as str, decoded all at once (one by one if a pid holds a NUL)."""
    parts = names.tolist()
    joined = b"\x00".join(parts)
    if not parts or joined.count(b"\x00") != len(parts) - 1:
        return [part.decode("utf-8") for part in parts]
    return joined.decode("utf-8").split("\x00")


def _run_lines(qid: str, names: np.ndarray, scores: np.ndarray, tag: str) -> str:
    """One query's TREC run lines, as :func:`reranklab.io.write_run` writes them (``repr`` of
    the float64 score; computed once per distinct score, since ties share it)."""
    if not len(names):
        return ""
    values = scores.astype(np.float64).tolist()
    text = {value: repr(value) for value in set(values)}
    head, tail = f"{qid} Q0 ", f" {tag}\n"
    return "".join(
        [
            f"{head}{pid} {rank} {text[value]}{tail}"
            for rank, (pid, value) in enumerate(zip(_decoded(names), values, strict=True), 1)
        ]
    )


def choose_scorer(scorer: str, queries: int, passages: int) -> str:
    """The bm25s backend that scores: ``scorer``, or for ``auto`` numba where the job is large
    enough to repay compiling its kernels, else numpy.

    Example:
        >>> choose_scorer("auto", queries=100, passages=1000), choose_scorer("numba", 1, 1)
        ('numpy', 'numba')
    """
    if scorer not in ("auto", "numba", "numpy"):
        raise ReranklabError(f"bm25s scorer: {scorer!r} is not auto, numba or numpy")
    if scorer == "auto":
        return "numba" if queries * passages >= NUMBA_FROM and _has_numba() else "numpy"
    return scorer


def _has_numba() -> bool:
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True
