"""Fine-tuning and inference of re-rankers: the training loop, checkpoints, validation, re-ranking.

How pairs become model inputs (tokenising, caching, batching) is :mod:`reranklab.features`.

``train_model`` and ``rerank`` are imported lazily: importing this package does not load torch.
"""

from __future__ import annotations

from reranklab.lazy import lazy_exports

__all__ = ["Checkpointer", "TrainState", "rerank", "train_model"]
__getattr__ = lazy_exports(
    __name__,
    {
        "Checkpointer": "trainer",
        "TrainState": "trainer",
        "train_model": "trainer",
        "rerank": "inference",
    },
)
