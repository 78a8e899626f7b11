"""Tokenise (query, passage) text pairs into compact, unpadded word-piece sequences.

Pairs are ``[CLS] query [SEP] passage [SEP]`` cut to ``max_length`` by truncating the passage
only (``truncation="only_second"``): the question is never shortened, as in the papers.
Only when the query alone leaves no room for any passage word piece is ``longest_first`` used
(the tokenizer cannot cut the passage below nothing).

With ``query_max_length`` (monoBERT: 64) the query is first cut to that many word pieces,
and the passage then fills the rest of ``max_length``.

:func:`fit_queries` decides both per pair, once; :func:`encode_text_pairs` (and the feature
cache, which keeps the per-pair flags) tokenise from its result. Sequences are kept unpadded
(:class:`~reranklab.features.types.EncodedPairs`); padding happens per batch.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from reranklab.features.types import EncodedPairs

CHUNK = 2048  # pairs per tokenizer call: big enough for the Rust batch path, small for memory


def _word_pieces(
    tokenizer: Any, texts: Sequence[str], offsets: bool = False
) -> Iterator[tuple[list[str], Any]]:
    """``(texts, their word pieces without special tokens)`` per :data:`CHUNK` of ``texts``."""
    for start in range(0, len(texts), CHUNK):
        chunk = list(texts[start : start + CHUNK])
        yield (
            chunk,
            tokenizer(
                chunk,
                add_special_tokens=False,
                return_attention_mask=False,
                return_token_type_ids=False,
                return_offsets_mapping=offsets,
            ),
        )


def query_lengths(tokenizer: Any, texts: Sequence[str]) -> dict[str, int]:
    """Word pieces of each text, special tokens not counted.

    Example:
        >>> from reranklab.models.tiny import tiny_tokenizer
        >>> query_lengths(tiny_tokenizer(["what", "is", "a", "cat"]), ["what is a cat", "cat"])
        {'what is a cat': 4, 'cat': 1}
    """
    lengths: dict[str, int] = {}
    for chunk, encoded in _word_pieces(tokenizer, texts):
        lengths.update(zip(chunk, map(len, encoded["input_ids"]), strict=True))
    return lengths


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
        >>> from reranklab.models.tiny import tiny_tokenizer
        >>> tokenizer = tiny_tokenizer(["how", "many", "legs", "does", "a", "spider", "have", "why"])
        >>> cut_queries(tokenizer, ["how many legs does a spider have", "why"], 3)
        {'how many legs does a spider have': 'how many legs'}
    """
    if max_pieces < 1:
        raise ValueError("max_pieces must be at least 1")
    cut: dict[str, str] = {}
    fast = bool(getattr(tokenizer, "is_fast", False))
    for chunk, encoded in _word_pieces(tokenizer, texts, offsets=fast):
        for j, text in enumerate(chunk):
            ids = encoded["input_ids"][j]
            if len(ids) <= max_pieces:
                continue
            if fast:
                cut[text] = text[: encoded["offset_mapping"][j][max_pieces - 1][1]]
            else:
                cut[text] = tokenizer.convert_tokens_to_string(
                    tokenizer.convert_ids_to_tokens(ids[:max_pieces])
                )
    return cut


@dataclass(frozen=True)
class FittedPairs:
    """Text pairs with their queries cut, and how each pair's query was made to fit.

    Args:
        pairs: ``(query text, passage text)``, queries cut to ``query_max_length``.
        query_cut: ``bool [n]``: the pair's query was cut to ``query_max_length``.
        long_query: ``bool [n]``: the (cut) query alone leaves no room for a passage word
            piece, so the pair is tokenised with ``longest_first``.
    """

    pairs: list[tuple[str, str]]
    query_cut: np.ndarray
    long_query: np.ndarray

    def __len__(self) -> int:
        return len(self.pairs)

    def groups(self) -> Iterator[tuple[str, np.ndarray]]:
        """``(truncation strategy, rows)`` of at most :data:`CHUNK` pairs, to tokenise together."""
        for truncation, selected in (
            ("only_second", np.flatnonzero(~self.long_query)),
            ("longest_first", np.flatnonzero(self.long_query)),
        ):
            for start in range(0, len(selected), CHUNK):
                yield truncation, selected[start : start + CHUNK]


