"""Tokenise (query, passage) pairs once per job into compact, unpadded word-piece sequences.

Pairs are ``[CLS] query [SEP] passage [SEP]`` cut to ``max_length`` by truncating the passage
only (``truncation="only_second"``): the question is never shortened, as in the papers.
Only when the query alone leaves no room for any passage word piece is ``longest_first`` used
(the tokenizer cannot cut the passage below nothing).

With ``query_max_length`` (monoBERT: 64) the query is first cut to that many word pieces,
and the passage then fills the rest of ``max_length``.

Sequences are kept unpadded in one flat ``int32`` array with offsets rather than Python int
lists: 100k pairs of 256 word pieces are ~100 MB this way and several GB as lists. Padding
happens per batch (:mod:`reranklab.training.batching`).

What a variant's ``featurize`` hook returns is a :class:`PairFeatures`; :func:`token_features`
is the default featurizer and :class:`PairIndex` its result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from tqdm.auto import tqdm

from reranklab.errors import ReranklabError

CHUNK = 2048  # pairs per tokenizer call: big enough for the Rust batch path, small for memory


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
    """

    input_ids: np.ndarray
    token_type_ids: np.ndarray | None
    offsets: np.ndarray
    max_length: int
    query_truncated: int = 0
    query_cut: int = 0

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


def _tokenize(tokenizer: Any, queries: list[str], passages: list[str], max_length: int, truncation: str) -> dict[str, list[list[int]]]:
    return tokenizer(
        queries,
        passages,
        truncation=truncation,
        max_length=max_length,
        padding=False,
        return_attention_mask=False,
    )


def cut_queries(tokenizer: Any, texts: Sequence[str], max_pieces: int) -> dict[str, str]:
    """The texts longer than ``max_pieces`` word pieces, each cut to its first ``max_pieces``.

    The cut is made in the text, right after the last kept word piece (fast tokenizers' offset
    mapping), so re-tokenising the cut text gives exactly those word pieces.

    Args:
        tokenizer: a transformers tokenizer.
        texts: distinct query texts.
        max_pieces: word pieces to keep (no special tokens counted).

    Returns:
        ``{text: cut text}`` for the texts that were too long (the others are absent).

    Example:
        >>> cut_queries(tokenizer, ["how many legs does a spider have", "why"], 3)  # doctest: +SKIP
        {'how many legs does a spider have': 'how many legs'}
    """
    if max_pieces < 1:
        raise ValueError("max_pieces must be at least 1")
    cut: dict[str, str] = {}
    fast = bool(getattr(tokenizer, "is_fast", False))
    for start in range(0, len(texts), CHUNK):
        chunk = list(texts[start : start + CHUNK])
        encoded = tokenizer(chunk, add_special_tokens=False, return_attention_mask=False, return_token_type_ids=False, return_offsets_mapping=fast)
        for j, text in enumerate(chunk):
            ids = encoded["input_ids"][j]
            if len(ids) <= max_pieces:
                continue
            if fast:
                cut[text] = text[: encoded["offset_mapping"][j][max_pieces - 1][1]]
            else:
                cut[text] = tokenizer.convert_tokens_to_string(tokenizer.convert_ids_to_tokens(ids[:max_pieces]))
    return cut


