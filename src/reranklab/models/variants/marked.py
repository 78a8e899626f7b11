"""MarkedBERT (Boualili et al. 2020): BERT[PW] on texts whose exact query-term matches are marked.

Before encoding, every passage occurrence of the k-th distinct query term, and the query term
itself, is wrapped in the markers ``[e_k]`` … ``[/e_k]`` (:mod:`reranklab.models.marking`); the
markers are new special tokens of the tokenizer, with the encoder's embeddings resized. The
model and loss are BERT[PW]'s: 2-way head on [CLS], two-class cross-entropy, score
P(relevant). Marking is the variant's ``featurize`` hook, so training and re-ranking mark the
same way, and the saved tokenizer keeps the markers.

Defaults: ``markers: 32`` marker pairs, ``marker_stopwords: en`` (stop words are never marked,
as in the authors' marker); the optimiser settings are the schema's. Override them in
``params.yaml: variants.marked`` (``marker_stopwords: null`` marks every query term).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import Field

from reranklab.models.registry import VariantSpec, register_variant
from reranklab.models.variants._cross_encoder import CrossEncoderSettings, build_cross_encoder

NAME = "marked"


class MarkedSettings(CrossEncoderSettings):
    """How MarkedBERT marks the query terms (Boualili et al. 2020)."""

    markers: int = Field(
        32,
        ge=1,
        le=512,
        description="marker pairs `[e_k]` `[/e_k]` added to the tokenizer; the k-th distinct query term is marked only for k <= markers",
    )
    marker_stopwords: str | None = Field(
        "en",
        description="bm25s stop-word list (en, en_plus, de, fr, ...) whose words are never marked (the MarkedBERT authors skip English stop words); null = mark every query term",
    )


def build(encoder: str, training: Mapping[str, Any], max_length: int) -> Any:
    """A fresh MarkedBERT: BERT[PW] whose tokenizer holds ``training.markers`` marker pairs."""
    from reranklab.models.marking import add_marker_tokens, resolve_stopwords

    settings = MarkedSettings.from_training(training)
    markers, stopwords = settings.markers, settings.marker_stopwords
    resolve_stopwords(stopwords)  # an unknown list fails here, before any training
    model = build_cross_encoder(
        encoder,
        training,
        max_length,
        variant=NAME,
        num_outputs=2,
        score="p_relevant",
        inputs={"markers": markers, "marker_stopwords": stopwords},
    )
    add_marker_tokens(model.tokenizer, model.encoder, markers)
    return model


def marker_for(model: Any) -> Any:
    """The :class:`~reranklab.models.marking.Marker` of a (built or loaded) MarkedBERT."""
    from reranklab.models.marking import Marker, resolve_stopwords

    inputs = model.inputs
    return Marker(
        model.tokenizer, int(inputs["markers"]), resolve_stopwords(inputs.get("marker_stopwords"))
    )


def featurize(
    model: Any,
    id_pairs: Iterable[tuple[str, str]],
    queries: Mapping[str, str],
    corpus: Mapping[str, str],
    *,
    progress: bool = True,
) -> Any:
    """Mark each pair's texts, then tokenise them as the default featurizer does."""
    from reranklab.features.featurize import token_features

    return token_features(
        model,
        id_pairs,
        queries,
        corpus,
        transform=marker_for(model),
        progress=progress,
        desc="mark+tokenise",
    )


def loss(model: Any, training: Mapping[str, Any]) -> Any:
    """Two-class cross-entropy on the [CLS] logits."""
    from reranklab.models.losses.pointwise_ce import PointwiseCrossEntropyLoss

    return PointwiseCrossEntropyLoss(model)


SPEC = register_variant(
    VariantSpec(
        name=NAME,
        example_kind="pointwise",
        description="MarkedBERT: query-term matches wrapped in [e_k] ... [/e_k] markers (new tokens), then BERT[PW]",
        build=build,
        loss=loss,
        settings=MarkedSettings,
        cross_encoder=True,
        featurize=featurize,
    )
)