def fit_queries(
    tokenizer: Any,
    pairs: Sequence[tuple[str, str]],
    max_length: int,
    query_max_length: int | None = None,
) -> FittedPairs:
    """Cut each pair's query to ``query_max_length`` and flag the queries too long for ``max_length``.

    Args:
        tokenizer: a transformers tokenizer.
        pairs: ``(query text, passage text)`` pairs.
        max_length: total word pieces per pair, special tokens included.
        query_max_length: cut queries to this many word pieces first (``None`` = keep whole).

    Example:
        >>> from reranklab.models.tiny import tiny_tokenizer
        >>> tokenizer = tiny_tokenizer(["what", "is", "a", "cat", "it", "purrs"])
        >>> fitted = fit_queries(tokenizer, [("what is a cat", "it purrs"), ("cat", "it purrs")], 6, 3)
        >>> fitted.pairs[0], fitted.query_cut.tolist(), fitted.long_query.tolist()
        (('what is a', 'it purrs'), [True, False], [True, False])
    """
    query_cut = np.zeros(len(pairs), dtype=bool)
    texts = sorted({query for query, _ in pairs})
    if query_max_length and texts:
        cut = cut_queries(tokenizer, texts, int(query_max_length))
        if cut:
            query_cut = np.fromiter(
                (query in cut for query, _ in pairs), dtype=bool, count=len(pairs)
            )
            pairs = [(cut.get(query, query), passage) for query, passage in pairs]
            texts = sorted({query for query, _ in pairs})
    lengths = query_lengths(tokenizer, texts)
    special = tokenizer.num_special_tokens_to_add(pair=True)
    # A query that leaves no room for a single passage word piece cannot be kept whole.
    long_query = np.fromiter(
        (lengths[query] + special >= max_length for query, _ in pairs), dtype=bool, count=len(pairs)
    )
    return FittedPairs(list(pairs), query_cut, long_query)


def encode_fitted(
    tokenizer: Any,
    fitted: FittedPairs,
    max_length: int,
    *,
    desc: str = "tokenise",
    progress: bool = True,
) -> EncodedPairs:
    """Tokenise pairs whose queries :func:`fit_queries` already fitted to ``max_length``."""
    n = len(fitted)
    # Each pair's pieces become a small int32/int8 array at once: Python int lists of 100k
    # pairs would take several GB.
    ids: list[np.ndarray] = [np.empty(0, dtype=np.int32)] * n
    types: list[np.ndarray] = [np.empty(0, dtype=np.int8)] * n
    has_types = True
    bar = tqdm(total=n, desc=desc, unit="pair", disable=not progress or n == 0, mininterval=1.0)
    backends = _backends(tokenizer, max_length)
    for truncation, rows in fitted.groups():
        chunk = [fitted.pairs[i] for i in rows]
        if backends is not None:
            # The Rust tokenizer itself, on all cores: the same word pieces as the call below
            # (tested), without building Python lists of every field first.
            encodings = backends[truncation].encode_batch(chunk)
            for row, encoding in zip(rows, encodings, strict=True):
                ids[row] = np.asarray(encoding.ids, dtype=np.int32)
                types[row] = np.asarray(encoding.type_ids, dtype=np.int8)
            bar.update(len(rows))
            continue
        batch = tokenizer(
            [query for query, _ in chunk],
            [passage for _, passage in chunk],
            truncation=truncation,
            max_length=max_length,
            padding=False,
            return_attention_mask=False,
        )
        token_types = batch.get("token_type_ids")
        has_types = has_types and token_types is not None
        for j, row in enumerate(rows):
            ids[row] = np.asarray(batch["input_ids"][j], dtype=np.int32)
            if has_types:
                types[row] = np.asarray(token_types[j], dtype=np.int8)
        bar.update(len(rows))
    bar.close()
    if backends is not None:
        has_types = "token_type_ids" in getattr(tokenizer, "model_input_names", ["token_type_ids"])
    return EncodedPairs.from_pieces(
        ids,
        types if has_types else None,
        max_length,
        int(fitted.long_query.sum()),
        int(fitted.query_cut.sum()),
    )


@lru_cache(maxsize=8)
def _backends(tokenizer: Any, max_length: int) -> dict[str, Any] | None:
    """Copies of a fast tokenizer's Rust tokenizer, one per truncation strategy (the
    tokenizer's own is left as it was), or None for a slow tokenizer. Cached: a job that
    tokenises batch by batch copies them once."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return None
    from tokenizers import Tokenizer

    out = {}
    for strategy in ("only_second", "longest_first"):
        copy = Tokenizer.from_str(backend.to_str())
        copy.no_padding()
        copy.enable_truncation(max_length, strategy=strategy)
        out[strategy] = copy
    return out


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
        >>> from reranklab.models.tiny import tiny_tokenizer
        >>> tokenizer = tiny_tokenizer(["what", "is", "a", "cat", "an", "animal"])
        >>> encoded = encode_text_pairs(tokenizer, [("what is a cat", "a cat is an animal")], 8, progress=False)
        >>> tokenizer.convert_ids_to_tokens(encoded.ids(0))
        ['[CLS]', 'what', 'is', 'a', 'cat', '[SEP]', 'a', '[SEP]']
    """
    fitted = fit_queries(tokenizer, pairs, max_length, query_max_length)
    return encode_fitted(tokenizer, fitted, max_length, desc=desc, progress=progress)
