"""WikiQA (Yang, Yih and Meek, EMNLP 2015): answer sentence selection over Wikipedia summaries.

Each question comes with the sentences of the summary section of one Wikipedia page, labelled
0/1 by crowd workers. The re-ranking protocol of the BERT papers ranks exactly those sentences
(the dataset's own pool, in page order) and reports MAP and MRR. Scoring
(``protocol.wikiqa.scoring``):

- ``filtered`` (default): the official evaluation, ``trec_eval`` with the release's
  ``WikiQA-<split>-filtered.ref``, used by Yang et al. and the papers that compare with them:
  questions with at least one correct *and* one incorrect sentence (dev 122, test 237). The
  6 test questions whose every sentence is correct score AP = 1 for any ranking (+0.009 MAP);
- ``with-correct``: every question with a correct sentence (train 873, dev 126, test 243).

Runs may name questions and sentences either by the canonical ids below or by the numbering of
the release's ``.ref`` files and published ``.rank`` runs (question = its 1-based position in
the split's file, sentence = its 0-based position among the question's rows); see
:func:`ref_numbering`.

Canonical form:

- corpus: every sentence once, pid = ``SentenceID`` (``D<page>-<index>``). A page can serve
  several questions (also across splits), so the same SentenceID recurs; it always carries the
  same text in the released files, and a file where it does not is rejected (FormatError) rather
  than silently renamed, because the pid must mean one text everywhere.
- queries: ``QuestionID`` → question; qrels: every (question, sentence) pair with its 0/1 label;
- pool: each question's sentences, scored so that rank order = page order;
- split: the predefined train / dev / test lists of QuestionIDs (all questions, in file order).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from reranklab.data._builder import CanonicalForm
from reranklab.data._protocols import answer_selection
from reranklab.data.base import Dataset, Prepared, RawFile
from reranklab.data.registry import register_dataset
from reranklab.errors import DownloadError, FormatError
from reranklab.evaluation.protocol import Scoring
from reranklab.io import Qrels
from reranklab.io.text import decode_line

SPLITS = ("train", "dev", "test")
HEADER = (
    "QuestionID",
    "Question",
    "DocumentID",
    "DocumentTitle",
    "SentenceID",
    "Sentence",
    "Label",
)
ZIP_URL = "https://download.microsoft.com/download/E/5/F/E5FCFCEE-7005-4814-853D-DAA7C66507E0/WikiQACorpus.zip"
ZIP_SIZE = 7_094_233
# (size, sha256) of the released WikiQA-<split>.tsv files (version 1.0, August 2015).
_CHECKSUMS = {
    "train": (4_379_303, "295757943bc4df27f09763fc73b9f63063b13a577718b17805cbc9bb436f9dbe"),
    "dev": (579_837, "023c530e742caca2a760d48bd249e13259248c11f3b880a4c1842aa259a30a54"),
    "test": (1_310_942, "3c3b66966cb183b71abf19510bc2302295c68dd7a25284ec9cf8b63d5b6929e3"),
}


def raw_name(split: str) -> str:
    """File name of one split in ``raw/`` and in the mirror, e.g. ``WikiQA-dev.tsv``."""
    return f"WikiQA-{split}.tsv"


class Row(NamedTuple):
    """One line of a WikiQA TSV file (its line number kept for error messages)."""

    line: int
    qid: str
    question: str
    doc_id: str
    doc_title: str
    sid: str
    sentence: str
    label: int


def read_rows(path: str | Path) -> Iterator[Row]:
    """Rows of a ``WikiQA-<split>.tsv`` file (CRLF or LF), header checked.

    Args:
        path: the TSV file.

    Raises:
        FormatError: (file, line) for a wrong header, a wrong field count, an empty id or text,
            a label other than 0/1, or bytes that are not UTF-8.

    Example:
        >>> next(read_rows("raw/wikiqa/WikiQA-train.tsv"))  # doctest: +SKIP
        Row(line=2, qid='Q1', question='how are glacier caves formed?', doc_id='D1', ...)
    """
    with open(path, "rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            line = decode_line(raw, path, lineno).removesuffix("\n").removesuffix("\r")
            fields = line.split("\t")
            if lineno == 1:
                if tuple(fields) != HEADER:
                    raise FormatError(
                        path, 1, f"header {fields!r} is not the WikiQA header {list(HEADER)!r}"
                    )
                continue
            if len(fields) != len(HEADER):
                raise FormatError(
                    path,
                    lineno,
                    f"expected {len(HEADER)} tab-separated fields ({' '.join(HEADER)}), got {len(fields)}",
                )
            qid, question, doc_id, title, sid, sentence, label = fields
            for column, value in (
                ("QuestionID", qid),
                ("Question", question),
                ("SentenceID", sid),
                ("Sentence", sentence),
            ):
                if not value.strip():
                    raise FormatError(path, lineno, f"empty {column}")
            if label not in ("0", "1"):
                raise FormatError(path, lineno, f"Label {label!r} is not 0 or 1")
            yield Row(lineno, qid, question, doc_id, title, sid, sentence, int(label))


def ref_numbering(path: str | Path) -> dict[str, tuple[str, dict[str, str]]]:
    """The numbering of the release's ``.ref`` files and ``emnlp-table/*.rank`` runs for one split.

    A question is numbered by its 1-based position among the distinct QuestionIDs of
    ``WikiQA-<split>.tsv`` (file order), a sentence by its 0-based position among that
    question's rows: ``WikiQA-test.ref`` starts ``1 0 0 0``, the first sentence of the first
    test question.

    Args:
        path: the split's ``WikiQA-<split>.tsv``.

    Returns:
        ``{"1": ("Q0", {"0": "D0-0", "1": "D0-1", ...}), ...}``.

    Example:
        >>> ref_numbering("raw/wikiqa/WikiQA-test.tsv")["1"][0]  # doctest: +SKIP
        'Q0'
    """
    numbering: dict[str, tuple[str, dict[str, str]]] = {}
    current: dict[str, str] = {}
    position: dict[str, str] = {}  # QuestionID -> its number
    for row in read_rows(path):
        number = position.get(row.qid)
        if number is None:
            number = position[row.qid] = str(len(position) + 1)
            current = {}
            numbering[number] = (row.qid, current)
        elif numbering[number][1] is not current:
            # The .ref numbering assumes a question's rows are contiguous, as in the release.
            raise FormatError(path, row.line, f"the rows of question {row.qid} are not contiguous")
        current[str(len(current))] = row.sid
    return numbering


class _Builder(CanonicalForm):
    """Accumulates the canonical form over the three files, checking consistency across them."""

    def __init__(self) -> None:
        super().__init__(
            "rows", "correct_answers", "evaluable_questions", "questions_with_correct_and_incorrect"
        )
        self.candidates: dict[str, list[str]] = {}
        self._sid_origin: dict[str, tuple[str, int]] = {}
        self._qid_origin: dict[str, tuple[str, int, str]] = {}
        self._sid_splits: dict[str, set[str]] = {}

    def add_file(self, split: str, path: Path) -> None:
        qids: list[str] = []
        rows = 0
        for row in read_rows(path):
            rows += 1
            self._add_query(split, path, row, qids)
            self._add_sentence(split, path, row)
            judged = self.qrels[row.qid]
            if row.sid in judged:
                raise FormatError(
                    path, row.line, f"question {row.qid} lists sentence {row.sid} twice"
                )
            judged[row.sid] = row.label
            self.candidates[row.qid].append(row.sid)
        self.split[split] = qids
        labels = [list(self.qrels[qid].values()) for qid in qids]
        self.stats["rows"][split] = rows
        self.stats["correct_answers"][split] = sum(sum(grades) for grades in labels)
        self.stats["evaluable_questions"][split] = sum(1 for grades in labels if any(grades))
        # The corpus's *-filtered.ref files keep only these (they also drop all-correct questions).
        self.stats["questions_with_correct_and_incorrect"][split] = sum(
            1 for grades in labels if any(grades) and not all(grades)
        )

    def _add_query(self, split: str, path: Path, row: Row, qids: list[str]) -> None:
        origin = self._qid_origin.get(row.qid)
        if origin is None:
            self._qid_origin[row.qid] = (split, row.line, str(path))
            self.queries[row.qid] = row.question
            self.qrels[row.qid] = {}
            self.candidates[row.qid] = []
            qids.append(row.qid)
            return
        first_split, first_line, first_path = origin
        if first_split != split:
            raise FormatError(
                path,
                row.line,
                f"question {row.qid} is also in the {first_split} split ({first_path}:{first_line})",
            )
        if self.queries[row.qid] != row.question:
            raise FormatError(
                path,
                row.line,
                f"question {row.qid} has a different text than on line {first_line}: "
                f"{row.question!r} vs {self.queries[row.qid]!r}",
            )

    def _add_sentence(self, split: str, path: Path, row: Row) -> None:
        self._sid_splits.setdefault(row.sid, set()).add(split)
        known = self.corpus.get(row.sid)
        if known is None:
            self.corpus[row.sid] = row.sentence
            self._sid_origin[row.sid] = (str(path), row.line)
        elif known != row.sentence:
            first_path, first_line = self._sid_origin[row.sid]
            raise FormatError(
                path,
                row.line,
                f"SentenceID {row.sid} has a different text than at {first_path}:{first_line}: "
                f"{row.sentence!r} vs {known!r}",
            )

    def prepared(self) -> Prepared:
        # Decreasing scores keep page order under the (-score, pid) ranking of run files.
        self.pool = {
            qid: {sid: float(len(sids) - index) for index, sid in enumerate(sids)}
            for qid, sids in self.candidates.items()
        }
        several = sum(1 for splits in self._sid_splits.values() if len(splits) > 1)
        return super().prepared(passages_in_several_splits=several)


@register_dataset
class WikiQA(Dataset):
    """The WikiQA corpus with its predefined split and its own candidate sentences."""

    name = "wikiqa"
    title = "WikiQA: answer sentence selection (Bing questions, Wikipedia summary sentences)"
    source = "Microsoft Research WikiQA Corpus v1.0 (Yang et al., EMNLP 2015), " + ZIP_URL
    licence = "Microsoft Research Data License Agreement for the WikiQA Corpus (research use only)"
    citation = (
        "Yi Yang, Wen-tau Yih and Christopher Meek. 2015. WikiQA: A Challenge Dataset for Open-Domain "
        "Question Answering. In Proceedings of EMNLP 2015, pages 2013-2018, Lisbon, Portugal."
    )
    files = tuple(
        RawFile(
            name=raw_name(split),
            url=ZIP_URL,
            size=size,
            sha256=sha256,
            member=f"WikiQACorpus/{raw_name(split)}",
            archive_size=ZIP_SIZE,
        )
        for split, (size, sha256) in _CHECKSUMS.items()
    )
    protocol = answer_selection(("MAP", "MRR"))
    scorings = (
        Scoring(
            "filtered",
            "questions with a correct and an incorrect sentence, as WikiQA-<split>-filtered.ref (dev 122, test 237)",
            queries="relevant_and_nonrelevant",
            source="trec_eval with WikiQA-test-filtered.ref of the WikiQA release (Yang et al. 2015)",
        ),
        Scoring(
            "with-correct",
            "questions with at least one correct sentence (dev 126, test 243)",
            queries="relevant",
            source="trec_eval with WikiQA-test.ref, questions without a correct sentence left out",
        ),
    )

    def parse(self, raw_dir: Path, options: dict[str, Any]) -> Prepared:
        """Parse ``WikiQA-{train,dev,test}.tsv`` from ``raw_dir``.

        Args:
            raw_dir: folder with the three raw files (see :func:`reranklab.data.download.fetch_dataset`).
            options: must be empty (WikiQA has no dataset-specific options).

        Example:
            >>> WikiQA().parse(Path("raw/wikiqa"), {}).stats()["split"]  # doctest: +SKIP
            {'train': 2118, 'dev': 296, 'test': 633}
        """
        self.read_options(options)
        builder = _Builder()
        for split in SPLITS:
            path = Path(raw_dir) / raw_name(split)
            if not path.is_file():
                raise DownloadError(f"{path}: missing; run the download step for {self.name} first")
            builder.add_file(split, path)
        return builder.prepared()

    def raw_files(
        self, options: dict[str, Any] | None = None, splits: Collection[str] | None = None
    ) -> tuple[RawFile, ...]:
        """``WikiQA-<split>.tsv`` of each of ``splits`` (default: all three).

        Example:
            >>> [f.name for f in WikiQA().raw_files({}, ["test"])]
            ['WikiQA-test.tsv']
        """
        names = {raw_name(split) for split in self._splits(options, splits)}
        return tuple(spec for spec in self.files if spec.name in names)

    def split_judgements(
        self, raw_dir: str | Path, split: str, options: dict[str, Any] | None = None
    ) -> tuple[list[str], Qrels]:
        """Questions and qrels of one split, parsed from ``WikiQA-<split>.tsv`` only.

        Example:
            >>> qids, qrels = WikiQA().split_judgements("raw/wikiqa", "test")  # doctest: +SKIP
            >>> len(qids)  # doctest: +SKIP
            633
        """
        builder = _Builder()
        for name in self._splits(options, [split]):
            builder.add_file(name, self._raw_path(raw_dir, name))
        return self._split_of(builder.split, builder.qrels, split)

    def run_aliases(
        self, raw_dir: str | Path, split: str
    ) -> dict[str, tuple[str, dict[str, str]]] | None:
        """The ``.ref`` numbering of ``split`` (:func:`ref_numbering`); ``None`` for ``all``."""
        if split == "all":
            return None  # the numbering restarts in each split's file
        self.check_splits([split])
        return ref_numbering(self._raw_path(raw_dir, split))

    def _splits(self, options: dict[str, Any] | None, splits: Collection[str] | None) -> list[str]:
        self.read_options(options)
        if splits is None:
            return list(SPLITS)
        self.check_splits(splits)
        return list(SPLITS) if "all" in splits else [s for s in SPLITS if s in splits]

    def _raw_path(self, raw_dir: str | Path, split: str) -> Path:
        path = Path(raw_dir) / raw_name(split)
        if not path.is_file():
            raise DownloadError(f"{path}: missing; run the download step for {self.name} first")
        return path
