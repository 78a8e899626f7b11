"""BERT-lite (BERT-DMN §5.1): a linear scorer on the cached [CLS] vector of a frozen encoder.

The lite baseline of DMN-lite: the same frozen, cached encoder (``reranklab encode``), but only
``a = σ(wᵀc + b)`` on [CLS] (dropout 0.1, ``head_dropout``), trained with the same pair-wise
max-margin loss (m = 0.2).

Defaults: learning rate 1e-3 (only the head is trained), 10% warm-up, margin 0.2.
"""

from __future__ import annotations

from reranklab.models.variants._lite import LiteSettings, register_lite_variant
from reranklab.models.variants.dmn import HeadDropout

NAME = "bert_lite"


class BertLiteSettings(LiteSettings):
    """BERT-lite trains only its linear head: learning rate 1e-3, margin 0.2, dropout 0.1."""

    learning_rate: float = 1e-3
    margin: float = 0.2
    head_dropout: HeadDropout = 0.1


SPEC = register_lite_variant(
    NAME,
    "linear",
    lambda training: {"dropout": BertLiteSettings.from_training(training).head_dropout},
    description="BERT-lite: linear head on the cached [CLS] of a frozen encoder (reranklab encode); a = sigmoid(w.c + b), max-margin",
    settings=BertLiteSettings,
)
