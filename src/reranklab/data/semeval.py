"""SemEval-2016 and SemEval-2017 Task 3, subtask A: rank the comments of a Qatar Living thread.

Raw files, the subtask-A XML files of the official distributions:

- from ``semeval2016-task3-cqa-ql-traindev-v3.2.zip``: ``v3.2/train/SemEval2016-Task3-CQA-QL-
  train-part{1,2}-subtaskA.xml``, ``v3.2/dev/SemEval2016-Task3-CQA-QL-dev-subtaskA.xml`` and the
  2015 data re-annotated for subtask A, ``v3.2/train-more-for-subtaskA-from-2015/SemEval2015-
  Task3-CQA-QL-{train,dev,test}-reformatted-excluding-2016-questions-cleansed.xml``;
- test with gold labels: ``SemEval2016_task3_test/English/SemEval2016-Task3-CQA-QL-test-
  subtaskA.xml`` (``semeval2016_task3_test.zip``, 327 questions, 3,270 comments) and
  ``SemEval2017_task3_test/English/SemEval2017-task3-English-test-subtaskA.xml``
  (``semeval2017_task3_test.zip``, 293 questions, 2,930 comments).

Each file holds ``<Thread>`` elements (possibly inside ``<OrgQuestion>``); a thread has one
``<RelQuestion RELQ_ID=...>`` with ``<RelQSubject>`` and ``<RelQBody>``, and its
``<RelComment RELC_ID=... RELC_RELEVANCE2RELQ=...>`` elements with ``<RelCText>``, in thread
(chronological) order. The label is ``Good``, ``PotentiallyUseful`` or ``Bad``; as in the official
scorer, only ``Good`` is relevant.

Scoring (``protocol.semeval2016.scoring`` / ``protocol.semeval2017.scoring``):

- ``official`` (default): as the task's scorer (``ev.py``, v2.2 and later, threshold 10): every
  question counts, also those without a Good comment (they score 0); MAP is the mean of each
  question's AP over the top 10, where AP divides by the Good comments *found in the top 10*
  (not by all of them, as trec_eval's ``map_cut_10`` would); MRR is the reciprocal rank within
  the top 10. The chronological baseline on the 2016 dev set scores MAP 0.5384 (the scorer's
  ``IR`` column); the scorer breaks score ties by file order, which reranklab never does;
- ``with-good``: only questions with a Good comment, trec_eval measures over whole rankings.

Protocol of the BERTSel paper (Li et al., 2019): re-rank the comments of each related question;
train on the 2016 training data (with the 2015 data re-annotated for subtask A), develop on the
2016 dev set, test on the 2016 or the 2017 test set; all negatives; MAP and MRR.

Canonical form: qid ``RELQ_ID`` → subject and body joined by a space; pid ``RELC_ID`` → comment
text (whitespace collapsed); qrels Good 1, PotentiallyUseful and Bad 0; pool in thread order (the
chronological baseline of the task); split train / dev / test in file order.

Checksums: no size or checksum of these files or of their zips is published (not on the task
pages, nor in ir_datasets or Hugging Face ``datasets``). The size and sha256 of the dev file,
``train-part2`` and the 2015 train and dev files are declared from the copies checked here
(they parse to the task's counts, and the chronological baseline on dev scores the scorer's
0.5384); ``train-part1``, the 2015 test file and the 2016/2017 test files, which could not be
checked, are verified by trust on first use: the download step records their sha256 in
``raw/manifest.json`` when it first fetches them and refuses a later copy that differs.

Options (``protocol.semeval2016.options`` / ``protocol.semeval2017.options``):

- ``with_2015`` (bool, default true): add the three 2015 files to the training set (false:
  train on ``train-part1`` and ``train-part2`` only).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import Field

from reranklab.data._builder import CanonicalForm
from reranklab.data._parsing import iter_xml_elements, squash
from reranklab.data._protocols import answer_selection
from reranklab.data.base import Dataset, Prepared, Protocol, RawFile
from reranklab.data.registry import register_dataset
from reranklab.errors import DownloadError, FormatError
from reranklab.evaluation.measures import MRR_AT_10, NDCG_AT_10, P_AT_1, Measure
from reranklab.evaluation.protocol import Scoring
from reranklab.io import Qrels
from reranklab.settings.base import DatasetOptions

TRAINDEV_URL = (
    "http://alt.qcri.org/semeval2016/task3/data/uploads/semeval2016-task3-cqa-ql-traindev-v3.2.zip"
)
TEST_URLS = {
    2016: "http://alt.qcri.org/semeval2016/task3/data/uploads/semeval2016_task3_test.zip",
    2017: "http://alt.qcri.org/semeval2017/task3/data/uploads/semeval2017_task3_test.zip",
}
TRAIN_2016 = tuple(f"SemEval2016-Task3-CQA-QL-train-part{n}-subtaskA.xml" for n in (1, 2))
TRAIN_2015 = tuple(
    f"SemEval2015-Task3-CQA-QL-{part}-reformatted-excluding-2016-questions-cleansed.xml"
    for part in ("train", "dev", "test")
)
DEV = "SemEval2016-Task3-CQA-QL-dev-subtaskA.xml"
TEST = {
    2016: "SemEval2016-Task3-CQA-QL-test-subtaskA.xml",
    2017: "SemEval2017-task3-English-test-subtaskA.xml",
}
LABELS = ("Good", "PotentiallyUseful", "Bad")
RELEVANT = "Good"
_STAT_KEYS = {"Good": "good", "PotentiallyUseful": "potentially_useful", "Bad": "bad"}


class SemEvalOptions(DatasetOptions):
    """SemEval-2016/2017 Task 3's options: the training files."""

    with_2015: bool = Field(
        True,
        description="add the three 2015 files to the training set (false: train on train-part1 and train-part2 only)",
    )


