"""Fine-tuning and inference of re-rankers: the training loop, checkpoints, validation, re-ranking.

How pairs become model inputs (tokenising, caching, batching) is :mod:`reranklab.features`.

``train_model`` and ``rerank`` are imported lazily: importing this package does not load torch.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Checkpointer", "TrainState", "rerank", "train_model"]


def __getattr__(name: str) -> Any:
    if name in ("train_model", "Checkpointer", "TrainState"):
        from reranklab.training import trainer

        return getattr(trainer, name)
    if name == "rerank":
        from reranklab.training.inference import rerank

        return rerank
    raise AttributeError(f"module 'reranklab.training' has no attribute {name!r}")
