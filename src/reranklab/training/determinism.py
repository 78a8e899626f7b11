"""Bit-for-bit reproducible training (``training.deterministic: true``).

Seeding alone does not make two runs identical: some CUDA kernels (atomics in scatter/index
ops, cuBLAS split-K reductions, cuDNN autotuning) and the number of CPU threads change the
order of floating-point sums. In deterministic mode reranklab

- calls ``torch.use_deterministic_algorithms(True)`` (an op without a deterministic kernel
  raises at its first use, rather than silently varying);
- sets ``CUBLAS_WORKSPACE_CONFIG=:4096:8`` (cuBLAS's documented requirement for reproducible
  results with CUDA >= 10.2) before the first CUDA call;
- turns cuDNN autotuning off and cuDNN determinism on;
- pins the CPU intra-op thread count to ``training.threads``, or to
  :data:`DETERMINISTIC_THREADS` when that is 0, never to the thread count the scheduler gives
  the job: torch splits CPU reductions and matrix products by thread count, so 1 and 2 threads
  give different models, and ``snakemake --cores`` must not change a result (nor re-run it).
  The pinned count is part of a checkpoint's fingerprint (:mod:`reranklab.training.checkpoint`).

On CPU, a run, or a run killed and resumed from a checkpoint, gives byte-identical models and
run files whatever ``--cores`` or ``--threads`` say. It costs speed (on GPU typically 5-20 %;
on CPU the pinned single thread, unless ``training.threads`` pins more).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

import torch

log = logging.getLogger(__name__)

CUBLAS_WORKSPACE = ":4096:8"
# One thread: the same count on every machine and never more than a scheduler allots a job.
DETERMINISTIC_THREADS = 1


def training_threads(training: Mapping[str, Any], threads: int = 0) -> int:
    """The torch CPU threads of a training job.

    Args:
        training: the cell's ``training`` block (``threads`` and ``deterministic`` are read).
        threads: the thread count the job was given (the rule's ``--threads``; 0 = none).

    Returns:
        ``training.threads`` when it is set (> 0); else, in deterministic mode,
        :data:`DETERMINISTIC_THREADS` (the given count is ignored: it depends on
        ``--cores``); else ``threads`` (0 = torch's default).

    Example:
        >>> training_threads({"threads": 0, "deterministic": False}, 4)
        4
        >>> training_threads({"threads": 0, "deterministic": True}, 4)
        1
        >>> training_threads({"threads": 2, "deterministic": True}, 4)
        2
    """
    pinned = int(training.get("threads") or 0)
    if pinned > 0:
        return pinned
    if training.get("deterministic"):
        return DETERMINISTIC_THREADS
    return int(threads or 0)


def configure_determinism(enabled: bool) -> bool:
    """Switch torch to deterministic algorithms when ``enabled`` (idempotent).

    The thread count is set apart, from :func:`training_threads`.

    Args:
        enabled: ``training.deterministic``.

    Returns:
        Whether deterministic mode is on in this process afterwards.

    Example:
        >>> import torch
        >>> configure_determinism(False) == torch.are_deterministic_algorithms_enabled()  # leaves it as it was
        True
    """
    if not enabled:
        return torch.are_deterministic_algorithms_enabled()
    # cuBLAS reads this when its handle is created, i.e. at the first CUDA matmul.
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", CUBLAS_WORKSPACE)
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    log.info(
        "deterministic mode: deterministic algorithms, CUBLAS_WORKSPACE_CONFIG=%s, %d threads",
        os.environ["CUBLAS_WORKSPACE_CONFIG"],
        torch.get_num_threads(),
    )
    return True
