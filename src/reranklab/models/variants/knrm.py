"""K-NRM (Xiong et al. 2017): kernel pooling over word-vector similarities, a BERT-DMN baseline.

11 RBF kernels on the cosine translation matrix of frozen word vectors (exact match μ = 1,
σ = 10⁻³; soft matches μ ∈ {0.9, 0.7, …, −0.9}, σ = 0.1), log-sum soft-TF features, and
``f = tanh(wᵀφ + b)`` trained with ``max(0, 1 − f+ + f−)``.

Word vectors: as :mod:`reranklab.models.variants.qa_lstm` (GloVe from
``training.embeddings_path``, else the encoder's input embeddings over word pieces).

Defaults: Adam (AdamW without decay), learning rate 1e-3, no warm-up, margin 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reranklab.models.registry import VariantSpec, register_variant
from reranklab.models.variants._word_vectors import WordVectorSettings

NAME = "knrm"


class KnrmSettings(WordVectorSettings):
    """K-NRM's training: Adam (AdamW without decay), learning rate 1e-3, no warm-up, margin 1."""

    learning_rate: float = 1e-3
    weight_decay: float = 0.0
    warmup_ratio: float = 0.0
    margin: float = 1.0


def build(encoder: str, training: Mapping[str, Any], max_length: int) -> Any:
    """A fresh K-NRM (its vocabulary is built when its training pairs are featurized)."""
    from reranklab.models.knrm import KNRM
    from reranklab.models.word_model import source_dimension, vector_source

    source = vector_source(encoder, training)
    dim, tokenizer = source_dimension(source)
    return KNRM(dim, variant=NAME, max_length=max_length, source=source, tokenizer=tokenizer)


def loss(model: Any, training: Mapping[str, Any]) -> Any:
    from reranklab.models.losses.pairwise_max_margin import PairwiseMaxMarginLoss

    return PairwiseMaxMarginLoss(model, margin=KnrmSettings.from_training(training).margin)


def featurize(*args: Any, **kwargs: Any) -> Any:
    from reranklab.models.word_model import word_features

    return word_features(*args, **kwargs)


def load(directory: Any, device: Any = None) -> Any:
    from reranklab.models.knrm import KNRM

    return KNRM.load(directory, device=device)


SPEC = register_variant(
    VariantSpec(
        name=NAME,
        example_kind="triplet",
        description="K-NRM (Xiong et al.): 11 RBF kernels on word-vector cosine matches, f = tanh(w.phi + b); max-margin (m = 1)",
        build=build,
        loss=loss,
        featurize=featurize,
        load=load,
        reads_collection=True,  # the vocabulary is built from every text of the collection
        settings=KnrmSettings,
    )
)
