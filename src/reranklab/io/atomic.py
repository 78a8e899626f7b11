"""Atomic writes: a reader (or a killed job) never sees a half-written file."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path


def current_umask() -> int:
    """The process's umask, read without changing it where the kernel reports it.

    ``os.umask`` can only be read by setting it, which races with other threads creating
    files; Linux reports it in ``/proc/self/status`` (since 4.7).
    """
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` only on success.

    The temporary file lives in the same directory so the final ``os.replace`` is atomic
    on POSIX file systems. On error the temporary file is removed and ``path`` is untouched.
    The result gets the mode a plain ``open`` would give (0666 less the umask), not the
    private 0600 of ``mkstemp``, so results stay readable by the group and DVC/ML users.

    Example:
        >>> import tempfile
        >>> target = Path(tempfile.mkdtemp()) / "x.txt"
        >>> with atomic_path(target) as tmp:
        ...     _ = tmp.write_text("done")
        >>> target.read_text(), tmp.exists()
        ('done', False)
    """
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~current_umask())
        os.replace(tmp, final)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        if isinstance(exc, OSError) and exc.filename is None:
            # A full disk or a quota fails a write() of an open handle: its OSError names no
            # file, and "[Errno 28] No space left on device" alone does not say which step's
            # output it was.
            raise OSError(exc.errno, exc.strerror or str(exc), str(final)) from exc
        raise


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def temporary_directory(beside: Path) -> Path:
    """A new empty directory next to ``beside`` (same file system), with the usual permissions.

    ``mkdtemp`` makes directories private (0700); what is renamed into ``results/`` should get
    the mode the umask gives, as a plain ``mkdir`` would.
    """
    beside.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{beside.name}.", suffix=".tmp", dir=beside.parent))
    os.chmod(tmp, 0o777 & ~current_umask())
    return tmp


def honour_umask(directory: Path) -> None:
    """Give every file and folder under ``directory`` the mode a plain ``open``/``mkdir`` would.

    Some writers make private files (safetensors writes 0600; ``mkdtemp`` makes 0700 folders):
    a saved model or checkpoint must be as readable as every other result (the group's
    members, DVC's cache, an MLflow artifact copy), under the user's umask.
    """
    mask = current_umask()
    for root, folders, files in os.walk(directory):
        for name in folders:
            os.chmod(os.path.join(root, name), 0o777 & ~mask)
        for name in files:
            os.chmod(os.path.join(root, name), 0o666 & ~mask)
    os.chmod(directory, 0o777 & ~mask)


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary directory beside ``path``; on success it replaces ``path`` as a whole.

    A reader sees the old directory or the new one, never a mix; on error the temporary
    directory is removed and ``path`` is untouched.

    Example:
        >>> import tempfile
        >>> target = Path(tempfile.mkdtemp()) / "fold0"
        >>> with atomic_directory(target) as tmp:
        ...     _ = (tmp / "reranker.json").write_text("{}")
        >>> sorted(p.name for p in target.iterdir())
        ['reranker.json']
    """
    final = Path(path)
    tmp = temporary_directory(final)
    try:
        yield tmp
        honour_umask(tmp)
        old = None
        if final.exists():
            # os.replace cannot overwrite a non-empty directory: move the old one aside first.
            old = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".old", dir=final.parent))
            os.replace(final, old / final.name)
        os.replace(tmp, final)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
