"""Load pickles from the internet without running their code.

A pickle is a small program: its ``GLOBAL`` / ``STACK_GLOBAL`` / ``INST`` opcodes (and the
copyreg extension codes) import any callable by name, and ``REDUCE`` / ``OBJ`` / ``NEWOBJ``
call it, so ``pickle.load`` on a downloaded file can run anything (``os.system`` included).
Every one of those imports goes through :meth:`pickle.Unpickler.find_class`;
:class:`SafeUnpickler` refuses all of them (and persistent ids), so only what the opcodes build
on their own can load: dicts, lists, tuples, sets, strings, bytes, numbers, bools and ``None``.
A refused pickle stops at its first import, before anything is called.

Python 2 pickles load too: their ``str`` objects (``STRING`` / ``BINSTRING`` opcodes) come back
as decoded with ``encoding`` (``"bytes"`` keeps them as :class:`bytes`, for the caller to decode).
"""

from __future__ import annotations

import io
import os
import pickle
from typing import Any

from reranklab.errors import FormatError

ALLOWED = "dicts, lists, tuples, sets, strings, bytes, numbers, bools and None"


class RefusedPickle(Exception):
    """Raised inside the unpickler when the pickle asks for something other than plain data."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


class SafeUnpickler(pickle.Unpickler):
    """A :class:`pickle.Unpickler` that imports nothing: every global is refused.

    Example:
        >>> import io, pickle
        >>> SafeUnpickler(io.BytesIO(pickle.dumps({"q": [["a", 1]]}))).load()
        {'q': [['a', 1]]}
        >>> SafeUnpickler(io.BytesIO(pickle.dumps(print))).load()
        Traceback (most recent call last):
        ...
        reranklab.io.safe_pickle.RefusedPickle: the global builtins.print
    """

    def find_class(self, module: str, name: str) -> Any:
        # The only door to callables: with it shut, REDUCE/OBJ/NEWOBJ/BUILD have nothing to call.
        raise RefusedPickle(f"the global {module}.{name}")

    def persistent_load(self, pid: Any) -> Any:
        raise RefusedPickle(f"the persistent id {pid!r}")


def load_pickle(
    path: str | os.PathLike[str], *, encoding: str = "ASCII", errors: str = "strict"
) -> Any:
    """The plain data in the pickle file ``path``, refusing anything that would run code.

    Args:
        path: the pickle file (any protocol, Python 2 or 3).
        encoding: how Python 2 ``str`` objects are decoded (as :func:`pickle.load`); ``"bytes"``
            returns them as :class:`bytes`, ``"latin1"`` maps every byte to one character.
        errors: the decoding error handler for those strings.

    Returns:
        The unpickled object, built only of dicts, lists, tuples, sets, strings, bytes,
        numbers, bools and ``None``.

    Raises:
        FormatError: (path) the pickle references a global (a class or function: the error
            names it) or a persistent id, is truncated or malformed, or has bytes after its end.

    Example:
        >>> import pickle, tempfile
        >>> from pathlib import Path
        >>> path = Path(tempfile.mkdtemp()) / "env.pkl"
        >>> _ = path.write_bytes(pickle.dumps({"train": [1, 2], "dev": (3,)}, protocol=2))
        >>> load_pickle(path)
        {'train': [1, 2], 'dev': (3,)}
        >>> _ = path.write_bytes(pickle.dumps(Path("x")))
        >>> load_pickle(path)
        Traceback (most recent call last):
        ...
        reranklab.errors.FormatError: ...env.pkl: refused to load the global pathlib.PosixPath: ...
    """
    with open(path, "rb") as handle:
        data = handle.read()
    stream = io.BytesIO(data)
    try:
        obj = SafeUnpickler(stream, encoding=encoding, errors=errors).load()
    except RefusedPickle as refused:
        raise FormatError(
            path,
            None,
            f"refused to load {refused.what}: a pickle may only hold {ALLOWED} "
            "(loading a global could run code)",
        ) from None
    except Exception as exc:  # noqa: BLE001 - malformed bytes surface as many exception types
        raise FormatError(
            path, None, f"not a readable pickle ({type(exc).__name__}: {exc})"
        ) from None
    if stream.tell() != len(data):
        raise FormatError(
            path,
            None,
            f"{len(data) - stream.tell()} bytes after the end of the pickle (at byte {stream.tell()})",
        )
    return obj