def encode_text_pairs(
    tokenizer: Any,
    pairs: Sequence[tuple[str, str]],
    max_length: int,
    *,
    query_max_length: int | None = None,
    desc: str = "tokenise",
    progress: bool = True,
) -> EncodedPairs:
    """Tokenise ``(query text, passage text)`` pairs, truncating the passage to ``max_length``.

    Args:
        tokenizer: a transformers tokenizer (fast tokenizers are much quicker here).
        pairs: the text pairs, in the order of the result.
        max_length: total word pieces per pair, special tokens included.
        query_max_length: cut queries to this many word pieces first (``None`` = keep whole).
        desc: progress bar label.
        progress: show a tqdm bar.

    Returns:
        The encoded pairs, pair ``i`` at index ``i``.

    Example:
        >>> encoded = encode_text_pairs(tokenizer, [("what is a cat", "a cat is an animal")], 8)  # doctest: +SKIP
        >>> tokenizer.convert_ids_to_tokens(encoded.ids(0))  # doctest: +SKIP
        ['[CLS]', 'what', 'is', 'a', 'cat', '[SEP]', 'a', '[SEP]']
    """
    special = tokenizer.num_special_tokens_to_add(pair=True)
    query_cut = 0
    if query_max_length:
        cut = cut_queries(tokenizer, sorted({query for query, _ in pairs}), int(query_max_length))
        if cut:
            query_cut = sum(query in cut for query, _ in pairs)
            pairs = [(cut.get(query, query), passage) for query, passage in pairs]
    query_texts = sorted({query for query, _ in pairs})
    query_lengths = {}
    for start in range(0, len(query_texts), CHUNK):
        chunk = query_texts[start : start + CHUNK]
        encoded = tokenizer(chunk, add_special_tokens=False, return_attention_mask=False, return_token_type_ids=False)
        query_lengths.update(zip(chunk, map(len, encoded["input_ids"]), strict=True))
    # A query that leaves no room for a single passage word piece cannot be kept whole.
    long_query = np.fromiter((query_lengths[q] + special >= max_length for q, _ in pairs), dtype=bool, count=len(pairs))

    n = len(pairs)
    pieces_ids: list[np.ndarray] = [np.empty(0, dtype=np.int32)] * n
    pieces_types: list[np.ndarray] | None = [np.empty(0, dtype=np.int8)] * n
    has_types = True
    bar = tqdm(total=n, desc=desc, unit="pair", disable=not progress or n == 0, mininterval=1.0)
    for truncation, selected in (("only_second", np.flatnonzero(~long_query)), ("longest_first", np.flatnonzero(long_query))):
        for start in range(0, len(selected), CHUNK):
            rows = selected[start : start + CHUNK]
            batch = _tokenize(tokenizer, [pairs[i][0] for i in rows], [pairs[i][1] for i in rows], max_length, truncation)
            types = batch.get("token_type_ids")
            has_types = has_types and types is not None
            for j, row in enumerate(rows):
                pieces_ids[row] = np.asarray(batch["input_ids"][j], dtype=np.int32)
                if has_types:
                    pieces_types[row] = np.asarray(types[j], dtype=np.int8)
            bar.update(len(rows))
    bar.close()
    lengths = np.fromiter((len(p) for p in pieces_ids), dtype=np.int64, count=n)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    input_ids = np.concatenate(pieces_ids) if n else np.empty(0, dtype=np.int32)
    token_types = np.concatenate(pieces_types) if n and has_types else (np.empty(0, dtype=np.int8) if has_types else None)
    return EncodedPairs(input_ids, token_types, offsets, int(max_length), int(long_query.sum()), query_cut)


class PairFeatures(Protocol):
    """What a variant's ``featurize`` hook returns: model inputs of distinct (qid, pid) pairs.

    The collators (training) and the inference only use this interface, so a variant may
    keep whatever it needs behind it: word-piece sequences, several sequences per pair,
    cached frozen-encoder vectors, word ids.
    """

    def __len__(self) -> int:
        """Number of distinct pairs."""

    def __getitem__(self, key: tuple[str, str]) -> int:
        """The row of pair ``(qid, pid)``."""

    @property
    def lengths(self) -> np.ndarray:
        """``[len(self)]`` integer cost of each pair (length grouping, length-sorted inference)."""

    def batch(self, rows: Sequence[int] | np.ndarray, pad_to_multiple_of: int | None = None) -> dict[str, Any]:
        """The model inputs of ``rows`` (``model(**inputs)``): tensors with first dimension ``len(rows)``."""

    def summary(self) -> dict[str, Any]:
        """Flat counts for ``train_stats.json`` (e.g. ``pairs_at_max_length``)."""


