"""Packed batches: several short pairs in one row, so no FLOP goes to padding tokens.

Dynamic padding still pads every pair of a batch to the batch's longest. Packing puts the
pairs of a batch into rows no wider than that longest pair (first-fit decreasing), each pair
with its own positions (restarting at 0) and segment ids, and a block-diagonal attention mask
so that a pair sees only its own tokens: the encoder computes exactly what it computes on the
pairs one by one (tested to float rounding). Rows are never wider than the padded batch, so a
packed batch costs at most the padded one in every layer, and its linear layers (most of a
BERT's compute at these lengths) see only real tokens plus the last row's remainder.

The packed inputs: ``input_ids``, ``token_type_ids``, ``position_ids`` and ``attention_mask``
``[rows, width]`` (the mask marks real tokens, as in a padded batch, so token counts stay
right); ``sequence_ids`` ``[rows, width]`` (which pair each token belongs to, ``-1`` for
padding), from which the model builds the ``[rows, 1, width, width]`` block mask on its
device; ``cls_index`` ``[pairs]`` (the flat position of each pair's first token, in the order
the pairs were asked for). A model reads them through
:meth:`~reranklab.models.reranker.CrossEncoderReranker.encode`; ``training.packing`` turns
them on for the models whose ``supports_packing`` is true.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from reranklab.features.types import EncodedPairs, PairIndex


def first_fit_decreasing(lengths: Sequence[int] | np.ndarray, capacity: int) -> list[list[int]]:
    """Bins of positions whose lengths sum to at most ``capacity``, longest first.

    Deterministic: ties keep their input order (stable sort), so a batch packs the same way
    on every run.

    Example:
        >>> first_fit_decreasing([5, 2, 3, 4, 1], capacity=6)
        [[0, 4], [3, 1], [2]]
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    if len(lengths) and int(lengths.max()) > capacity:
        raise ValueError(f"a sequence of {int(lengths.max())} does not fit rows of {capacity}")
    bins: list[list[int]] = []
    room: list[int] = []
    for position in np.argsort(-lengths, kind="stable").tolist():
        length = int(lengths[position])
        for b, free in enumerate(room):
            if length <= free:
                bins[b].append(position)
                room[b] -= length
                break
        else:
            bins.append([position])
            room.append(capacity - length)
    return bins


def pack(
    encoded: EncodedPairs,
    rows: Sequence[int] | np.ndarray,
    pad_token_id: int,
    pad_to_multiple_of: int | None = None,
) -> dict[str, torch.Tensor]:
    """Packed model inputs of pairs ``rows`` (see the module docstring).

    Args:
        encoded: the tokenised pairs.
        rows: which pairs; ``cls_index[i]`` locates ``rows[i]``.
        pad_token_id: the tokenizer's pad id.
        pad_to_multiple_of: round the row width up (8 suits GPU tensor cores).

    Example:
        >>> encoded = EncodedPairs.from_pieces([[2, 7, 3, 9, 3], [2, 8, 3], [2, 5]], [[0, 0, 0, 1, 1], [0, 0, 0], [0, 0]], 8)
        >>> batch = pack(encoded, [1, 0, 2], pad_token_id=0)
        >>> batch["input_ids"].tolist(), batch["position_ids"].tolist()
        ([[2, 7, 3, 9, 3], [2, 8, 3, 2, 5]], [[0, 1, 2, 3, 4], [0, 1, 2, 0, 1]])
        >>> batch["sequence_ids"].tolist(), batch["cls_index"].tolist()
        ([[1, 1, 1, 1, 1], [0, 0, 0, 2, 2]], [5, 0, 8])
    """
    starts, lengths, width = encoded.spans(rows, pad_to_multiple_of)
    bins = first_fit_decreasing(lengths, width)
    shape = (len(bins), width)
    input_ids = np.full(shape, pad_token_id, dtype=np.int64)
    position_ids = np.zeros(shape, dtype=np.int64)
    sequence_ids = np.full(shape, -1, dtype=np.int64)
    token_types = None if encoded.token_type_ids is None else np.zeros(shape, dtype=np.int64)
    cls_index = np.zeros(len(rows), dtype=np.int64)
    for r, members in enumerate(bins):
        column = 0
        for k in members:
            start, length = int(starts[k]), int(lengths[k])
            end = column + length
            input_ids[r, column:end] = encoded.input_ids[start : start + length]
            position_ids[r, column:end] = np.arange(length)
            sequence_ids[r, column:end] = k
            if token_types is not None:
                token_types[r, column:end] = encoded.token_type_ids[start : start + length]
            cls_index[k] = r * width + column
            column = end
    batch = {
        "input_ids": torch.from_numpy(input_ids),
        "attention_mask": torch.from_numpy((sequence_ids >= 0).astype(np.int64)),
        "position_ids": torch.from_numpy(position_ids),
        "sequence_ids": torch.from_numpy(sequence_ids),
        "cls_index": torch.from_numpy(cls_index),
    }
    if token_types is not None:
        batch["token_type_ids"] = torch.from_numpy(token_types)
    return batch


def block_mask(sequence_ids: torch.Tensor) -> torch.Tensor:
    """``[rows, 1, width, width]`` bool: token i may attend to token j of the same pair.

    Padding tokens (``-1``) attend to each other: a query row with nothing to attend to would
    make the softmax NaN, and a NaN there reaches the weights through the backward pass even
    though no loss reads it.

    Example:
        >>> block_mask(torch.tensor([[0, 0, 1, -1]]))[0, 0].int().tolist()
        [[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]
    """
    return (sequence_ids[:, None, :, None] == sequence_ids[:, None, None, :]).contiguous()


@dataclass(frozen=True)
class PackedPairIndex(PairIndex):
    """A :class:`PairIndex` whose batches are packed (:func:`pack`) instead of padded.

    Example:
        >>> encoded = EncodedPairs.from_pieces([[2, 7, 3], [2, 8, 3]], None, 8)
        >>> index = PackedPairIndex([("q", "a"), ("q", "b")], {("q", "a"): 0, ("q", "b"): 1}, encoded)
        >>> index.batch([0, 1])["input_ids"].tolist()
        [[2, 7, 3], [2, 8, 3]]
    """

    def batch(
        self, rows: Sequence[int] | np.ndarray, pad_to_multiple_of: int | None = None
    ) -> dict[str, Any]:
        """Packed inputs of ``rows`` (rows no wider than their longest pair)."""
        return pack(self.encoded, rows, self.pad_token_id, pad_to_multiple_of)


def packed_if_supported(model: Any, features: Any, enabled: bool) -> Any:
    """``features`` as a :class:`PackedPairIndex` when packing is on and ``model`` reads packed
    inputs (``model.supports_packing``); otherwise ``features`` unchanged.

    Only the default one-sequence-per-pair features pack; a variant with its own features
    (chunks, bi-encoder sides, word ids) keeps them as they are.
    """
    if not enabled or type(features) is not PairIndex:
        return features
    if not getattr(model, "supports_packing", False):
        return features
    return PackedPairIndex(
        features.keys, features.position, features.encoded, features.pad_token_id
    )
