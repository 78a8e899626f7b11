"""MS MARCO passage ranking (Bajaj et al. 2016), as monoBERT re-ranks it; and the readers and
the streaming corpus writer that the other TREC-style datasets reuse.

The protocol of monoBERT (Nogueira and Cho 2019) and MarkedBERT: BM25 top-1000 over the 8.8 M
passages, training on (query, positive, negative) triples drawn from the train queries with one
negative per positive, evaluation with MRR@10 on the 6,980 queries of "dev small".

Canonical form:

- corpus: ``collection.tsv`` (``pid<TAB>text``), written to Parquet *streaming* (row groups,
  progress bar, bounded memory; see :func:`stream_corpus`); :meth:`MsMarcoPassage.parse` keeps
  it in memory instead, which only suits small collections (the tests' fixtures);
- queries: the dev-small queries and a seeded sample of ``train_queries`` judged train queries
  (option; BM25 top-1000 for all 502,939 judged train queries would be a 500 M-line run);
- qrels: ``qrels.dev.small.tsv`` and the sampled queries' lines of ``qrels.train.tsv``;
- split: ``{"train": sample, "dev": [], "test": dev-small qids}``; pool: none (BM25 first stage).

Files in ``collectionandqueries.tar.gz`` (MD5 and size of the archive as published by
ir_datasets): collection 8,841,823 passages, ``queries.train.tsv`` 808,731 queries,
``qrels.train.tsv`` 532,761 judgements of 502,939 queries, dev small 6,980 queries with 7,437
judgements.
"""

from __future__ import annotations

import gzip
import logging
import random
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from reranklab.data.base import Dataset, Prepared, Protocol, RawFile
from reranklab.data.registry import register_dataset
from reranklab.errors import ConfigError, DownloadError, FormatError
from reranklab.io import Qrels, atomic_path, write_json, write_qrels, write_queries, write_run
from reranklab.io.corpus import SCHEMA as CORPUS_SCHEMA

log = logging.getLogger(__name__)

ROW_GROUP = 20_000  # passages per Parquet row group: ~7 MB of MS MARCO text; peak RSS grows ~1 KB per row

# -- line readers --------------------------------------------------------------------------------


def open_binary(path: str | Path) -> IO[bytes]:
    """Open ``path`` for binary reading, gunzipping it when its content is gzip (by magic bytes).

    Example:
        >>> with open_binary("raw/insuranceqa/vocabulary") as handle:  # doctest: +SKIP
        ...     handle.readline()
        b'idx_17904\\trating/result\\n'
    """
    with open(path, "rb") as probe:
        gzipped = probe.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rb") if gzipped else open(path, "rb")


