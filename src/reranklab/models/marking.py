"""MarkedBERT's exact-match markers: wrap query terms found in the passage in ``[e_k]`` … ``[/e_k]``.

Before encoding, the k-th distinct query term (in query order) that also occurs in the passage
is wrapped in the marker pair ``[e_k]`` / ``[/e_k]`` everywhere it occurs, in the passage and in
the query::

    query   "ghost meaning urban"
    passage "ghost town, an urban area"
    ->      "[e1] ghost [/e1] meaning [e3] urban [/e3]"
            "[e1] ghost [/e1] town, an [e3] urban [/e3] area"

Terms are the words of the encoder's own basic tokenizer (its pre-tokenizer: white space and
punctuation), compared after its normaliser and in lower case (so ``Urbán`` matches ``urban``
for an uncased BERT). Punctuation is never a term; query terms without a match in the passage
stay unmarked but keep their number k (as in the paper's figure); with ``stopwords`` their
words are neither marked nor counted (the authors' marker skips English stop words). Only
``k <= markers`` is marked: the tokenizer holds that many marker pairs, added as special tokens
(never split or lower-cased) by :func:`add_marker_tokens`, with the embedding matrix resized.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from reranklab.errors import ConfigError

_FALLBACK_WORDS = re.compile(r"\w+|[^\w\s]")


def marker_tokens(markers: int) -> list[str]:
    """The marker tokens ``[e1], [/e1], …, [eN], [/eN]``.

    Example:
        >>> marker_tokens(2)
        ['[e1]', '[/e1]', '[e2]', '[/e2]']
    """
    return [token for k in range(1, markers + 1) for token in (f"[e{k}]", f"[/e{k}]")]


def add_marker_tokens(tokenizer: Any, encoder: Any, markers: int) -> int:
    """Add the marker pairs to ``tokenizer`` as special tokens and resize ``encoder``'s embeddings.

    Tokens already in the vocabulary are not added again (a loaded MarkedBERT has them).

    Args:
        tokenizer: a transformers tokenizer.
        encoder: the transformers model whose input embeddings must cover the new ids.
        markers: how many ``[e_k]`` / ``[/e_k]`` pairs.

    Returns:
        How many tokens were added.

    Example:
        >>> from reranklab.models.tiny import tiny_encoder
        >>> encoder, tokenizer = tiny_encoder(["ghost"])
        >>> add_marker_tokens(tokenizer, encoder, 32), add_marker_tokens(tokenizer, encoder, 32)
        (64, 0)
        >>> encoder.get_input_embeddings().num_embeddings == len(tokenizer)
        True
    """
    vocab = tokenizer.get_vocab()
    missing = [token for token in marker_tokens(markers) if token not in vocab]
    added = tokenizer.add_tokens(missing, special_tokens=True) if missing else 0
    if encoder.get_input_embeddings().num_embeddings < len(tokenizer):
        encoder.resize_token_embeddings(len(tokenizer))
    return int(added)


def resolve_stopwords(name: str | None) -> frozenset[str]:
    """The bm25s stop-word list ``name`` (``en``, ``en_plus``, ``de``, …) in lower case; ``None`` = none.

    Example:
        >>> "the" in resolve_stopwords("en"), len(resolve_stopwords(None))
        (True, 0)
    """
    if not name:
        return frozenset()
    import bm25s.stopwords as lists

    aliases = {
        "en": "EN",
        "english": "EN",
        "en_plus": "EN_PLUS",
        "english_plus": "EN_PLUS",
        "de": "GERMAN",
        "nl": "DUTCH",
        "fr": "FRENCH",
        "es": "SPANISH",
        "pt": "PORTUGUESE",
        "it": "ITALIAN",
        "ru": "RUSSIAN",
        "sv": "SWEDISH",
        "no": "NORWEGIAN",
        "zh": "CHINESE",
        "tr": "TURKISH",
        "ko": "KOREAN",
        "da": "DANISH",
    }
    words = getattr(lists, f"STOPWORDS_{aliases.get(name.lower(), name.upper())}", None)
    if words is None:
        raise ConfigError(
            f"training.marker_stopwords: unknown stop-word list {name!r} (known: {', '.join(sorted(aliases))})"
        )
    return frozenset(word.lower() for word in words)


@dataclass(frozen=True)
class Word:
    """A word of a text: its character span and the key it is compared by."""

    start: int
    end: int
    key: str


@dataclass
class Marker:
    """Marks (query, passage) pairs for MarkedBERT with a given tokenizer's notion of words.

    Args:
        tokenizer: the encoder's tokenizer (its pre-tokenizer and normaliser define words).
        markers: highest k marked (the tokenizer must hold ``[e1]`` … ``[/e{markers}]``).
        stopwords: words never marked nor counted (lower case).

    Example:
        >>> from reranklab.models.tiny import tiny_encoder
        >>> encoder, tokenizer = tiny_encoder(["ghost", "meaning", "urban", "town", "an", "area"])
        >>> _ = add_marker_tokens(tokenizer, encoder, 32)
        >>> marker = Marker(tokenizer, markers=32)
        >>> marker("ghost meaning urban", "ghost town, an urban area")
        ('[e1] ghost [/e1] meaning [e3] urban [/e3]', '[e1] ghost [/e1] town, an [e3] urban [/e3] area')
    """

    tokenizer: Any
    markers: int
    stopwords: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        if self.markers < 1:
            raise ValueError("markers must be at least 1")
        backend = getattr(self.tokenizer, "backend_tokenizer", None)
        self._pre_tokenizer = getattr(backend, "pre_tokenizer", None)
        self._normalizer = getattr(backend, "normalizer", None)

    def words(self, text: str) -> list[Word]:
        """The words of ``text`` with their spans and comparison keys (punctuation included)."""
        if self._pre_tokenizer is not None:
            spans = [offsets for _, offsets in self._pre_tokenizer.pre_tokenize_str(text)]
        else:
            spans = [match.span() for match in _FALLBACK_WORDS.finditer(text)]
        words = []
        for start, end in spans:
            piece = text[start:end]
            # Byte-level pre-tokenizers (RoBERTa) include the preceding space in a word's span.
            stripped = piece.lstrip()
            start += len(piece) - len(stripped)
            piece = stripped.rstrip()
            if not piece:
                continue
            key = self._normalizer.normalize_str(piece) if self._normalizer is not None else piece
            words.append(Word(start, start + len(piece), key.strip().lower()))
        return words

    def terms(self, query: str) -> dict[str, int]:
        """``{term: k}``: the distinct query terms numbered 1, 2, … in query order."""
        numbered: dict[str, int] = {}
        for word in self.words(query):
            if (
                word.key in numbered
                or word.key in self.stopwords
                or not any(c.isalnum() for c in word.key)
            ):
                continue
            numbered[word.key] = len(numbered) + 1
        return numbered

    def __call__(self, query: str, passage: str) -> tuple[str, str]:
        """The marked ``(query, passage)``."""
        numbered = self.terms(query)
        passage_words = self.words(passage)
        matched = {
            word.key: numbered[word.key]
            for word in passage_words
            if numbered.get(word.key, self.markers + 1) <= self.markers
        }
        if not matched:
            return query, passage
        return _wrap(query, self.words(query), matched), _wrap(passage, passage_words, matched)


def _wrap(text: str, words: Iterable[Word], matched: dict[str, int]) -> str:
    out, last = [], 0
    for word in words:
        k = matched.get(word.key)
        if k is None:
            continue
        out.append(text[last : word.start])
        out.append(f"[e{k}] {text[word.start : word.end]} [/e{k}]")
        last = word.end
    out.append(text[last:])
    return "".join(out)
