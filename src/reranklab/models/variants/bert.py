"""BERT (Leonhardt et al. 2021): BERT-DMN's fine-tuned vanilla BERT ranker, pair-wise max-margin.

The baseline BERT-DMN compares itself with first (``papers/bertdmn2021.txt:132``): "the ranking
is solely based on the output corresponding to the classification token, which is transformed
into a scalar score using a feed-forward classification layer", after Nogueira & Cho. Here
``a = σ(wᵀ dropout(c) + b)``, with ``c`` the encoder's pooled [CLS] (as in their
``BertForSequenceClassification``) and the σ of BERT-DMN's own answer module
(``papers/bertdmn2021.txt:94``); head dropout 0.1 (``head_dropout``); the whole encoder is
fine-tuned. A (q, p+, p-) triplet is trained with the paper's pair-wise max-margin loss
``max{0, m − a(q,p+) + a(q,p−)}`` (``papers/bertdmn2021.txt:156``, the loss of ``dmn``); the
ranking score is the logit ``z`` (``σ(z)`` saturates into ties). ``bert_lite`` is its
counterpart on a frozen, cached encoder.

Defaults (the paper's, for all its models: ``papers/bertdmn2021.txt:154``-``158``): AdamW,
learning rate 3e-5, margin 0.2, linear warm-up over the first 1,000 steps (``warmup_steps``;
10,000 on TREC-DL). Model selection on dev as ``dmn``'s: the epoch with the best dev MAP is
kept (``papers/bertdmn2021.txt:158``) and training stops after 3 epochs without improvement
(the authors' code). The paper's batch of 32 is no preset (``training.batch_size``, as for
``dmn``). Override them in ``params.yaml: variants.bert``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reranklab.models.registry import VariantSpec, register_variant
from reranklab.models.variants._cross_encoder import CrossEncoderSettings, build_cross_encoder
from reranklab.models.variants.dmn import HeadDropout
from reranklab.settings.training import Validation

NAME = "bert"


class BertSettings(CrossEncoderSettings):
    """BERT-DMN's training of its BERT baseline: AdamW 3e-5, 1,000 warm-up steps, margin 0.2,
    head dropout 0.1, epoch chosen on dev MAP.

    Model selection on dev as ``dmn``'s (the paper validates all its models on dev MAP); on
    cross-validation datasets set training.validation.dev_fraction, or turn it off:
    variants.bert.validation: null.
    """

    learning_rate: float = 3e-5
    warmup_steps: int | None = 1000
    margin: float = 0.2
    head_dropout: HeadDropout = 0.1
    validation: Validation | None = Validation(measure="MAP", select_best=True, patience=3)


def build(encoder: str, training: Mapping[str, Any], max_length: int) -> Any:
    """A fresh BERT ranker on ``encoder`` (scalar head; ``a`` = its sigmoid, the run holds the logit)."""
    return build_cross_encoder(
        encoder,
        training,
        max_length,
        variant=NAME,
        num_outputs=1,
        score="sigmoid",
        dropout=BertSettings.from_training(training).head_dropout,
    )


def loss(model: Any, training: Mapping[str, Any]) -> Any:
    """Pair-wise max-margin on ``a = σ(z)`` with ``training.margin``."""
    from reranklab.models.losses.pairwise_max_margin import PairwiseMaxMarginLoss
    from reranklab.models.reranker import SCORE_FUNCTIONS

    return PairwiseMaxMarginLoss(
        model,
        margin=BertSettings.from_training(training).margin,
        output=SCORE_FUNCTIONS[model.score_function],
    )


SPEC = register_variant(
    VariantSpec(
        name=NAME,
        example_kind="triplet",
        description="BERT (BERT-DMN's baseline): a = sigmoid(w.[CLS] + b), fine-tuned encoder, max-margin max(0, m - a+ + a-); score the logit",
        build=build,
        loss=loss,
        settings=BertSettings,
        cross_encoder=True,
    )
)