@dataclass(frozen=True)
class PairIndex:
    """Distinct (qid, pid) pairs of a job, tokenised once, and where each one is.

    The default :class:`PairFeatures`: each pair is one ``[CLS] q [SEP] p [SEP]`` sequence,
    padded per batch with ``pad_token_id``.
    """

    keys: list[tuple[str, str]]
    position: dict[tuple[str, str], int]
    encoded: EncodedPairs
    pad_token_id: int = 0

    def __getitem__(self, key: tuple[str, str]) -> int:
        return self.position[key]

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def lengths(self) -> np.ndarray:
        return self.encoded.lengths

    def batch(self, rows: Sequence[int] | np.ndarray, pad_to_multiple_of: int | None = None) -> dict[str, Any]:
        """``input_ids``, ``attention_mask`` (and ``token_type_ids``) of ``rows``, padded to their longest."""
        from reranklab.training.batching import pad_batch  # batching imports this module

        return pad_batch(self.encoded, rows, self.pad_token_id, pad_to_multiple_of)

    def summary(self) -> dict[str, Any]:
        return {
            "pairs_at_max_length": self.encoded.at_max_length(),
            "pairs_query_truncated": self.encoded.query_truncated,
            "pairs_query_cut": self.encoded.query_cut,
        }


def encode_id_pairs(
    tokenizer: Any,
    id_pairs: Iterable[tuple[str, str]],
    queries: Mapping[str, str],
    corpus: Mapping[str, str],
    max_length: int,
    *,
    query_max_length: int | None = None,
    transform: Callable[[str, str], tuple[str, str]] | None = None,
    desc: str = "tokenise",
    progress: bool = True,
) -> PairIndex:
    """Tokenise each distinct ``(qid, pid)`` pair once (a pair in many triplets costs one).

    Args:
        tokenizer: a transformers tokenizer.
        id_pairs: ``(qid, pid)`` pairs, duplicates allowed.
        queries: ``{qid: text}``.
        corpus: ``{pid: text}``.
        max_length, query_max_length: see :func:`encode_text_pairs`.
        transform: ``(query text, passage text) -> (query text, passage text)`` applied to
            each pair before tokenising (e.g. MarkedBERT's marking); ``None`` = the texts as is.

    Raises:
        ReranklabError: a qid or pid has no text.

    Example:
        >>> index = encode_id_pairs(tokenizer, [("q1", "p1"), ("q1", "p1")], queries, corpus, 256)  # doctest: +SKIP
        >>> len(index.encoded), index["q1", "p1"]  # doctest: +SKIP
        (1, 0)
    """
    position: dict[tuple[str, str], int] = {}
    for key in id_pairs:
        if key not in position:
            position[key] = len(position)
    keys = list(position)
    for qid, pid in keys:
        if qid not in queries:
            raise ReranklabError(f"query {qid!r} has no text in the queries file")
        if pid not in corpus:
            raise ReranklabError(f"passage {pid!r} (candidate of query {qid!r}) is not in the corpus")
    texts = [(queries[qid], corpus[pid]) for qid, pid in keys]
    if transform is not None:
        texts = [transform(query, passage) for query, passage in texts]
    # Through the model step's feature cache when it opened one (reranklab.training.cache).
    from reranklab.training.cache import encode_cached

    encoded = encode_cached(tokenizer, texts, max_length, query_max_length=query_max_length, desc=desc, progress=progress)
    return PairIndex(keys, position, encoded, int(tokenizer.pad_token_id or 0))


def token_features(
    model: Any,
    id_pairs: Iterable[tuple[str, str]],
    queries: Mapping[str, str],
    corpus: Mapping[str, str],
    *,
    transform: Callable[[str, str], tuple[str, str]] | None = None,
    progress: bool = True,
    desc: str = "tokenise",
) -> PairIndex:
    """The default ``featurize`` hook: one ``[CLS] q [SEP] p [SEP]`` sequence per pair.

    Uses the model's tokenizer, ``model.max_length`` and ``model.inputs["query_max_length"]``
    (when the model has it), so training and re-ranking tokenise the same way.

    Args:
        model: a re-ranker with ``tokenizer`` and ``max_length``.
        id_pairs, queries, corpus: see :func:`encode_id_pairs`.
        transform: text preprocessing of each pair (see :func:`encode_id_pairs`).

    Example:
        >>> features = token_features(model, [("q1", "p1"), ("q1", "p2")], queries, corpus)  # doctest: +SKIP
        >>> features.batch([features["q1", "p2"]])["input_ids"].shape[0]  # doctest: +SKIP
        1
    """
    inputs = getattr(model, "inputs", None) or {}
    return encode_id_pairs(
        model.tokenizer,
        id_pairs,
        queries,
        corpus,
        int(model.max_length),
        query_max_length=inputs.get("query_max_length"),
        transform=transform,
        desc=desc,
        progress=progress,
    )

