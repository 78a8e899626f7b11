"""Atomic writes: a reader (or a killed job) never sees a half-written file."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

try:  # POSIX: a writer holds a lock on its temporary file, so no one removes a live one
    import fcntl
except ImportError:  # pragma: no cover - Windows: stale temporaries are left, as before
    fcntl = None  # type: ignore[assignment]

# The names mkstemp/mkdtemp give beside an output ``name``: ``.<name>.<8 random>.tmp`` (``.old``
# for the previous directory that atomic_directory moves aside).
_RANDOM = r"[a-z0-9_]{8}"


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


def temporary_pattern(name: str) -> re.Pattern[str]:
    """The names of the temporary siblings that writes of the output ``name`` make.

    Example:
        >>> bool(temporary_pattern("bm25.run").fullmatch(".bm25.run.k2j_9x0a.tmp"))
        True
        >>> bool(temporary_pattern("bm25.run").fullmatch(".bm25.run.gz.k2j_9x0a.tmp"))
        False
    """
    return re.compile(rf"\.{re.escape(name)}\.{_RANDOM}\.(?:tmp|old)")


def is_temporary(name: str) -> bool:
    """Whether ``name`` is a temporary sibling of some output (a write under way, or one a
    kill interrupted).

    Example:
        >>> is_temporary(".bm25.run.k2j_9x0a.tmp"), is_temporary("bm25.run"), is_temporary(".x.tmp")
        (True, False, False)
    """
    return re.fullmatch(rf"\..+\.{_RANDOM}\.(?:tmp|old)", name) is not None


def _lock(fd: int, blocking: bool) -> bool:
    """Take an exclusive ``flock`` on ``fd``; False when another open file holds it.

    A file system without locks (ENOLCK, some network mounts) gives False too: a cleaner then
    cannot tell a live temporary from a stale one and leaves it; a writer goes on unlocked.
    """
    if fcntl is None:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
    except OSError:
        return False
    return True


def remove_stale_temporaries(path: str | os.PathLike[str]) -> list[Path]:
    """Remove what killed writes of ``path`` left beside it; returns what was removed.

    A write killed by SIGKILL (or a power cut) cannot remove its temporary file: it would stay
    in a folder DVC hashes, private (0600), and hold a share of the disk. Every write of an
    output first clears the temporaries of earlier writes of that output. A live writer holds
    an exclusive lock on its temporary (file or folder) until it is renamed: those are left.
    """
    if fcntl is None:
        return []
    final = Path(path)
    pattern = temporary_pattern(final.name)
    try:
        names = [name for name in os.listdir(final.parent) if pattern.fullmatch(name)]
    except OSError:
        return []
    removed = []
    for name in names:
        stale = final.parent / name
        try:
            fd = os.open(stale, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:  # gone already, or a link: not ours
            continue
        try:
            if not _lock(fd, blocking=False):
                continue  # a live writer's
            if stat.S_ISDIR(os.fstat(fd).st_mode):
                shutil.rmtree(stale, ignore_errors=True)
            else:
                with contextlib.suppress(FileNotFoundError):
                    stale.unlink()
            removed.append(stale)
        finally:
            os.close(fd)
    return removed


def _locked_temporary(make: Callable[[], str]) -> tuple[Path, int]:
    """A new temporary (``make()`` creates it), opened and locked for as long as it is in use.

    The lock is taken after the file exists; a cleaner that removed it in between (it found it
    unlocked) is seen by its inode no longer being at the path, and a new one is made.
    """
    while True:
        name = make()
        try:
            fd = os.open(name, os.O_RDONLY)
        except FileNotFoundError:  # removed by a cleaner before it was opened
            continue
        _lock(fd, blocking=True)
        with contextlib.suppress(OSError):
            if os.stat(name, follow_symlinks=False).st_ino == os.fstat(fd).st_ino:
                return Path(name), fd
        os.close(fd)


def _new_file(final: Path) -> tuple[Path, int]:
    def make() -> str:
        fd, name = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent)
        # mkstemp makes it 0600: a temporary is as readable as the result it becomes.
        os.fchmod(fd, 0o666 & ~current_umask())
        os.close(fd)
        return name

    return _locked_temporary(make)


def _new_folder(final: Path, suffix: str = ".tmp") -> tuple[Path, int]:
    def make() -> str:
        name = tempfile.mkdtemp(prefix=f".{final.name}.", suffix=suffix, dir=final.parent)
        os.chmod(name, 0o777 & ~current_umask())  # mkdtemp makes it 0700
        return name

    return _locked_temporary(make)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` only on success.

    The temporary file lives in the same directory so the final ``os.replace`` is atomic
    on POSIX file systems. On error the temporary file is removed and ``path`` is untouched.
    The result gets the mode a plain ``open`` would give (0666 less the umask), not the
    private 0600 of ``mkstemp``, so results stay readable by the group and DVC/ML users.
    The temporary is ``.<name>.<random>.tmp``, locked while in use; a write killed before its
    rename leaves it, and the next write of ``path`` removes it (:func:`remove_stale_temporaries`).

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
    remove_stale_temporaries(final)
    tmp, lock = _new_file(final)
    try:
        yield tmp
        # A writer may have replaced the file (os.replace onto tmp) or made it anew.
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
    finally:
        os.close(lock)


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
    final.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(final)
    tmp, lock = _new_folder(final)
    old_lock = None
    try:
        yield tmp
        honour_umask(tmp)
        old = None
        if final.exists():
            # os.replace cannot overwrite a non-empty directory: move the old one aside first.
            old, old_lock = _new_folder(final, suffix=".old")
            os.replace(final, old / final.name)
        os.replace(tmp, final)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        for fd in (lock, old_lock):
            if fd is not None:
                os.close(fd)
