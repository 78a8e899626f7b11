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
from typing import Any

from reranklab.models.registry import VariantSpec, register_variant
from reranklab.models.variants._settings import setting

NAME = "qa_lstm"
HIDDEN, POOLING, ATTENTION, DROPOUT = 256, "max", True, 0.5


def build(encoder: str, training: Mapping[str, Any], max_length: int) -> Any:
    """A fresh QA-LSTM (its vocabulary is built when its training pairs are featurized)."""
    from reranklab.models.qa_lstm import QALSTM
    from reranklab.models.word_model import source_dimension, vector_source

    source = vector_source(encoder, training)
    dim, tokenizer = source_dimension(source)
    return QALSTM(
        dim,
        hidden=int(setting(training, "lstm_hidden", HIDDEN)),
        pooling=str(setting(training, "lstm_pooling", POOLING)),
        attention=bool(setting(training, "lstm_attention", ATTENTION)),
        dropout=float(setting(training, "head_dropout", DROPOUT)),
        variant=NAME,
        max_length=max_length,
        source=source,
        tokenizer=tokenizer,
    )


def loss(model: Any, training: Mapping[str, Any]) -> Any:
    from reranklab.models.losses.pairwise_max_margin import PairwiseMaxMarginLoss

    return PairwiseMaxMarginLoss(model, margin=float(training.get("margin", 0.2)))


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
        defaults={
            "learning_rate": 1e-3,
            "weight_decay": 0.0,
            "warmup_ratio": 0.0,
            "margin": 0.2,
            "lstm_hidden": HIDDEN,
            "lstm_pooling": POOLING,
            "lstm_attention": ATTENTION,
            "head_dropout": DROPOUT,
        },
    )
)
