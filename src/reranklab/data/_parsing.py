"""Readers shared by the dataset parsers, each keeping line numbers for error messages.

- :func:`read_text`: a whole (optionally gzipped) UTF-8 file as text;
- :func:`iter_json_array` / :func:`iter_json_member_array`: the items of a JSON array with the
  line each item starts on (``json.load`` forgets positions, so a bad item could not be located);
- :func:`iter_xml_elements`: complete XML subtrees of chosen tags, streamed with expat, each
  element carrying its line.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from xml.parsers import expat

from reranklab.errors import FormatError

GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 1 << 20
_WHITESPACE = " \t\n\r"


def squash(text: str | None) -> str:
    """Collapse runs of whitespace to single spaces and strip the ends.

    Example:
        >>> squash("  a\\n  b\\tc ")
        'a b c'
    """
    return " ".join(text.split()) if text else ""


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """The bytes of ``path``, decompressed when they start with the gzip magic number."""
    with open(path, "rb") as handle:
        data = handle.read()
    if data.startswith(GZIP_MAGIC):
        try:
            return gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise FormatError(path, None, f"not a readable gzip file: {exc}") from None
    return data


def read_text(path: str | os.PathLike[str]) -> str:
    """Decode a (possibly gzipped) file as UTF-8; a bad byte is reported with its line.

    Example:
        >>> import gzip, tempfile
        >>> from pathlib import Path
        >>> path = Path(tempfile.mkdtemp()) / "nfL6.json.gz"
        >>> _ = path.write_bytes(gzip.compress('[{"question": "¿why?"}]'.encode()))
        >>> read_text(path)
        '[{"question": "¿why?"}]'
    """
    data = read_bytes(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise FormatError(
            path, line, f"not valid UTF-8 ({exc.reason} at byte {exc.start})"
        ) from None


# -- JSON --------------------------------------------------------------------------------------


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WHITESPACE:
        pos += 1
    return pos


class _Lines:
    """Line numbers of increasing offsets of one text, counted incrementally (linear overall)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.line = 1

    def at(self, offset: int) -> int:
        if offset < self.pos:
            return self.text.count("\n", 0, offset) + 1
        self.line += self.text.count("\n", self.pos, offset)
        self.pos = offset
        return self.line


def _decode(decoder: json.JSONDecoder, text: str, pos: int, path: Any) -> tuple[Any, int]:
    try:
        return decoder.raw_decode(text, pos)
    except json.JSONDecodeError as exc:
        raise FormatError(
            path, exc.lineno, f"invalid JSON: {exc.msg} (column {exc.colno})"
        ) from None


def _array_items(text: str, pos: int, path: Any, lines: _Lines) -> Iterator[tuple[int, Any]]:
    """Items of the array whose ``[`` is at ``pos``; ``lines.pos`` ends after its ``]``."""
    decoder = json.JSONDecoder()
    if text[pos : pos + 1] != "[":
        raise FormatError(path, lines.at(pos), "expected a JSON array ('[')")
    pos = _skip(text, pos + 1)
    if text[pos : pos + 1] == "]":
        lines.at(pos + 1)
        return
    while True:
        line = lines.at(pos)
        item, pos = _decode(decoder, text, pos, path)
        yield line, item
        pos = _skip(text, pos)
        char = text[pos : pos + 1]
        if char == "]":
            lines.at(pos + 1)
            return
        if not char:
            raise FormatError(
                path,
                lines.at(len(text.rstrip())),
                "the file ends inside a JSON array (no closing ']')",
            )
        if char != ",":
            raise FormatError(path, lines.at(pos), "expected ',' or ']' after an array item")
        pos = _skip(text, pos + 1)


def iter_json_array(text: str, path: str | os.PathLike[str]) -> Iterator[tuple[int, Any]]:
    """``(line, item)`` for each item of the JSON array that is the whole of ``text``.

    Raises:
        FormatError: (path, line) for invalid JSON, a top level that is not an array, or
            anything after the array.

    Example:
        >>> list(iter_json_array('[\\n {"a": 1},\\n {"a": 2}\\n]', "x.json"))
        [(2, {'a': 1}), (3, {'a': 2})]
    """
    lines = _Lines(text)
    yield from _array_items(text, _skip(text, 0), path, lines)
    end = _skip(text, lines.pos)
    if end < len(text):
        raise FormatError(path, lines.at(end), "unexpected data after the JSON array")


