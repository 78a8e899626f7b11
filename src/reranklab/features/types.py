"""The data types of featurised (query, passage) pairs: the leaf of :mod:`reranklab.features`.

:class:`EncodedPairs` holds many pairs' word pieces unpadded, in one flat array with offsets
(100k pairs of 256 word pieces are ~100 MB this way and several GB as Python lists), and pads
a batch of them on demand (:meth:`EncodedPairs.pad`). :class:`PairFeatures` is what a
variant's ``featurize`` hook returns; :class:`KeyedPairs` is the (qid, pid) → row part every
implementation shares, and :class:`PairIndex` the default one (one sequence per pair).

Tokenising (:mod:`~reranklab.features.tokenize`), caching (:mod:`~reranklab.features.cache`)
and batching (:mod:`~reranklab.features.batch`) import these types; this module imports none
of them, so the package has no import cycle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import torch

from reranklab.errors import FormatError, ReranklabError

PairKey = tuple[str, str]


def ragged(pieces: Sequence[np.ndarray], dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    """Variable-length arrays as one flat array and offsets (``int64 [len(pieces) + 1]``).

    Example:
        >>> flat, offsets = ragged([np.array([1, 2]), np.array([3])], np.int32)
        >>> flat.tolist(), offsets.tolist()
        ([1, 2, 3], [0, 2, 3])
    """
    offsets = np.zeros(len(pieces) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in pieces], out=offsets[1:])
    flat = (
        np.concatenate(pieces).astype(dtype, copy=False)
        if len(pieces)
        else np.empty(0, dtype=dtype)
    )
    return flat, offsets


@dataclass(frozen=True)
class EncodedPairs:
    """Unpadded token sequences of many pairs.

    Args:
        input_ids: all pairs' word-piece ids, concatenated (``int32``).
        token_type_ids: the segment ids aligned with ``input_ids`` (``int8``), or ``None`` for
            encoders without segments (RoBERTa-like tokenizers do not return them).
        offsets: ``offsets[i]:offsets[i + 1]`` is pair ``i``'s slice (``int64``, length n + 1).
        max_length: the length they were truncated to.
        query_truncated: how many pairs needed ``longest_first`` (query alone too long).
        query_cut: how many pairs had their query cut to ``query_max_length`` first.

    Example:
        >>> encoded = EncodedPairs.from_pieces([[2, 7, 3, 9, 3], [2, 8, 3]], None, max_length=5)
        >>> len(encoded), encoded.lengths.tolist(), encoded.ids(1), encoded.at_max_length()
        (2, [5, 3], [2, 8, 3], 1)
    """

    input_ids: np.ndarray
    token_type_ids: np.ndarray | None
    offsets: np.ndarray
    max_length: int
    query_truncated: int = 0
    query_cut: int = 0

    @classmethod
    def from_pieces(
        cls,
        ids: Sequence[Sequence[int] | np.ndarray],
        types: Sequence[Sequence[int] | np.ndarray] | None,
        max_length: int,
        query_truncated: int = 0,
        query_cut: int = 0,
    ) -> EncodedPairs:
        """Pack per-pair id lists (and segment id lists, or ``None``) into flat arrays."""
        input_ids, offsets = ragged([np.asarray(p, dtype=np.int32) for p in ids], np.int32)
        token_types = (
            None
            if types is None
            else ragged([np.asarray(p, dtype=np.int8) for p in types], np.int8)[0]
        )
        return cls(
            input_ids, token_types, offsets, int(max_length), int(query_truncated), int(query_cut)
        )

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def ids(self, i: int) -> list[int]:
        """Pair ``i``'s word-piece ids as a list."""
        return self.input_ids[self.offsets[i] : self.offsets[i + 1]].tolist()

    def types(self, i: int) -> list[int] | None:
        """Pair ``i``'s segment ids as a list (``None`` without segments)."""
        if self.token_type_ids is None:
            return None
        return self.token_type_ids[self.offsets[i] : self.offsets[i + 1]].tolist()

    def at_max_length(self) -> int:
        """How many pairs fill ``max_length`` exactly, i.e. were (almost surely) truncated."""
        return int((self.lengths >= self.max_length).sum())

    def spans(
        self, rows: Sequence[int] | np.ndarray, pad_to_multiple_of: int | None = None
    ) -> tuple[np.ndarray, np.ndarray, int]:
        """``(starts, lengths, width)`` of pairs ``rows``: where each begins in the flat arrays,
        how long it is, and the batch width (the longest, rounded up to ``pad_to_multiple_of``).

        Example:
            >>> encoded = EncodedPairs.from_pieces([[2, 7, 3], [2, 8, 3, 9, 3]], None, 8)
            >>> starts, lengths, width = encoded.spans([1, 0], pad_to_multiple_of=4)
            >>> starts.tolist(), lengths.tolist(), width
            ([3, 0], [5, 3], 8)
        """
        rows = np.asarray(rows, dtype=np.int64)
        starts = self.offsets[rows]
        lengths = self.offsets[rows + 1] - starts
        width = int(lengths.max()) if len(rows) else 0
        if pad_to_multiple_of:
            width = -(-width // pad_to_multiple_of) * pad_to_multiple_of
        return starts, lengths, width

    def pad(
        self,
        rows: Sequence[int] | np.ndarray,
        pad_token_id: int,
        pad_to_multiple_of: int | None = None,
    ) -> dict[str, torch.Tensor]:
        """Model inputs of pairs ``rows``, right-padded to the longest of them.

        Padding per batch (dynamic padding) instead of to ``max_length`` keeps batches of short
        pairs dense.

        Args:
            rows: which pairs, in batch order.
            pad_token_id: the tokenizer's pad id.
            pad_to_multiple_of: round the width up (8 suits GPU tensor cores); ``None`` = exact.

        Returns:
            ``input_ids``, ``attention_mask`` and (when the tokenizer has segments)
            ``token_type_ids``, each ``[len(rows), width]`` int64.

        Example:
            >>> encoded = EncodedPairs.from_pieces([[2, 7, 3, 9, 3], [2, 8, 3]], [[0, 0, 0, 1, 1], [0, 0, 0]], 8)
            >>> batch = encoded.pad([1, 0], pad_token_id=0)
            >>> batch["input_ids"].tolist(), batch["attention_mask"][0].tolist()
            ([[2, 8, 3, 0, 0], [2, 7, 3, 9, 3]], [1, 1, 1, 0, 0])
            >>> encoded.pad([1], 0, pad_to_multiple_of=8)["input_ids"].shape
            torch.Size([1, 8])
        """
        starts, lengths, width = self.spans(rows, pad_to_multiple_of)
        input_ids = np.full((len(rows), width), pad_token_id, dtype=np.int64)
        attention_mask = np.zeros((len(rows), width), dtype=np.int64)
        token_types = (
            None if self.token_type_ids is None else np.zeros((len(rows), width), dtype=np.int64)
        )
        for k, (start, length) in enumerate(zip(starts.tolist(), lengths.tolist(), strict=True)):
            input_ids[k, :length] = self.input_ids[start : start + length]
            attention_mask[k, :length] = 1
            if token_types is not None:
                token_types[k, :length] = self.token_type_ids[start : start + length]
        batch = {
            "input_ids": torch.from_numpy(input_ids),
            "attention_mask": torch.from_numpy(attention_mask),
        }
        if token_types is not None:
            batch["token_type_ids"] = torch.from_numpy(token_types)
        return batch


class PairFeatures(Protocol):
    """What a variant's ``featurize`` hook returns: model inputs of distinct (qid, pid) pairs.

    The collators (training) and the inference only use this interface, so a variant may
    keep whatever it needs behind it: word-piece sequences, several sequences per pair,
    cached frozen-encoder vectors, word ids.
    """

    def __len__(self) -> int:
        """Number of distinct pairs."""

    def __getitem__(self, key: PairKey) -> int:
        """The row of pair ``(qid, pid)``."""

    @property
    def lengths(self) -> np.ndarray:
        """``[len(self)]`` integer cost of each pair (length grouping, length-sorted inference)."""

    def batch(
        self, rows: Sequence[int] | np.ndarray, pad_to_multiple_of: int | None = None
    ) -> dict[str, Any]:
        """The model inputs of ``rows`` (``model(**inputs)``): tensors with first dimension ``len(rows)``."""

    def summary(self) -> dict[str, Any]:
        """Flat counts for ``train_stats.json`` (e.g. ``pairs_at_max_length``)."""


def distinct_pairs(
    id_pairs: Iterable[PairKey], queries: Mapping[str, str], corpus: Mapping[str, str]
) -> dict[PairKey, int]:
    """``{(qid, pid): row}`` of the distinct pairs in first-seen order, each checked to have text.

    A pair listed in many examples (triplets share their positive) gets one row.

    Raises:
        ReranklabError: a qid or pid has no text.

    Example:
        >>> distinct_pairs([("q1", "p1"), ("q1", "p2"), ("q1", "p1")], {"q1": "who"}, {"p1": "me", "p2": "you"})
        {('q1', 'p1'): 0, ('q1', 'p2'): 1}
        >>> distinct_pairs([("q1", "p3")], {"q1": "who"}, {"p1": "me"})
        Traceback (most recent call last):
        ...
        reranklab.errors.ReranklabError: passage 'p3' (candidate of query 'q1') is not in the corpus
    """
    position: dict[PairKey, int] = {}
    for key in id_pairs:
        if key not in position:
            qid, pid = key
            if not queries.get(qid, "").strip():
                _no_query_text(qid, queries)
            if pid not in corpus:
                raise ReranklabError(
                    f"passage {pid!r} (candidate of query {qid!r}) is not in the corpus"
                )
            position[key] = len(position)
    return position


def _no_query_text(qid: str, queries: Mapping[str, str]) -> None:
    why = "its text is blank" if qid in queries else "it is not in the file"
    source = getattr(queries, "path", None)  # read_queries remembers its file
    if source is not None:
        raise FormatError(source, None, f"query {qid!r} has no text ({why})")
    raise ReranklabError(f"query {qid!r} has no text in the queries file ({why})")


@dataclass(frozen=True)
class KeyedPairs:
    """The part every :class:`PairFeatures` shares: the distinct pairs and the row of each.

    Subclasses add their arrays and define ``lengths``, ``batch`` and ``summary``.

    Args:
        keys: the distinct ``(qid, pid)`` pairs, row ``i`` = ``keys[i]``.
        position: ``{key: row}`` (as :func:`distinct_pairs` gives).
    """

    keys: list[PairKey]
    position: dict[PairKey, int]

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, key: PairKey) -> int:
        return self.position[key]


