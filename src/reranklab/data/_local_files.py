"""Readers of a collection of one's own (``local.<name>``): queries, passages, qrels, split, run.

Each reader takes the formats people already have: TSV ``id<TAB>text`` (as MS MARCO and the
TREC topics), JSONL as Pyserini's JsonCollection (``{"id", "contents"}``) and BEIR
(``{"_id", "title", "text"}``) write it, and Parquet; any of them gzipped. The format is told by
the file name (``.tsv``/``.txt``, ``.jsonl``/``.json``, ``.parquet``; ``.gz`` after it). Every
line is decoded on its own (:func:`reranklab.io.text.text_lines`), and every problem is ONE
:class:`~reranklab.errors.FormatError` naming the file, the line (a Parquet file: the row) and
what is wrong.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from reranklab.data._text_files import split_id_text
from reranklab.errors import FormatError
from reranklab.io import Qrels, Run
from reranklab.io.text import decode_line, open_binary, text_lines
from reranklab.io.trec import add_score, qrels_lines

QUERY_IDS = ("id", "_id", "qid", "query_id")
QUERY_TEXTS = ("text", "query", "contents")
PASSAGE_IDS = ("id", "docid", "_id", "pid", "doc_id")
PASSAGE_TEXTS = ("contents", "text", "passage")
SPLIT_NAMES = ("train", "dev", "test")
_PLURAL = {"query": "queries", "passage": "passages"}


def file_format(path: str | os.PathLike[str]) -> str:
    """``tsv``, ``jsonl`` or ``parquet``, told by the file name (a ``.gz`` suffix is skipped).

    Raises:
        FormatError: a name with none of these suffixes.

    Example:
        >>> file_format("corpus/passages.jsonl.gz"), file_format("topics.txt")
        ('jsonl', 'tsv')
    """
    suffixes = [s.lower() for s in Path(path).suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes.pop()
    last = suffixes[-1] if suffixes else ""
    kinds = {".tsv": "tsv", ".txt": "tsv", ".jsonl": "jsonl", ".json": "jsonl"}
    kinds[".parquet"] = "parquet"
    if last not in kinds:
        raise FormatError(
            path,
            None,
            f"cannot tell the format from the name: use .tsv or .txt (id<TAB>text), .jsonl, or .parquet (optionally .gz), not {last or 'no suffix'!r}",
        )
    return kinds[last]


def _tsv(path: Path, kind: str, ids: Sequence[str], texts: Sequence[str]) -> Iterator[Any]:
    # (line, id, text); a first line that is a header naming the columns (id<TAB>text) is skipped.
    for lineno, line in text_lines(path):
        if lineno == 1 and tuple(line.lower().split("\t")) in {(i, t) for i in ids for t in texts}:
            continue
        record_id, text = split_id_text(path, lineno, line, kind)
        yield lineno, record_id, text


def _pick(
    record: Mapping[str, Any], keys: Sequence[str], path: Path, lineno: int, what: str
) -> Any:
    for key in keys:
        if key in record:
            return record[key]
    raise FormatError(
        path,
        lineno,
        f"no {what} field: expected one of {', '.join(repr(k) for k in keys)}, found {', '.join(repr(k) for k in record) or 'none'}",
    )


def _jsonl(path: Path, kind: str, ids: Sequence[str], texts: Sequence[str]) -> Iterator[Any]:
    # (line, id, text) of a JSON Lines file; BEIR's title goes before the passage text.
    for lineno, line in text_lines(path):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise FormatError(path, lineno, f"not a JSON object ({exc.msg})") from None
        if not isinstance(record, dict):
            raise FormatError(path, lineno, f"expected a JSON object, got {type(record).__name__}")
        record_id = _pick(record, ids, path, lineno, f"{kind} id")
        text = _pick(record, texts, path, lineno, f"{kind} text")
        if not isinstance(record_id, str | int) or isinstance(record_id, bool):
            raise FormatError(path, lineno, f"{kind} id {record_id!r} is not a string or number")
        if not isinstance(text, str):
            raise FormatError(path, lineno, f"{kind} text of {record_id!r} is not a string")
        title = record.get("title")
        if kind == "passage" and isinstance(title, str) and title.strip():
            text = f"{title.strip()} {text}"
        yield lineno, str(record_id), text


def _parquet(path: Path, kind: str, ids: Sequence[str], texts: Sequence[str]) -> Iterator[Any]:
    # (row, id, text) of a Parquet file, row group by row group (rows counted from 1).
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
        names = parquet.schema_arrow.names
    except (pa.ArrowException, OSError) as exc:
        raise FormatError(path, None, f"not a readable Parquet file ({exc})") from None
    id_col = next((c for c in ids if c in names), None)
    text_col = next((c for c in texts if c in names), None)
    if id_col is None or text_col is None:
        missing = "an id column" if id_col is None else "a text column"
        wanted = ids if id_col is None else texts
        raise FormatError(
            path,
            None,
            f"wrong columns: {missing} ({', '.join(wanted)}) is missing; the file has {', '.join(names)}",
        )
    row = 0
    for group in range(parquet.num_row_groups):
        try:
            table = parquet.read_row_group(group, columns=[id_col, text_col])
        except (pa.ArrowException, OSError) as exc:
            raise FormatError(path, row + 1, f"row group {group} is unreadable ({exc})") from None
        for record_id, text in zip(
            table.column(0).to_pylist(), table.column(1).to_pylist(), strict=True
        ):
            row += 1
            if record_id is None or not isinstance(text, str):
                raise FormatError(path, row, f"row {row}: a null {kind} id or text")
            record_id = str(record_id)
            if not record_id or any(ch.isspace() for ch in record_id):
                raise FormatError(
                    path, row, f"{kind} id {record_id!r} is empty or contains whitespace"
                )
            yield row, record_id, text


def _records(path: Path, kind: str, ids: Sequence[str], texts: Sequence[str]) -> dict[str, str]:
    """``{id: text}`` of a queries or passages file in any format, checked (see the module)."""
    if not path.is_file():
        raise FormatError(path, None, f"no such {_PLURAL[kind]} file")
    reader = {"tsv": _tsv, "jsonl": _jsonl, "parquet": _parquet}[file_format(path)]
    records: dict[str, str] = {}
    first: dict[str, int] = {}
    for lineno, record_id, text in reader(path, kind, ids, texts):
        if not record_id or any(ch.isspace() for ch in record_id):
            raise FormatError(
                path, lineno, f"{kind} id {record_id!r} is empty or contains whitespace"
            )
        if not text.strip():
            raise FormatError(path, lineno, f"empty {kind} text for id {record_id!r}")
        if record_id in records:
            raise FormatError(
                path,
                lineno,
                f"duplicate {kind} id {record_id!r} (first on line {first[record_id]})",
            )
        records[record_id] = text.strip()
        first[record_id] = lineno
    if not records:
        raise FormatError(path, None, f"no {_PLURAL[kind]} in the file")
    return records


def read_local_queries(path: str | os.PathLike[str]) -> dict[str, str]:
    """Queries of a TSV, JSONL or Parquet file (see the module docstring), in file order.

    Raises:
        FormatError: a missing file, a line without a tab or an id field, an empty text, a
            duplicate id, bad UTF-8, or no query at all (the file and line).

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "queries.jsonl"
        >>> _ = path.write_text('{"_id": "q1", "text": "why do cats purr"}\\n')
        >>> read_local_queries(path)
        {'q1': 'why do cats purr'}
    """
    return _records(Path(path), "query", QUERY_IDS, QUERY_TEXTS)


def read_local_passages(path: str | os.PathLike[str]) -> dict[str, str]:
    """Passages of a TSV, JSONL (Pyserini, BEIR) or Parquet file, in file order.

    Raises:
        FormatError: as :func:`read_local_queries`, or Parquet without an id or text column.

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "corpus.jsonl"
        >>> _ = path.write_text('{"_id": "d1", "title": "Cats", "text": "Cats purr when content."}\\n')
        >>> read_local_passages(path)
        {'d1': 'Cats Cats purr when content.'}
    """
    return _records(Path(path), "passage", PASSAGE_IDS, PASSAGE_TEXTS)


def read_local_qrels(
    path: str | os.PathLike[str], queries: Mapping[str, str], passages: Mapping[str, str]
) -> Qrels:
    """TREC qrels (``qid iteration docid grade``), every judged query and passage checked.

    Raises:
        FormatError: a line without 4 fields, a grade that is not an integer, a query or passage
            that is not in the collection, or a pair judged twice (the file and line).

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "qrels.txt"
        >>> _ = path.write_text("q1 0 d1 1\\nq1 0 d9 1\\n")
        >>> read_local_qrels(path, {"q1": "?"}, {"d1": "."})
        Traceback (most recent call last):
        ...
        reranklab.errors.FormatError: .../qrels.txt:2: passage id 'd9' is not in the passages file
    """
    path = Path(path)
    if not path.is_file():
        raise FormatError(path, None, "no such qrels file")
    qrels: Qrels = {}
    for lineno, qid, _, pid, grade in qrels_lines(path):
        if qid not in queries:
            raise FormatError(path, lineno, f"query id {qid!r} is not in the queries file")
        if pid not in passages:
            raise FormatError(path, lineno, f"passage id {pid!r} is not in the passages file")
        judged = qrels.setdefault(qid, {})
        if pid in judged:
            raise FormatError(path, lineno, f"pair ({qid}, {pid}) is judged twice")
        judged[pid] = grade
    if not qrels:
        raise FormatError(path, None, "no judgements in the file")
    return qrels


def read_local_split(
    path: str | os.PathLike[str], queries: Mapping[str, str]
) -> dict[str, list[str]]:
    """A predefined split: ``{"train": [...], "dev": [...], "test": [...]}`` or a folds file
    (:mod:`reranklab.io.folds`) with one fold; every query id checked.

    Raises:
        FormatError: not JSON, another shape, a folds file with several folds, or a query id
            that is not in the collection (the file, and the line for bad JSON).

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "split.json"
        >>> _ = path.write_text('{"train": ["q1"], "test": ["q2"]}')
        >>> read_local_split(path, {"q1": "a", "q2": "b"})
        {'train': ['q1'], 'dev': [], 'test': ['q2']}
    """
    path = Path(path)
    if not path.is_file():
        raise FormatError(path, None, "no such split file")
    with open_binary(path) as handle:  # every line decoded on its own: a bad byte names its line
        text = "".join(decode_line(raw, path, i) for i, raw in enumerate(handle, start=1))
    try:
        data = json.loads(text.removeprefix("\ufeff"))
    except json.JSONDecodeError as exc:
        raise FormatError(path, exc.lineno, f"not JSON ({exc.msg})") from None
    if isinstance(data, dict) and "folds" in data:
        folds = data["folds"]
        if not isinstance(folds, list) or len(folds) != 1:
            count = len(folds) if isinstance(folds, list) else "no list of"
            raise FormatError(
                path,
                None,
                f"a folds file with {count} folds: a predefined split is one fold (for cross-validation leave splits out and set protocol.<name>.folds)",
            )
        data = folds[0]
    if not isinstance(data, dict):
        raise FormatError(path, None, 'expected a JSON object {"train": [...], "test": [...]}')
    data = {k: v for k, v in data.items() if k != "name"}
    unknown = sorted(set(data) - set(SPLIT_NAMES))
    if unknown or "train" not in data or "test" not in data:
        raise FormatError(
            path,
            None,
            f"expected the keys train, test and optionally dev, got {', '.join(sorted(data)) or 'none'}",
        )
    split: dict[str, list[str]] = {}
    for name in SPLIT_NAMES:
        qids = data.get(name, [])
        if not isinstance(qids, list):
            raise FormatError(path, None, f"{name}: expected a list of query ids")
        for i, qid in enumerate(qids):
            if str(qid) not in queries:
                raise FormatError(
                    path, None, f"{name}[{i}]: query id {qid!r} is not in the queries file"
                )
        split[name] = [str(qid) for qid in qids]
    return split


def read_local_run(
    path: str | os.PathLike[str], queries: Mapping[str, str], passages: Mapping[str, str]
) -> Run:
    """A first-stage TREC run (``qid Q0 docid rank score tag``), its ids checked.

    Raises:
        FormatError: a line without 6 fields, a score that is not a number, a query or passage
            that is not in the collection, or a pair listed twice (the file and line).

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "bm25.run"
        >>> _ = path.write_text("q1 Q0 d1 1 12.5 bm25\\n")
        >>> read_local_run(path, {"q1": "?"}, {"d1": "."})
        {'q1': {'d1': 12.5}}
    """
    path = Path(path)
    if not path.is_file():
        raise FormatError(path, None, "no such run file")
    run: Run = {}
    for lineno, line in text_lines(path):
        parts = line.split()
        if len(parts) != 6:
            raise FormatError(
                path,
                lineno,
                f"wrong columns: expected 6 fields 'qid Q0 docid rank score tag' (TREC run), got {len(parts)}",
            )
        qid, _, pid, _, score, _ = parts
        try:
            value = float(score)
        except ValueError:
            raise FormatError(path, lineno, f"score {score!r} is not a number") from None
        if value != value:
            raise FormatError(path, lineno, "score is NaN")
        if qid not in queries:
            raise FormatError(path, lineno, f"query id {qid!r} is not in the queries file")
        if pid not in passages:
            raise FormatError(path, lineno, f"passage id {pid!r} is not in the passages file")
        add_score(run, path, lineno, qid, pid, value)
    return run
