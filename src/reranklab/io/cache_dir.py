"""Where reranklab keeps what it fetches outside a study: raw files of ``reranklab score``,
encoders of ``reranklab encoders fetch``."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "RERANKLAB_CACHE"


def cache_root(cache: str | os.PathLike[str] | None = None) -> Path:
    """``cache``, else ``$RERANKLAB_CACHE``, else ``~/.cache/reranklab``.

    Example:
        >>> cache_root("/tmp/c")
        PosixPath('/tmp/c')
    """
    for value in (cache, os.environ.get(CACHE_ENV)):
        if value is not None and str(value).strip():
            return Path(os.path.expanduser(str(value).strip()))
    return Path.home() / ".cache" / "reranklab"
