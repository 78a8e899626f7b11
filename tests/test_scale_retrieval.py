"""The bm25s backend's fast paths give the runs of the plain ones, byte for byte.

Retrieval at scale (``reranklab bench-data index``, BENCHMARKS.md) ranks ties by hashing only
the tied passages (:func:`tie_keys`), writes each query's lines at once, and looks the queries'
terms up in the index's terms file instead of its JSON vocabulary. Each is checked here against
the plain computation on a corpus full of ties.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from reranklab.io import rank_order, read_run, tie_key, write_corpus, write_run
from reranklab.retrieval import get_backend
from reranklab.retrieval.bm25s_backend import _run_lines, _top, tie_keys
from reranklab.retrieval.streamed_index import TERMS_FILE, VOCAB_FILE, read_terms

SETTINGS = {"backend": "bm25s", "k1": 0.9, "b": 0.4, "stemmer": "english", "stopwords": "en"}
WORDS = ["bread", "oven", "yeast", "road", "wet", "tyre", "salt", "flour", "rain", "bike"]


def _corpus(n: int = 600, seed: int = 3) -> dict[str, str]:
    # Short passages over ten words: most scores are shared by many passages (ties), and the
    # pids are not ASCII, so decoding and hashing them is exercised.
    rng = np.random.default_rng(seed)
    return {
        f"p\u00e9-{i}": " ".join(rng.choice(WORDS, size=int(rng.integers(1, 5)))) for i in range(n)
    }


QUERIES = {
    "q1": "bread",
    "q2": "wet road",
    "q3": "bread bread oven",  # a repeated term counts twice, as in bm25s
    "q4": "quantum",  # no known term
    "q5": "the",  # only a stop word
    "q6": "salt flour rain bike tyre",
}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("scale")
    write_corpus(tmp / "corpus.parquet", _corpus())
    get_backend(SETTINGS).build(tmp / "corpus.parquet", tmp / "ix")
    return tmp / "ix"


def test_terms_file_is_the_vocabulary_in_id_order(index: Path) -> None:
    vocabulary = json.loads((index / VOCAB_FILE).read_text(encoding="utf-8"))
    assert read_terms(index / TERMS_FILE).to_pylist() == list(vocabulary)
    assert list(vocabulary.values()) == list(range(len(vocabulary)))


@pytest.mark.parametrize("depth", [1, 7, 50, 1000])
def test_run_file_is_write_run_of_search(index: Path, tmp_path: Path, depth: int) -> None:
    backend = get_backend(SETTINGS)
    stats = backend.search_to_file(index, QUERIES, depth, tmp_path / "fast.run", "bm25")
    run = backend.search(index, QUERIES, depth)
    write_run(tmp_path / "plain.run", run, tag="bm25")
    assert (tmp_path / "fast.run").read_bytes() == (tmp_path / "plain.run").read_bytes()
    assert stats["empty"] == 2 and stats["open_s"] >= 0
    # Ties are ordered by the seeded hash, as rank_order orders them.
    for qid, scores in read_run(tmp_path / "fast.run").items():
        assert list(scores) == [pid for pid, _ in rank_order(scores, qid)]
    if depth > 1:
        assert len(set(run["q1"].values())) < len(run["q1"])  # the corpus is full of ties


def test_index_without_terms_file_gives_the_same_run(index: Path, tmp_path: Path) -> None:
    import shutil

    old = tmp_path / "old"
    shutil.copytree(index, old)
    (old / TERMS_FILE).unlink()  # as an index built before the terms file
    backend = get_backend(SETTINGS)
    backend.search_to_file(index, QUERIES, 20, tmp_path / "new.run", "bm25")
    backend.search_to_file(old, QUERIES, 20, tmp_path / "old.run", "bm25")
    assert (tmp_path / "new.run").read_bytes() == (tmp_path / "old.run").read_bytes()


def test_tie_keys_are_tie_key() -> None:
    pids = ["d1", "p\u00e9-7", "x" * 40, ""]
    got = tie_keys("q\u00fc", [p.encode() for p in pids], seed=5).tolist()
    assert got == [tie_key("q\u00fc", p, seed=5) for p in pids]


def test_top_orders_ties_by_the_hash_and_keeps_the_cut_tie_whole() -> None:
    pids = np.array([f"p{i}".encode() for i in range(8)], dtype=np.bytes_)
    docs = np.array([5, 1, 2, 3, 4, 0, 6, 7])
    scores = np.array([3.0, 2.0, 2.0, 2.0, 2.0, 1.0, 0.0, 0.0], dtype=np.float32)
    names, values = _top("q", docs, scores, 3, pids)
    tied = sorted(["p1", "p2", "p3", "p4"], key=lambda p: tie_key("q", p))
    assert [n.decode() for n in names] == ["p5", *tied[:2]]
    assert values.tolist() == [3.0, 2.0, 2.0]
    names, values = _top("q", docs, scores, 8, pids)  # zero scores never make a run
    assert [n.decode() for n in names] == ["p5", *tied, "p0"]
    line = _run_lines("q", names[:1], values[:1], "t")
    assert line == "q Q0 p5 1 3.0 t\n"
    assert _run_lines("q", names[:0], values[:0], "t") == ""
