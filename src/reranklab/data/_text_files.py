"""Line readers of the TREC-style raw files: ``id<TAB>text`` files and TREC qrels, read with
:func:`reranklab.io.text.text_lines` (UTF-8, plain or gzip); every error names the file and line.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from reranklab.errors import FormatError
from reranklab.io import Qrels
from reranklab.io.text import text_lines
from reranklab.io.trec import qrels_lines


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


def read_id_texts(
    path: str | Path, kind: str, keep: Callable[[str], bool] | None = None
) -> dict[str, str]:
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
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "topics.txt"
        >>> _ = path.write_text("156493\\tdo goldfish grow\\n1110199\\twhat is wifi vs bluetooth\\n")
        >>> read_id_texts(path, "query")["156493"]
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
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "train.qrel"
        >>> _ = path.write_text("q1 Q0 p1 4\\nq1 Q0 p2 1\\nq2 U0 p1 3\\n")
        >>> read = read_trec_qrels(path, grades=range(1, 5))
        >>> read.judgements, read.qrels["q1"]
        (3, {'p1': 4, 'p2': 1})
    """
    allowed = None if grades is None else set(grades)
    qrels: Qrels = {}
    iterations: Counter = Counter()
    seen_grades: Counter = Counter()
    for lineno, qid, iteration, docid, grade in qrels_lines(path):
        if allowed is not None and grade not in allowed:
            raise FormatError(
                path, lineno, f"relevance grade {grade} is not one of {sorted(allowed)}"
            )
        if keep is not None and not keep(qid):
            continue
        judged = qrels.setdefault(qid, {})
        if docid in judged:
            raise FormatError(path, lineno, f"pair ({qid}, {docid}) is judged twice")
        judged[docid] = grade
        iterations[iteration] += 1
        seen_grades[grade] += 1
    return QrelsFile(qrels, iterations, seen_grades)
