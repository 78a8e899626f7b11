"""The passage corpus: Parquet (default) or JSONL with columns ``pid`` and ``text``."""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from reranklab.errors import FormatError
from reranklab.io.atomic import atomic_path

SCHEMA = pa.schema([("pid", pa.string()), ("text", pa.string())])


def write_corpus(
    path: str | os.PathLike[str], passages: Iterable[tuple[str, str]] | dict[str, str]
) -> int:
    """Write (pid, text) pairs; the format follows the suffix (.parquet or .jsonl). Returns the count."""
    items = passages.items() if isinstance(passages, dict) else passages
    pids: list[str] = []
    texts: list[str] = []
    for pid, text in items:
        pids.append(str(pid))
        texts.append(text)
    if len(set(pids)) != len(pids):
        raise ValueError(f"{path}: duplicate passage ids in corpus")
    target = Path(path)
    with atomic_path(target) as tmp:
        if target.suffix == ".jsonl":
            with open(tmp, "w", encoding="utf-8") as out:
                for pid, text in zip(pids, texts, strict=True):
                    out.write(json.dumps({"pid": pid, "text": text}, ensure_ascii=False) + "\n")
        else:
            pq.write_table(pa.table({"pid": pids, "text": texts}, schema=SCHEMA), tmp)
    return len(pids)


def read_corpus(
    path: str | os.PathLike[str], pids: Collection[str] | None = None
) -> dict[str, str]:
    """Read a corpus into ``{pid: text}`` (insertion order = file order).

    Args:
        path: ``corpus.parquet`` or ``corpus.jsonl``.
        pids: keep only these passages (what a job's pairs name), so a job over a few thousand
            candidates of MS MARCO or TREC-CAR holds those texts, not the collection's. Ids
            absent from the file are simply absent from the result: callers name them.

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "corpus.parquet"
        >>> _ = write_corpus(path, {"p1": "a cat", "p2": "a dog", "p7": "a bird"})
        >>> read_corpus(path, pids={"p1", "p7", "p9"})
        {'p1': 'a cat', 'p7': 'a bird'}
    """
    wanted = None if pids is None else set(pids)
    source = Path(path)
    if source.suffix == ".jsonl":
        corpus: dict[str, str] = {}
        with open(source, encoding="utf-8") as handle:
            for lineno, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                    pid = str(record["pid"])
                    if wanted is None or pid in wanted:
                        corpus[pid] = record["text"]
                except (json.JSONDecodeError, KeyError, TypeError) as exc:
                    raise FormatError(
                        path, lineno, f"expected a JSON object with 'pid' and 'text' ({exc})"
                    ) from None
        return corpus
    try:
        if wanted is None:
            table = pq.read_table(source, columns=["pid", "text"])
            return dict(
                zip(table.column("pid").to_pylist(), table.column("text").to_pylist(), strict=True)
            )
        corpus = {}
        value_set = pa.array(sorted(wanted), type=pa.string())
        parquet = pq.ParquetFile(source)
        missing = {"pid", "text"} - set(parquet.schema_arrow.names)
        if missing:
            raise KeyError(f"no column {', '.join(sorted(missing))}")
        # Row group by row group (iter_batches keeps growing buffers over a file): memory stays
        # that of one group, texts are read only for groups holding a wanted id, and only the
        # wanted rows' texts ever become Python strings.
        for group in range(parquet.num_row_groups):
            pid = parquet.read_row_group(group, columns=["pid"]).column(0)
            mask = pc.is_in(pid, value_set=value_set)
            if not pc.any(mask).as_py():
                continue
            text = parquet.read_row_group(group, columns=["text"]).column(0)
            corpus.update(
                zip(pid.filter(mask).to_pylist(), text.filter(mask).to_pylist(), strict=True)
            )
        return corpus
    except FileNotFoundError:
        raise
    except (pa.ArrowException, OSError, KeyError) as exc:
        # A truncated or garbled file fails in pyarrow's decompression ("Corrupt snappy
        # compressed data."): an OSError that names no file.
        raise not_a_corpus(path, exc) from None


def not_a_corpus(path: str | os.PathLike[str], exc: BaseException) -> FormatError:
    """The error of a corpus file pyarrow cannot read, naming the file."""
    return FormatError(
        path, None, f"not a readable corpus Parquet file with columns pid, text ({exc})"
    )


def _row_group(parquet: pq.ParquetFile, group: int, path: str | os.PathLike[str]) -> pa.Table:
    try:
        return parquet.read_row_group(group, columns=["pid", "text"])
    except (pa.ArrowException, OSError) as exc:
        raise not_a_corpus(path, exc) from None


def iter_corpus(
    path: str | os.PathLike[str], batch_size: int = 65_536
) -> Iterator[list[tuple[str, str]]]:
    """Stream a corpus as lists of at most ``batch_size`` (pid, text) pairs, in file order.

    Memory stays that of one Parquet row group plus one batch of Python strings, whatever the
    size of the collection (MS MARCO's 8.8 M passages, TREC-CAR's 30 M paragraphs).

    Args:
        path: ``corpus.parquet`` or ``corpus.jsonl``.
        batch_size: pairs per list (the last list may be shorter).

    Raises:
        FormatError: not a corpus file (the path; for JSONL, the line).
        ValueError: ``batch_size`` < 1.

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "corpus.parquet"
        >>> _ = write_corpus(path, {"p1": "a cat", "p2": "a dog", "p7": "a bird"})
        >>> list(iter_corpus(path, batch_size=2))
        [[('p1', 'a cat'), ('p2', 'a dog')], [('p7', 'a bird')]]
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    source = Path(path)
    if source.suffix == ".jsonl":
        yield from _iter_jsonl(source, batch_size)
        return
    try:
        parquet = pq.ParquetFile(source)
        missing = {"pid", "text"} - set(parquet.schema_arrow.names)
        if missing:
            raise KeyError(f"no column {', '.join(sorted(missing))}")
        # Row group by row group, as read_corpus: iter_batches keeps growing buffers over a file.
        groups = range(parquet.num_row_groups)
    except FileNotFoundError:
        raise
    except (pa.ArrowException, KeyError, OSError) as exc:
        raise not_a_corpus(path, exc) from None
    batch: list[tuple[str, str]] = []
    for group in groups:
        table = _row_group(parquet, group, path)
        for start in range(0, table.num_rows, batch_size):
            part = table.slice(start, batch_size)
            pairs = zip(
                part.column("pid").to_pylist(), part.column("text").to_pylist(), strict=True
            )
            for pid, text in pairs:
                batch.append((pid, text))
                if len(batch) == batch_size:
                    yield batch
                    batch = []
        del table
    if batch:
        yield batch


def _iter_jsonl(source: Path, batch_size: int) -> Iterator[list[tuple[str, str]]]:
    batch: list[tuple[str, str]] = []
    with open(source, encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                batch.append((str(record["pid"]), record["text"]))
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise FormatError(
                    source, lineno, f"expected a JSON object with 'pid' and 'text' ({exc})"
                ) from None
            if len(batch) == batch_size:
                yield batch
                batch = []
    if batch:
        yield batch
