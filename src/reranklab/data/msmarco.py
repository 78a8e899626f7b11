"""MS MARCO passage ranking (Bajaj et al. 2016), as monoBERT re-ranks it.

The protocol of monoBERT (Nogueira and Cho 2019) and MarkedBERT: BM25 top-1000 over the 8.8 M
passages, training on (query, positive, negative) triples drawn from the train queries with one
negative per positive, evaluation with MRR@10 on the 6,980 queries of "dev small".

Canonical form:

- corpus: ``collection.tsv`` (``pid<TAB>text``), written to Parquet *streaming* (row groups,
  progress bar, bounded memory; see :func:`reranklab.data._streaming.stream_corpus`); :meth:`MsMarcoPassage.parse` keeps
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

from collections.abc import Collection
from pathlib import Path
from typing import Any

from reranklab.data._options import TrainSampleOptions, count_or_all, require_files, sample_ids
from reranklab.data._protocols import passage_ranking
from reranklab.data._streaming import StreamingCorpusDataset
from reranklab.data._text_files import read_id_texts, read_trec_qrels
from reranklab.data.base import Prepared, RawFile
from reranklab.data.registry import register_dataset
from reranklab.errors import ConfigError, FormatError
from reranklab.evaluation.measures import ALL, R_AT_1000
from reranklab.evaluation.protocol import Scoring
from reranklab.io import Qrels

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
    return RawFile(
        name=name, url=ARCHIVE_URL, member=name, archive_size=ARCHIVE_SIZE, archive_md5=ARCHIVE_MD5
    )


def read_train_sample(
    raw_dir: Path, n: int | None, seed: int, dataset: str
) -> tuple[dict[str, str], Qrels, int]:
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
        raise FormatError(
            raw_dir / TRAIN_QRELS,
            None,
            f"{len(missing)} judged queries are not in {TRAIN_QUERIES}, e.g. {missing[:3]}",
        )
    return queries, {qid: judged.qrels[qid] for qid in queries}, len(judged.qrels)


class MsMarcoTrained(StreamingCorpusDataset):
    """A collection trained on a seeded sample of MS MARCO's judged train queries and tested on
    topics of its own: what MS MARCO passage and TREC DL share (preparing the topics, the raw
    files of a split, a split's judgements). A subclass names its test files and reads them.
    """

    test_files: tuple[str, str]  # the test queries and their qrels
    no_dev: str  # why there is no dev split (the error of asking for one)

    def read_test(self, raw_dir: Path) -> tuple[dict[str, str], Qrels, dict[str, Any]]:
        """The test queries, their qrels and the stats the prepared collection reports."""
        raise NotImplementedError

    def train_grade(self, typed: Any) -> int:
        """The grade a judged train passage gets (MS MARCO's judgements are binary)."""
        return 1

    def _train_sample(self, raw_dir: Path, typed: Any) -> tuple[dict[str, str], Qrels, int]:
        n = count_or_all(typed.train_queries)
        queries, qrels, available = read_train_sample(raw_dir, n, typed.train_seed, self.name)
        grade = self.train_grade(typed)
        return queries, {q: dict.fromkeys(judged, grade) for q, judged in qrels.items()}, available

    def parse_topics(self, raw_dir: Path, options: dict[str, Any]) -> Prepared:
        """The sampled train queries (see ``options_model``) plus the test topics.

        Options:
            train_queries: how many judged train queries to sample, or ``"all"``.
            train_seed: seed of that sample.
        """
        typed = self.read_options(options)
        require_files(raw_dir, [f.name for f in self.files], self.name)
        train_queries, train_qrels, available = self._train_sample(raw_dir, typed)
        test_queries, test_qrels, stats = self.read_test(raw_dir)
        overlap = sorted(train_queries.keys() & test_queries.keys())
        if overlap:
            raise FormatError(
                raw_dir / self.test_files[0],
                None,
                f"test queries {overlap[:3]} are also MS MARCO train queries",
            )
        return Prepared(
            corpus={},
            queries={**train_queries, **test_queries},
            qrels={**train_qrels, **test_qrels},
            split={"train": list(train_queries), "dev": [], "test": list(test_queries)},
            pool=None,
            extra_stats={"judged_train_queries": available, **stats},
        )

    def raw_files(
        self, options: dict[str, Any] | None = None, splits: Collection[str] | None = None
    ) -> tuple[RawFile, ...]:
        """Every file; for ``splits``, only their queries and qrels: scoring the test split
        needs the test topics and qrels, not the 2.9 GB collection.

        Example:
            >>> [f.name for f in MsMarcoPassage().raw_files({}, ["test"])]
            ['queries.dev.small.tsv', 'qrels.dev.small.tsv']
        """
        if splits is None:
            return self.files
        self.check_splits(splits)
        names = {
            *((TRAIN_QUERIES, TRAIN_QRELS) if {"train", "all"} & set(splits) else ()),
            *(self.test_files if {"test", "all"} & set(splits) else ()),
        }
        return tuple(spec for spec in self.files if spec.name in names)

    def split_judgements(
        self, raw_dir: str | Path, split: str, options: dict[str, Any] | None = None
    ) -> tuple[list[str], Qrels]:
        """Queries and qrels of one split from its own files (the collection is not needed).

        Example:
            >>> qids, qrels = MsMarcoPassage().split_judgements("raw/msmarco-passage", "test")  # doctest: +SKIP
            >>> len(qids)  # doctest: +SKIP
            6980
        """
        merged = {**self.protocol.options, **(options or {})}
        self.check_splits([split])
        if split == "dev":
            raise ConfigError(f"{self.name} has no dev split: {self.no_dev}")
        raw_dir = Path(raw_dir)
        require_files(raw_dir, [spec.name for spec in self.raw_files(merged, [split])], self.name)
        split_ids: dict[str, list[str]] = {}
        qrels: Qrels = {}
        if split in ("train", "all"):
            queries, train_qrels, _ = self._train_sample(raw_dir, self.read_options(merged))
            split_ids["train"] = list(queries)
            qrels.update(train_qrels)
        if split in ("test", "all"):
            queries, test_qrels, _ = self.read_test(raw_dir)
            split_ids["test"] = list(queries)
            qrels.update(test_qrels)
        return self._split_of(split_ids, qrels, split)


@register_dataset
class MsMarcoPassage(MsMarcoTrained):
    """MS MARCO passage ranking: BM25 top-1000, MRR@10 on dev small."""

    name = "msmarco-passage"
    title = "MS MARCO passage ranking (v1): Bing queries, 8.8 M web passages, sparse judgements"
    source = "Microsoft MS MARCO (Bajaj et al. 2016), " + ARCHIVE_URL
    licence = MSMARCO_LICENCE
    citation = MSMARCO_CITATION
    corpus_file = COLLECTION
    files = tuple(
        msmarco_file(name)
        for name in (COLLECTION, TRAIN_QUERIES, TRAIN_QRELS, DEV_QUERIES, DEV_QRELS)
    )
    counts = {
        "passages": 8_841_823,
        "train_queries": 502_939,
        "test_queries": 6_980,
        "test_judgements": 7_437,
    }
    protocol = passage_ranking(
        1000, relevance_threshold=1, metrics=("MRR@10",), options=TrainSampleOptions.defaults()
    )
    options_model = TrainSampleOptions
    scorings = (
        Scoring(
            "official",
            "all 6,980 dev (small) queries, a query missing from the run counts 0, as msmarco_eval.py (MRR@10)",
            measures=(*ALL, R_AT_1000),
            queries="judged",
            missing="zero",
            source="MS MARCO passage ranking's msmarco_eval.py (MRR@10 over the reference's queries)",
        ),
    )

    test_files = (DEV_QUERIES, DEV_QRELS)
    no_dev = "its test split is MS MARCO's dev small (6,980 queries)"

    def read_test(self, raw_dir: Path) -> tuple[dict[str, str], Qrels, dict[str, Any]]:
        """Dev small: its queries (a query without judgements counts 0) and their qrels."""
        dev = read_trec_qrels(raw_dir / DEV_QRELS, grades=(1,))
        queries = read_id_texts(raw_dir / DEV_QUERIES, "query")
        unknown = sorted(dev.qrels.keys() - queries.keys())
        if unknown:
            raise FormatError(
                raw_dir / DEV_QRELS, None, f"judged queries {unknown[:3]} are not in {DEV_QUERIES}"
            )
        unjudged = sum(qid not in dev.qrels for qid in queries)
        return queries, dev.qrels, {"test_queries_without_judgements": unjudged}
