"""TrecQA (Wang et al., 2007; Yao et al., 2013): answer sentence selection for TREC QA questions.

Raw files, from ``jacana-qa-naacl2013-data-results.tar.bz2`` (Yao et al.'s release):

- ``train-less-than-40.manual-edit.xml``: TRAIN, 94 questions judged by hand;
- ``train2393.cleanup.xml.gz``: TRAIN-ALL, 1,229 questions judged automatically (gzipped);
- ``dev-less-than-40.manual-edit.xml`` / ``test-less-than-40.manual-edit.xml``: DEV (82
  questions, 65 after cleaning) and TEST (100 questions, 68 after cleaning).

The files are pseudo-XML (tokens may be ``<`` or ``&``, so they are read line by line): an
optional ``<root>``, then blocks ``<QApairs id='32.1'>`` holding one ``<question>`` and any number
of ``<positive>`` / ``<negative>`` elements, each tag on its own line. The first line inside an
element is the tab-separated tokens; the lines after it (POS tags, dependencies, named entities,
answer spans) are annotations and are ignored.

Protocol of the BERTSel paper (Li et al., 2019): re-rank each question's own candidates; the
predefined split; all negatives; MAP and MRR. Scoring (``protocol.trecqa.scoring``):

- ``clean`` (default, Rao et al. 2016 and the papers after them): only DEV and TEST questions
  with at least one positive and one negative candidate count (dev 65, test 68);
- ``raw``: every question with candidates, as ``trec_eval`` counts them on the whole files (a
  question with only negatives scores 0, one with only positives 1): dev 81 of 82 questions
  (1,148 pairs; 13 all-positive, 3 all-negative), test 95 of 100 (1,517 pairs; 21 all-positive,
  6 all-negative); the other questions have no candidate at all, so no judgement.

Canonical form:

- queries: the ``QApairs`` id → question tokens joined by spaces;
- corpus: one passage per candidate, pid ``<qid>-<nnn>`` (a sentence that is a candidate of two
  questions appears twice, once per question, as the files give it);
- qrels: positive 1, negative 0; pool: each question's candidates. The files list every positive
  before the negatives, so file order would give the labels away (to a first-stage baseline and to
  ties broken by pid): candidates are put in a fixed pseudo-random order seeded by the question
  id, numbered ``nnn`` in that order, and scored so that rank order = pid order;
- split: train (TRAIN or TRAIN-ALL), dev, test, in file order; every question is kept (which of
  them count is the scoring's choice, not the data's).

Checksums: the archive's MD5 is published (castorini/data) and checked when the archive is
used; the members' sizes and sha256 are declared for TRAIN, DEV and TEST (checked here on copies
of the release), so a mirror holding the plain files is verified too. Nothing is published for
``train2393.cleanup.xml.gz`` (TRAIN-ALL) alone and no copy could be checked: taken from the
archive it is covered by the archive's MD5; taken from a mirror as a plain file it is verified
by trust on first use (its sha256 is recorded in ``raw/manifest.json`` when first fetched and a
later copy that differs is refused).

Options (``protocol.trecqa.options``):

- ``train``: ``train_all`` (default, TRAIN-ALL as in BERTSel) or ``train`` (TRAIN).
"""

from __future__ import annotations

import random
import re
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any, ClassVar, Literal, NamedTuple

from pydantic import Field

from reranklab.data._builder import CanonicalForm
from reranklab.data._parsing import read_text
from reranklab.data._protocols import answer_selection
from reranklab.data.base import Dataset, Prepared, RawFile
from reranklab.data.registry import register_dataset
from reranklab.errors import DownloadError, FormatError
from reranklab.evaluation.protocol import Scoring
from reranklab.io import Qrels
from reranklab.settings.base import DatasetOptions