class Comment(NamedTuple):
    """One ``<RelComment>``: id, text, label, line of its tag."""

    cid: str
    text: str
    label: str
    line: int


class Thread(NamedTuple):
    """One ``<Thread>``: the related question and its comments in thread order."""

    qid: str
    question: str
    line: int
    comments: tuple[Comment, ...]


def _identifier(path: Path, line: int, value: str | None, what: str) -> str:
    value = (value or "").strip()
    if not value or any(ch.isspace() for ch in value):
        raise FormatError(path, line, f"{what} {value!r} is missing, empty or contains spaces")
    return value


def read_threads(path: str | Path) -> Iterator[Thread]:
    """The threads of a SemEval Task 3 XML file (subtask-A or full format), in file order.

    Raises:
        FormatError: (path, line) for malformed XML, a thread without ``<RelQuestion>``, a
            missing ``RELQ_ID`` / ``RELC_ID``, a question with neither subject nor body, or a
            ``RELC_RELEVANCE2RELQ`` that is not Good / PotentiallyUseful / Bad (``N/A`` or ``?``
            marks a file without subtask-A gold labels).

    Example:
        >>> next(read_threads("raw/semeval2016/SemEval2016-Task3-CQA-QL-dev-subtaskA.xml")).qid  # doctest: +SKIP
        'Q1_R1'
    """
    path = Path(path)
    for thread in iter_xml_elements(path, {"Thread"}):
        question = thread.find("RelQuestion")
        if question is None:
            raise FormatError(path, thread.line, "<Thread> without <RelQuestion>")
        qid = _identifier(path, question.line, question.attrs.get("RELQ_ID"), "RELQ_ID")
        parts = [
            squash(el.text)
            for tag in ("RelQSubject", "RelQBody")
            if (el := question.find(tag)) is not None
        ]
        text = " ".join(part for part in parts if part)
        if not text:
            raise FormatError(
                path, question.line, f"related question {qid} has neither subject nor body text"
            )
        comments = []
        for comment in thread.findall("RelComment"):
            cid = _identifier(path, comment.line, comment.attrs.get("RELC_ID"), "RELC_ID")
            label = comment.attrs.get("RELC_RELEVANCE2RELQ")
            if label not in LABELS:
                raise FormatError(
                    path,
                    comment.line,
                    f"comment {cid}: RELC_RELEVANCE2RELQ {label!r} is not one of {list(LABELS)} "
                    "(a test file without gold labels? use the release with subtask-A gold labels)",
                )
            body = comment.find("RelCText")
            comments.append(
                Comment(cid, squash(body.text) if body is not None else "", label, comment.line)
            )
        yield Thread(qid, text, thread.line, tuple(comments))


