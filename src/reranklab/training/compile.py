"""``training.compile``: the model's pre-trained encoders through ``torch.compile``.

Compiled in place (``nn.Module.compile``), so parameter names, checkpoints and saved models
are those of the eager model, and with dynamic shapes, so a batch of another width (dynamic
padding, length grouping, packing) does not compile again. It pays where a job runs long
enough to repay the compile time: measured on this project's 2-core CPU (MiniLM, re-ranking
batches of 32 pairs): 1.04x after 47 s of compiling, so it is off by default; on GPUs,
``reranklab bench-suite gpu`` has a compiled run to say.
"""

from __future__ import annotations

import logging

from torch import nn

from reranklab.errors import ConfigError

log = logging.getLogger(__name__)


def compile_encoders(model: nn.Module) -> int:
    """Compile each Hugging Face encoder inside ``model`` in place (dynamic shapes).

    Returns:
        How many were compiled.

    Raises:
        ConfigError: ``model`` holds no Hugging Face encoder (QA-LSTM, K-NRM).
    """
    from transformers import PreTrainedModel

    encoders = [m for m in model.modules() if isinstance(m, PreTrainedModel)]
    if not encoders:
        raise ConfigError(
            f"training.compile: the model ({type(model).__name__}) has no pre-trained encoder to compile"
        )
    for encoder in encoders:
        encoder.compile(dynamic=True)
    log.info("training.compile: %d encoder(s) compiled (dynamic shapes)", len(encoders))
    return len(encoders)
