"""TREC Deep Learning 2019, passage task (Craswell et al. 2020): MS MARCO with deep judgements.

The BERT-DMN protocol: train on MS MARCO (a seeded sample of judged train queries, as for
``msmarco-passage``), re-rank the BM25 top-1000 over the MS MARCO collection for the 43 judged
test queries, report nDCG@10, MAP and MRR. Judgements are graded 0-3; for the binary measures
the track counts grades 2 and 3 as relevant (``relevance_threshold: 2``, as ``trec_eval -l 2``).

MS MARCO's train judgements are binary (1 = the passage answers the query). So that training
sees them as positives under the test threshold, they are written with grade ``train_grade``
(option, default 2: "highly relevant" on the track's scale); the test judgements are kept as
they are. ``qrels.txt`` therefore mixes the two scales, one per split.

Raw files: the MS MARCO ``collection.tsv``, ``queries.train.tsv`` and ``qrels.train.tsv``
(see :mod:`reranklab.data.msmarco`), and

- ``topics.dl19-passage.txt``: ``qid<TAB>query`` for the 43 judged queries (Anserini's file;
  the track's ``msmarco-test2019-queries.tsv`` has all 200 candidates);
- ``qrels.dl19-passage.txt``: the official ``2019qrels-pass.txt`` (``qid Q0 pid grade``).

Counts on the released files: 43 queries, 9,260 judgements of 9,139 distinct passages, grades
0/1/2/3 = 5,158 / 1,601 / 1,804 / 697; every query has a passage of grade 2 or more.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from reranklab.data._options import TrainSampleOptions
from reranklab.data._protocols import passage_ranking
from reranklab.data._text_files import read_id_texts, read_trec_qrels
from reranklab.data.base import RawFile
from reranklab.data.msmarco import (
    COLLECTION,
    MSMARCO_CITATION,
    MSMARCO_LICENCE,
    TRAIN_QRELS,
    TRAIN_QUERIES,
    MsMarcoTrained,
    msmarco_file,
)
from reranklab.data.registry import register_dataset
from reranklab.errors import FormatError
from reranklab.evaluation.measures import ALL, R_AT_1000
from reranklab.evaluation.protocol import Scoring
from reranklab.io import Qrels

TOPICS = "topics.dl19-passage.txt"


class TrecDlOptions(TrainSampleOptions):
    """TREC-DL 2019's options: the MS MARCO training sample and the grade it gets."""

    train_grade: int = Field(2, ge=1, description="grade given to the MS MARCO train judgements")


QRELS = "qrels.dl19-passage.txt"
GRADES = (0, 1, 2, 3)


def read_test_topics(
    raw_dir: Path,
) -> tuple[dict[str, str], dict[str, dict[str, int]], dict[str, int]]:
    """The DL-19 topics and qrels, checked against each other.

    Returns:
        ``(queries, qrels, judgements by grade)``.

    Raises:
        FormatError: malformed files, a judged query without a topic or a topic without judgements.

    Example:
        >>> queries, qrels, _ = read_test_topics(Path("raw/trec-dl-2019"))  # doctest: +SKIP
        >>> len(queries), sum(len(j) for j in qrels.values())  # doctest: +SKIP
        (43, 9260)
    """
    queries = read_id_texts(raw_dir / TOPICS, "query")
    judged = read_trec_qrels(raw_dir / QRELS, grades=GRADES)
    unknown = sorted(judged.qrels.keys() - queries.keys())
    if unknown:
        raise FormatError(
            raw_dir / QRELS, None, f"judged queries {unknown[:3]} are not in {TOPICS}"
        )
    unjudged = [qid for qid in queries if qid not in judged.qrels]
    if unjudged:
        raise FormatError(
            raw_dir / TOPICS, None, f"topics {unjudged[:3]} have no judgements in {QRELS}"
        )
    return queries, judged.qrels, {str(g): judged.grades.get(g, 0) for g in GRADES}


@register_dataset
class TrecDL2019(MsMarcoTrained):
    """TREC DL 2019 passage: train on MS MARCO, test on the 43 judged queries."""

    name = "trec-dl-2019"
    mirror_dir = "trec_dl_2019"
    title = "TREC Deep Learning 2019 passage ranking: 43 deeply judged queries over MS MARCO"
    source = "NIST TREC 2019 Deep Learning track (Craswell et al. 2020), trec.nist.gov/data/deep2019.html"
    licence = MSMARCO_LICENCE + "; TREC judgements: public research use"
    citation = (
        "Nick Craswell, Bhaskar Mitra, Emine Yilmaz, Daniel Campos and Ellen M. Voorhees. 2020. "
        "Overview of the TREC 2019 Deep Learning Track. arXiv:2003.07820. " + MSMARCO_CITATION
    )
    corpus_file = COLLECTION
    files = (
        *(msmarco_file(name) for name in (COLLECTION, TRAIN_QUERIES, TRAIN_QRELS)),
        RawFile(
            name=TOPICS,
            url="https://raw.githubusercontent.com/castorini/anserini-tools/master/topics-and-qrels/topics.dl19-passage.txt",
            size=1_764,
            sha256="518992da259fb61f64e4790791df91a7b42ea5773f374aed59220ebb51d58d90",
        ),
        RawFile(
            name=QRELS,
            url="https://trec.nist.gov/data/deep/2019qrels-pass.txt",
            size=187_092,
            sha256="8a1f10d550732e4cd91d7fc49846a3784de4040972f583e69285a88f3c5fee92",
        ),
    )
    counts = {
        "passages": 8_841_823,
        "train_queries": 502_939,
        "test_queries": 43,
        "test_judgements": 9_260,
    }
    protocol = passage_ranking(
        1000,
        relevance_threshold=2,
        metrics=("nDCG@10", "MAP", "MRR"),
        options=TrecDlOptions.defaults(),
    )
    options_model = TrecDlOptions
    scorings = (
        Scoring(
            "official",
            "the 43 judged queries; nDCG@10 on the grades, binary measures (MAP, R@1000, MRR) with grade >= 2",
            measures=(*ALL, R_AT_1000),
            queries="judged",
            relevance=2,
            source="trec_eval -l 2 with 2019qrels-pass.txt, as the TREC 2019 Deep Learning track overview",
        ),
    )

    test_files = (TOPICS, QRELS)
    no_dev = "train: MS MARCO train queries; test: the 43 judged DL-19 queries"

    def read_test(self, raw_dir: Path) -> tuple[dict[str, str], Qrels, dict[str, Any]]:
        """The DL-19 topics and their graded qrels (:func:`read_test_topics`)."""
        queries, qrels, by_grade = read_test_topics(raw_dir)
        return queries, qrels, {"test_judgements_by_grade": by_grade}

    def train_grade(self, typed: Any) -> int:
        """The grade MS MARCO's binary train judgements get (option ``train_grade``)."""
        return typed.train_grade
