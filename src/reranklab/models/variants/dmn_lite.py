"""DMN-lite (BERT-DMN §5.1): the BERT-DMN head on the features of a frozen encoder.

The encoder is never trained: ``reranklab encode`` (rule ``encode``) runs it once per fold over
the training pairs and the test candidates and caches [CLS], the query's word-piece vectors and
the passage's sentence vectors; training and re-ranking read the cache, so each epoch costs only
the DMN head. Same head and loss as ``dmn`` (``memory_hidden``, ``episodes``, ``head_dropout``,
``margin``).

Defaults: learning rate 1e-3 (only the randomly initialised head is trained; 3e-5 is a
fine-tuning rate), 10% warm-up, margin 0.2, hidden 256, 4 episodes, dropout 0.1.
"""

from __future__ import annotations

from reranklab.models.variants._lite import LiteSettings, register_lite_variant
from reranklab.models.variants.dmn import DmnHead, head_options

NAME = "dmn_lite"


class DmnLiteSettings(DmnHead, LiteSettings):
    """DMN-lite trains only the randomly initialised head: learning rate 1e-3 (3e-5 is a
    fine-tuning rate), 10% warm-up, margin 0.2; the head is BERT-DMN's."""

    learning_rate: float = 1e-3
    margin: float = 0.2


SPEC = register_lite_variant(
    NAME,
    "dmn",
    head_options,
    description="DMN-lite: the BERT-DMN head on cached features of a frozen encoder (reranklab encode); a = sigmoid(W[c;Q;m]), max-margin",
    settings=DmnLiteSettings,
)