class _Builder(CanonicalForm):
    """Accumulates threads over the files of the three splits, checking ids are unique."""

    def __init__(self) -> None:
        super().__init__("files", "comments", *_STAT_KEYS.values(), "questions_with_good")
        self._origin: dict[str, tuple[Path, int]] = {}

    def add_split(self, split: str, paths: list[Path]) -> None:
        qids: list[str] = []
        labels: Counter[str] = Counter()
        with_good = 0
        for path in paths:
            for thread in read_threads(path):
                self._claim(thread.qid, path, thread.line, "RELQ_ID")
                qids.append(thread.qid)
                self.queries[thread.qid] = thread.question
                with_good += any(c.label == RELEVANT for c in thread.comments)
                for index, comment in enumerate(thread.comments):
                    self._claim(comment.cid, path, comment.line, "RELC_ID")
                    self.corpus[comment.cid] = comment.text
                    self.qrels.setdefault(thread.qid, {})[comment.cid] = int(
                        comment.label == RELEVANT
                    )
                    # Decreasing scores keep thread order under the (-score, pid) ranking.
                    self.pool.setdefault(thread.qid, {})[comment.cid] = float(
                        len(thread.comments) - index
                    )
                    labels[comment.label] += 1
        self.split[split] = qids
        self.stats["files"][split] = [path.name for path in paths]
        self.stats["comments"][split] = sum(labels.values())
        for label, key in _STAT_KEYS.items():
            self.stats[key][split] = labels[label]
        self.stats["questions_with_good"][split] = with_good

    def _claim(self, ident: str, path: Path, line: int, what: str) -> None:
        if ident in self._origin:
            where, first = self._origin[ident]
            raise FormatError(path, line, f"{what} {ident} is repeated (first at {where}:{first})")
        self._origin[ident] = (path, line)


# (size, sha256) of the files as in the v3.2 train/dev zip, from the copies in the shared
# dataset mirror (github whiskeyromeo/CommunityQuestionAnswering, Data/; 244 questions and 2,440
# comments in dev, 379 threads and 3,790 comments in train-part2). Nothing is published; the
# files not listed are checked by trust on first use (see the module docstring).
_CHECKSUMS = {
    DEV: (998_329, "a93659ab2ea7373fde86959edbc76d5ed713dc0ca758852d136838f7e85102a6"),
    TRAIN_2016[1]: (1_563_500, "2df4209306b54047849c3ba30d18413b4685b45d3700f4cdc17daa39e9ea4619"),
    TRAIN_2015[0]: (809_680, "a26596cd9a220560c3bf1aee012e760697fc699b4d26cb489e1c3fc0e84b28ac"),
    TRAIN_2015[1]: (667_017, "93417473e2f43c644fb6289525e1977f5c8d255f3bace6fbfbdf952e66c15f87"),
}


def _raw_file(name: str, url: str, folder: str) -> RawFile:
    size, sha256 = _CHECKSUMS.get(name, (None, None))
    return RawFile(name=name, url=url, member=f"{folder}/{name}", size=size, sha256=sha256)


_TRAINDEV_FILES = (
    *(_raw_file(name, TRAINDEV_URL, "v3.2/train") for name in TRAIN_2016),
    *(
        _raw_file(name, TRAINDEV_URL, "v3.2/train-more-for-subtaskA-from-2015")
        for name in TRAIN_2015
    ),
    _raw_file(DEV, TRAINDEV_URL, "v3.2/dev"),
)
_LICENCE = (
    "Free for general research use (SemEval Task 3 CQA-QL corpus, Qatar Living forum data); "
    "cite the task paper"
)


class _SemEvalTask3(Dataset):
    """Subtask A of one SemEval edition: the shared 2016 training data, the edition's test set."""

    year: int
    options_model = SemEvalOptions

    def parse(self, raw_dir: Path, options: dict[str, Any]) -> Prepared:
        """Parse the train, dev and test XML files from ``raw_dir``.

        Args:
            raw_dir: folder with the raw files.
            options: ``with_2015`` (see the module docstring).

        Raises:
            FormatError: malformed input (see :func:`read_threads`) or a RELQ_ID / RELC_ID used
                twice across the files.

        Example:
            >>> SemEval2016().parse(Path("raw/semeval2016"), {"with_2015": True}).stats()["split"]["test"]  # doctest: +SKIP
            327
        """
        with_2015 = self.read_options(options).with_2015
        builder = self._read(Path(raw_dir), self._file_names(with_2015, None))
        return builder.prepared(with_2015=with_2015)

    def raw_files(
        self, options: dict[str, Any] | None = None, splits: Collection[str] | None = None
    ) -> tuple[RawFile, ...]:
        """The training files that ``with_2015`` chooses, dev and test; or only those of ``splits``.

        Example:
            >>> [f.name for f in SemEval2016().raw_files({}, ["dev"])]
            ['SemEval2016-Task3-CQA-QL-dev-subtaskA.xml']
        """
        with_2015 = self.read_options(options).with_2015
        names = {name for files in self._file_names(with_2015, splits).values() for name in files}
        return tuple(spec for spec in self.files if spec.name in names)

    def split_judgements(
        self, raw_dir: str | Path, split: str, options: dict[str, Any] | None = None
    ) -> tuple[list[str], Qrels]:
        """Questions and qrels of one split, parsed from that split's files only.

        Example:
            >>> qids, qrels = SemEval2016().split_judgements("raw/semeval2016", "dev")  # doctest: +SKIP
            >>> len(qids)  # doctest: +SKIP
            244
        """
        with_2015 = self.read_options(options).with_2015
        builder = self._read(Path(raw_dir), self._file_names(with_2015, [split]))
        return self._split_of(builder.split, builder.qrels, split)

    def _file_names(self, with_2015: bool, splits: Collection[str] | None) -> dict[str, list[str]]:
        names = {
            "train": [*TRAIN_2016, *(TRAIN_2015 if with_2015 else ())],
            "dev": [DEV],
            "test": [TEST[self.year]],
        }
        if splits is None:
            return names
        self.check_splits(splits)
        return (
            names
            if "all" in splits
            else {split: files for split, files in names.items() if split in splits}
        )

    def _read(self, raw_dir: Path, names: dict[str, list[str]]) -> _Builder:
        builder = _Builder()
        for split, files in names.items():
            paths = [raw_dir / name for name in files]
            for path in paths:
                if not path.is_file():
                    raise DownloadError(
                        f"{path}: missing; run the download step for {self.name} first"
                    )
            builder.add_split(split, paths)
        return builder


