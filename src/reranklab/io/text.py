"""Text files line by line, each line decoded on its own: a bad byte is named with its file and line.

The canonical files (runs, qrels, queries) and the datasets' raw files (``reranklab.data``) are
read through :func:`text_lines`; readers that take lines from a handle of their own decode each
with :func:`decode_line`, so every reader says the same thing about the same bad byte.
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Iterator
from typing import IO

from reranklab.errors import FormatError


def open_binary(path: str | os.PathLike[str]) -> IO[bytes]:
    """Open ``path`` for binary reading, gunzipping it when its content is gzip (by magic bytes).

    Example:
        >>> import gzip, tempfile
        >>> from pathlib import Path
        >>> path = Path(tempfile.mkdtemp()) / "vocabulary"  # gzipped, without a .gz suffix
        >>> _ = path.write_bytes(gzip.compress(b"idx_17904\\trating/result\\n"))
        >>> with open_binary(path) as handle:
        ...     handle.readline()
        b'idx_17904\\trating/result\\n'
    """
    with open(path, "rb") as probe:
        gzipped = probe.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rb") if gzipped else open(path, "rb")


def decode_line(raw: bytes, path: str | os.PathLike[str], lineno: int) -> str:
    """``raw`` decoded as UTF-8, or a :class:`~reranklab.errors.FormatError` naming the file,
    the line, the byte and its column.

    Example:
        >>> decode_line("caf\\xe9\\n".encode("latin-1"), "run.txt", 2)
        Traceback (most recent call last):
        ...
        reranklab.errors.FormatError: run.txt:2: not valid UTF-8 (byte 0xe9 at column 4: invalid continuation byte; a binary file, or text in another encoding such as latin-1: convert it with iconv -f <encoding> -t utf-8)
    """
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(
            path,
            lineno,
            f"not valid UTF-8 (byte {raw[exc.start]:#04x} at column {exc.start + 1}: "
            f"{exc.reason}; a binary file, or text in another encoding such as latin-1: "
            "convert it with iconv -f <encoding> -t utf-8)",
        ) from None


def text_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of a UTF-8 text file (gzip or plain), without the line ending.

    Blank lines are skipped and a byte-order mark on line 1 is dropped. The file is read as
    bytes and each line decoded on its own (:func:`decode_line`), so a binary file or one in
    another encoding is an error naming the exact line, not a ``UnicodeDecodeError`` from
    somewhere in a read-ahead buffer.

    Raises:
        FormatError: a line that is not valid UTF-8, or a gzip file that is cut short.

    Example:
        >>> import tempfile
        >>> from pathlib import Path
        >>> path = Path(tempfile.mkdtemp()) / "queries.txt"
        >>> _ = path.write_bytes("\\ufeff3097310\\tWhat causes knee pain?\\r\\n\\n42\\tWhy?\\n".encode())
        >>> list(text_lines(path))
        [(1, '3097310\\tWhat causes knee pain?'), (3, '42\\tWhy?')]
    """
    lineno = 0
    try:
        with open_binary(path) as handle:
            for lineno, raw in enumerate(handle, start=1):
                line = decode_line(raw, path, lineno)
                if lineno == 1:
                    line = line.removeprefix("\ufeff")
                line = line.rstrip("\n").rstrip("\r")
                if line.strip():
                    yield lineno, line
    except (EOFError, gzip.BadGzipFile) as exc:
        raise FormatError(
            path, lineno + 1, f"compressed file is damaged or cut short ({exc})"
        ) from None
