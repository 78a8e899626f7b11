"""WebAP (Keikha et al., 2014): answer passages annotated inside GOV2 web pages.

Raw files (from the ``WebAP/gradedText/`` folder of the CIIR distribution):

- ``gov2.query.json``: Galago topics, ``{"queries": [{"number": "701", "text": "..."}, ...]}``
  (82 TREC Terabyte queries);
- ``grade.trectext_patched``: TREC-text made valid XML: ``<ROOT>`` holding one ``<DOC>`` per
  judged (query, document) pair with ``<DOCNO>``, ``<TARGET_QID>``, ``<ORIGINAL_DOCNO>`` and a
  ``<TEXT>`` that is a sequence of ``<NONE>``, ``<FAIR>``, ``<GOOD>``, ``<EXCEL>`` or ``<PERFECT>``
  blocks of ``<SENTENCE>`` elements, in page order.

Protocol of Mass et al. (2019): every graded block (FAIR=1, GOOD=2, EXCEL=3, PERFECT=4) is a
relevant passage for its document's query; the irrelevant text of each document (its runs of
``NONE`` sentences between relevant blocks) is cut into negative passages whose lengths in words
are drawn from a normal distribution with the mean and standard deviation of the relevant
passages' lengths (seeded; at least one word; the last piece of a run keeps what is left).
Queries without a relevant passage are dropped (two of the 82, leaving 80); the passages of their
documents stay in the corpus as negatives. Candidates are BM25's top 100 over all passages with a
relevant one injected at rank 100; 5-fold cross-validation; P@1, MRR and MAP.

Canonical form: pid ``<DOCNO>-<k>`` (k = 1, 2, ... in page order); qrels hold the graded
relevant passages and grade 0 for the negatives cut from the same document.

Options (``protocol.webap.options``):

- ``seed`` (int, default 1): seed of the negative-passage lengths.
"""

from __future__ import annotations

import random
import statistics
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from reranklab.data._parsing import Element, iter_json_member_array, iter_xml_elements, read_text
from reranklab.data._protocols import cross_validated
from reranklab.data.base import Dataset, Prepared, RawFile
from reranklab.data.registry import register_dataset
from reranklab.errors import DownloadError, FormatError
from reranklab.io import Qrels
from reranklab.settings.base import DatasetOptions

QUERIES_FILE = "gov2.query.json"
PASSAGES_FILE = "grade.trectext_patched"
PAGE = "https://ciir.cs.umass.edu/downloads/WebAP/"
GRADES = {"NONE": 0, "FAIR": 1, "GOOD": 2, "EXCEL": 3, "PERFECT": 4}
DEFAULT_SEED = 1


class WebAPOptions(DatasetOptions):
    """WebAP's options: how its negative passages are cut."""

    seed: int = Field(DEFAULT_SEED, description="seed of the negative-passage lengths")


_MANUAL = (
    f"download the WebAP data from {PAGE} (free for research use; GOV2-derived text, accept the "
    "terms shown there), unpack it and copy WebAP/gradedText/{name}"
)


@dataclass(frozen=True)
class Block:
    """One graded block of a judged document: its grade and words, in page order."""

    grade: int
    words: tuple[str, ...]
    line: int


@dataclass(frozen=True)
class JudgedDocument:
    """One ``<DOC>``: a GOV2 page judged for one query, as a sequence of graded blocks."""

    docno: str
    qid: str
    original_docno: str
    line: int
    blocks: tuple[Block, ...]


def read_topics(path: str | Path) -> dict[str, str]:
    """Read ``gov2.query.json`` (Galago topics) into ``{number: text}``, in file order.

    Raises:
        FormatError: (path, line) for invalid JSON, a missing ``queries`` array, an item
            without a string ``number``/``text`` (numbers may be integers), or a repeated number.

    Example:
        >>> read_topics("raw/webap/gov2.query.json")["740"]  # doctest: +SKIP
        'regulates assisted living facilities maryland'
    """
    topics: dict[str, str] = {}
    first: dict[str, int] = {}
    for line, item in iter_json_member_array(read_text(path), path, "queries"):
        if not isinstance(item, dict):
            raise FormatError(path, line, "a query is not a JSON object")
        number, text = item.get("number"), item.get("text")
        if isinstance(number, int) and not isinstance(number, bool):
            number = str(number)
        if (
            not isinstance(number, str)
            or not number.strip()
            or any(ch.isspace() for ch in number.strip())
        ):
            raise FormatError(
                path, line, f"query 'number' {number!r} is not a non-empty id without spaces"
            )
        if not isinstance(text, str) or not text.strip():
            raise FormatError(path, line, f"query {number}: 'text' is missing or empty")
        number = number.strip()
        if number in first:
            raise FormatError(
                path, line, f"query number {number} is repeated (first on line {first[number]})"
            )
        first[number] = line
        topics[number] = " ".join(text.split())
    return topics