SCORINGS = (
    Scoring(
        "official",
        "every question; AP and RR over the top 10 as the SemEval Task 3 scorer (Good relevant)",
        measures=(
            Measure(
                "MAP",
                "semeval_ap",
                cutoff=10,
                official=True,
                description="SemEval AP over the top 10, mean over all questions",
            ),
            Measure(
                "MRR",
                "recip_rank",
                cutoff=10,
                description="reciprocal rank of the first Good comment in the top 10",
            ),
            P_AT_1,
            MRR_AT_10,
            NDCG_AT_10,
        ),
        queries="judged",
        source="SemEval-2016/2017 Task 3 official scorer (ev.py v2.2, MAP@10 over all questions)",
    ),
    Scoring(
        "with-good",
        "questions with at least one Good comment; trec_eval measures over whole rankings",
        queries="relevant",
        source="trec_eval (pytrec_eval), questions without a Good comment left out",
    ),
)


def _protocol() -> Protocol:
    return answer_selection(("MAP", "MRR"), options=SemEvalOptions.defaults())


@register_dataset
class SemEval2016(_SemEvalTask3):
    """SemEval-2016 Task 3 subtask A (test: the 2016 test set)."""

    year = 2016
    name = "semeval2016"
    title = "SemEval-2016 Task 3 subtask A: rank the comments of Qatar Living threads"
    source = f"SemEval-2016 Task 3 (Nakov et al., 2016), {TRAINDEV_URL} and {TEST_URLS[2016]}"
    licence = _LICENCE
    citation = (
        "Preslav Nakov, Lluís Màrquez, Alessandro Moschitti, Walid Magdy, Hamdy Mubarak, Abed Alhakim "
        "Freihat, Jim Glass and Bilal Randeree. 2016. SemEval-2016 Task 3: Community Question "
        "Answering. In Proceedings of SemEval-2016, pages 525-545."
    )
    files = (
        *_TRAINDEV_FILES,
        _raw_file(TEST[2016], TEST_URLS[2016], "SemEval2016_task3_test/English"),
    )
    counts = {"split": {"dev": 244, "test": 327}, "comments": {"dev": 2_440, "test": 3_270}}
    protocol = _protocol()
    scorings = SCORINGS


@register_dataset
class SemEval2017(_SemEvalTask3):
    """SemEval-2017 Task 3 subtask A (same training data, test: the 2017 test set)."""

    year = 2017
    name = "semeval2017"
    title = "SemEval-2017 Task 3 subtask A: rank the comments of Qatar Living threads"
    source = f"SemEval-2017 Task 3 (Nakov et al., 2017), {TRAINDEV_URL} and {TEST_URLS[2017]}"
    licence = _LICENCE
    citation = (
        "Preslav Nakov, Doris Hoogeveen, Lluís Màrquez, Alessandro Moschitti, Hamdy Mubarak, Timothy "
        "Baldwin and Karin Verspoor. 2017. SemEval-2017 Task 3: Community Question Answering. In "
        "Proceedings of SemEval-2017, pages 27-48."
    )
    files = (
        *_TRAINDEV_FILES,
        _raw_file(TEST[2017], TEST_URLS[2017], "SemEval2017_task3_test/English"),
    )
    counts = {"split": {"dev": 244, "test": 293}, "comments": {"dev": 2_440, "test": 2_930}}
    protocol = _protocol()
    scorings = SCORINGS
