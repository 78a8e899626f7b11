"""BERT-lite (BERT-DMN §5.1): a linear scorer on the cached [CLS] vector of a frozen encoder.

The lite baseline of DMN-lite: the same frozen, cached encoder (``reranklab encode``), but only
``a = σ(wᵀc + b)`` on [CLS] (dropout 0.1, ``head_dropout``), trained with the same pair-wise
max-margin loss (m = 0.2).

Defaults: learning rate 1e-3 (only the head is trained), 10% warm-up, margin 0.2.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reranklab.models.registry import VariantSpec, register_variant
from reranklab.models.variants._settings import setting

NAME = "bert_lite"
DROPOUT = 0.1


def build(encoder: str, training: Mapping[str, Any], max_length: int) -> Any:
    """A linear head for ``encoder``'s hidden size (the encoder itself is not loaded)."""
    from reranklab.models.lite import LiteReranker, encoder_hidden_size

    return LiteReranker(
        "linear",
        encoder_hidden_size(encoder),
        variant=NAME,
        max_length=max_length,
        encoder_name=encoder,
        head_options={"dropout": float(setting(training, "head_dropout", DROPOUT))},
        encode_batch_size=int(training.get("eval_batch_size", 64)),
    )


def loss(model: Any, training: Mapping[str, Any]) -> Any:
    from reranklab.models.losses.pairwise_max_margin import PairwiseMaxMarginLoss

    return PairwiseMaxMarginLoss(model, margin=float(training.get("margin", 0.2)))


def featurize(*args: Any, **kwargs: Any) -> Any:
    from reranklab.models.lite import lite_features

    return lite_features(*args, **kwargs)


def encode(*args: Any, **kwargs: Any) -> Any:
    from reranklab.models.lite import encode_pairs

    return encode_pairs(*args, **kwargs)


def load(directory: Any, device: Any = None) -> Any:
    from reranklab.models.lite import LiteReranker

    return LiteReranker.load(directory, device=device)


SPEC = register_variant(
    VariantSpec(
        name=NAME,
        example_kind="triplet",
        description="BERT-lite: linear head on the cached [CLS] of a frozen encoder (reranklab encode); a = sigmoid(w.c + b), max-margin",
        build=build,
        loss=loss,
        featurize=featurize,
        load=load,
        encode=encode,
        defaults={"learning_rate": 1e-3, "margin": 0.2, "head_dropout": DROPOUT},
    )
)