def text_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of a UTF-8 text file (gzip or plain), without the line ending.

    Blank lines are skipped and a byte-order mark on line 1 is dropped. Decoding line by line
    lets a bad byte be reported with its line number.

    Raises:
        FormatError: a line that is not valid UTF-8, or a gzip file that is cut short.

    Example:
        >>> next(text_lines("raw/antique/antique-train-queries.txt"))  # doctest: +SKIP
        (1, '3097310\\tWhat causes severe swelling and pain in the knees?')
    """
    lineno = 0
    try:
        with open_binary(path) as handle:
            for lineno, raw in enumerate(handle, start=1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise FormatError(path, lineno, f"not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
                if lineno == 1:
                    line = line.removeprefix("\ufeff")
                line = line.rstrip("\n").rstrip("\r")
                if line.strip():
                    yield lineno, line
    except (EOFError, gzip.BadGzipFile) as exc:
        raise FormatError(path, lineno + 1, f"compressed file is damaged or cut short ({exc})") from None


def split_id_text(path: str | Path, lineno: int, line: str, kind: str) -> tuple[str, str]:
    """Split an ``id<TAB>text`` line; the text keeps any further tabs (whitespace is the writer's job).

    Args:
        path: the file, for messages.
        lineno: the line number, for messages.
        line: the line without its line ending.
        kind: what a record is (``query``, ``passage``), for messages.

    Raises:
        FormatError: no tab, or an id that is empty or contains whitespace.

    Example:
        >>> split_id_text("queries.tsv", 1, "42\\tdo goldfish grow", "query")
        ('42', 'do goldfish grow')
    """
    record_id, tab, text = line.partition("\t")
    if not tab:
        raise FormatError(path, lineno, f"expected '{kind} id<TAB>text', found no tab")
    if not record_id or any(ch.isspace() for ch in record_id):
        raise FormatError(path, lineno, f"{kind} id {record_id!r} is empty or contains whitespace")
    return record_id, text


def read_id_texts(path: str | Path, kind: str, keep: Callable[[str], bool] | None = None) -> dict[str, str]:
    """Read an ``id<TAB>text`` file (queries, topics) in file order.

    Args:
        path: the file (plain or gzip).
        kind: what a record is (``query``, ``passage``), for the error messages.
        keep: only records whose id passes this test are kept (all are still checked).

    Returns:
        ``{id: text}``.

    Raises:
        FormatError: a line without a tab, an empty or space-containing id, an empty text, or an
            id seen before; the error names the file and line.

    Example:
        >>> read_id_texts("raw/trec-dl-2019/topics.dl19-passage.txt", "query")["156493"]  # doctest: +SKIP
        'do goldfish grow'
    """
    records: dict[str, str] = {}
    first_line: dict[str, int] = {}
    seen: set[str] = set()
    for lineno, line in text_lines(path):
        record_id, text = split_id_text(path, lineno, line, kind)
        if not text.strip():
            raise FormatError(path, lineno, f"empty {kind} text for id {record_id!r}")
        if record_id in seen:
            where = f" (first on line {first_line[record_id]})" if record_id in first_line else ""
            raise FormatError(path, lineno, f"duplicate {kind} id {record_id!r}{where}")
        seen.add(record_id)
        if keep is None or keep(record_id):
            records[record_id] = text
            first_line[record_id] = lineno
    return records


@dataclass
class QrelsFile:
    """The judgements of one TREC qrels file and what was seen in its second column."""

    qrels: Qrels
    iterations: Counter = field(default_factory=Counter)
    grades: Counter = field(default_factory=Counter)

    @property
    def judgements(self) -> int:
        return sum(len(judged) for judged in self.qrels.values())


def read_trec_qrels(
    path: str | Path,
    grades: Iterable[int] | None = None,
    keep: Callable[[str], bool] | None = None,
) -> QrelsFile:
    """Read TREC qrels ``qid iter docid grade`` split on any whitespace (tabs and spaces mixed).

    Args:
        path: the qrels file (plain or gzip).
        grades: the allowed grades; ``None`` accepts any integer.
        keep: only lines whose qid passes this test are kept (all lines are still checked).

    Returns:
        The judgements, the counts of the iteration column (``Q0``, ``U0``, ...) and of the grades
        (over the kept lines).

    Raises:
        FormatError: a line without 4 fields, a grade that is not an allowed integer, or a
            (qid, docid) pair judged twice.

    Example:
        >>> read_trec_qrels("raw/antique/antique-train.qrel", grades=range(1, 5)).judgements  # doctest: +SKIP
        27422
    """
    allowed = None if grades is None else set(grades)
    qrels: Qrels = {}
    iterations: Counter = Counter()
    seen_grades: Counter = Counter()
    for lineno, line in text_lines(path):
        parts = line.split()
        if len(parts) != 4:
            raise FormatError(path, lineno, f"expected 4 fields 'qid iteration docid grade', got {len(parts)}")
        qid, iteration, docid, grade_text = parts
        try:
            grade = int(grade_text)
        except ValueError:
            raise FormatError(path, lineno, f"relevance grade {grade_text!r} is not an integer") from None
        if allowed is not None and grade not in allowed:
            raise FormatError(path, lineno, f"relevance grade {grade} is not one of {sorted(allowed)}")
        if keep is not None and not keep(qid):
            continue
        judged = qrels.setdefault(qid, {})
        if docid in judged:
            raise FormatError(path, lineno, f"pair ({qid}, {docid}) is judged twice")
        judged[docid] = grade
        iterations[iteration] += 1
        seen_grades[grade] += 1
    return QrelsFile(qrels, iterations, seen_grades)


# -- streaming corpus ----------------------------------------------------------------------------

# (position, pid, text): position is a line number for text files, a record number for CBOR.
CorpusRecord = tuple[int, str, str]


def tsv_corpus_records(path: str | Path, progress: Callable[[int], None] | None = None) -> Iterator[CorpusRecord]:
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
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise FormatError(path, lineno, f"not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
            line = line.rstrip("\n").rstrip("\r")
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
    bar = tqdm(total=total_bytes, unit="B", unit_scale=True, unit_divisor=1024, desc=f"corpus {Path(source).name}", disable=not progress)
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
            raise FormatError(source, position, f"duplicate passage id {pid!r} (first at {first[pid]})")
        first[pid] = position


# -- datasets with a large corpus ------------------------------------------------------------


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

    def corpus_records(self, path: Path, progress: Callable[[int], None] | None = None) -> Iterator[CorpusRecord]:
        return tsv_corpus_records(path, progress)

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
                raise FormatError(source, position, f"duplicate passage id {pid!r} (first at {origin[pid]})")
            corpus[pid] = text
            origin[pid] = position
            empty += not text.strip()
        prepared.corpus = corpus
        judged = {pid for judged in prepared.qrels.values() for pid in judged}
        self._corpus_stats(prepared, CorpusStats(len(corpus), empty, judged & corpus.keys()), judged)
        return prepared

    def prepare(self, raw_dir: str | Path, out_dir: str | Path, options: dict[str, Any] | None = None) -> dict[str, Any]:
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
            log.warning("%s: %d judged passage(s) are not in %s", self.name, missing, self.corpus_file)
        prepared.extra_stats["empty_passages"] = corpus.empty_passages
        prepared.extra_stats["judged_passages_not_in_corpus"] = missing


# -- MS MARCO passage ---------------------------------------------------------------------------

ARCHIVE_URL = "https://msmarco.z22.web.core.windows.net/msmarcoranking/collectionandqueries.tar.gz"
ARCHIVE_SIZE = 1_057_717_952
ARCHIVE_MD5 = "31644046b18952c1386cd4564ba2ae69"
COLLECTION = "collection.tsv"
TRAIN_QUERIES = "queries.train.tsv"
TRAIN_QRELS = "qrels.train.tsv"
DEV_QUERIES = "queries.dev.small.tsv"
DEV_QRELS = "qrels.dev.small.tsv"
MSMARCO_LICENCE = (
    "MS MARCO terms and conditions: non-commercial research use only "
    "(https://microsoft.github.io/msmarco/); the passages are from Bing results"
)
MSMARCO_CITATION = (
    "Payal Bajaj, Daniel Campos, Nick Craswell, Li Deng, Jianfeng Gao, Xiaodong Liu, Rangan "
    "Majumder, Andrew McNamara, Bhaskar Mitra, Tri Nguyen, Mir Rosenberg, Xia Song, Alina Stoica, "
    "Saurabh Tiwary and Tong Wang. 2016. MS MARCO: A Human Generated MAchine Reading COmprehension "
    "Dataset. arXiv:1611.09268."
)


def msmarco_file(name: str) -> RawFile:
    """A member of ``collectionandqueries.tar.gz`` (checked through the archive's MD5).

    Example:
        >>> msmarco_file("collection.tsv").member
        'collection.tsv'
    """
    return RawFile(name=name, url=ARCHIVE_URL, member=name, archive_size=ARCHIVE_SIZE, archive_md5=ARCHIVE_MD5)


def read_train_sample(raw_dir: Path, n: int | None, seed: int, dataset: str) -> tuple[dict[str, str], Qrels, int]:
    """MS MARCO train queries: a seeded sample of ``n`` judged ones (``None`` = all of them).

    Args:
        raw_dir: folder with ``queries.train.tsv`` and ``qrels.train.tsv``.
        n: how many judged queries to keep.
        seed: seed of the sample (:func:`sample_ids`).
        dataset: the dataset name, for messages.

    Returns:
        ``(queries in file order, their qrels, number of judged train queries)``.

    Raises:
        FormatError: malformed files, or a sampled query that has judgements but no text.

    Example:
        >>> queries, qrels, judged = read_train_sample(Path("raw/msmarco-passage"), 20_000, 42, "msmarco-passage")  # doctest: +SKIP
        >>> len(queries), judged  # doctest: +SKIP
        (20000, 502939)
    """
    judged = read_trec_qrels(raw_dir / TRAIN_QRELS, grades=(1,))
    chosen = sample_ids(list(judged.qrels), n, seed)
    queries = read_id_texts(raw_dir / TRAIN_QUERIES, "query", keep=chosen.__contains__)
    missing = sorted(chosen - queries.keys())
    if missing:
        raise FormatError(raw_dir / TRAIN_QRELS, None, f"{len(missing)} judged queries are not in {TRAIN_QUERIES}, e.g. {missing[:3]}")
    return queries, {qid: judged.qrels[qid] for qid in queries}, len(judged.qrels)


@register_dataset
class MsMarcoPassage(StreamingCorpusDataset):
    """MS MARCO passage ranking: BM25 top-1000, MRR@10 on dev small."""

    name = "msmarco-passage"
    title = "MS MARCO passage ranking (v1): Bing queries, 8.8 M web passages, sparse judgements"
    source = "Microsoft MS MARCO (Bajaj et al. 2016), " + ARCHIVE_URL
    licence = MSMARCO_LICENCE
    citation = MSMARCO_CITATION
    corpus_file = COLLECTION
    files = tuple(msmarco_file(name) for name in (COLLECTION, TRAIN_QUERIES, TRAIN_QRELS, DEV_QUERIES, DEV_QRELS))
    counts = {"passages": 8_841_823, "train_queries": 502_939, "test_queries": 6_980, "test_judgements": 7_437}
    protocol = Protocol(
        first_stage="bm25",
        depth=1000,
        inject_relevant=False,
        split="predefined",
        negatives_per_positive=1,
        relevance_threshold=1,
        metrics=("MRR@10",),
        options={"train_queries": 20_000, "train_seed": 42},
    )

    def parse_topics(self, raw_dir: Path, options: dict[str, Any]) -> Prepared:
        """Dev-small queries and qrels plus the sampled train queries (see the module docstring).

        Options:
            train_queries: how many judged train queries to sample, or ``"all"``.
            train_seed: seed of that sample.
        """
        check_options(self.name, options, ("train_queries", "train_seed"))
        require_files(raw_dir, [f.name for f in self.files], self.name)
        n = positive_int_or_all(options, "train_queries", self.name)
        train_queries, train_qrels, available = read_train_sample(raw_dir, n, int(options.get("train_seed", 42)), self.name)
        dev = read_trec_qrels(raw_dir / DEV_QRELS, grades=(1,))
        dev_queries = read_id_texts(raw_dir / DEV_QUERIES, "query")
        unjudged = [qid for qid in dev_queries if qid not in dev.qrels]
        unknown = sorted(dev.qrels.keys() - dev_queries.keys())
        if unknown:
            raise FormatError(raw_dir / DEV_QRELS, None, f"judged queries {unknown[:3]} are not in {DEV_QUERIES}")
        overlap = sorted(train_queries.keys() & dev_queries.keys())
        if overlap:
            raise FormatError(raw_dir / DEV_QUERIES, None, f"queries {overlap[:3]} are also train queries")
        return Prepared(
            corpus={},
            queries={**train_queries, **dev_queries},
            qrels={**train_qrels, **dev.qrels},
            split={"train": list(train_queries), "dev": [], "test": list(dev_queries)},
            pool=None,
            extra_stats={"judged_train_queries": available, "test_queries_without_judgements": len(unjudged)},
        )
