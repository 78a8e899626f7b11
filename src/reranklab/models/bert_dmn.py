"""BERT-DMN: a fine-tuned cross-encoder whose output feeds a dynamic memory network head.

The (query, passage) pair is encoded jointly (``[CLS] q [SEP] p [SEP]``); the output vectors
are split back into the query's word pieces and the passage's sentences (the mean of each
sentence's word pieces, boundaries from the passage text, see :mod:`reranklab.models.segments`)
and go, with [CLS], to :class:`~reranklab.models.heads.dmn.DynamicMemoryHead`. The model's
output is ``a = σ(logit)`` (what the pair-wise max-margin loss compares); the ranking score, what
a run holds, is the float64 logit itself (same order, no saturation ties).

A saved model is a directory::

    config.json, model.safetensors, tokenizer files   # the fine-tuned encoder (save_pretrained)
    head.safetensors                                   # the DMN head
    reranker.json                                      # variant, head config, max_length
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from reranklab.models.encoder import encoder_inputs, load_encoder
from reranklab.models.heads.dmn import DynamicMemoryHead
from reranklab.models.saved import load_encoder_model, save_encoder_model, variant_meta


def segment_features(hidden: torch.Tensor, segments: torch.Tensor) -> dict[str, torch.Tensor]:
    """Split an encoder's output into [CLS], query word-piece vectors and sentence vectors.

    Args:
        hidden: ``[B, T, H]`` last hidden states of padded pairs.
        segments: ``[B, T]`` segment ids (``-1`` special/padding, ``0`` query, ``k`` sentence k).

    Returns:
        ``cls [B, H]`` (position 0), ``query [B, Tq, H]`` (the query's word pieces in order,
        zero-padded), ``query_mask [B, Tq]``, ``sentences [B, S, H]`` (the mean of each
        sentence's word pieces), ``sentence_mask [B, S]``; ``Tq`` and ``S`` are at least 1.

    Example:
        >>> hidden = torch.arange(12.0).view(1, 6, 2)
        >>> out = segment_features(hidden, torch.tensor([[-1, 0, -1, 1, 1, 2]]))
        >>> out["query"].tolist(), out["sentences"].tolist()
        ([[[2.0, 3.0]]], [[[7.0, 8.0], [10.0, 11.0]]])
    """
    # float32 whatever the autocast dtype: sentence means over hundreds of word pieces stay exact.
    hidden = hidden.float()
    batch, _, size = hidden.shape
    segments = segments.to(hidden.device)
    is_query = segments == 0
    query_counts = is_query.sum(dim=1)
    width = max(int(query_counts.max()) if batch else 0, 1)
    # A stable sort of "not query" puts each row's query positions first, in order.
    order = torch.argsort((~is_query).to(torch.int8), dim=1, stable=True)[:, :width]
    query_mask = torch.arange(width, device=hidden.device).unsqueeze(0) < query_counts.unsqueeze(1)
    query = hidden.gather(1, order.unsqueeze(-1).expand(-1, -1, size)) * query_mask.unsqueeze(
        -1
    ).to(hidden.dtype)

    n_sentences = max(int(segments.max()) if segments.numel() else 0, 1)
    one_hot = (segments.unsqueeze(-1) == torch.arange(1, n_sentences + 1, device=hidden.device)).to(
        hidden.dtype
    )
    counts = one_hot.sum(dim=1)
    sentences = one_hot.transpose(1, 2) @ hidden / counts.clamp(min=1).unsqueeze(-1)
    return {
        "cls": hidden[:, 0],
        "query": query,
        "query_mask": query_mask,
        "sentences": sentences,
        "sentence_mask": counts > 0,
    }


class BertDMN(nn.Module):
    """A BERT-like encoder fine-tuned jointly with a :class:`DynamicMemoryHead`.

    Args:
        encoder: a transformers ``AutoModel``.
        tokenizer: its (fast) tokenizer.
        variant: the registered variant name (written to ``reranker.json``).
        max_length: word pieces per pair.
        hidden, episodes, dropout: the head's settings (256, 4, 0.1 in BERT-DMN).
        encoder_name: the ``training.encoder`` it was built from (provenance only).

    Example:
        >>> from reranklab.models.segments import segmented_features
        >>> from reranklab.models.tiny import tiny_encoder
        >>> encoder, tokenizer = tiny_encoder(["who", "is", "it", "me", "you"])
        >>> model = BertDMN(encoder, tokenizer, variant="dmn", max_length=32, hidden=8, episodes=2)
        >>> features = segmented_features(tokenizer, [("q1", "p1"), ("q1", "p2")], {"q1": "who is it"},
        ...     {"p1": "Me. You.", "p2": "It is you."}, 32, progress=False)
        >>> model(**features.batch([0, 1])).shape  # a = sigmoid(logit) per pair
        torch.Size([2])
    """

    def __init__(
        self,
        encoder: nn.Module,
        tokenizer: Any,
        *,
        variant: str,
        max_length: int,
        hidden: int = 256,
        episodes: int = 4,
        dropout: float = 0.1,
        encoder_name: str | None = None,
    ) -> None:
        super().__init__()
        self.encoder = encoder
        self.tokenizer = tokenizer
        self.variant = variant
        self.max_length = int(max_length)
        self.encoder_name = encoder_name
        self.head = DynamicMemoryHead(
            encoder.config.hidden_size, hidden=hidden, episodes=episodes, dropout=dropout
        )

    @classmethod
    def from_encoder(cls, encoder: str, **kwargs: Any) -> BertDMN:
        """A fresh BERT-DMN on the pre-trained ``encoder`` (see :func:`load_encoder`)."""
        model, tokenizer = load_encoder(encoder)
        return cls(model, tokenizer, encoder_name=encoder, **kwargs)

    @property
    def device(self) -> torch.device:
        return self.head.answer.weight.device

    def logits(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        segments: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``W[c; Q; m] + b`` ``[B]`` of padded, segmented pairs."""
        outputs = self.encoder(
            **encoder_inputs(self.encoder, input_ids, attention_mask, token_type_ids)
        )
        features = segment_features(outputs.last_hidden_state, segments)  # float32
        # The head in fp32 even under bf16/fp16 autocast (as the cross-encoder's): a
        # half-precision logit keeps ~3 significant digits and would turn close scores into ties.
        with torch.autocast(device_type=features["cls"].device.type, enabled=False):
            return self.head(**features)

    def forward(self, **features: torch.Tensor) -> torch.Tensor:
        """``a = σ(W[c; Q; m] + b)`` ``[B]``, the value the max-margin loss compares."""
        return torch.sigmoid(self.logits(**features))

    def score(self, features: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """Ranking scores ``[B]`` (float64): the logits, in the order of ``a`` but without its
        saturation (``σ(z) == 1.0`` for every ``z`` above ~37, in float64)."""
        return self.logits(**features).double()

    def save(self, directory: str | Path) -> Path:
        """Write the encoder, tokenizer, head and ``reranker.json`` into ``directory``."""
        meta = {
            **variant_meta(self),
            "head": self.head.config(),
            "max_length": self.max_length,
            "encoder": self.encoder_name,
        }
        return save_encoder_model(directory, self.encoder, self.tokenizer, self.head, meta)

    @classmethod
    def load(cls, directory: str | Path, device: torch.device | str | None = None) -> BertDMN:
        """Restore a model written by :meth:`save`, offline, in eval mode."""

        def build(encoder: Any, tokenizer: Any, meta: dict[str, Any]) -> BertDMN:
            head = meta["head"]
            return cls(
                encoder,
                tokenizer,
                variant=meta["variant"],
                max_length=int(meta["max_length"]),
                hidden=int(head["hidden"]),
                episodes=int(head["episodes"]),
                dropout=float(head["dropout"]),
                encoder_name=meta.get("encoder"),
            )

        return load_encoder_model(directory, build, "BERT-DMN", device)
