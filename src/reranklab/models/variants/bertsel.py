"""BERTSel (Li et al. 2019): a sigmoid relevance probability trained point- and pair-wise at once.

Each pair gets ``y = sigmoid(w · [CLS] + b)``; a (q, p+, p-) triplet is trained with
``0.5 · (−log y(q,p+) − log(1 − y(q,p-))) + 0.5 · max(0, m − y(q,p+) + y(q,p-))``. The ranking
score is ``y`` (computed in float64 so confident pairs do not tie at 1.0).

Defaults: the margin ``m`` is ``training.margin`` (0.2) and the optimiser settings are the
schema's BERT fine-tuning ones. Model selection on dev is on: the epoch with the best dev MAP
is kept (``training.validation``). Override them in ``params.yaml: variants.bertsel``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reranklab.models.registry import VariantSpec, register_variant
from reranklab.models.variants._cross_encoder import CrossEncoderSettings, build_cross_encoder
from reranklab.settings.training import Validation, training_view

NAME = "bertsel"


class BertSelSettings(CrossEncoderSettings):
    """BERTSel selects its epoch on dev MAP (``training.validation``).

    Model selection on dev: BERTSel selects its epoch on the dev split (issue 10, point 5; not
    checked against the paper's text here, whose results table also reports an "epoch=3" row:
    studies/bertsel2020.yaml). MAP, its first measure; no early stopping. On cross-validation
    datasets set training.validation.dev_fraction, or turn it off: variants.bertsel.validation: null.
    """

    validation: Validation | None = Validation(measure="MAP", select_best=True)


def build(encoder: str, training: Mapping[str, Any], max_length: int) -> Any:
    """A fresh BERTSel on ``encoder`` (scalar logit head; y = its sigmoid, the run holds the logit)."""
    return build_cross_encoder(
        encoder, training, max_length, variant=NAME, num_outputs=1, score="sigmoid"
    )


def loss(model: Any, training: Mapping[str, Any]) -> Any:
    """Half binary cross-entropy, half hinge on the probabilities, with ``training.margin``."""
    from reranklab.models.losses.bertsel import BertSelLoss

    return BertSelLoss(model, margin=training_view(training).margin)


SPEC = register_variant(
    VariantSpec(
        name=NAME,
        example_kind="triplet",
        description="BERTSel: y = sigmoid(w.[CLS] + b), 0.5 BCE + 0.5 hinge max(0, m - y+ + y-) on (q, p+, p-); score y",
        build=build,
        loss=loss,
        settings=BertSelSettings,
        cross_encoder=True,
    )
)