def _field(path: Path, doc: Element, tag: str) -> str:
    element = doc.find(tag)
    value = element.text.strip() if element is not None else ""
    if not value or any(ch.isspace() for ch in value):
        raise FormatError(path, doc.line, f"<DOC> without a valid <{tag}> ({value!r})")
    return value


def read_documents(path: str | Path) -> Iterator[JudgedDocument]:
    """Judged documents of ``grade.trectext_patched``, streamed in file order.

    Raises:
        FormatError: (path, line) for malformed XML, a ``<DOC>`` without ``<DOCNO>``,
            ``<TARGET_QID>``, ``<ORIGINAL_DOCNO>`` or ``<TEXT>``, an element inside ``<TEXT>``
            that is not a grade block, or an element inside a block that is not ``<SENTENCE>``.

    Example:
        >>> next(read_documents("raw/webap/grade.trectext_patched")).docno  # doctest: +SKIP
        'GX268-35-11839875-701'
    """
    path = Path(path)
    for doc in iter_xml_elements(path, {"DOC"}):
        docno, qid, original = (
            _field(path, doc, tag) for tag in ("DOCNO", "TARGET_QID", "ORIGINAL_DOCNO")
        )
        text = doc.find("TEXT")
        if text is None:
            raise FormatError(path, doc.line, f"<DOC> {docno} has no <TEXT>")
        blocks = []
        for block in text.children:
            if block.tag not in GRADES:
                raise FormatError(
                    path,
                    block.line,
                    f"unexpected <{block.tag}> in <TEXT> of {docno}; expected one of {', '.join(GRADES)}",
                )
            words: list[str] = []
            for sentence in block.children:
                if sentence.tag != "SENTENCE":
                    raise FormatError(
                        path,
                        sentence.line,
                        f"unexpected <{sentence.tag}> in <{block.tag}>; expected <SENTENCE>",
                    )
                words += sentence.text.split()
            blocks.append(Block(GRADES[block.tag], tuple(words), block.line))
        yield JudgedDocument(docno, qid, original, doc.line, tuple(blocks))


def cut_lengths(total: int, mean: float, std: float, rng: random.Random) -> list[int]:
    """Lengths (in words) that cut ``total`` words into pieces drawn from N(mean, std).

    Each draw is rounded and at least 1; the last piece is what is left of ``total``.

    Example:
        >>> sum(cut_lengths(100, 20.0, 5.0, random.Random(0)))
        100
    """
    lengths: list[int] = []
    left = total
    while left > 0:
        size = min(left, max(1, round(rng.gauss(mean, std))))
        lengths.append(size)
        left -= size
    return lengths


def _relevant_lengths(documents: Iterable[JudgedDocument]) -> list[int]:
    return [
        len(block.words)
        for doc in documents
        for block in doc.blocks
        if block.grade > 0 and block.words
    ]


def build_passages(
    documents: list[JudgedDocument], seed: int, source: str | Path = PASSAGES_FILE
) -> tuple[dict[str, str], Qrels, dict[str, Any]]:
    """Relevant blocks and seeded negative pieces as passages; qrels by each document's query.

    Args:
        documents: the judged documents, in file order (the order the random draws follow).
        seed: seed of the negative-passage lengths.
        source: the file the documents come from, for the error when none has a relevant block.

    Returns:
        ``(corpus, qrels, stats)``; qrels cover every query with a judged document.

    Example:
        >>> corpus, qrels, stats = build_passages(list(read_documents("grade.trectext_patched")), 1)  # doctest: +SKIP
    """
    lengths = _relevant_lengths(documents)
    if not lengths:
        raise FormatError(source, None, "no relevant (graded) passage in the whole file")
    mean, std = statistics.fmean(lengths), statistics.pstdev(lengths)
    rng = random.Random(seed)
    corpus: dict[str, str] = {}
    qrels: Qrels = {}
    negative_lengths: list[int] = []
    by_grade: Counter[int] = Counter()
    for doc in documents:
        judged = qrels.setdefault(doc.qid, {})
        pieces: list[tuple[int, tuple[str, ...]]] = []
        run: list[str] = []
        for block in doc.blocks:
            if block.grade == 0:
                run += block.words
                continue
            pieces += _negatives(run, mean, std, rng)
            run = []
            if block.words:
                pieces.append((block.grade, block.words))
        pieces += _negatives(run, mean, std, rng)
        for k, (grade, words) in enumerate(pieces, start=1):
            pid = f"{doc.docno}-{k}"
            corpus[pid] = " ".join(words)
            judged[pid] = grade
            if grade:
                by_grade[grade] += 1
            else:
                negative_lengths.append(len(words))
    stats = {
        "relevant_passages": len(lengths),
        "relevant_by_grade": {str(g): by_grade[g] for g in range(1, 5)},
        "negative_passages": len(negative_lengths),
        "relevant_length": {"mean": round(mean, 3), "std": round(std, 3)},
        "negative_length": {
            "mean": round(statistics.fmean(negative_lengths), 3) if negative_lengths else None,
            "std": round(statistics.pstdev(negative_lengths), 3) if negative_lengths else None,
        },
    }
    return corpus, qrels, stats