@dataclass(frozen=True)
class PairIndex(KeyedPairs):
    """Distinct (qid, pid) pairs of a job, tokenised once, and where each one is.

    The default :class:`PairFeatures`: each pair is one ``[CLS] q [SEP] p [SEP]`` sequence,
    padded per batch with ``pad_token_id``.

    Example:
        >>> encoded = EncodedPairs.from_pieces([[2, 7, 3, 9, 3], [2, 8, 3]], None, 8)
        >>> index = PairIndex([("q1", "p1"), ("q2", "p1")], {("q1", "p1"): 0, ("q2", "p1"): 1}, encoded)
        >>> len(index), index["q2", "p1"], index.batch([1])["input_ids"].tolist()
        (2, 1, [[2, 8, 3]])
    """

    encoded: EncodedPairs
    pad_token_id: int = 0

    @property
    def lengths(self) -> np.ndarray:
        return self.encoded.lengths

    def batch(
        self, rows: Sequence[int] | np.ndarray, pad_to_multiple_of: int | None = None
    ) -> dict[str, Any]:
        """``input_ids``, ``attention_mask`` (and ``token_type_ids``) of ``rows``, padded to their longest."""
        return self.encoded.pad(rows, self.pad_token_id, pad_to_multiple_of)

    def summary(self) -> dict[str, Any]:
        return {
            "pairs_at_max_length": self.encoded.at_max_length(),
            "pairs_query_truncated": self.encoded.query_truncated,
            "pairs_query_cut": self.encoded.query_cut,
        }
