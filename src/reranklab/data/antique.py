"""ANTIQUE (Hashemi et al., ECIR 2020): non-factoid questions from Yahoo! Answers, graded answers.

2,626 questions (2,426 train, 200 test) over 403,666 answers, with 34,011 crowd judgements on a
four-point scale: 4 "looks reasonable and convincing", 3 "can be an answer but not sure",
2 "does not answer but is on topic", 1 "completely out of context". The BERT-DMN protocol ranks
the BM25 top-100 and counts labels 3 and 4 as relevant (``relevance_threshold: 3``, a protocol
setting that can be overridden); nDCG@10 uses the graded labels as they are in ``qrels.txt``.

Raw files (``https://ciir.cs.umass.edu/downloads/Antique/``):

- ``antique-collection.txt``: ``docid<TAB>answer text`` (403,666 lines);
- ``antique-{train,test}-queries.txt``: ``qid<TAB>question``;
- ``antique-{train,test}.qrel``: TREC qrels ``qid U0|Q0|E0 docid label`` with labels 1-4 and
  tabs and spaces mixed (the first line of each question is tab-separated).

Canonical form: corpus = the collection, queries = train and test questions, qrels = every
judgement with its label 1-4, pool = none (BM25), split = train / dev / test where dev is a seeded
sample of ``dev_queries`` (option, 200) train questions, as BERT-DMN holds out 200 of the 2,426.

Counts on the released query and qrels files: 2,426 / 200 questions, 27,422 / 6,589 judgements
(34,011), labels 1/2/3/4 = 2,914 / 8,754 / 9,276 / 13,067; iteration column Q0 30,612,
U0 2,626, E0 773. They match the paper.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from pathlib import Path
from typing import Any

from pydantic import Field

from reranklab.data._options import require_files, sample_ids
from reranklab.data._protocols import passage_ranking
from reranklab.data._streaming import tsv_corpus_records
from reranklab.data._text_files import read_id_texts, read_trec_qrels
from reranklab.data.base import Dataset, Prepared, RawFile
from reranklab.data.registry import register_dataset
from reranklab.errors import ConfigError, FormatError
from reranklab.evaluation.protocol import Scoring
from reranklab.io import Qrels
from reranklab.settings.base import DatasetOptions

BASE_URL = "https://ciir.cs.umass.edu/downloads/Antique/"


class AntiqueOptions(DatasetOptions):
    """ANTIQUE's options: the dev questions held out of its train split."""

    dev_queries: int = Field(200, ge=0, description="train questions held out as dev, 0 for none")
    dev_seed: int = Field(42, description="seed of the dev sample")


COLLECTION = "antique-collection.txt"
GRADES = (1, 2, 3, 4)
# (size, sha256) of the released query and qrels files; the collection has a published MD5.
_CHECKSUMS = {
    "antique-train-queries.txt": (
        136_512,
        "ced8c5d03883aba18524bd679a2e2f529284d58b224f4b9749ea6e1e1bfcac4d",
    ),
    "antique-train.qrel": (
        625_622,
        "9a07e782666628d3317f0039d682075d800959dc42e97f494c5d7f1d8faef821",
    ),
    "antique-test-queries.txt": (
        11_434,
        "72e52d256534a0d5ca6ef8b6a745231317b28025e842a3f1fc6a90260213b4f1",
    ),
    "antique-test.qrel": (
        149_838,
        "d5585c6812e69ce86c81c406e3688d2cbbe55cf0a079924e894afa4fd62bdbcd",
    ),
}


def read_collection(path: str | Path) -> dict[str, str]:
    """``antique-collection.txt`` → ``{docid: text}`` (403,666 answers fit in memory).

    Raises:
        FormatError: a line without a tab, a bad docid, or a docid seen before.

    Example:
        >>> len(read_collection("raw/antique/antique-collection.txt"))  # doctest: +SKIP
        403666
    """
    corpus: dict[str, str] = {}
    origin: dict[str, int] = {}
    for lineno, docid, text in tsv_corpus_records(path):
        if docid in corpus:
            raise FormatError(
                path, lineno, f"duplicate answer id {docid!r} (first on line {origin[docid]})"
            )
        corpus[docid] = text
        origin[docid] = lineno
    return corpus


