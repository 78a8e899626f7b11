"""Queries as ``qid<TAB>text`` TSV without a header (the MS MARCO / ir_datasets convention)."""

from __future__ import annotations

import os

from reranklab.errors import FormatError
from reranklab.io.atomic import atomic_path
from reranklab.io.text import text_lines


def _clean(text: str) -> str:
    # Tabs and newlines inside a text would break the one-line-per-query format.
    return " ".join(text.split())


class Texts(dict[str, str]):
    """``{id: text}`` as read from ``path``: a check made later (a query a job needs has no text)
    can name the file."""

    path: str | None = None


def read_queries(path: str | os.PathLike[str]) -> dict[str, str]:
    queries = Texts()
    queries.path = str(path)
    for lineno, line in text_lines(path):
        parts = line.split("\t")
        if len(parts) != 2:
            raise FormatError(
                path, lineno, f"expected 'qid<TAB>text', got {len(parts)} tab-separated fields"
            )
        qid, text = parts
        if qid in queries:
            raise FormatError(path, lineno, f"duplicate query id {qid!r}")
        queries[qid] = text
    return queries


def write_queries(path: str | os.PathLike[str], queries: dict[str, str]) -> None:
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as out:
        for qid, text in queries.items():
            if "\t" in qid or "\n" in qid:
                raise ValueError(f"query id {qid!r} contains a tab or newline")
            out.write(f"{qid}\t{_clean(text)}\n")
