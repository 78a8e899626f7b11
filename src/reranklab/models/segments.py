"""Sentence boundaries of passages and which sentence each word piece of a pair belongs to.

BERT-DMN reads a passage as a sequence of sentences: the encoder's output vectors of a
(query, passage) pair are split back into the query's word pieces and the passage's sentences
(each sentence = the mean of its word pieces). The boundaries come from the passage *text*
(:func:`sentence_spans`); each word piece is assigned to the sentence its first character lies
in through the fast tokenizer's offset mapping (:func:`encode_segmented_pairs`).

The segment id of a word piece is ``-1`` for special tokens (and padding), ``0`` for the query
and ``k >= 1`` for the passage's k-th sentence that survived truncation (renumbered 1..S, so a
pair's sentences are always contiguous).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from reranklab.errors import ConfigError
from reranklab.features.tokenize import fit_queries
from reranklab.features.types import EncodedPairs, KeyedPairs, distinct_pairs

SPECIAL = -1
QUERY = 0

# A candidate boundary: end punctuation, optional closing quotes/brackets, then white space.
_END = re.compile(r"[.!?]+[\"'\u201d\u2019)\]]*\s+")
_NEWLINES = re.compile(r"\s*\n\s*")
_NEXT_STARTS_SENTENCE = re.compile(r"[\"'\u201c\u2018(\[]*[A-Z0-9]")
_LAST_WORD = re.compile(r"(\w+)[.!?]+[\"'\u201d\u2019)\]]*\s*$")
# Words after which a full stop does not end a sentence (lower-cased, without the stop).
ABBREVIATIONS = frozenset(
    [
        "mr",
        "mrs",
        "ms",
        "dr",
        "prof",
        "st",
        "jr",
        "sr",
        "vs",
        "no",
        "fig",
        "figs",
        "eq",
        "al",
        "approx",
        "dept",
        "est",
        "inc",
        "ltd",
        "co",
        "corp",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
        "mt",
        "ft",
        "gen",
        "gov",
        "sen",
        "rep",
        "e.g",
        "i.e",
        "cf",
    ]
)


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans ``[start, end)`` of the sentences of ``text``, white space trimmed.

    A sentence ends at a line break, or at ``.``, ``!`` or ``?`` (with any closing quotes or
    brackets) followed by white space and a capital letter, a digit or an opening quote, unless
    the word before the stop is a single letter (an initial) or a known abbreviation
    (:data:`ABBREVIATIONS`). A text without any capital letter (a lower-cased corpus) splits at
    every such stop followed by white space. A text without a boundary is one sentence; an
    empty or blank text is one empty sentence ``[(0, 0)]``.

    Args:
        text: the passage.

    Returns:
        The spans in order; ``text[start:end]`` is each sentence.

    Example:
        >>> text = "Dr. Who flies. It is 5 p.m. now! Really?"
        >>> [text[s:e] for s, e in sentence_spans(text)]
        ['Dr. Who flies.', 'It is 5 p.m. now!', 'Really?']
    """
    lower_cased = not any(ch.isupper() for ch in text)
    cuts = [0]
    for match in _END.finditer(text):
        end = match.end()
        if end >= len(text):
            continue
        if not lower_cased and not _NEXT_STARTS_SENTENCE.match(text, end):
            continue
        last = _LAST_WORD.search(text, 0, match.end())
        if last is not None:
            word = last.group(1).lower()
            dotted = text[last.start() : match.start()].lower()
            if len(word) == 1 or word in ABBREVIATIONS or dotted in ABBREVIATIONS:
                continue
        cuts.append(end)
    cuts.extend(m.end() for m in _NEWLINES.finditer(text) if m.start() > 0 and m.end() < len(text))
    cuts = sorted(set(cuts)) + [len(text)]
    spans = []
    for start, end in zip(cuts, cuts[1:], strict=False):
        piece = text[start:end]
        left = len(piece) - len(piece.lstrip())
        right = len(piece.rstrip())
        if right > left:
            spans.append((start + left, start + right))
    return spans or [(0, 0)]