ARCHIVE_URL = "http://cs.jhu.edu/~xuchen/packages/jacana-qa-naacl2013-data-results.tar.bz2"
# MD5 of the archive as published with castorini/data (TrecQA/README.md); no sha256 is published.
ARCHIVE_MD5 = "11f0275e95691594cd74825e0c341b7a"
ARCHIVE_FOLDER = "jacana-qa-naacl2013-data-results"
RAW_FILES = {
    "train": "train-less-than-40.manual-edit.xml",
    "train_all": "train2393.cleanup.xml.gz",
    "dev": "dev-less-than-40.manual-edit.xml",
    "test": "test-less-than-40.manual-edit.xml",
}
# (size, sha256) of the archive's members, from the copies of the jacana release in the shared
# dataset mirror (TRAIN 94 questions / 4,718 pairs, DEV 82 / 1,148, TEST 100 / 1,517, as the
# release's README counts them). No copy of TRAIN-ALL was at hand: it has none (see above).
MEMBER_CHECKSUMS = {
    RAW_FILES["train"]: (
        2_463_979,
        "8c36007a23b754807344f08b52bc1baeaa6fa5dc85b8ad49f340cc8acc438b66",
    ),
    RAW_FILES["dev"]: (610_306, "87f6ed5818fcb885dc8e8206c83cce658d7187118d1e093d841629a08d9291bc"),
    RAW_FILES["test"]: (
        837_966,
        "fb96ee795015c98299fe78f1e697eb9e74789b1db6b1bbc0203416dedc0c467f",
    ),
}


class TrecQAOptions(DatasetOptions):
    """TrecQA's options: which training file."""

    train: Literal["train_all", "train"] = Field(
        "train_all",
        description="train_all = TRAIN-ALL, as in BERTSel; train = TRAIN, the manually judged part",
    )
    moved: ClassVar[dict[str, str]] = {
        "test": "clean/raw is now the scoring protocol, not an option of the data: write protocol.trecqa.scoring: clean (default) or raw"
    }


LABELS = {"positive": 1, "negative": 0}
_OPEN_BLOCK = re.compile(r"""<QApairs\s+id\s*=\s*(['"])(.*?)\1\s*>""")
_ELEMENTS = ("question", *LABELS)
_TAGS = frozenset({f"<{n}>" for n in _ELEMENTS} | {f"</{n}>" for n in (*_ELEMENTS, "QApairs")})
_OUTSIDE = ("", "<root>", "</root>")


class Candidate(NamedTuple):
    """One candidate sentence: its tokens joined by spaces, its label, the line of its tag."""

    text: str
    label: int
    line: int


class QAPairs(NamedTuple):
    """One ``<QApairs>`` block."""

    qid: str
    question: str
    line: int
    candidates: tuple[Candidate, ...]


class _Block:
    def __init__(self, qid: str, line: int) -> None:
        self.qid = qid
        self.line = line
        self.question: str | None = None
        self.candidates: list[Candidate] = []


def read_qapairs(path: str | Path) -> Iterator[QAPairs]:
    """The ``<QApairs>`` blocks of a jacana TrecQA file (plain or gzipped), in file order.

    Raises:
        FormatError: (path, line) for a line that belongs nowhere, a nested or unclosed block or
            element, a block without (or with two) ``<question>``, a candidate before the
            question, an element with no tokens line, or bytes that are not UTF-8.

    Example:
        >>> next(read_qapairs("raw/trecqa/test-less-than-40.manual-edit.xml")).qid  # doctest: +SKIP
        '32.1'
    """
    block: _Block | None = None
    element: str | None = None
    element_line = 0
    tokens: str | None = None
    lineno = 0
    for lineno, raw in enumerate(read_text(path).splitlines(), start=1):
        line = raw.strip()
        if element is not None:
            if line == f"</{element}>":
                assert block is not None
                text = " ".join(tokens.split()) if tokens is not None else ""
                if not text:
                    raise FormatError(
                        path, element_line, f"<{element}> of {block.qid} has no tokens line"
                    )
                if element == "question":
                    block.question = text
                else:
                    block.candidates.append(Candidate(text, LABELS[element], element_line))
                element = None
            elif _is_tag(line):
                raise FormatError(
                    path,
                    lineno,
                    f"{line} inside <{element}> (opened on line {element_line}) before </{element}>",
                )
            elif tokens is None:
                tokens = raw
            continue
        if block is not None:
            if line in (f"<{name}>" for name in _ELEMENTS):
                element, element_line, tokens = line[1:-1], lineno, None
                if element == "question" and block.question is not None:
                    raise FormatError(
                        path, lineno, f"second <question> in <QApairs id='{block.qid}'>"
                    )
                if element != "question" and block.question is None:
                    raise FormatError(
                        path, lineno, f"<{element}> before the <question> of {block.qid}"
                    )
            elif line == "</QApairs>":
                if block.question is None:
                    raise FormatError(
                        path, block.line, f"<QApairs id='{block.qid}'> has no <question>"
                    )
                yield QAPairs(block.qid, block.question, block.line, tuple(block.candidates))
                block = None
            elif line:
                raise FormatError(
                    path, lineno, f"unexpected line in <QApairs id='{block.qid}'>: {line[:60]!r}"
                )
            continue
        match = _OPEN_BLOCK.fullmatch(line)
        if match:
            qid = match.group(2).strip()
            if not qid or any(ch.isspace() for ch in qid):
                raise FormatError(
                    path, lineno, f"QApairs id {match.group(2)!r} is empty or contains spaces"
                )
            block = _Block(qid, lineno)
        elif line not in _OUTSIDE and not line.startswith("<?xml"):
            raise FormatError(path, lineno, f"expected <QApairs id='...'>, got {line[:60]!r}")
    if element is not None:
        raise FormatError(
            path,
            element_line,
            f"<{element}> is not closed before the end of the file (line {lineno})",
        )
    if block is not None:
        raise FormatError(
            path,
            block.line,
            f"<QApairs id='{block.qid}'> is not closed before the end of the file (line {lineno})",
        )


