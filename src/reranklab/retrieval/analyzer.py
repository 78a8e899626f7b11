"""bm25s's analyzer, kept across chunks: lower case, ``\\w\\w+`` words, stop words, PyStemmer.

:func:`bm25s.tokenize` numbers the terms of each call on its own, so a corpus tokenised chunk
by chunk would get a different numbering per chunk. :class:`Analyzer` applies the very same
steps (the same regular expression, stop-word lists and stemmer) but keeps one vocabulary for
the whole corpus, and caches each word's term (MS MARCO's 8.8 M passages hold a few million
distinct words, each stemmed once).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from itertools import chain
from typing import Any

import numpy as np

# bm25s.tokenize's defaults (lower=True, token_pattern).
TOKEN_PATTERN = r"(?u)\b\w\w+\b"
_STOP = -1  # the cached "term" of a stop word


class Analyzer:
    """Turns texts into term ids of one vocabulary, exactly as :func:`bm25s.tokenize` splits them.

    Args:
        settings: the ``retrieval`` block: ``stemmer`` (a PyStemmer algorithm, or null) and
            ``stopwords`` (a bm25s list name such as ``en``, a list of words, or null).

    Example:
        >>> analyzer = Analyzer({"stemmer": "english", "stopwords": "en"})
        >>> ids, lengths = analyzer.encode(["Baking the bread", "breads baked"])
        >>> ids.tolist(), lengths.tolist(), analyzer.vocabulary
        ([0, 1, 1, 0], [2, 2], {'bake': 0, 'bread': 1})
        >>> analyzer.terms(["the BREAD of cyclists"])
        [['bread', 'cyclist']]
    """

    def __init__(self, settings: Mapping[str, Any]) -> None:
        from bm25s.tokenization import _infer_stopwords

        self._split = re.compile(TOKEN_PATTERN).findall
        self._stopwords = frozenset(_infer_stopwords(settings.get("stopwords") or []))
        name = settings.get("stemmer")
        if name:
            import Stemmer

            self._stem = Stemmer.Stemmer(name).stemWord
        else:
            self._stem = None
        self.vocabulary: dict[str, int] = {}  # term (stemmed word) -> id, in order of first use
        self._word_term: dict[str, int] = {}  # word -> term id, or _STOP

    def _term_of(self, word: str) -> int:
        if word in self._stopwords:
            term = _STOP
        else:
            stem = self._stem(word) if self._stem else word
            term = self.vocabulary.setdefault(stem, len(self.vocabulary))
        self._word_term[word] = term
        return term

    def encode(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The term ids of ``texts``, concatenated, and each text's length in terms.

        New terms join :attr:`vocabulary`. A text's terms keep their order and repeats, as
        bm25s' document lengths count them.

        Returns:
            ``(ids, lengths)``: int32 arrays; ``ids`` holds ``lengths.sum()`` term ids.
        """
        ids, lengths = [], []
        # A few thousand texts at a time: their words are Python strings until looked up.
        for start in range(0, len(texts), 4_096):
            part_ids, part_lengths = self._encode(texts[start : start + 4_096])
            ids.append(part_ids)
            lengths.append(part_lengths)
        if not ids:
            return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32)
        return np.concatenate(ids), np.concatenate(lengths)

    def _encode(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        # The loops over words run in C (findall, dict.fromkeys, map, fromiter): ~3x faster than a
        # Python loop per word, which matters at 500 M words (MS MARCO).
        split = self._split
        words = [split(text.lower()) for text in texts]
        counts = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
        flat = list(chain.from_iterable(words))
        del words
        known = self._word_term
        # New words in order of first use (dict.fromkeys, not a set): the same ids on every run.
        for word in [w for w in dict.fromkeys(flat) if w not in known]:
            self._term_of(word)
        terms = np.fromiter(map(self._word_term.__getitem__, flat), dtype=np.int32, count=len(flat))
        kept = terms != _STOP
        text_of = np.repeat(np.arange(len(texts)), counts)
        lengths = np.bincount(text_of[kept], minlength=len(texts)).astype(np.int32)
        return terms[kept], lengths

    def terms(self, texts: Sequence[str]) -> list[list[str]]:
        """Each text's terms as strings (for queries: the vocabulary is left unchanged)."""
        out = []
        for text in texts:
            words = [w for w in self._split(text.lower()) if w not in self._stopwords]
            out.append([self._stem(w) for w in words] if self._stem else words)
        return out