def _negatives(
    words: list[str], mean: float, std: float, rng: random.Random
) -> list[tuple[int, tuple[str, ...]]]:
    pieces = []
    start = 0
    for size in cut_lengths(len(words), mean, std, rng):
        pieces.append((0, tuple(words[start : start + size])))
        start += size
    return pieces


@register_dataset
class WebAP(Dataset):
    """WebAP answer passages with negatives cut from each judged page (Mass et al.)."""

    name = "webap"
    title = "WebAP: graded answer passages in GOV2 pages, negatives cut from the rest of each page"
    source = "Keikha et al. (2014), CIIR UMass, " + PAGE
    licence = (
        "Research use; text derived from the TREC GOV2 collection. CIIR distributes it from its "
        f"download page ({PAGE}): the files must be placed by hand"
    )
    citation = (
        "Mostafa Keikha, Jae Hyun Park, W. Bruce Croft and Mark Sanderson. 2014. Retrieving Passages "
        "and Finding Answers. In Proceedings of the 2014 Australasian Document Computing Symposium "
        "(ADCS '14), pages 81-84."
    )
    files = (
        RawFile(name=PASSAGES_FILE, url=None, manual=_MANUAL.format(name=PASSAGES_FILE)),
        RawFile(name=QUERIES_FILE, url=None, manual=_MANUAL.format(name=QUERIES_FILE)),
    )
    # From the official files and Mass et al.: 82 queries, 80 with a relevant passage.
    counts = {"queries": 80, "queries_in_file": 82}
    protocol = cross_validated(
        100,
        inject_relevant=True,
        negatives_per_positive="all",
        metrics=("P@1", "MRR", "MAP"),
        options=WebAPOptions.defaults(),
    )
    options_model = WebAPOptions

    def parse(self, raw_dir: Path, options: dict[str, Any]) -> Prepared:
        """Parse ``gov2.query.json`` and ``grade.trectext_patched`` from ``raw_dir``.

        Args:
            raw_dir: folder with the two raw files.
            options: ``{"seed": int}`` (see the module docstring).

        Raises:
            FormatError: malformed input (see :func:`read_topics`, :func:`read_documents`), a
                repeated ``DOCNO`` or a ``TARGET_QID`` that is not in ``gov2.query.json``.

        Example:
            >>> WebAP().parse(Path("raw/webap"), {"seed": 1}).stats()["queries"]  # doctest: +SKIP
            80
        """
        seed = self.read_options(options).seed
        raw_dir = Path(raw_dir)
        for name in (QUERIES_FILE, PASSAGES_FILE):
            if not (raw_dir / name).is_file():
                raise DownloadError(
                    f"{raw_dir / name}: missing; run the download step for {self.name} first"
                )
        topics = read_topics(raw_dir / QUERIES_FILE)
        documents: list[JudgedDocument] = []
        seen: dict[str, int] = {}
        for doc in read_documents(raw_dir / PASSAGES_FILE):
            if doc.docno in seen:
                raise FormatError(
                    raw_dir / PASSAGES_FILE,
                    doc.line,
                    f"DOCNO {doc.docno} is repeated (first on line {seen[doc.docno]})",
                )
            if doc.qid not in topics:
                raise FormatError(
                    raw_dir / PASSAGES_FILE,
                    doc.line,
                    f"TARGET_QID {doc.qid} is not a query of {QUERIES_FILE}",
                )
            seen[doc.docno] = doc.line
            documents.append(doc)
        corpus, judged, stats = build_passages(documents, seed, raw_dir / PASSAGES_FILE)
        kept = [qid for qid in topics if any(grade > 0 for grade in judged.get(qid, {}).values())]
        queries = {qid: topics[qid] for qid in kept}
        qrels = {qid: judged[qid] for qid in kept}
        extra = {
            "documents": len(documents),
            "queries_in_file": len(topics),
            "dropped_queries": [qid for qid in topics if qid not in queries],
            **stats,
            "seed": seed,
        }
        return Prepared(
            corpus=corpus, queries=queries, qrels=qrels, split=None, pool=None, extra_stats=extra
        )