@dataclass(frozen=True)
class SegmentedPairs:
    """Tokenised pairs plus each word piece's segment (``-1`` special, ``0`` query, ``k`` sentence k).

    Args:
        encoded: the word pieces (as :func:`reranklab.features.tokenize.encode_text_pairs`).
        segments: ``int16`` array aligned with ``encoded.input_ids``.
    """

    encoded: EncodedPairs
    segments: np.ndarray

    def __len__(self) -> int:
        return len(self.encoded)

    @property
    def lengths(self) -> np.ndarray:
        return self.encoded.lengths

    def segment_ids(self, i: int) -> list[int]:
        """Pair ``i``'s segment ids as a list."""
        offsets = self.encoded.offsets
        return self.segments[offsets[i] : offsets[i + 1]].tolist()

    def sentence_counts(self) -> np.ndarray:
        """Sentences per pair (after truncation)."""
        offsets = self.encoded.offsets
        counts = np.zeros(len(self), dtype=np.int64)
        nonempty = np.flatnonzero(np.diff(offsets) > 0)
        if len(nonempty):
            counts[nonempty] = np.maximum.reduceat(self.segments, offsets[nonempty]).clip(min=0)
        return counts


def _pair_segments(
    sequence_ids: Sequence[int | None], offsets: Sequence[tuple[int, int]], starts: np.ndarray
) -> np.ndarray:
    segments = np.full(len(sequence_ids), SPECIAL, dtype=np.int16)
    passage_positions = []
    for position, (sequence, span) in enumerate(zip(sequence_ids, offsets, strict=True)):
        if sequence == 0:
            segments[position] = QUERY
        elif sequence == 1:
            passage_positions.append((position, span[0]))
    if passage_positions:
        positions = np.fromiter((p for p, _ in passage_positions), dtype=np.int64)
        chars = np.fromiter((c for _, c in passage_positions), dtype=np.int64)
        sentence = np.searchsorted(starts, chars, side="right") - 1
        # Renumber the sentences that kept a word piece 1..S (truncation drops the tail).
        _, dense = np.unique(np.maximum(sentence, 0), return_inverse=True)
        segments[positions] = dense + 1
    return segments


def encode_segmented_pairs(
    tokenizer: Any,
    pairs: Sequence[tuple[str, str]],
    max_length: int,
    *,
    desc: str = "tokenise",
    progress: bool = True,
) -> SegmentedPairs:
    """Tokenise ``(query, passage)`` pairs like the cross-encoders and label every word piece.

    Truncation is the cross-encoders' (:mod:`reranklab.features.tokenize`): the passage is cut
    to fit ``max_length``; only a query that leaves no room for any passage word piece is cut
    itself (``longest_first``).

    Args:
        tokenizer: a fast transformers tokenizer (the offset mapping is needed).
        pairs: ``(query text, passage text)`` pairs.
        max_length: word pieces per pair, special tokens included.
        desc: progress bar label.
        progress: show a tqdm bar.

    Returns:
        The pairs, pair ``i`` at index ``i``, with their segment ids.

    Raises:
        ConfigError: the tokenizer is not a fast one.

    Example:
        >>> from reranklab.models.tiny import tiny_tokenizer
        >>> tokenizer = tiny_tokenizer(["who", "is", "it", "me", "i", "am", "here"])
        >>> seg = encode_segmented_pairs(tokenizer, [("who is it", "It is me. I am here.")], 32, progress=False)
        >>> seg.segment_ids(0)
        [-1, 0, 0, 0, -1, 1, 1, 1, 1, 2, 2, 2, 2, -1]
    """
    if not getattr(tokenizer, "is_fast", False):
        raise ConfigError(
            "training.encoder: BERT-DMN needs a fast tokenizer (offset mapping) to find sentence boundaries"
        )
    fitted = fit_queries(tokenizer, pairs, max_length)
    n = len(pairs)
    ids: list[np.ndarray] = [np.empty(0, dtype=np.int32)] * n
    types: list[np.ndarray] = [np.empty(0, dtype=np.int8)] * n
    segments: list[np.ndarray] = [np.empty(0, dtype=np.int16)] * n
    has_types = True
    starts_of: dict[str, np.ndarray] = {}
    bar = tqdm(total=n, desc=desc, unit="pair", disable=not progress or n == 0, mininterval=1.0)
    for truncation, rows in fitted.groups():
        batch = tokenizer(
            [pairs[i][0] for i in rows],
            [pairs[i][1] for i in rows],
            truncation=truncation,
            max_length=max_length,
            padding=False,
            return_attention_mask=False,
            return_offsets_mapping=True,
        )
        token_types = batch.get("token_type_ids")
        has_types = has_types and token_types is not None
        for j, row in enumerate(rows):
            passage = pairs[row][1]
            if passage not in starts_of:
                starts_of[passage] = np.asarray(
                    [s for s, _ in sentence_spans(passage)], dtype=np.int64
                )
            ids[row] = np.asarray(batch["input_ids"][j], dtype=np.int32)
            if has_types:
                types[row] = np.asarray(token_types[j], dtype=np.int8)
            segments[row] = _pair_segments(
                batch.sequence_ids(j), batch["offset_mapping"][j], starts_of[passage]
            )
        bar.update(len(rows))
    bar.close()
    encoded = EncodedPairs.from_pieces(
        ids, types if has_types else None, max_length, int(fitted.long_query.sum())
    )
    flat_segments = np.concatenate(segments) if n else np.empty(0, dtype=np.int16)
    return SegmentedPairs(encoded, flat_segments)