def _is_tag(line: str) -> bool:
    return line in _TAGS or bool(_OPEN_BLOCK.fullmatch(line))


def pool_order(qid: str, candidates: tuple[Candidate, ...]) -> list[Candidate]:
    """The candidates of ``qid`` in their fixed pseudo-random pool order (seeded by the qid).

    Example:
        >>> cands = (Candidate("a", 1, 3), Candidate("b", 0, 9))
        >>> sorted(pool_order("32.1", cands)) == sorted(cands)
        True
    """
    ordered = list(candidates)
    random.Random(f"trecqa:{qid}").shuffle(ordered)
    return ordered


@register_dataset
class TrecQA(Dataset):
    """TrecQA (jacana release) with its predefined split and its own candidates."""

    name = "trecqa"
    title = "TrecQA: answer sentence selection for TREC 8-13 QA questions (raw and clean test)"
    source = "Wang et al. (2007), released by Yao et al. (2013), " + ARCHIVE_URL
    licence = (
        "Freely available for research (Yao et al.'s jacana release); the questions are TREC QA "
        "track topics and the sentences come from the TREC QA document collections"
    )
    citation = (
        "Mengqiu Wang, Noah A. Smith and Teruko Mitamura. 2007. What is the Jeopardy Model? A "
        "Quasi-Synchronous Grammar for QA. In Proceedings of EMNLP-CoNLL 2007, pages 22-32. "
        "Xuchen Yao, Benjamin Van Durme, Chris Callison-Burch and Peter Clark. 2013. Answer "
        "Extraction as Sequence Tagging with Tree Edit Distance. In Proceedings of NAACL-HLT 2013."
    )
    files = tuple(
        RawFile(
            name=name,
            url=ARCHIVE_URL,
            member=f"{ARCHIVE_FOLDER}/{name}",
            archive_md5=ARCHIVE_MD5,
            size=MEMBER_CHECKSUMS.get(name, (None, None))[0],
            sha256=MEMBER_CHECKSUMS.get(name, (None, None))[1],
        )
        for name in RAW_FILES.values()
    )
    # TRAIN-ALL and the whole DEV and TEST files; `clean` counts 65 / 68 of their questions.
    counts = {
        "split": {"train": 1_229, "dev": 82, "test": 100},
        "pairs": {"train": 53_417, "dev": 1_148, "test": 1_517},
    }
    protocol = answer_selection(("MAP", "MRR"), options=TrecQAOptions.defaults())
    options_model = TrecQAOptions
    scorings = (
        Scoring(
            "clean",
            "DEV and TEST questions with a positive and a negative candidate (dev 65, test 68)",
            queries="relevant_and_nonrelevant",
            source="Rao, He and Lin (CIKM 2016), the clean TrecQA the BERTSel paper reports",
        ),
        Scoring(
            "raw",
            "every question with candidates, as trec_eval counts them (dev 81, test 95)",
            queries="judged",
            source="trec_eval on the whole jacana DEV/TEST files (Wang et al. 2007; Yao et al. 2013)",
        ),
    )

    def parse(self, raw_dir: Path, options: dict[str, Any]) -> Prepared:
        """Parse the train file chosen by ``options["train"]`` and the dev and test files.

        Args:
            raw_dir: folder with the raw files (only the ones in use must be there).
            options: ``train`` (see the module docstring).

        Raises:
            FormatError: malformed input (see :func:`read_qapairs`) or a question id repeated
                in one file or used in two of them.

        Example:
            >>> TrecQA().parse(Path("raw/trecqa"), {"train": "train_all"}).stats()["split"]  # doctest: +SKIP
            {'train': 1229, 'dev': 82, 'test': 100}
        """
        train = self.read_options(options).train
        builder = _Builder()
        for split, key in (("train", train), ("dev", "dev"), ("test", "test")):
            path = Path(raw_dir) / RAW_FILES[key]
            if not path.is_file():
                raise DownloadError(f"{path}: missing; run the download step for {self.name} first")
            builder.add_file(split, path)
        prepared = builder.prepared()
        prepared.extra_stats.update({"train_file": RAW_FILES[train]})
        return prepared

    def raw_files(
        self, options: dict[str, Any] | None = None, splits: Collection[str] | None = None
    ) -> tuple[RawFile, ...]:
        """The train file that ``options["train"]`` names (TRAIN or TRAIN-ALL), DEV and TEST; or
        only the files of ``splits``.

        Example:
            >>> [f.name for f in TrecQA().raw_files({"train": "train"}, ["test"])]
            ['test-less-than-40.manual-edit.xml']
        """
        keys = self._file_keys({**self.protocol.options, **(options or {})}, splits)
        return tuple(
            spec for spec in self.files if spec.name in {RAW_FILES[key] for key in keys.values()}
        )

    def split_judgements(
        self, raw_dir: str | Path, split: str, options: dict[str, Any] | None = None
    ) -> tuple[list[str], Qrels]:
        """Questions and qrels of one split, parsed from that split's file only.

        Example:
            >>> qids, qrels = TrecQA().split_judgements("raw/trecqa", "test")  # doctest: +SKIP
            >>> len(qids), len(qrels)  # doctest: +SKIP
            (100, 95)
        """
        keys = self._file_keys({**self.protocol.options, **(options or {})}, [split])
        builder = _Builder()
        for name, key in keys.items():
            path = Path(raw_dir) / RAW_FILES[key]
            if not path.is_file():
                raise DownloadError(f"{path}: missing; run the download step for {self.name} first")
            builder.add_file(name, path)
        return self._split_of(builder.split, builder.qrels, split)

    def _file_keys(self, options: dict[str, Any], splits: Collection[str] | None) -> dict[str, str]:
        # split -> key of RAW_FILES, for the wanted splits (None or "all": all three).
        train = self.read_options(options).train
        if splits is not None:
            self.check_splits(splits)
        keys = {"train": train, "dev": "dev", "test": "test"}
        if splits is None or "all" in splits:
            return keys
        return {split: keys[split] for split in keys if split in splits}