@register_dataset
class Antique(Dataset):
    """ANTIQUE with its train/test split (200 train questions held out for validation)."""

    name = "antique"
    title = "ANTIQUE: non-factoid questions from Yahoo! Answers, 403,666 answers, graded labels 1-4"
    source = "CIIR, UMass Amherst (Hashemi et al., ECIR 2020), " + BASE_URL
    licence = "Research use (CIIR ANTIQUE release terms; Yahoo! Answers Webscope L6 content)"
    citation = (
        "Helia Hashemi, Mohammad Aliannejadi, Hamed Zamani and W. Bruce Croft. 2020. ANTIQUE: A "
        "Non-Factoid Question Answering Benchmark. In Proceedings of ECIR 2020, pages 166-173."
    )
    files = (
        RawFile(
            name=COLLECTION,
            url=BASE_URL + COLLECTION,
            size=93_608_031,
            md5="684f7015aff377062a758e478476aac8",
        ),
        *(
            RawFile(name=name, url=BASE_URL + name, size=size, sha256=sha256)
            for name, (size, sha256) in _CHECKSUMS.items()
        ),
    )
    counts = {
        "passages": 403_666,
        "split": {"train": 2_226, "dev": 200, "test": 200},
        "judgements": 34_011,
    }
    protocol = passage_ranking(
        100,
        relevance_threshold=3,
        metrics=("MAP", "MRR", "P@1", "nDCG@10"),
        options=AntiqueOptions.defaults(),
    )
    options_model = AntiqueOptions
    scorings = (
        Scoring(
            "official",
            "every judged query (test 200); labels 3 and 4 relevant for the binary measures, nDCG on the grades",
            queries="judged",
            relevance=3,
            source="trec_eval -l 3, as Hashemi et al. (ECIR 2020) and ir_datasets' antique/test",
        ),
    )

    def parse(self, raw_dir: Path, options: dict[str, Any]) -> Prepared:
        """Parse the collection, queries and qrels from ``raw_dir``.

        Args:
            raw_dir: folder with the five raw files.
            options: ``dev_queries`` (train questions held out for validation, 0 for none) and
                ``dev_seed`` (seed of that sample).

        Example:
            >>> Antique().parse(Path("raw/antique"), {}).stats()["split"]  # doctest: +SKIP
            {'train': 2226, 'dev': 200, 'test': 200}
        """
        n_dev = self._dev_queries(options)
        raw_dir = Path(raw_dir)
        require_files(raw_dir, [f.name for f in self.files], self.name)
        corpus = read_collection(raw_dir / COLLECTION)
        queries: dict[str, str] = {}
        qrels: dict[str, dict[str, int]] = {}
        ids: dict[str, list[str]] = {}
        iterations: Counter = Counter()
        grades: Counter = Counter()
        for part in ("train", "test"):
            path = raw_dir / f"antique-{part}-queries.txt"
            texts = read_id_texts(path, "question")
            clash = sorted(texts.keys() & queries.keys())
            if clash:
                raise FormatError(path, None, f"questions {clash[:3]} are also train questions")
            judged = read_trec_qrels(raw_dir / f"antique-{part}.qrel", grades=GRADES)
            unknown = sorted(judged.qrels.keys() - texts.keys())
            if unknown:
                raise FormatError(
                    raw_dir / f"antique-{part}.qrel",
                    None,
                    f"judged questions {unknown[:3]} are not in {path.name}",
                )
            queries.update(texts)
            qrels.update(judged.qrels)
            ids[part] = list(texts)
            iterations.update(judged.iterations)
            grades.update(judged.grades)
        if n_dev >= len(ids["train"]):
            raise ConfigError(
                f"protocol.{self.name}.options.dev_queries: {n_dev} leaves no training questions (of {len(ids['train'])})"
            )
        held_out = (
            sample_ids(ids["train"], n_dev, self.read_options(options).dev_seed) if n_dev else set()
        )
        split = {
            "train": [q for q in ids["train"] if q not in held_out],
            "dev": [q for q in ids["train"] if q in held_out],
            "test": ids["test"],
        }
        judged_docs = {docid for judged in qrels.values() for docid in judged}
        extra = {
            "judgements_by_label": {str(g): grades.get(g, 0) for g in GRADES},
            "judgements_by_iteration": dict(sorted(iterations.items())),
            "judged_passages_not_in_corpus": len(judged_docs - corpus.keys()),
        }
        return Prepared(
            corpus=corpus, queries=queries, qrels=qrels, split=split, pool=None, extra_stats=extra
        )

    def raw_files(
        self, options: dict[str, Any] | None = None, splits: Collection[str] | None = None
    ) -> tuple[RawFile, ...]:
        """Every file; for ``splits``, only their queries and qrels (dev is sampled from train).

        Example:
            >>> [f.name for f in Antique().raw_files({}, ["test"])]
            ['antique-test-queries.txt', 'antique-test.qrel']
        """
        if splits is None:
            return self.files
        names = {
            name
            for part in self._parts(splits)
            for name in (f"antique-{part}-queries.txt", f"antique-{part}.qrel")
        }
        return tuple(spec for spec in self.files if spec.name in names)

    def split_judgements(
        self, raw_dir: str | Path, split: str, options: dict[str, Any] | None = None
    ) -> tuple[list[str], Qrels]:
        """Questions and qrels of one split from its query and qrels files (no collection).

        Example:
            >>> qids, qrels = Antique().split_judgements("raw/antique", "test")  # doctest: +SKIP
            >>> len(qids), sum(len(j) for j in qrels.values())  # doctest: +SKIP
            (200, 6589)
        """
        merged = {**self.protocol.options, **(options or {})}
        n_dev = self._dev_queries(merged)
        raw_dir = Path(raw_dir)
        parts = self._parts([split])
        require_files(raw_dir, [spec.name for spec in self.raw_files(merged, [split])], self.name)
        ids: dict[str, list[str]] = {}
        qrels: Qrels = {}
        for part in parts:
            ids[part] = list(read_id_texts(raw_dir / f"antique-{part}-queries.txt", "question"))
            qrels.update(read_trec_qrels(raw_dir / f"antique-{part}.qrel", grades=GRADES).qrels)
        split_ids = {"test": ids.get("test", [])}
        if "train" in ids:
            if n_dev >= len(ids["train"]):
                raise ConfigError(
                    f"protocol.{self.name}.options.dev_queries: {n_dev} leaves no training questions (of {len(ids['train'])})"
                )
            held_out = (
                sample_ids(ids["train"], n_dev, self.read_options(merged).dev_seed)
                if n_dev
                else set()
            )
            split_ids["train"] = [q for q in ids["train"] if q not in held_out]
            split_ids["dev"] = [q for q in ids["train"] if q in held_out]
        return self._split_of(split_ids, qrels, split)

    def _parts(self, splits: Collection[str]) -> list[str]:
        # The released parts (train, test) that hold these splits' questions.
        self.check_splits(splits)
        wanted = (
            {"train", "test"}
            if "all" in splits
            else {"test" if s == "test" else "train" for s in splits}
        )
        return [part for part in ("train", "test") if part in wanted]

    def _dev_queries(self, options: dict[str, Any]) -> int:
        return self.read_options(options).dev_queries