def pad_segments(pairs: SegmentedPairs, rows: Sequence[int] | np.ndarray, width: int) -> np.ndarray:
    """Segment ids of ``rows`` right-padded with ``-1`` to ``width`` (``int64 [len(rows), width]``)."""
    rows = np.asarray(rows, dtype=np.int64)
    out = np.full((len(rows), width), SPECIAL, dtype=np.int64)
    offsets = pairs.encoded.offsets
    for k, row in enumerate(rows.tolist()):
        start, end = offsets[row], offsets[row + 1]
        out[k, : end - start] = pairs.segments[start:end]
    return out


@dataclass(frozen=True)
class SegmentedPairFeatures(KeyedPairs):
    """The :class:`~reranklab.features.types.PairFeatures` of BERT-DMN: tokenised pairs + segments.

    ``batch(rows)`` gives ``input_ids``, ``attention_mask`` (, ``token_type_ids``) and
    ``segments`` (``-1`` padded), all ``[len(rows), width]``.
    """

    pairs: SegmentedPairs
    pad_token_id: int = 0

    @property
    def lengths(self) -> np.ndarray:
        return self.pairs.lengths

    def batch(
        self, rows: Sequence[int] | np.ndarray, pad_to_multiple_of: int | None = None
    ) -> dict[str, Any]:
        inputs = self.pairs.encoded.pad(rows, self.pad_token_id, pad_to_multiple_of)
        inputs["segments"] = torch.from_numpy(
            pad_segments(self.pairs, rows, inputs["input_ids"].shape[1])
        )
        return inputs

    def summary(self) -> dict[str, Any]:
        counts = self.pairs.sentence_counts()
        return {
            "pairs_at_max_length": self.pairs.encoded.at_max_length(),
            "pairs_query_truncated": self.pairs.encoded.query_truncated,
            "sentences_per_pair_mean": float(counts.mean()) if len(counts) else 0.0,
            "sentences_per_pair_max": int(counts.max()) if len(counts) else 0,
        }


def segmented_features(
    tokenizer: Any,
    id_pairs: Iterable[tuple[str, str]],
    queries: Mapping[str, str],
    corpus: Mapping[str, str],
    max_length: int,
    *,
    progress: bool = True,
) -> SegmentedPairFeatures:
    """Tokenise and segment each distinct ``(qid, pid)`` pair once.

    Example:
        >>> from reranklab.models.tiny import tiny_tokenizer
        >>> tokenizer = tiny_tokenizer(["who", "is", "it", "me", "you"])
        >>> features = segmented_features(tokenizer, [("q1", "p1")], {"q1": "who is it"}, {"p1": "Me. You."}, 32, progress=False)
        >>> batch = features.batch([0])
        >>> sorted(batch), batch["segments"].tolist()
        (['attention_mask', 'input_ids', 'segments', 'token_type_ids'], [[-1, 0, 0, 0, -1, 1, 1, 2, 2, -1]])
    """
    position = distinct_pairs(id_pairs, queries, corpus)
    keys = list(position)
    pairs = encode_segmented_pairs(
        tokenizer, [(queries[q], corpus[p]) for q, p in keys], max_length, progress=progress
    )
    return SegmentedPairFeatures(keys, position, pairs, int(tokenizer.pad_token_id or 0))