class _Builder(CanonicalForm):
    """Accumulates the canonical form over the three files of a split."""

    def __init__(self) -> None:
        super().__init__(
            "questions_in_file", "pairs", "positives", "questions_with_positive_and_negative"
        )
        self.origin: dict[str, tuple[str, int]] = {}

    def add_file(self, split: str, path: Path) -> None:
        qids: list[str] = []
        in_file = mixed = 0
        for block in read_qapairs(path):
            in_file += 1
            if block.qid in self.origin:
                where, line = self.origin[block.qid]
                raise FormatError(
                    path, block.line, f"question id {block.qid} is also at {where}:{line}"
                )
            self.origin[block.qid] = (str(path), block.line)
            labels = {c.label for c in block.candidates}
            mixed += labels == {0, 1}
            qids.append(block.qid)
            self.queries[block.qid] = block.question
            ordered = pool_order(block.qid, block.candidates)
            width = max(3, len(str(len(ordered) - 1)))
            judged = self.qrels.setdefault(block.qid, {})
            ranked = self.pool.setdefault(block.qid, {})
            for index, candidate in enumerate(ordered):
                pid = f"{block.qid}-{index:0{width}d}"
                self.corpus[pid] = candidate.text
                judged[pid] = candidate.label
                ranked[pid] = float(len(ordered) - index)
            if not judged:
                del self.qrels[block.qid], self.pool[block.qid]
        self.split[split] = qids
        self.stats["questions_in_file"][split] = in_file
        self.stats["pairs"][split] = sum(len(self.qrels.get(q, {})) for q in qids)
        self.stats["positives"][split] = sum(sum(self.qrels.get(q, {}).values()) for q in qids)
        self.stats["questions_with_positive_and_negative"][split] = mixed
