"""Numbered lines of a UTF-8 text file, a bad byte reported with its file and line."""

from __future__ import annotations

import os
from collections.abc import Iterator

from reranklab.errors import FormatError


def numbered_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, str]]:
    """Yield ``(line number, line)`` of a UTF-8 text file (1-based; the line keeps its end).

    The file is read as bytes and each line decoded on its own, so a binary file or one in
    another encoding (latin-1, UTF-16) is a :class:`~reranklab.errors.FormatError` naming the
    exact line and byte, not a ``UnicodeDecodeError`` from somewhere in a read-ahead buffer.

    Args:
        path: the file.

    Example:
        >>> import tempfile
        >>> from pathlib import Path
        >>> path = Path(tempfile.mkdtemp()) / "run.txt"
        >>> _ = path.write_bytes("q1 Q0 d1 1 2.0 t\\nq1 Q0 caf\\xe9 2 1.0 t\\n".encode("latin-1"))
        >>> next(numbered_lines(path))
        (1, 'q1 Q0 d1 1 2.0 t\\n')
        >>> list(numbered_lines(path))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        reranklab.errors.FormatError: ...run.txt:2: not UTF-8 text: byte 0xe9 at column 10 ...
    """
    with open(path, "rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            try:
                yield lineno, raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise FormatError(
                    path,
                    lineno,
                    f"not UTF-8 text: byte {raw[exc.start]:#04x} at column {exc.start + 1} "
                    "(a binary file, or text in another encoding such as latin-1: "
                    "convert it with iconv -f <encoding> -t utf-8)",
                ) from None
