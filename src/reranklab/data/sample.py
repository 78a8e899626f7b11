"""The ``sample`` dataset: a small non-factoid QA collection written for reranklab.

100 how/why questions over ten everyday topics, 1,000 passages and 321 graded judgements
(2 = full answer, 1 = partial answer, 0 = judged not relevant, mostly lexical traps). It ships
inside the package (``reranklab/data/sample_data/``, see its README), so the offline quick
start and the integration tests need no download: the raw files' URLs are ``package:``
resources that the download step copies into ``raw/``.

Raw format (our own, no header lines)::

    questions.tsv   qid<TAB>question
    passages.tsv    pid<TAB>passage text
    qrels.txt       qid 0 pid grade          (TREC qrels, grades 0-2)
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from reranklab.data._protocols import cross_validated
from reranklab.data._text_files import text_lines
from reranklab.data.base import Dataset, Prepared, RawFile
from reranklab.data.registry import register_dataset
from reranklab.errors import FormatError
from reranklab.io import Qrels
from reranklab.io.trec import qrels_lines

RESOURCE_PACKAGE = "reranklab.data.sample_data"
QUESTIONS = "questions.tsv"
PASSAGES = "passages.tsv"
QRELS = "qrels.txt"
GRADES = (0, 1, 2)


def read_texts(path: str | Path, kind: str) -> dict[str, str]:
    """Read an ``id<TAB>text`` file of the sample dataset, keeping file order.

    Args:
        path: ``questions.tsv`` or ``passages.tsv``.
        kind: what a record is (``question`` or ``passage``), for the error messages.

    Returns:
        ``{id: text}`` with surrounding whitespace stripped from each text.

    Raises:
        FormatError: a line without exactly one tab, an empty or space-containing id, an empty
            text, or an id seen before; the error names the file and line.

    Example:
        >>> queries = read_texts(raw_dir / "questions.tsv", "question")  # doctest: +SKIP
        >>> queries["S001"]  # doctest: +SKIP
        'How do I keep my cast iron skillet from rusting?'
    """
    path = Path(path)
    records: dict[str, str] = {}
    first_seen: dict[str, int] = {}
    for lineno, line in text_lines(path):
        parts = line.split("\t")
        if len(parts) != 2:
            raise FormatError(
                path,
                lineno,
                f"expected 'id<TAB>{kind} text', got {len(parts)} tab-separated fields",
            )
        record_id, text = parts[0].strip(), parts[1].strip()
        if not record_id or any(ch.isspace() for ch in record_id):
            raise FormatError(path, lineno, f"{kind} id {parts[0]!r} is empty or contains spaces")
        if not text:
            raise FormatError(path, lineno, f"empty {kind} text for id {record_id!r}")
        if record_id in records:
            raise FormatError(
                path,
                lineno,
                f"duplicate {kind} id {record_id!r} (first on line {first_seen[record_id]})",
            )
        records[record_id] = text
        first_seen[record_id] = lineno
    return records


def read_judgements(path: str | Path, queries: dict[str, str], corpus: dict[str, str]) -> Qrels:
    """Read the sample dataset's qrels and check them against its questions and passages.

    Args:
        path: ``qrels.txt`` (``qid 0 pid grade`` per line, any whitespace).
        queries: the questions, to check every judged qid exists.
        corpus: the passages, to check every judged pid exists.

    Returns:
        ``{qid: {pid: grade}}`` with integer grades in 0-2.

    Raises:
        FormatError: a line without four fields, a grade that is not an integer in 0-2, a qid or
            pid that is not in the questions or passages, or a pair judged twice.

    Example:
        >>> qrels = read_judgements(raw_dir / "qrels.txt", queries, corpus)  # doctest: +SKIP
        >>> sorted(set(qrels["S001"].values()))  # doctest: +SKIP
        [0, 1, 2]
    """
    path = Path(path)
    qrels: Qrels = {}
    for lineno, qid, _, pid, grade in qrels_lines(path):
        if grade not in GRADES:
            raise FormatError(
                path, lineno, f"relevance grade {grade} is outside {GRADES[0]}-{GRADES[-1]}"
            )
        if qid not in queries:
            raise FormatError(path, lineno, f"question id {qid!r} is not in {QUESTIONS}")
        if pid not in corpus:
            raise FormatError(path, lineno, f"passage id {pid!r} is not in {PASSAGES}")
        judged = qrels.setdefault(qid, {})
        if pid in judged:
            raise FormatError(path, lineno, f"pair ({qid}, {pid}) is judged twice")
        judged[pid] = grade
    return qrels


def words() -> list[str]:
    """Every word of the shipped questions and passages, lower-cased, in file order: the
    vocabulary a tiny test encoder needs to hold them whole (the tests' and the soak's).

    Example:
        >>> len(words()) > 1000, words()[0] == words()[0].lower()
        (True, True)
    """
    from importlib.resources import files

    data = files(RESOURCE_PACKAGE)
    return [
        word
        for name in (QUESTIONS, PASSAGES)
        for line in (data / name).read_text(encoding="utf-8").splitlines()
        for word in line.split("\t", 1)[-1].lower().split()
    ]


def _packaged(name: str, sha256: str, size: int) -> RawFile:
    return RawFile(name=name, url=f"package:{RESOURCE_PACKAGE}/{name}", sha256=sha256, size=size)


@register_dataset
class SampleDataset(Dataset):
    """reranklab's own small non-factoid QA collection (see ``sample_data/README.md``)."""

    name = "sample"
    title = "reranklab sample: non-factoid QA, 100 questions, 1,000 passages, graded relevance"
    source = "Written for reranklab and shipped with it (reranklab/data/sample_data/README.md)"
    licence = "CC BY 4.0"
    citation = (
        "reranklab sample: a small non-factoid QA collection with graded relevance, "
        "written for reranklab (CC BY 4.0)."
    )
    files = (
        _packaged(
            QUESTIONS, "b4b58e96b8473dcd8e2adec35ea6a217eecaa5eda8c36a1f43ce67b1141f655d", 5439
        ),
        _packaged(
            PASSAGES, "0898ecd3d587a33ff88d2f25b3afac72d9d6a9086067e9651115056ab109cdc4", 237419
        ),
        _packaged(QRELS, "a9eaa3db71fa686f14469c876390ed959ad1f213a74b7f162b2fc9f9d4acc832", 4815),
    )
    # Depth 30 keeps the quick start fast on a CPU while BM25 still misses about one relevant
    # passage in seven, so re-ranking has real work to do (and nothing is injected).
    protocol = cross_validated(
        30,
        inject_relevant=False,
        negatives_per_positive=3,
        metrics=("P@1", "MAP", "MRR", "nDCG@10"),
    )

    def parse(self, raw_dir: Path, options: dict[str, Any]) -> Prepared:
        """Read ``questions.tsv``, ``passages.tsv`` and ``qrels.txt`` from ``raw_dir``.

        Args:
            raw_dir: folder holding the three raw files.
            options: dataset options; the sample dataset has none.

        Returns:
            The canonical form, with no predefined split and no own candidate pool.

        Example:
            >>> prepared = SampleDataset().parse(Path("data/sample/raw"), {})  # doctest: +SKIP
            >>> len(prepared.queries), len(prepared.corpus)  # doctest: +SKIP
            (100, 1000)
        """
        self.read_options(options)
        raw_dir = Path(raw_dir)
        queries = read_texts(raw_dir / QUESTIONS, "question")
        corpus = read_texts(raw_dir / PASSAGES, "passage")
        qrels = read_judgements(raw_dir / QRELS, queries, corpus)
        grades = Counter(grade for judged in qrels.values() for grade in judged.values())
        return Prepared(
            corpus=corpus,
            queries=queries,
            qrels=qrels,
            split=None,
            pool=None,
            extra_stats={"judgements_by_grade": {str(g): grades.get(g, 0) for g in GRADES}},
        )
