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

from collections.abc import Mapping
from typing import Any

from reranklab.models.registry import VariantSpec, register_variant
from reranklab.models.variants.dmn import DROPOUT, EPISODES, HIDDEN, head_options

NAME = "dmn_lite"


def build(encoder: str, training: Mapping[str, Any], max_length: int) -> Any:
    """The DMN head for ``encoder``'s hidden size (the encoder itself is not loaded)."""
    from reranklab.models.lite import LiteReranker, encoder_hidden_size

    return LiteReranker(
        "dmn",
        encoder_hidden_size(encoder),
        variant=NAME,
        max_length=max_length,
        encoder_name=encoder,
        head_options=head_options(training),
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
        description="DMN-lite: the BERT-DMN head on cached features of a frozen encoder (reranklab encode); a = sigmoid(W[c;Q;m]), max-margin",
        build=build,
        loss=loss,
        featurize=featurize,
        load=load,
        encode=encode,
        defaults={"learning_rate": 1e-3, "margin": 0.2, "memory_hidden": HIDDEN, "episodes": EPISODES, "head_dropout": DROPOUT},
    )
)
