"""Content digests of files: what checksums (downloads) and fingerprints (checkpoints) compare."""

from __future__ import annotations

import hashlib
import os

CHUNK = 1 << 20  # read 1 MiB at a time: a multi-GB collection never has to fit in memory


def sha256_of(path: str | os.PathLike[str], chunk: int = CHUNK) -> str:
    """Hex sha256 of a file's content, read in chunks.

    Example:
        >>> import tempfile
        >>> from pathlib import Path
        >>> path = Path(tempfile.mkdtemp()) / "empty.txt"
        >>> _ = path.write_bytes(b"")
        >>> sha256_of(path)
        'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'
    """
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()
