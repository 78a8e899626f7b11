"""bm25s' retrieval kernel compiled once per machine, not once per process: numba's disk cache.

bm25s (0.3) wraps its kernel ``_retrieve_internal_jitted`` with ``njit`` and no ``cache=True``,
so every ``reranklab retrieve`` process compiled it again, on one core: ~8 s of a 16-21 s
retrieval of 1,000 queries over 1 M passages (py-spy: 75 % of the samples), and ~3 s serial.
:func:`use_cached_kernels` wraps the same Python function with ``cache=True``. numba keys its
cache by the function's source file and bytecode and by the argument types, so a new bm25s or
an index of other dtypes compiles again, and a loaded kernel computes what a compiled one does
(the scores and the run file are the same, byte for byte). The ``index`` step warms the cache
(:func:`warm_kernels`), so the retrieve jobs after it load the kernel instead of compiling it.

The cache lives in ``$NUMBA_CACHE_DIR`` when set, else in ``<reranklab cache>/numba``
(:func:`reranklab.io.cache_dir.cache_root`): not beside bm25s' sources, which may be read-only.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from reranklab.io.cache_dir import cache_root

log = logging.getLogger("reranklab")

_KERNELS = {
    "_retrieve_internal_jitted_parallel": {"parallel": True},
    "_retrieve_internal_jitted_serial": {"nogil": True},
}
_done: Path | None = None


def kernel_cache_dir() -> Path:
    """``$NUMBA_CACHE_DIR``, else ``<reranklab cache>/numba``."""
    given = os.environ.get("NUMBA_CACHE_DIR", "").strip()
    return Path(given) if given else cache_root() / "numba"


def use_cached_kernels() -> Path | None:
    """Make bm25s' numba retrieval load its kernel from disk when compiled before (idempotent).

    Returns:
        The cache folder, or None where bm25s' numba module is not as expected (another bm25s
        release): its own kernels are then left as they are, compiled per process.
    """
    global _done
    if _done is not None:
        return _done
    try:
        import numba
        from bm25s.numba import retrieve_utils
    except ImportError:
        return None
    kernel = getattr(retrieve_utils, "_retrieve_internal_jitted", None)
    if kernel is None or not all(hasattr(retrieve_utils, name) for name in _KERNELS):
        log.warning("bm25s' numba kernels are not where reranklab looks: compiled per process")
        return None
    folder = kernel_cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    # Read when a cached dispatcher is made (below), not only when numba is imported.
    numba.config.CACHE_DIR = str(folder)
    for name, options in _KERNELS.items():
        setattr(retrieve_utils, name, numba.njit(cache=True, **options)(kernel))
    _done = folder
    return folder


def warm_kernels(model: Any) -> None:
    """Compile (or load) the kernels for ``model``'s index arrays: one tiny query, both kernels.

    Args:
        model: a ``bm25s.BM25`` loaded with the numba backend, as the retrieve step loads it.
    """
    if use_cached_kernels() is None:
        return
    import numba

    query = [[0]]
    model.retrieve(query, k=1, show_progress=False, n_threads=0)  # the serial kernel
    if numba.config.NUMBA_NUM_THREADS > 1:
        model.retrieve(query, k=1, show_progress=False, n_threads=2)  # the parallel one
