"""Bit-for-bit reproducible training (``training.deterministic: true``).

Seeding alone does not make two runs identical: some CUDA kernels (atomics in scatter/index
ops, cuBLAS split-K reductions, cuDNN autotuning) and the number of CPU threads change the
order of floating-point sums. In deterministic mode reranklab

- calls ``torch.use_deterministic_algorithms(True)`` (an op without a deterministic kernel
  raises at its first use, rather than silently varying);
- sets ``CUBLAS_WORKSPACE_CONFIG=:4096:8`` (cuBLAS's documented requirement for reproducible
  results with CUDA >= 10.2) before the first CUDA call;
- turns cuDNN autotuning off and cuDNN determinism on;
- keeps the CPU thread count fixed: a resumed run uses the thread count its checkpoint was
  written with (see :mod:`reranklab.training.checkpoint`).

On CPU with a fixed thread count, a run, or a run killed and resumed from a checkpoint, gives
byte-identical models and run files. It costs speed on GPU (typically 5-20 %).
"""

from __future__ import annotations

import logging
import os

import torch

log = logging.getLogger(__name__)

CUBLAS_WORKSPACE = ":4096:8"


def configure_determinism(enabled: bool) -> bool:
    """Switch torch to deterministic algorithms when ``enabled`` (idempotent).

    Args:
        enabled: ``training.deterministic``.

    Returns:
        Whether deterministic mode is on in this process afterwards.

    Example:
        >>> configure_determinism(False)
        False
    """
    if not enabled:
        return torch.are_deterministic_algorithms_enabled()
    # cuBLAS reads this when its handle is created, i.e. at the first CUDA matmul.
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", CUBLAS_WORKSPACE)
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    log.info("deterministic mode: deterministic algorithms, CUBLAS_WORKSPACE_CONFIG=%s, %d threads",
             os.environ["CUBLAS_WORKSPACE_CONFIG"], torch.get_num_threads())
    return True
