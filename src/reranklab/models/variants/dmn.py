"""BERT-DMN: a fine-tuned cross-encoder feeding a dynamic memory network, pair-wise max-margin.

(q, p) is encoded jointly; its output is split into the query's word pieces and the passage's
sentences (mean of each sentence's word pieces; boundaries from the passage text); an input
GRU over the sentences and a question GRU over the query (→ Q) feed an episodic memory of 4
episodes (m⁰ = Q; attention-gated GRU, gate from [s; m; Q; s∘Q; s∘m; |s−Q|; |s−m|]); the
answer is ``a = σ(W[c; Q; m])`` with c = [CLS]. Loss ``max(0, m − a+ + a−)``, m = 0.2.

Defaults (the paper's): AdamW, learning rate 3e-5, 1,000 warm-up steps, margin 0.2, GRU and
memory size 256 (``memory_hidden``), 4 episodes (``episodes``), head dropout 0.1
(``head_dropout``). Model selection on dev: the epoch with the best dev MAP is kept and
training stops after 3 epochs without improvement (``training.validation``). Override them in
``params.yaml: variants.dmn``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any

from pydantic import Field

from reranklab.models.registry import VariantSpec, register_variant
from reranklab.settings.training import Validation
from reranklab.settings.variant import VariantSettings

NAME = "dmn"
HeadDropout = Annotated[float, Field(ge=0, le=1, description="dropout in the head")]


class DmnHead(VariantSettings):
    """The BERT-DMN head (the paper's sizes; ``dmn_lite`` has the same head)."""

    memory_hidden: int = Field(
        256,
        ge=1,
        description="size of the input/question GRUs and of the episodic memory (BERT-DMN 256)",
    )
    episodes: int = Field(4, ge=1, description="passes of the episodic memory (BERT-DMN 4)")
    head_dropout: HeadDropout = 0.1


class DmnSettings(DmnHead):
    """BERT-DMN's training: AdamW 3e-5, 1,000 warm-up steps, margin 0.2, epoch chosen on dev.

    Model selection on dev, as the authors' code does (github.com/mrjleo/ranking-models,
    config/training.yaml: EarlyStopping and ModelCheckpoint on val_RetrievalMAP, mode max,
    patience 3; train.py tests the "best" checkpoint). On cross-validation datasets set
    training.validation.dev_fraction, or turn it off: variants.dmn.validation: null.
    """

    learning_rate: float = 3e-5
    warmup_steps: int | None = 1000
    margin: float = 0.2
    validation: Validation | None = Validation(measure="MAP", select_best=True, patience=3)


def head_options(training: Mapping[str, Any]) -> dict[str, Any]:
    """The DMN head's settings of a resolved ``training`` block (shared with ``dmn_lite``).

    Example:
        >>> head_options({"memory_hidden": None, "episodes": 2, "head_dropout": 0.0})
        {'hidden': 256, 'episodes': 2, 'dropout': 0.0}
    """
    head = DmnHead.from_training(training)
    return {"hidden": head.memory_hidden, "episodes": head.episodes, "dropout": head.head_dropout}


def build(encoder: str, training: Mapping[str, Any], max_length: int) -> Any:
    """A fresh BERT-DMN on ``encoder``."""
    from reranklab.models.bert_dmn import BertDMN

    return BertDMN.from_encoder(
        encoder, variant=NAME, max_length=max_length, **head_options(training)
    )


def loss(model: Any, training: Mapping[str, Any]) -> Any:
    """Pair-wise max-margin on ``a = σ(logit)`` with ``training.margin``."""
    from reranklab.models.losses.pairwise_max_margin import PairwiseMaxMarginLoss

    return PairwiseMaxMarginLoss(model, margin=DmnSettings.from_training(training).margin)


def featurize(
    model: Any,
    id_pairs: Iterable[tuple[str, str]],
    queries: Mapping[str, str],
    corpus: Mapping[str, str],
    *,
    progress: bool = True,
) -> Any:
    """Tokenised pairs with each word piece's segment (query / sentence k / special)."""
    from reranklab.models.segments import segmented_features

    return segmented_features(
        model.tokenizer, id_pairs, queries, corpus, model.max_length, progress=progress
    )


def load(directory: Any, device: Any = None) -> Any:
    from reranklab.models.bert_dmn import BertDMN

    return BertDMN.load(directory, device=device)


SPEC = register_variant(
    VariantSpec(
        name=NAME,
        example_kind="triplet",
        description="BERT-DMN: BERT(q,p) split into query tokens and passage sentences -> GRUs + 4-episode memory; a = sigmoid(W[c;Q;m]), max-margin",
        build=build,
        loss=loss,
        featurize=featurize,
        load=load,
        settings=DmnSettings,
        cross_encoder=True,
    )
)
