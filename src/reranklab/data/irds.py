"""Any ir_datasets collection as a dataset: ``irds:<id>`` (``irds:antique/test``).

`ir_datasets <https://ir-datasets.com>`_ (``pip install 'reranklab[irds]'``) is how the IR
community shares collections; a dataset named ``irds:<id>`` in ``datasets:`` is one of its ids,
made on demand by the registry (:func:`reranklab.data.registry.get_dataset`), never listed among
the registered datasets. The DAG treats it as any other dataset:

- download: ir_datasets' own download into its cache (``IR_DATASETS_HOME``, default
  ``~/.ir_datasets``; shared by every step, so a cluster needs it on a shared filesystem); the
  step fetches the docs, queries, qrels and (option ``pool``) scored docs of every id in use and
  writes ``raw/manifest.json``; without network, a file missing from the cache is a
  :class:`~reranklab.errors.DownloadError` saying where ir_datasets looks for it;
- prepare: docs -> ``corpus.parquet`` (streamed in row groups), each passage's text being
  ir_datasets' ``default_text()`` of the document (its own choice: e.g. title and body joined by
  a space for MS MARCO documents, the text for passages) or the fields of option ``doc_fields``
  joined by a space; queries -> ``queries.tsv`` with ``default_text()`` (a query's text, a TREC
  topic's title) or option ``query_field``; qrels -> ``qrels.txt`` with their integer grades as
  ir_datasets gives them (a pair judged twice keeps its highest grade); scored docs ->
  ``pool.run`` with their raw scores.

The id names one split (``antique/test`` is a test set). By default its judged queries are
split into ``protocol.folds`` (5) seeded folds (``split: cv``) and ``split.json`` is null. Option
``train`` names a second id of the same collection (``antique/train``) whose judged queries
(a seeded sample of ``train_queries``) form the train split, and ``dev`` one for the dev split:
``split.json`` is then the predefined split ``{train, dev, test}``, used with
``protocol.<name>.split: predefined``.

The protocol is the default one: the first stage is the id's scored docs (``pool``, kept whole)
when ir_datasets has them, else BM25 top-100; the scoring counts the queries with a relevant
passage, relevant meaning ``relevance_threshold``, which is 3 for ``antique`` ids and 2 for
``msmarco-passage/trec-dl-*`` ids (their papers' levels) and 1 otherwise. The official scorings of
those collections are those of the native datasets (``antique``, ``trec-dl-2019``,
``msmarco-passage``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import Field

from reranklab.data._options import count_or_all, sample_ids
from reranklab.data._streaming import CorpusRecord, stream_corpus
from reranklab.data.base import Dataset, Prepared, Protocol, RawFile
from reranklab.errors import ConfigError, DownloadError, FormatError
from reranklab.io import (
    Qrels,
    Run,
    write_json,
    write_qrels,
    write_queries,
    write_run,
)
from reranklab.settings.base import DatasetOptions, PositiveOrAll

log = logging.getLogger(__name__)

IRDS_PREFIX = "irds:"
# A name's parts become folders under results/ (results/data/irds:antique/test/): a part that
# reads as a seed folder (seed3) or a re-ranker cell (pointwise-L256) would make the workflow's
# paths ambiguous, so none may (no ir_datasets id has one). The Snakemake {dataset} wildcard
# takes this pattern as one of its alternatives.
_PART = r"(?!seed\d+\b)(?![a-z][a-z0-9_]*-L\d+\b)[A-Za-z0-9_.-]+"
IRDS_NAME = rf"irds:{_PART}(?:/{_PART})*"
INSTALL = "pip install 'reranklab[irds]'"
# Relevance levels of the collections that reranklab also has as native datasets (their papers').
_RELEVANCE = {"antique": 3, "msmarco-passage/trec-dl-": 2}
PARTS = ("train", "dev", "test")
# What `reranklab datasets` says after the registered datasets.
LISTING_NOTE = (
    "irds:<id>  any ir_datasets collection as a dataset, e.g. irds:antique/test or "
    "irds:msmarco-passage/dev/small (ids: https://ir-datasets.com; needs "
    f"{INSTALL}): its docs, queries, qrels and scored docs (as the pool), fetched by ir_datasets "
    "into IR_DATASETS_HOME; 5-fold CV over its queries, or options.train names a train id"
)


class IrdsOptions(DatasetOptions):
    """Options of an ``irds:<id>`` dataset: a paired train / dev id, the pool, the text fields."""

    train: str | None = Field(
        None,
        description="an ir_datasets id of the same collection whose judged queries form the train split (use with split: predefined); null = none, folds over the id's queries",
    )
    train_queries: PositiveOrAll = Field(
        "all", description='judged queries of `train` kept (a seeded sample), or "all"'
    )
    train_seed: int = Field(42, description="seed of that sample")
    dev: str | None = Field(
        None, description="an ir_datasets id whose judged queries form the dev split (needs train)"
    )
    pool: bool = Field(
        True, description="fetch the ids' scored documents, where ir_datasets has them, as pool.run"
    )
    doc_fields: list[str] | None = Field(
        None,
        description="document fields joined by a space as the passage text; null = ir_datasets' default_text()",
    )
    query_field: str | None = Field(
        None, description="the query field used as its text; null = ir_datasets' default_text()"
    )


def irds_id(name: str) -> str:
    """The ir_datasets id of a dataset name (``irds:antique/test`` -> ``antique/test``).

    Example:
        >>> irds_id("irds:antique/test"), irds_id("antique/train")
        ('antique/test', 'antique/train')
    """
    return name.removeprefix(IRDS_PREFIX)


def load_irds(ident: str, where: str) -> Any:
    """The ir_datasets dataset ``ident`` (nothing is downloaded yet).

    Args:
        ident: an ir_datasets id (``antique/test``).
        where: the dataset name or option key, for messages.

    Raises:
        ConfigError: ir_datasets is not installed, or has no such id.
    """
    try:
        import ir_datasets
    except ImportError:
        raise ConfigError(
            f"{where}: ir_datasets ids need the ir_datasets package: {INSTALL}"
        ) from None
    try:
        return ir_datasets.load(ident)
    except KeyError:
        raise ConfigError(
            f"{where}: {ident!r} is not an ir_datasets id (ir_datasets {ir_datasets.__version__}; "
            "the catalogue: https://ir-datasets.com)"
        ) from None


def record_text(record: Any, fields: Sequence[str] | None = None) -> str:
    """The text of an ir_datasets document or query.

    ``fields`` given: those fields joined by a space (empty ones skipped); else the record's
    ``default_text()`` (ir_datasets' choice), else its ``text`` field, else its string fields
    after the id joined by a space.

    Example:
        >>> from collections import namedtuple
        >>> Doc = namedtuple("Doc", "doc_id title body")
        >>> record_text(Doc("d1", "Title", "Body.")), record_text(Doc("d1", "", "Body."), ["title", "body"])
        ('Title Body.', 'Body.')
    """
    if fields:
        return " ".join(str(v) for v in (getattr(record, f) for f in fields) if v)
    default_text = getattr(record, "default_text", None)
    if callable(default_text):
        return str(default_text())
    if "text" in record._fields:
        return str(record.text)
    return " ".join(v for v in record[1:] if isinstance(v, str) and v)


def _check_id(value: str, kind: str, source: str, position: int) -> str:
    # Runs and qrels are whitespace-separated: an id with whitespace would shift their columns.
    if not value or any(c.isspace() for c in value):
        raise FormatError(source, position, f"{kind} id {value!r} is empty or has whitespace")
    return value


class IrdsDataset(Dataset):
    """One ir_datasets id as a dataset (see the module docstring).

    Args:
        name: ``irds:<ir_datasets id>``.

    Raises:
        ConfigError: ir_datasets is missing, the id is unknown, or it lacks docs, queries or qrels.

    Example:
        >>> IrdsDataset("irds:antique/test").protocol.relevance_threshold  # doctest: +SKIP
        3
    """

    files: tuple[RawFile, ...] = ()
    options_model = IrdsOptions
    licence = "the collection's own terms (see its ir_datasets page)"

    def __init__(self, name: str) -> None:
        if not re.fullmatch(IRDS_NAME, name):
            raise ConfigError(
                f"{name}: not a usable ir_datasets name: irds:<id>, the id's parts made of letters, "
                "digits, '.', '_' and '-', none of the form seed<n> or <word>-L<n> (workflow folders)"
            )
        self.name = name
        self.irds_id = irds_id(name)
        dataset = load_irds(self.irds_id, name)
        lacking = [
            kind for kind in ("docs", "queries", "qrels") if not getattr(dataset, f"has_{kind}")()
        ]
        if lacking:
            raise ConfigError(
                f"{name}: ir_datasets' {self.irds_id} has no {', '.join(lacking)} (a dataset needs docs, queries and qrels)"
            )
        import ir_datasets

        self.version = ir_datasets.__version__
        pool = dataset.has_scoreddocs()
        self.title = f"{self.irds_id} from ir_datasets"
        self.source = f"ir_datasets {self.version}, https://ir-datasets.com ({self.irds_id})"
        documentation = (dataset.documentation() if hasattr(dataset, "documentation") else {}) or {}
        keys = ", ".join(documentation.get("bibtex_ids") or ())
        self.citation = (
            f"{keys} (BibTeX keys of ir_datasets; entries on https://ir-datasets.com)"
            if keys
            else "see the id's page on https://ir-datasets.com"
        )
        self.protocol = Protocol(
            first_stage="pool" if pool else "bm25",
            depth=None if pool else 100,
            inject_relevant=False,
            split="cv",
            folds=5,
            relevance_threshold=next(
                (level for prefix, level in _RELEVANCE.items() if self.irds_id.startswith(prefix)),
                1,
            ),
            metrics=("MAP", "MRR", "nDCG@10"),
            options=IrdsOptions.defaults(),
        )

    @property
    def label(self) -> str:
        return self.name

    def split_names(self) -> tuple[str, ...]:
        # test = the id's own queries; train and dev exist when the options name their ids.
        return (*PARTS, "all")

    def raw_files(
        self, options: dict[str, Any] | None = None, splits: Any = None
    ) -> tuple[RawFile, ...]:
        """No raw files: ir_datasets keeps its files in its own cache (see :meth:`fetch`)."""
        if splits is not None:
            self.check_splits(splits)
        return ()

    # -- ids in use ---------------------------------------------------------------------------

    def _parts(self, typed: IrdsOptions) -> dict[str, tuple[str, Any]]:
        """``{part: (id, ir_datasets dataset)}`` of the ids the options use, test first."""
        key = f"protocol.{self.name}.options"
        if typed.dev and not typed.train:
            raise ConfigError(f"{key}.dev: a dev id needs a train id (options.train)")
        test = load_irds(self.irds_id, self.name)
        parts = {"test": (self.irds_id, test)}
        for part in ("train", "dev"):
            ident = getattr(typed, part)
            if not ident:
                continue
            ident = irds_id(ident)
            other = load_irds(ident, f"{key}.{part}")
            if not (other.has_queries() and other.has_qrels()):
                raise ConfigError(f"{key}.{part}: {ident} has no queries or no qrels")
            if not other.has_docs() or other.docs_handler() is not test.docs_handler():
                raise ConfigError(
                    f"{key}.{part}: {ident} is not over the collection of {self.irds_id}"
                )
            parts[part] = (ident, other)
        return parts

    # -- download -----------------------------------------------------------------------------

    def fetch(self, raw_dir: str | Path, options: dict[str, Any] | None = None) -> dict[str, Any]:
        """ir_datasets' download of every file the options use; writes ``raw_dir/manifest.json``.

        Args:
            raw_dir: ``results/data/<name>/raw`` (only the manifest goes there).
            options: the dataset's options, merged over ``protocol.options``.

        Returns:
            The manifest: ``{"dataset", "source", "ir_datasets", "fetched", "files"}``.

        Raises:
            DownloadError: ir_datasets could not fetch a file (no network, a manual licence step).

        Example:
            >>> IrdsDataset("irds:antique/test").fetch("results/data/irds:antique/test/raw")  # doctest: +SKIP
            {'dataset': 'irds:antique/test', 'source': 'ir_datasets', ...}
        """
        import ir_datasets

        typed = self.read_options({**self.protocol.options, **(options or {})})
        fetched = []
        for part, (ident, dataset) in self._parts(typed).items():
            kinds = ["docs"] if part == "test" else []
            kinds += ["queries", "qrels"]
            if typed.pool and dataset.has_scoreddocs():
                kinds.append("scoreddocs")
            for kind in kinds:
                try:
                    # The first record is enough: ir_datasets fetches (and checks) a file when it opens it.
                    next(iter(getattr(dataset, f"{kind}_iter")()), None)
                except Exception as exc:  # requests, OSError, RuntimeError: each source's own
                    raise DownloadError(
                        f"{self.name}: ir_datasets could not fetch the {kind} of {ident}: {exc}. "
                        f"ir_datasets keeps its files in {ir_datasets.util.home_path()} "
                        "(IR_DATASETS_HOME); without network, put them there as it expects "
                        "(https://ir-datasets.com)"
                    ) from None
                fetched.append(f"{ident} {kind}")
                log.info("%s: %s %s ready", self.name, ident, kind)
        manifest = {
            "dataset": self.name,
            "source": "ir_datasets",
            "ir_datasets": {
                "version": self.version,
                "home": str(ir_datasets.util.home_path()),
            },
            "fetched": fetched,
            "files": [],
        }
        raw = Path(raw_dir)
        raw.mkdir(parents=True, exist_ok=True)
        write_json(raw / "manifest.json", manifest)
        return manifest

    # -- prepare ------------------------------------------------------------------------------

    def parse_topics(self, options: dict[str, Any], pool: bool = True) -> Prepared:
        """Queries, qrels, split and (``pool``) the pool of the ids in use; corpus left empty.

        Raises:
            ConfigError: a bad option, or a query in two parts.
            FormatError: an id with whitespace.
        """
        typed = self.read_options(options)
        queries: dict[str, str] = {}
        qrels: Qrels = {}
        split: dict[str, list[str]] = {}
        run: Run = {}
        stats: dict[str, Any] = {"ir_datasets": self.version, "judged_queries_without_text": 0}
        for part, (ident, dataset) in self._parts(typed).items():
            texts = self._queries(ident, dataset, typed.query_field)
            judged = self._qrels(ident, dataset)
            orphans = sorted(judged.keys() - texts.keys())
            if orphans:
                # Judged queries without text cannot be ranked: dropped, counted and said.
                log.warning(
                    "%s: %d judged queries of %s have no text, e.g. %s",
                    self.name,
                    len(orphans),
                    ident,
                    orphans[:3],
                )
                stats["judged_queries_without_text"] += len(orphans)
            if part == "test":
                kept = list(texts)
            else:
                judged_ids = [q for q in texts if q in judged]
                n = count_or_all(typed.train_queries) if part == "train" else None
                chosen = sample_ids(judged_ids, n, typed.train_seed)
                kept = [q for q in judged_ids if q in chosen]
            clash = sorted(set(kept) & queries.keys())
            if clash:
                raise ConfigError(
                    f"protocol.{self.name}.options.{part}: queries {clash[:3]} of {ident} are also in another part"
                )
            queries.update((q, texts[q]) for q in kept)
            qrels.update((q, judged[q]) for q in kept if q in judged)
            split[part] = kept
            if pool and typed.pool and dataset.has_scoreddocs():
                run.update(self._scored(ident, dataset, set(kept)))
        return Prepared(
            corpus={},
            queries=queries,
            qrels=qrels,
            split={p: split.get(p, []) for p in PARTS} if len(split) > 1 else None,
            pool=run or None,
            extra_stats=stats,
        )

    def _queries(self, ident: str, dataset: Any, field: str | None) -> dict[str, str]:
        source = f"{ident} queries"
        self._check_field(dataset.queries_cls(), [field] if field else None, "query_field")
        texts: dict[str, str] = {}
        for position, query in enumerate(dataset.queries_iter(), start=1):
            qid = _check_id(query.query_id, "query", source, position)
            if qid in texts:
                raise FormatError(source, position, f"query id {qid!r} seen before")
            texts[qid] = record_text(query, [field] if field else None)
        return texts

    def _qrels(self, ident: str, dataset: Any) -> Qrels:
        qrels: Qrels = {}
        for position, qrel in enumerate(dataset.qrels_iter(), start=1):
            qid = _check_id(qrel.query_id, "query", f"{ident} qrels", position)
            pid = _check_id(qrel.doc_id, "document", f"{ident} qrels", position)
            grades = qrels.setdefault(qid, {})
            grades[pid] = max(int(qrel.relevance), grades.get(pid, int(qrel.relevance)))
        return qrels

    def _scored(self, ident: str, dataset: Any, keep: set[str]) -> Run:
        run: Run = {}
        for position, scored in enumerate(dataset.scoreddocs_iter(), start=1):
            if scored.query_id not in keep:
                continue
            pid = _check_id(scored.doc_id, "document", f"{ident} scoreddocs", position)
            scores = run.setdefault(scored.query_id, {})
            scores[pid] = max(float(scored.score), scores.get(pid, float("-inf")))
        return run

    def _check_field(self, cls: type, fields: list[str] | None, option: str) -> None:
        unknown = [f for f in fields or () if f not in cls._fields]
        if unknown:
            raise ConfigError(
                f"protocol.{self.name}.options.{option}: {unknown} not among the fields of "
                f"{cls.__name__}: {list(cls._fields)}"
            )

    def doc_records(
        self, options: dict[str, Any], progress: Callable[[int], None] | None = None
    ) -> Iterator[CorpusRecord]:
        """``(record number, doc_id, text)`` of the id's documents, in ir_datasets' order.

        Args:
            options: the dataset's options (``doc_fields``).
            progress: called with the bytes of text read since the last call.

        Raises:
            FormatError: a doc id that is empty or has whitespace.
        """
        typed = self.read_options(options)
        dataset = load_irds(self.irds_id, self.name)
        self._check_field(dataset.docs_cls(), typed.doc_fields, "doc_fields")
        source = f"{self.irds_id} docs"
        pending = 0
        for position, doc in enumerate(dataset.docs_iter(), start=1):
            text = record_text(doc, typed.doc_fields)
            pending += len(text)
            if progress is not None and pending >= 1 << 22:
                progress(pending)
                pending = 0
            yield position, _check_id(doc.doc_id, "document", source, position), text
        if progress is not None and pending:
            progress(pending)

    def parse(self, raw_dir: Path, options: dict[str, Any]) -> Prepared:
        """The canonical form in memory (corpus included): only for small collections."""
        merged = {**self.protocol.options, **options}
        prepared = self.parse_topics(merged)
        corpus: dict[str, str] = {}
        for position, pid, text in self.doc_records(merged):
            if pid in corpus:
                raise FormatError(
                    f"{self.irds_id} docs", position, f"duplicate document id {pid!r}"
                )
            corpus[pid] = text
        prepared.corpus = corpus
        judged = {pid for grades in prepared.qrels.values() for pid in grades}
        prepared.extra_stats["judged_passages_not_in_corpus"] = len(judged - corpus.keys())
        return prepared

    def prepare(
        self, raw_dir: str | Path, out_dir: str | Path, options: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Stream the documents to ``corpus.parquet``, then write the other canonical files.

        Example:
            >>> IrdsDataset("irds:antique/test").prepare("raw", "data/irds:antique/test")  # doctest: +SKIP
            {'passages': 403666, 'queries': 200, ...}
        """
        out = Path(out_dir)
        merged = {**self.protocol.options, **(options or {})}
        prepared = self.parse_topics(merged)
        judged = {pid for grades in prepared.qrels.values() for pid in grades}
        out.mkdir(parents=True, exist_ok=True)
        corpus = stream_corpus(
            out / "corpus.parquet",
            lambda progress: self.doc_records(merged, progress),
            f"{self.irds_id} docs",
            wanted=judged,
        )
        missing = len(judged - corpus.found)
        if missing:
            log.warning("%s: %d judged documents are not in the collection", self.name, missing)
        prepared.extra_stats["empty_passages"] = corpus.empty_passages
        prepared.extra_stats["judged_passages_not_in_corpus"] = missing
        write_queries(out / "queries.tsv", prepared.queries)
        write_qrels(out / "qrels.txt", prepared.qrels)
        write_json(out / "split.json", prepared.split)
        write_run(out / "pool.run", prepared.pool or {}, tag="pool")
        stats = {**prepared.stats(), "passages": corpus.passages}
        write_json(out / "stats.json", stats)
        return stats

    def split_judgements(
        self, raw_dir: str | Path, split: str, options: dict[str, Any] | None = None
    ) -> tuple[list[str], Qrels]:
        """Queries and qrels of one split, from the ids' queries and qrels (no documents)."""
        self.check_splits([split])
        prepared = self.parse_topics({**self.protocol.options, **(options or {})}, pool=False)
        if prepared.split is None and split in ("train", "dev"):
            raise ConfigError(
                f"{self.name} has no {split} split: protocol.{self.name}.options.train names no id"
            )
        split_ids = prepared.split or {"test": list(prepared.queries)}
        return self._split_of(split_ids, prepared.qrels, split)
