"""Chunked passages (Mass et al. §4.3.2): score a passage from several (query, chunk) encodings.

The passage is split into ``chunks`` parts of (nearly) equal numbers of words
(:func:`chunk_boundaries`); each ``[CLS] q [SEP] chunk [SEP]`` is encoded at ``chunk_length``
word pieces, and the chunks' [CLS] vectors ``h_1 … h_C`` are combined into one vector ``c``:

* ``attention`` (Yang et al. 2016): ``u_i = tanh(W h_i + b)``, ``α = softmax(u_i · u_w)``,
  ``c = Σ α_i h_i`` with ``W`` of size ``attention_size`` × hidden;
* ``max``: ``c = max_i h_i`` per dimension.

The score is ``s = v · c`` (a scalar head, computed in fp32; the run holds ``s`` itself as
float64), trained with the BERTlets loss on triplets.
Passages with fewer words than chunks leave trailing chunks empty; those are masked out of the
pooling (and not encoded). A saved model is the cross-encoder's directory plus
``pooling.safetensors``; ``reranker.json`` records the pooling and ``inputs`` the chunking.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from reranklab.features.cache import encode_cached
from reranklab.features.types import EncodedPairs, KeyedPairs, distinct_pairs
from reranklab.models.reranker import CrossEncoderReranker, load_reranker
from reranklab.models.saved import load_tensors, read_meta, ready, save_tensors

POOLING_FILE = "pooling.safetensors"
POOLINGS = ("attention", "max")


def chunk_boundaries(words: int, chunks: int) -> list[tuple[int, int]]:
    """Word index ranges ``[start, end)`` of ``chunks`` contiguous, nearly equal parts.

    Sizes differ by at most one word, the earlier parts taking the extra words (as
    ``numpy.array_split``); with fewer words than chunks the trailing parts are empty.

    Example:
        >>> chunk_boundaries(7, 3)
        [(0, 3), (3, 5), (5, 7)]
        >>> chunk_boundaries(1, 2)
        [(0, 1), (1, 1)]
    """
    if chunks < 1:
        raise ValueError("chunks must be at least 1")
    size, extra = divmod(words, chunks)
    bounds, start = [], 0
    for i in range(chunks):
        end = start + size + (1 if i < extra else 0)
        bounds.append((start, end))
        start = end
    return bounds


def split_passage(text: str, chunks: int) -> list[str]:
    """The passage's ``chunks`` parts, split between white-space separated words.

    Example:
        >>> split_passage("ghost town, an urban area with a fixed boundary", 3)
        ['ghost town, an', 'urban area with', 'a fixed boundary']
    """
    words = text.split()
    return [" ".join(words[start:end]) for start, end in chunk_boundaries(len(words), chunks)]


class ChunkPooling(nn.Module):
    """Combines chunk vectors ``[B, C, H]`` into ``[B, H]``, ignoring masked (empty) chunks.

    Args:
        hidden_size: the encoder's hidden size ``H``.
        pooling: ``attention`` (additive attention, Yang et al. 2016) or ``max``.
        attention_size: the attention's hidden size ``A`` (unused by ``max``).
        initializer_range: standard deviation of the initial weights (the encoder's).
    """

    def __init__(
        self,
        hidden_size: int,
        pooling: str = "attention",
        attention_size: int = 192,
        initializer_range: float = 0.02,
    ) -> None:
        super().__init__()
        if pooling not in POOLINGS:
            raise ValueError(f"unknown pooling {pooling!r} (known: {', '.join(POOLINGS)})")
        self.pooling = pooling
        self.attention_size = int(attention_size)
        if pooling == "attention":
            self.projection = nn.Linear(hidden_size, self.attention_size)
            self.context = nn.Parameter(torch.empty(self.attention_size))
            nn.init.normal_(self.projection.weight, mean=0.0, std=initializer_range)
            nn.init.zeros_(self.projection.bias)
            nn.init.normal_(self.context, mean=0.0, std=initializer_range)

    def weights(self, vectors: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Attention weights ``α`` ``[B, C]`` (0 on masked chunks, each row sums to 1)."""
        logits = torch.tanh(self.projection(vectors)) @ self.context
        logits = logits.masked_fill(~mask, torch.finfo(logits.dtype).min)
        return torch.softmax(logits, dim=-1) * mask

    def forward(self, vectors: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        mask = mask.bool()
        if self.pooling == "max":
            return vectors.masked_fill(~mask.unsqueeze(-1), torch.finfo(vectors.dtype).min).amax(
                dim=1
            )
        return (self.weights(vectors, mask).unsqueeze(-1) * vectors).sum(dim=1)


class ChunkedReranker(CrossEncoderReranker):
    """A cross-encoder scoring a passage from the pooled [CLS] vectors of its chunks.

    Args:
        encoder, tokenizer, variant, num_outputs, score, max_length, dropout, encoder_name,
            inputs: as :class:`CrossEncoderReranker` (``max_length`` is the length of each
            (query, chunk) sequence; ``inputs`` holds ``chunks`` and ``chunk_length``).
        pooling: ``attention`` or ``max``.
        attention_size: size of the additive attention.

    Example:
        >>> from reranklab.models.tiny import tiny_encoder
        >>> encoder, tokenizer = tiny_encoder(["who", "is", "it", "me", "you"])
        >>> model = ChunkedReranker(encoder, tokenizer, variant="chunked", num_outputs=1, score="logit",
        ...     max_length=16, inputs={"chunks": 2, "chunk_length": 16})
        >>> features = chunk_features(model, [("q1", "p1"), ("q1", "p2")], {"q1": "who is it"},
        ...     {"p1": "it is me and you", "p2": "me"}, progress=False)
        >>> logits = model(**features.batch([0, 1]))  # input_ids [B, C, W]: one scalar per pair
        >>> logits.shape, features.chunk_mask.tolist()
        (torch.Size([2, 1]), [[True, True], [True, False]])
    """

    def __init__(
        self,
        encoder: nn.Module,
        tokenizer: Any,
        *,
        pooling: str = "attention",
        attention_size: int = 192,
        **kwargs: Any,
    ) -> None:
        super().__init__(encoder, tokenizer, **kwargs)
        self.pooling = ChunkPooling(
            self.head.in_features,
            pooling,
            attention_size,
            getattr(encoder.config, "initializer_range", 0.02),
        )

    def head_config(self) -> dict[str, Any]:
        return {
            **super().head_config(),
            "pooling": self.pooling.pooling,
            "attention_size": self.pooling.attention_size,
        }

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        chunk_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Logits ``[B, num_outputs]`` of pairs given as ``[B, C, W]`` chunk sequences."""
        batch, chunks, width = input_ids.shape
        if chunk_mask is None:
            chunk_mask = torch.ones(batch, chunks, dtype=torch.bool, device=input_ids.device)
        valid = chunk_mask.bool().reshape(-1)
        # Only the non-empty chunks go through the encoder.
        flat_types = None if token_type_ids is None else token_type_ids.reshape(-1, width)[valid]
        encoded = self.encode(
            input_ids.reshape(-1, width)[valid],
            attention_mask.reshape(-1, width)[valid],
            flat_types,
        )
        # Pooling and head in fp32 even under bf16/fp16 autocast, as the base class's head: a
        # half-precision logit keeps ~3 significant digits and would turn close scores into ties.
        with torch.autocast(device_type=encoded.device.type, enabled=False):
            encoded = encoded.to(self.head.weight.dtype)
            vectors = encoded.new_zeros(batch * chunks, encoded.shape[-1])
            vectors[valid] = encoded
            pooled = self.pooling(vectors.view(batch, chunks, -1), chunk_mask.bool())
            return self.head(self.dropout(pooled))

    def save(self, directory: str | Path) -> Path:
        out = super().save(directory)
        if self.pooling.state_dict():  # max-pooling has no parameters
            save_tensors(self.pooling, out / POOLING_FILE)
        return out


def load_chunked(
    directory: str | Path, device: torch.device | str | None = None
) -> ChunkedReranker:
    """Restore a :class:`ChunkedReranker` saved with :meth:`ChunkedReranker.save` (eval mode).

    Example:
        >>> import tempfile
        >>> from reranklab.models.tiny import tiny_encoder
        >>> encoder, tokenizer = tiny_encoder(["who", "is", "it"])
        >>> saved = ChunkedReranker(encoder, tokenizer, variant="chunked", num_outputs=1, score="logit",
        ...     max_length=16, inputs={"chunks": 2, "chunk_length": 16}).save(tempfile.mkdtemp())
        >>> model = load_chunked(saved)
        >>> model.inputs["chunks"], model.pooling.pooling
        (2, 'attention')
    """
    path = Path(directory)
    base = load_reranker(path)
    head = read_meta(path)["head"]
    model = ChunkedReranker(
        base.encoder,
        base.tokenizer,
        variant=base.variant,
        num_outputs=base.num_outputs,
        score=base.score_function,
        max_length=base.max_length,
        dropout=base.dropout.p,
        encoder_name=base.encoder_name,
        inputs=base.inputs,
        pooling=head.get("pooling", "attention"),
        attention_size=int(head.get("attention_size", 192)),
    )
    model.head.load_state_dict(base.head.state_dict())
    if model.pooling.state_dict():
        load_tensors(model.pooling, path / POOLING_FILE, "the attention pooling's weights")
    return ready(model, device)


@dataclass(frozen=True)
class ChunkedPairs(KeyedPairs):
    """The :class:`~reranklab.features.types.PairFeatures` of chunked pairs.

    Pair ``i``'s chunk ``j`` is sequence ``i * chunks + j`` of ``encoded``; ``chunk_mask[i, j]``
    is False for an empty chunk.
    """

    encoded: EncodedPairs
    chunks: int
    chunk_mask: np.ndarray
    pad_token_id: int = 0

    @property
    def lengths(self) -> np.ndarray:
        # The padded width of a pair's chunks is its longest chunk sequence.
        return (
            self.encoded.lengths.reshape(-1, self.chunks).max(axis=1)
            if len(self)
            else np.zeros(0, dtype=np.int64)
        )

    def batch(
        self, rows: Sequence[int] | np.ndarray, pad_to_multiple_of: int | None = None
    ) -> dict[str, Any]:
        """``input_ids``, ``attention_mask`` (, ``token_type_ids``) ``[B, C, W]`` and ``chunk_mask`` ``[B, C]``."""
        rows = np.asarray(rows, dtype=np.int64)
        sequences = (rows[:, None] * self.chunks + np.arange(self.chunks)).reshape(-1)
        flat = self.encoded.pad(sequences, self.pad_token_id, pad_to_multiple_of)
        inputs: dict[str, Any] = {
            name: tensor.view(len(rows), self.chunks, -1) for name, tensor in flat.items()
        }
        inputs["chunk_mask"] = torch.from_numpy(self.chunk_mask[rows])
        return inputs

    def summary(self) -> dict[str, Any]:
        return {
            "chunk_sequences": int(self.chunk_mask.sum()),
            "empty_chunks": int((~self.chunk_mask).sum()),
            "chunks_at_max_length": self.encoded.at_max_length(),
            "pairs_query_truncated": self.encoded.query_truncated // self.chunks,
            "pairs_query_cut": self.encoded.query_cut // self.chunks,
        }


def chunk_features(
    model: Any,
    id_pairs: Iterable[tuple[str, str]],
    queries: Mapping[str, str],
    corpus: Mapping[str, str],
    *,
    progress: bool = True,
) -> ChunkedPairs:
    """The chunked variant's ``featurize`` hook: ``chunks`` (query, chunk) sequences per pair.

    Reads ``model.inputs["chunks"]``, ``model.max_length`` (the chunk length) and
    ``model.inputs["query_max_length"]``; tokenises through the model step's feature cache.

    Example:
        >>> from types import SimpleNamespace
        >>> from reranklab.models.tiny import tiny_tokenizer
        >>> tokenizer = tiny_tokenizer(["who", "me", "you"])
        >>> model = SimpleNamespace(tokenizer=tokenizer, max_length=16, inputs={"chunks": 2})
        >>> features = chunk_features(model, [("q1", "p1")], {"q1": "who"}, {"p1": "me you"}, progress=False)
        >>> [tokenizer.convert_ids_to_tokens(ids) for ids in features.batch([0])["input_ids"][0]]
        [['[CLS]', 'who', '[SEP]', 'me', '[SEP]'], ['[CLS]', 'who', '[SEP]', 'you', '[SEP]']]
    """
    chunks = int(model.inputs["chunks"])
    position = distinct_pairs(id_pairs, queries, corpus)
    keys = list(position)
    texts: list[tuple[str, str]] = []
    mask = np.zeros((len(keys), chunks), dtype=bool)
    for i, (qid, pid) in enumerate(keys):
        parts = split_passage(corpus[pid], chunks)
        mask[i] = [bool(part) for part in parts]
        mask[i, 0] = True  # an empty passage is still one (query, "") sequence
        texts.extend((queries[qid], part) for part in parts)
    encoded = encode_cached(
        model.tokenizer,
        texts,
        int(model.max_length),
        query_max_length=model.inputs.get("query_max_length"),
        desc="tokenise chunks",
        progress=progress,
    )
    return ChunkedPairs(
        keys, position, encoded, chunks, mask, int(model.tokenizer.pad_token_id or 0)
    )
