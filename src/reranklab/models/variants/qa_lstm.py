"""QA-LSTM with attention (Tan et al. 2016): the BERT-DMN paper's recurrent baseline.

A shared BiLSTM (256 per direction, ``lstm_hidden``) over frozen word vectors, max or mean
pooling (``lstm_pooling``), answer attention on the question (``lstm_attention``), dropout
0.5 (``head_dropout``); output ``cos(o_q, o_a)``, trained with ``max(0, m − cos+ + cos−)``.

Word vectors: the GloVe file of ``training.embeddings_path``; when it is not set, the
encoder's input embedding matrix, as static vectors over its word pieces (a deviation from the
paper, which uses word vectors; see :mod:`reranklab.models.word_vectors`). ``max_length`` caps
the query and the passage at that many tokens each.

Defaults: Adam (AdamW without decay), learning rate 1e-3, no warm-up, margin 0.2.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field

from reranklab.models.registry import VariantSpec, register_variant
from reranklab.models.variants._word_vectors import WordVectorSettings

NAME = "qa_lstm"


class QaLstmSettings(WordVectorSettings):
    """Tan et al.'s attentive QA-LSTM, trained with Adam (no decay), 1e-3, no warm-up, margin 0.2."""

    learning_rate: float = 1e-3
    weight_decay: float = 0.0
    warmup_ratio: float = 0.0
    margin: float = 0.2
    lstm_hidden: int = Field(256, ge=1, description="BiLSTM size per direction (256)")
    lstm_pooling: Literal["max", "avg"] = Field(
        "max", description="pooling of the BiLSTM states into question/answer vectors"
    )
    lstm_attention: bool = Field(
        True,
        description="weight the answer states by an attention on the question (Tan et al.'s attentive QA-LSTM)",
    )
    head_dropout: float = Field(0.5, ge=0, le=1, description="dropout on the LSTM states")


def build(encoder: str, training: Mapping[str, Any], max_length: int) -> Any:
    """A fresh QA-LSTM (its vocabulary is built when its training pairs are featurized)."""
    from reranklab.models.qa_lstm import QALSTM
    from reranklab.models.word_model import source_dimension, vector_source

    source = vector_source(encoder, training)
    dim, tokenizer = source_dimension(source)
    settings = QaLstmSettings.from_training(training)
    return QALSTM(
        dim,
        hidden=settings.lstm_hidden,
        pooling=settings.lstm_pooling,
        attention=settings.lstm_attention,
        dropout=settings.head_dropout,
        variant=NAME,
        max_length=max_length,
        source=source,
        tokenizer=tokenizer,
    )


def loss(model: Any, training: Mapping[str, Any]) -> Any:
    from reranklab.models.losses.pairwise_max_margin import PairwiseMaxMarginLoss

    return PairwiseMaxMarginLoss(model, margin=QaLstmSettings.from_training(training).margin)


def featurize(*args: Any, **kwargs: Any) -> Any:
    from reranklab.models.word_model import word_features

    return word_features(*args, **kwargs)


def load(directory: Any, device: Any = None) -> Any:
    from reranklab.models.qa_lstm import QALSTM

    return QALSTM.load(directory, device=device)


SPEC = register_variant(
    VariantSpec(
        name=NAME,
        example_kind="triplet",
        description="QA-LSTM (Tan et al.): shared BiLSTM on static word vectors, pooling + answer attention, cosine; max-margin",
        build=build,
        loss=loss,
        featurize=featurize,
        load=load,
        reads_collection=True,  # the vocabulary is built from every text of the collection
        settings=QaLstmSettings,
    )
)
