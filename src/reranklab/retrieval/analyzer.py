r"""The bm25s backend's analyzer, kept across chunks: words, stop words, stemming, one vocabulary.

Two ways to cut a text into words (``retrieval.tokenizer``):

* ``lucene`` (the default): what Lucene's ``EnglishAnalyzer`` does, which Elasticsearch's
  ``english`` analyzer and Anserini use: words as Unicode word segmentation (UAX #29) finds
  them (``don't``, ``u.s``, ``1,000`` and ``3.5`` stay whole; single characters count), the
  English possessive ``'s`` removed, lower case, the 33 English stop words, and Porter
  stemming that leaves words of one or two characters alone (Lucene's ``PorterStemmer``).
  Measured against Lucene 9.9 on sample, WikiQA and InsuranceQA: with ``length_norms: lucene``
  (see :mod:`~reranklab.retrieval.streamed_index`) the top 10 agree on 99.9-100 % of
  passages (README, "Large collections").
* ``bm25s``: :func:`bm25s.tokenize`'s own steps (``\w\w+`` words, so ``I`` and ``5`` are
  dropped and ``don't`` splits), for indexes that must equal bm25s used directly.

:func:`bm25s.tokenize` numbers the terms of each call on its own, so a corpus tokenised chunk
by chunk would get a different numbering per chunk. :class:`Analyzer` keeps one vocabulary for
the whole corpus, and caches each word's term (MS MARCO's 8.8 M passages hold a few million
distinct words, each stemmed once).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from itertools import chain
from typing import Any

import numpy as np

# bm25s.tokenize's defaults (lower=True, token_pattern).
TOKEN_PATTERN = r"(?u)\b\w\w+\b"
# Lucene's StandardTokenizer, as far as a regular expression gets: runs of word characters,
# joined across a letter-letter apostrophe, period or colon (don't, u.s, a:b) and a
# digit-digit period, comma, semicolon or apostrophe (1,000 and 3.5), as UAX #29's
# MidLetter/MidNum rules. What it misses (Lucene emits each Chinese character and each emoji
# as a token of its own) changed nothing measurable on the three corpora compared.
_LETTER = r"[^\W\d_]"
LUCENE_WORD = rf"\w+(?:(?:(?<={_LETTER})[.'\u2019:](?={_LETTER})|(?<=\d)[.,;'\u2019](?=\d))\w+)*"
_APOSTROPHES = "'\u2019\uff07"  # EnglishPossessiveFilter's three
TOKENIZERS = ("lucene", "bm25s")
_STOP = -1  # the cached "term" of a stop word


def lucene_words(text: str) -> list[str]:
    """Lucene's ``StandardTokenizer`` + ``EnglishPossessiveFilter`` on lower-cased ``text``.

    Example:
        >>> lucene_words("the dog's 1,000 bones aren't u.s. made, i think")
        ['the', 'dog', '1,000', 'bones', "aren't", 'u.s', 'made', 'i', 'think']
    """
    return [
        w[:-2] if len(w) > 2 and w[-2] in _APOSTROPHES and w[-1] in "sS" else w
        for w in _LUCENE_SPLIT(text)
        if w.strip("_")  # "___" is no word to UAX #29 (foo_bar is one)
    ]


_LUCENE_SPLIT = re.compile(LUCENE_WORD).findall


class Analyzer:
    """Turns texts into term ids of one vocabulary (``bm25s``: exactly as :func:`bm25s.tokenize`).

    Args:
        settings: the ``retrieval`` block: ``tokenizer`` (``lucene``, the default, or
            ``bm25s``), ``stemmer`` (a PyStemmer algorithm, or null) and ``stopwords`` (a
            bm25s list name such as ``en``, a list of words, or null).

    Example:
        >>> analyzer = Analyzer({"tokenizer": "bm25s", "stemmer": "english", "stopwords": "en"})
        >>> ids, lengths = analyzer.encode(["Baking the bread", "breads baked"])
        >>> ids.tolist(), lengths.tolist(), analyzer.vocabulary
        ([0, 1, 1, 0], [2, 2], {'bake': 0, 'bread': 1})
        >>> analyzer.terms(["the BREAD of cyclists"])
        [['bread', 'cyclist']]
        >>> Analyzer({"tokenizer": "lucene", "stemmer": "porter", "stopwords": "en"}).terms(
        ...     ["The user's 2 technologies told us, I said"])
        [['user', '2', 'technologi', 'told', 'us', 'i', 'said']]
    """

    def __init__(self, settings: Mapping[str, Any]) -> None:
        from bm25s.tokenization import _infer_stopwords

        tokenizer = settings.get("tokenizer") or "lucene"
        if tokenizer not in TOKENIZERS:
            raise ValueError(
                f"retrieval.tokenizer: {tokenizer!r} is not one of {', '.join(TOKENIZERS)}"
            )
        self._split: Callable[[str], list[str]] = (
            lucene_words if tokenizer == "lucene" else re.compile(TOKEN_PATTERN).findall
        )
        self._stopwords = frozenset(_infer_stopwords(settings.get("stopwords") or []))
        name = settings.get("stemmer")
        self._stem: Callable[[str], str] | None = None
        if name:
            import Stemmer

            stem = Stemmer.Stemmer(name).stemWord
            if tokenizer == "lucene" and name == "porter":
                # Lucene's PorterStemmer leaves words of one or two characters as they are
                # (PyStemmer's turns "as" into "a" and "us" into "u").
                self._stem = lambda word: word if len(word) <= 2 else stem(word)
            else:
                self._stem = stem
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