def iter_json_member_array(
    text: str, path: str | os.PathLike[str], key: str
) -> Iterator[tuple[int, Any]]:
    """``(line, item)`` for each item of the array ``text[key]``, ``text`` being one JSON object.

    Raises:
        FormatError: (path, line) for invalid JSON, a top level that is not an object, a
            missing ``key``, or a ``key`` whose value is not an array.

    Example:
        >>> list(iter_json_member_array('{"n": 1,\\n "queries": [\\n 7]}', "q.json", "queries"))
        [(3, 7)]
    """
    decoder = json.JSONDecoder()
    lines = _Lines(text)
    pos = _skip(text, 0)
    if text[pos : pos + 1] != "{":
        raise FormatError(path, lines.at(pos), "expected a JSON object ('{')")
    pos = _skip(text, pos + 1)
    found = False
    while text[pos : pos + 1] != "}":
        name, pos = _decode(decoder, text, pos, path)
        if not isinstance(name, str):
            raise FormatError(path, lines.at(pos), "expected a string key")
        pos = _skip(text, pos)
        if text[pos : pos + 1] != ":":
            raise FormatError(path, lines.at(pos), "expected ':' after a key")
        pos = _skip(text, pos + 1)
        if name == key:
            found = True
            yield from _array_items(text, pos, path, lines)
            pos = lines.pos
        else:
            _, pos = _decode(decoder, text, pos, path)
        pos = _skip(text, pos)
        if text[pos : pos + 1] == ",":
            pos = _skip(text, pos + 1)
        elif text[pos : pos + 1] != "}":
            raise FormatError(path, lines.at(pos), "expected ',' or '}' in an object")
    if not found:
        raise FormatError(path, lines.at(pos), f"no {key!r} array in the top-level object")


# -- XML ---------------------------------------------------------------------------------------


@dataclass
class Element:
    """An XML element with the line of its start tag; ``text`` is its own character data."""

    tag: str
    attrs: dict[str, str]
    line: int
    children: list[Element] = field(default_factory=list)
    parts: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def find(self, tag: str) -> Element | None:
        return next((child for child in self.children if child.tag == tag), None)

    def findall(self, tag: str) -> list[Element]:
        return [child for child in self.children if child.tag == tag]


def iter_xml_elements(path: str | os.PathLike[str], tags: set[str]) -> Iterator[Element]:
    """Each complete element whose tag is in ``tags`` (outermost ones), in document order.

    Only those elements and their descendants are kept in memory, so large files stream. The
    file may be gzipped. Well-formedness errors are FormatErrors with expat's line.

    Args:
        path: the XML file.
        tags: names of the elements to yield (e.g. ``{"DOC"}``).

    Example:
        >>> import tempfile
        >>> from pathlib import Path
        >>> path = Path(tempfile.mkdtemp()) / "dev.xml"
        >>> _ = path.write_text('<root>\\n<Thread THREAD_SEQUENCE="Q1_R1"/>\\n<Thread THREAD_SEQUENCE="Q2_R4"/>\\n</root>')
        >>> for thread in iter_xml_elements(path, {"Thread"}):
        ...     print(thread.line, thread.attrs["THREAD_SEQUENCE"])
        2 Q1_R1
        3 Q2_R4
    """
    parser = expat.ParserCreate()
    parser.buffer_text = True
    stack: list[Element | None] = []
    done: list[Element] = []

    def start(tag: str, attrs: dict[str, str]) -> None:
        parent = stack[-1] if stack else None
        if parent is None and tag not in tags:
            stack.append(None)
            return
        element = Element(tag, dict(attrs), parser.CurrentLineNumber)
        if parent is not None:
            parent.children.append(element)
        stack.append(element)

    def end(tag: str) -> None:
        element = stack.pop()
        if element is not None and (not stack or stack[-1] is None):
            done.append(element)

    def chars(data: str) -> None:
        if stack and stack[-1] is not None:
            stack[-1].parts.append(data)

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = chars
    data = read_bytes(path)
    try:
        for offset in range(0, max(len(data), 1), _CHUNK):
            parser.Parse(data[offset : offset + _CHUNK], offset + _CHUNK >= len(data))
            yield from done
            done.clear()
    except expat.ExpatError as exc:
        raise FormatError(
            path,
            exc.lineno,
            f"malformed XML: {expat.ErrorString(exc.code)} (column {exc.offset + 1})",
        ) from None
