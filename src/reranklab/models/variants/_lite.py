"""What every lite variant shares: a head on a frozen, cached encoder (``reranklab encode``).

A lite variant differs only in its head (kind and options); the pair-wise max-margin loss, the
cache-backed featurizer, the ``encode`` hook and the loader are the same, so they live here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from reranklab.models.registry import VariantSpec, register_variant
from reranklab.models.variants._cross_encoder import PairPooling
from reranklab.settings.training import training_view
from reranklab.settings.variant import VariantSettings


class LiteSettings(VariantSettings):
    """What every lite variant reads of the frozen encoder: the [CLS] vector (the paper's), or
    the mean of the pair's word pieces (``pair_pooling: mean``, for a sentence-embedding
    encoder, whose [CLS] was never trained to stand for the pair)."""

    pair_pooling: PairPooling = None


def register_lite_variant(
    name: str,
    head_kind: str,
    head_options: Callable[[Mapping[str, Any]], dict[str, Any]],
    description: str,
    settings: type[VariantSettings],
) -> VariantSpec:
    """Register a lite variant whose head is ``head_kind`` built with ``head_options(training)``."""

    def build(encoder: str, training: Mapping[str, Any], max_length: int) -> Any:
        """The head for ``encoder``'s hidden size (the encoder itself is not loaded)."""
        from reranklab.models.lite import LiteReranker, encoder_hidden_size

        return LiteReranker(
            head_kind,
            encoder_hidden_size(encoder),
            variant=name,
            max_length=max_length,
            encoder_name=encoder,
            head_options=head_options(training),
            # A train job's settings leave eval_batch_size out (it changes no model): 64 there.
            encode_batch_size=int(training.get("eval_batch_size", 64)),
            pair_pooling=settings.from_training(training).pair_pooling or "cls",
        )

    return register_variant(
        VariantSpec(
            name=name,
            example_kind="triplet",
            description=description,
            build=build,
            loss=loss,
            featurize=featurize,
            load=load,
            encode=encode,
            settings=settings,
        )
    )


def loss(model: Any, training: Mapping[str, Any]) -> Any:
    from reranklab.models.losses.pairwise_max_margin import PairwiseMaxMarginLoss

    return PairwiseMaxMarginLoss(model, margin=training_view(training).margin)


def featurize(*args: Any, **kwargs: Any) -> Any:
    from reranklab.models.lite import lite_features

    return lite_features(*args, **kwargs)


def encode(*args: Any, **kwargs: Any) -> Any:
    from reranklab.models.lite import encode_pairs

    return encode_pairs(*args, **kwargs)


def load(directory: Any, device: Any = None) -> Any:
    from reranklab.models.lite import LiteReranker

    return LiteReranker.load(directory, device=device)
