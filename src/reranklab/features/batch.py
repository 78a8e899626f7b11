"""Batches of similar length, padded only to their own longest sequence.

Padding every pair to ``max_length`` wastes most of the compute on short WikiQA-like pairs;
padding per batch (dynamic padding) and putting pairs of similar length together (length
grouping, as HF's ``LengthGroupedSampler``) keeps the batches dense. Collators are chosen by
the variant's ``example_kind``, so a new variant reuses them without touching the trainer;
they read pairs through the :class:`~reranklab.features.types.PairFeatures` the variant's
featurizer made, so they work for any kind of model inputs (token sequences pad themselves:
:meth:`~reranklab.features.types.EncodedPairs.pad`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import torch

from reranklab.errors import ConfigError, FormatError
from reranklab.features.types import PairFeatures, PairIndex


def to_device(batch: Any, device: torch.device) -> Any:
    """Move every tensor of a (nested) batch to ``device``."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, Mapping):
        return {key: to_device(value, device) for key, value in batch.items()}
    return batch


class LengthGroupedSampler:
    """Seeded batch order with batches of similar length (HF ``LengthGroupedSampler``).

    Each epoch the examples are shuffled, cut into megabatches of ``megabatch_batches`` batches
    (fewer on small sets, so order stays random), each megabatch sorted by decreasing length,
    and the longest example moved to the very first batch so an out-of-memory error shows at
    step 1, not hours in. With ``group=False`` it is a plain seeded shuffle.

    Args:
        lengths: length of each example (for a triplet, its longer pair).
        batch_size: examples per batch.
        seed: the study seed; epoch ``e`` uses the stream ``(seed, e)``.
        group: group by length (``training.length_grouping``).
        megabatch_batches: batches per megabatch (50, as HF).

    Example:
        >>> sampler = LengthGroupedSampler([5, 9, 3, 7], batch_size=2, seed=42)
        >>> sorted(sampler.order(epoch=0))
        [0, 1, 2, 3]
        >>> sampler.batches(0) == sampler.batches(0)
        True
    """

    def __init__(
        self,
        lengths: Sequence[int] | np.ndarray,
        batch_size: int,
        seed: int,
        group: bool = True,
        megabatch_batches: int = 50,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.batch_size = int(batch_size)
        self.seed = int(seed)
        self.group = bool(group)
        self.megabatch_batches = int(megabatch_batches)

    def __len__(self) -> int:
        """Batches per epoch (the last one may be smaller)."""
        return -(-len(self.lengths) // self.batch_size)

    def order(self, epoch: int) -> list[int]:
        """The permutation of example indices for ``epoch``."""
        rng = np.random.default_rng([self.seed, int(epoch)])
        indices = rng.permutation(len(self.lengths))
        if not self.group or len(indices) == 0:
            return indices.tolist()
        multiplier = min(len(indices) // (self.batch_size * 4), self.megabatch_batches) or 1
        size = multiplier * self.batch_size
        megabatches = [indices[i : i + size] for i in range(0, len(indices), size)]
        # Stable sort keeps the random order among equal lengths.
        megabatches = [mb[np.argsort(-self.lengths[mb], kind="stable")] for mb in megabatches]
        longest = int(np.argmax([self.lengths[mb[0]] for mb in megabatches]))
        megabatches[0][0], megabatches[longest][0] = megabatches[longest][0], megabatches[0][0]
        return np.concatenate(megabatches).tolist()

    def batches(self, epoch: int) -> list[list[int]]:
        """The batches of ``epoch``: consecutive slices of :meth:`order`."""
        order = self.order(epoch)
        return [order[i : i + self.batch_size] for i in range(0, len(order), self.batch_size)]


def length_sorted_batches(lengths: Sequence[int] | np.ndarray, batch_size: int) -> list[np.ndarray]:
    """Inference batches: indices sorted by decreasing length, cut every ``batch_size``.

    Longest first, so a batch that does not fit in memory fails at once. Callers put scores
    back with ``scores[batch] = ...`` (the indices are the original positions).

    Example:
        >>> [b.tolist() for b in length_sorted_batches([3, 9, 5], batch_size=2)]
        [[1, 2], [0]]
    """
    order = np.argsort(-np.asarray(lengths, dtype=np.int64), kind="stable")
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def _with_pad_token_id(features: PairFeatures, pad_token_id: int | None) -> PairFeatures:
    # An explicit pad id only makes sense for token features; other features pad themselves.
    if pad_token_id is None:
        return features
    if not isinstance(features, PairIndex):
        raise TypeError(
            f"pad_token_id applies to token features (PairIndex), not {type(features).__name__}"
        )
    return dataclasses.replace(features, pad_token_id=int(pad_token_id))


class ExampleCollator:
    """Base of the collators: examples of one kind, their pairs' rows in the features, and batching."""

    example_kind: ClassVar[str]
    columns: ClassVar[tuple[str, ...]]
    pid_columns: ClassVar[tuple[str, ...]]
    pairs_per_example: ClassVar[int]

    def __init__(self, features: PairFeatures, pad_to_multiple_of: int | None = None) -> None:
        self.features = features
        self.pad_to_multiple_of = pad_to_multiple_of

    def _pad(self, rows: np.ndarray) -> dict[str, Any]:
        return self.features.batch(rows, self.pad_to_multiple_of)

    @classmethod
    def pair_keys(cls, columns: Mapping[str, list[str]]) -> list[tuple[str, str]]:
        """Every (qid, pid) pair the examples need tokenised."""
        qids = columns["qid"]
        return [
            (qid, pid)
            for name in cls.pid_columns
            for qid, pid in zip(qids, columns[name], strict=True)
        ]


class PointwiseCollator(ExampleCollator):
    """Point-wise examples (qid, pid, label) → ``{"features": padded pairs, "labels": [B]}``.

    Example:
        >>> from reranklab.features.types import EncodedPairs, PairIndex
        >>> keys = [("q1", "p1"), ("q1", "p2")]
        >>> index = PairIndex(keys, {k: i for i, k in enumerate(keys)}, EncodedPairs.from_pieces([[2, 7, 3, 9, 3], [2, 7, 3, 3]], None, 8))
        >>> columns = {"qid": ["q1", "q1", "q1"], "pid": ["p1", "p2", "p2"], "label": [1, 0, 0]}
        >>> collate = PointwiseCollator.from_columns(columns, index)
        >>> batch = collate([0, 2])
        >>> batch["features"]["input_ids"].tolist(), batch["labels"].tolist()
        ([[2, 7, 3, 9, 3], [2, 7, 3, 3, 0]], [1, 0])
    """

    example_kind = "pointwise"
    columns = ("qid", "pid", "label")
    pid_columns = ("pid",)
    pairs_per_example = 1

    def __init__(
        self,
        features: PairFeatures,
        pairs: np.ndarray,
        labels: np.ndarray,
        pad_to_multiple_of: int | None = None,
    ) -> None:
        super().__init__(features, pad_to_multiple_of)
        self.pairs = np.asarray(pairs, dtype=np.int64)
        self.labels = np.asarray(labels, dtype=np.int64)

    @classmethod
    def from_columns(
        cls,
        columns: Mapping[str, list[Any]],
        index: PairFeatures,
        pad_token_id: int | None = None,
        pad_to_multiple_of: int | None = None,
        source: object = "examples",
    ) -> PointwiseCollator:
        """Examples from Parquet columns; ``index`` holds every (qid, pid) they use."""
        labels = columns["label"]
        for row, label in enumerate(labels):
            if label not in (0, 1):
                raise FormatError(source, None, f"row {row}: label must be 0 or 1, got {label!r}")
        pairs = [index[qid, pid] for qid, pid in zip(columns["qid"], columns["pid"], strict=True)]
        features = _with_pad_token_id(index, pad_token_id)
        return cls(
            features, np.asarray(pairs), np.asarray(labels, dtype=np.int64), pad_to_multiple_of
        )

    def __len__(self) -> int:
        return len(self.pairs)

    def lengths(self) -> np.ndarray:
        return np.asarray(self.features.lengths)[self.pairs]

    def __call__(self, batch: Sequence[int]) -> dict[str, Any]:
        rows = np.asarray(batch, dtype=np.int64)
        return {
            "features": self._pad(self.pairs[rows]),
            "labels": torch.from_numpy(self.labels[rows]),
        }


class TripletCollator(ExampleCollator):
    """Triplets (qid, pos_pid, neg_pid) → ``{"positive": padded pairs, "negative": padded pairs}``.

    Positives and negatives are padded separately, each to its own longest pair.

    Example:
        >>> from reranklab.features.types import EncodedPairs, PairIndex
        >>> keys = [("q1", "p1"), ("q1", "p2")]
        >>> index = PairIndex(keys, {k: i for i, k in enumerate(keys)}, EncodedPairs.from_pieces([[2, 7, 3, 9, 3], [2, 7, 3, 3]], None, 8))
        >>> collate = TripletCollator.from_columns({"qid": ["q1"], "pos_pid": ["p1"], "neg_pid": ["p2"]}, index)
        >>> batch = collate([0])
        >>> batch["positive"]["input_ids"].shape, batch["negative"]["input_ids"].shape
        (torch.Size([1, 5]), torch.Size([1, 4]))
    """

    example_kind = "triplet"
    columns = ("qid", "pos_pid", "neg_pid")
    pid_columns = ("pos_pid", "neg_pid")
    pairs_per_example = 2

    def __init__(
        self,
        features: PairFeatures,
        positive: np.ndarray,
        negative: np.ndarray,
        pad_to_multiple_of: int | None = None,
    ) -> None:
        super().__init__(features, pad_to_multiple_of)
        self.positive = np.asarray(positive, dtype=np.int64)
        self.negative = np.asarray(negative, dtype=np.int64)

    @classmethod
    def from_columns(
        cls,
        columns: Mapping[str, list[Any]],
        index: PairFeatures,
        pad_token_id: int | None = None,
        pad_to_multiple_of: int | None = None,
        source: object = "examples",
    ) -> TripletCollator:
        """Triplets from Parquet columns; ``index`` holds every (qid, pid) they use."""
        qids = columns["qid"]
        for row, (pos, neg) in enumerate(zip(columns["pos_pid"], columns["neg_pid"], strict=True)):
            if pos == neg:
                raise FormatError(
                    source, None, f"row {row}: positive and negative passage are the same ({pos!r})"
                )
        positive = [index[qid, pid] for qid, pid in zip(qids, columns["pos_pid"], strict=True)]
        negative = [index[qid, pid] for qid, pid in zip(qids, columns["neg_pid"], strict=True)]
        features = _with_pad_token_id(index, pad_token_id)
        return cls(features, np.asarray(positive), np.asarray(negative), pad_to_multiple_of)

    def __len__(self) -> int:
        return len(self.positive)

    def lengths(self) -> np.ndarray:
        lengths = np.asarray(self.features.lengths)
        return np.maximum(lengths[self.positive], lengths[self.negative])

    def __call__(self, batch: Sequence[int]) -> dict[str, Any]:
        rows = np.asarray(batch, dtype=np.int64)
        return {
            "positive": self._pad(self.positive[rows]),
            "negative": self._pad(self.negative[rows]),
        }


COLLATORS: dict[str, type[ExampleCollator]] = {
    PointwiseCollator.example_kind: PointwiseCollator,
    TripletCollator.example_kind: TripletCollator,
}


def collator_for(example_kind: str) -> type[ExampleCollator]:
    """The collator class of a variant's ``example_kind``."""
    try:
        return COLLATORS[example_kind]
    except KeyError:
        raise ConfigError(
            f"no collator for example kind {example_kind!r} (known: {', '.join(COLLATORS)})"
        ) from None
