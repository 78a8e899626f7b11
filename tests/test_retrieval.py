"""BM25 (bm25s, Lucene formula, stemming): rankings, the streamed index equal to bm25s' in-memory one, pools, injection."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import bm25s
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import Stemmer

from reranklab.errors import FormatError, ReranklabError
from reranklab.io import iter_corpus, rank_order, write_corpus, write_run
from reranklab.retrieval import bm25s_backend, get_backend, inject_relevant, pool_candidates
from reranklab.retrieval.analyzer import Analyzer
from reranklab.retrieval.streamed_index import BM25S_ANALYSIS, build_streamed_index

# bm25s' own analysis and exact lengths, so the index can be checked against bm25s used directly
# (the defaults, Lucene's analysis and norms, are checked against Lucene in test_lucene_parity.py).
SETTINGS = {"backend": "bm25s", "k1": 0.9, "b": 0.4, **BM25S_ANALYSIS}
CORPUS = {
    "p1": "Bake the bread in a hot oven for thirty minutes.",
    "p2": "Bread baking needs flour, water, yeast and salt; baking bread is easy.",
    "p3": "Cycling to work keeps you fit.",
    "p4": "Tyre pressure matters when cycling on wet roads.",
    "p5": "The oven should be preheated.",
}


@pytest.fixture()
def corpus_path(tmp_path):
    path = tmp_path / "corpus.parquet"
    write_corpus(path, CORPUS)
    return path


@pytest.fixture()
def index(tmp_path, corpus_path):
    backend = get_backend(SETTINGS)
    stats = backend.build(corpus_path, tmp_path / "bm25")
    assert stats["passages"] == 5
    return backend, tmp_path / "bm25"


def test_bm25_ranks_by_term_matches_with_stemming(index):
    backend, path = index
    run = backend.search(
        path, {"q1": "baked breads", "q2": "cyclists tyres", "q3": "quantum"}, depth=3
    )
    # "baked"/"breads" stem to bake/bread: p2 has bread x2 + bake x2, p1 bread + bake once.
    assert [pid for pid, _ in sorted(run["q1"].items(), key=lambda x: -x[1])] == ["p2", "p1"]
    # "cyclists" stems to "cyclist", not "cycl": only "tyres" matches (p4).
    assert list(run["q2"]) == ["p4"]
    assert run["q3"] == {}


def test_bm25_depth_is_respected_and_index_is_reloadable(index):
    backend, path = index
    run = get_backend(SETTINGS).search(path, {"q": "oven bread cycling"}, depth=2)
    assert len(run["q"]) == 2
    assert not (path.parent / "bm25.partial").exists()


def test_bm25_settings_change_scores(tmp_path, corpus_path):
    a = get_backend(SETTINGS)
    a.build(corpus_path, tmp_path / "a")
    b = get_backend({**SETTINGS, "k1": 2.0, "b": 1.0})
    b.build(corpus_path, tmp_path / "b")
    q = {"q": "bread"}
    assert a.search(tmp_path / "a", q, 5)["q"] != b.search(tmp_path / "b", q, 5)["q"]


def test_pool_candidates_cut():
    pool = {"q": {"a": 3.0, "b": 2.0, "c": 1.0}, "r": {"d": 1.0}}
    assert pool_candidates(pool, ["q"], depth=2) == {"q": {"a": 3.0, "b": 2.0}}


def test_inject_relevant_at_depth():
    run = {"q": {"a": 3.0, "b": 2.0, "c": 1.0}, "ok": {"x": 2.0, "y": 1.0}, "none": {"n": 1.0}}
    qrels = {"q": {"z": 1, "w": 2}, "ok": {"y": 1}, "none": {"n": 0}, "empty": {"e": 1}}
    out, injected = inject_relevant(run, qrels, depth=2, qids=["q", "ok", "none", "empty"])
    assert injected == 2
    # the best-graded relevant passage (w) replaces rank 2
    assert sorted(out["q"], key=lambda p: -out["q"][p]) == ["a", "w"]
    assert out["ok"] == {"x": 2.0, "y": 1.0}
    assert out["none"] == {"n": 1.0}
    assert out["empty"] == {"e": 1.0}


# -- the streamed index equals bm25s' in-memory one ------------------------------------------

WORDS = ["bread", "oven", "bake", "baking", "flour", "yeast", "salt", "water", "cycling"]
WORDS += ["tyre", "road", "wet", "fit", "the", "a"]
STEM = Stemmer.Stemmer("english").stemWords  # as bm25s takes a stemmer


def _random_corpus(n: int, seed: int = 0) -> dict[str, str]:
    rnd = random.Random(seed)
    corpus = {}
    for i in range(n):
        words = rnd.choices(WORDS, weights=range(len(WORDS), 0, -1), k=rnd.randint(0, 12))
        corpus[f"d{i}"] = " ".join(words).capitalize() + "."
    # Ties: 40 copies of one passage and 40 of another (same length and terms: same scores),
    # more than the first search's margin past depth, so a tie at the cut is searched deeper.
    for i in range(40):
        corpus[f"t{i}"] = "Sourdough bread and yeast."
        corpus[f"u{i}"] = "Gravel roads, wet gravel."
    corpus["empty"] = "The of a."  # no term at all: length 0, counted in the average length
    return corpus


def _in_memory(texts: list[str]) -> bm25s.BM25:
    tokens = bm25s.tokenize(texts, stopwords="en", stemmer=STEM, show_progress=False)
    model = bm25s.BM25(method="lucene", k1=SETTINGS["k1"], b=SETTINGS["b"])
    model.index(tokens, show_progress=False)
    return model


def _reference(model, pids, queries, depth):
    """One in-memory bm25s index, every passage scored, ranked as our runs are, cut at depth."""
    run = {}
    for qid, text in queries.items():
        query = bm25s.tokenize(
            [text],
            stopwords="en",
            stemmer=STEM,
            return_ids=False,
            show_progress=False,
        )
        ids = [model.vocab_dict[t] for t in query[0] if t in model.vocab_dict]
        if not ids:
            run[qid] = []
            continue
        scores = model.get_scores_from_ids(ids)
        found = {pids[i]: float(s) for i, s in enumerate(scores) if s > 0}
        run[qid] = rank_order(found, qid)[:depth]
    return run


def test_analyzer_splits_as_bm25s_tokenize():
    texts = ["Baking breads, the OVEN's heat!", "", "a of the", "Cyclists' tyres: 42 km/h"]
    analyzer = Analyzer(SETTINGS)
    ids, lengths = analyzer.encode(texts)
    terms = {i: t for t, i in analyzer.vocabulary.items()}
    ours, start = [], 0
    for length in lengths:
        ours.append([terms[i] for i in ids[start : start + length]])
        start += length
    expected = bm25s.tokenize(
        texts, stopwords="en", stemmer=STEM, return_ids=False, show_progress=False
    )
    assert (
        ours
        == expected
        == [["bake", "bread", "oven", "heat"], [], [], ["cyclist", "tyre", "42", "km"]]
    )
    assert analyzer.terms(texts) == expected


def test_streamed_index_has_bm25s_arrays_bit_for_bit(tmp_path):
    corpus = _random_corpus(300)
    write_corpus(tmp_path / "corpus.parquet", corpus)
    # Chunks of 37 passages: pass 2 scatters many chunks into every column.
    stats = build_streamed_index(
        iter_corpus(tmp_path / "corpus.parquet", 37), tmp_path / "ix", SETTINGS
    )
    model = _in_memory(list(corpus.values()))
    ours = bm25s.BM25.load(str(tmp_path / "ix"), mmap=True, show_progress=False)
    assert isinstance(ours.scores["data"], np.memmap)
    assert stats["passages"] == ours.scores["num_docs"] == len(corpus)
    assert set(ours.vocab_dict) == set(model.vocab_dict)  # "" included, as bm25s adds it
    for term, theirs in model.vocab_dict.items():
        if term == "":
            continue
        mine = ours.vocab_dict[term]
        a = slice(model.scores["indptr"][theirs], model.scores["indptr"][theirs + 1])
        b = slice(ours.scores["indptr"][mine], ours.scores["indptr"][mine + 1])
        assert np.array_equal(model.scores["indices"][a], ours.scores["indices"][b]), term
        assert model.scores["data"][a].tobytes() == ours.scores["data"][b].tobytes(), term
    assert not (tmp_path / "ix" / "spill").exists()


@pytest.mark.parametrize("scorer", ["numpy", "numba"])
def test_top_k_equals_one_in_memory_bm25s_index_ties_by_the_hash(tmp_path, monkeypatch, scorer):
    corpus = _random_corpus(400, seed=1)
    write_corpus(tmp_path / "corpus.parquet", corpus)
    monkeypatch.setattr(bm25s_backend, "CHUNK", 50)  # streamed in 9 chunks
    backend = get_backend(SETTINGS)
    backend.scorer, backend.threads = scorer, 2
    backend.build(tmp_path / "corpus.parquet", tmp_path / "ix")
    queries = {
        "tie": "sourdough",
        "tie2": "gravel road",
        "tie3": "sourdough yeast",
        "mixed": "bread oven salt",
        "none": "the",
        "unknown": "quantum",
        "all": "bread yeast wet road oven fit",
    }
    depth = 10
    got = backend.search(tmp_path / "ix", queries, depth)
    model = _in_memory(list(corpus.values()))
    expected = _reference(model, list(corpus), queries, depth)
    for qid in queries:
        mine = rank_order(got[qid], qid)
        assert [p for p, _ in mine] == [p for p, _ in expected[qid]], qid
        assert np.allclose([s for _, s in mine], [s for _, s in expected[qid]], atol=1e-6, rtol=0)
    assert got["none"] == got["unknown"] == {}
    # The cut falls inside a tie of 40 passages: bm25s' own top-k keeps the first ones it
    # meets; the hash keeps others.
    assert len(got["tie"]) == depth and len(set(got["tie"].values())) == 1
    own = model.retrieve([[model.vocab_dict["sourdough"]]], k=depth, show_progress=False)
    assert {list(corpus)[i] for i in own.documents[0]} != set(got["tie"])


def test_search_to_file_writes_what_write_run_writes(tmp_path, corpus_path):
    backend = get_backend(SETTINGS)
    backend.build(corpus_path, tmp_path / "ix")
    queries = {"q2": "bread oven", "q1": "cycling", "q3": "quantum"}
    stats = backend.search_to_file(tmp_path / "ix", queries, 3, tmp_path / "streamed.run", "bm25")
    write_run(tmp_path / "whole.run", backend.search(tmp_path / "ix", queries, 3), tag="bm25")
    assert (tmp_path / "streamed.run").read_text() == (tmp_path / "whole.run").read_text()
    assert stats["scoring_s"] >= 0
    assert {k: stats[k] for k in ("queries", "candidates", "empty")} == {
        "queries": 3,
        "candidates": 5,
        "empty": 1,
    }


def test_index_errors_name_the_problem(tmp_path):
    (tmp_path / "dup.jsonl").write_text('{"pid": "a", "text": "x y"}\n{"pid": "a", "text": "z"}\n')
    with pytest.raises(FormatError, match="dup.jsonl.*duplicate passage ids"):
        get_backend(SETTINGS).build(tmp_path / "dup.jsonl", tmp_path / "ix")
    assert not (tmp_path / "ix.partial").exists() and not (tmp_path / "ix").exists()
    old = tmp_path / "old"
    old.mkdir()
    (old / "reranklab.json").write_text(json.dumps({"passages": 1}))
    with pytest.raises(ReranklabError, match="format 1.*rebuild it with `reranklab index`"):
        get_backend(SETTINGS).search(old, {"q": "x"}, 5)


def test_iter_corpus_streams_parquet_and_jsonl(tmp_path):
    corpus = {f"p{i}": f"text {i}" for i in range(10)}
    write_corpus(tmp_path / "c.parquet", corpus)
    write_corpus(tmp_path / "c.jsonl", corpus)
    for name in ("c.parquet", "c.jsonl"):
        batches = list(iter_corpus(tmp_path / name, batch_size=4))
        assert [len(b) for b in batches] == [4, 4, 2]
        assert dict(pair for b in batches for pair in b) == corpus
    (tmp_path / "bad.jsonl").write_text('{"pid": "a", "text": "x"}\nnot json\n')
    with pytest.raises(FormatError, match="bad.jsonl:2"):
        list(iter_corpus(tmp_path / "bad.jsonl"))
    pq.write_table(pa.table({"id": ["a"], "body": ["x"]}), tmp_path / "cols.parquet")
    with pytest.raises(FormatError, match="cols.parquet.*no column pid, text"):
        list(iter_corpus(tmp_path / "cols.parquet"))


def test_index_files_are_the_same_on_every_run(tmp_path, corpus_path):
    # Not even the vocabulary's numbering depends on Python's string hashing (PYTHONHASHSEED).
    code = (
        "import sys; from pathlib import Path; from reranklab.retrieval import get_backend;"
        f"get_backend({SETTINGS!r}).build(Path(sys.argv[1]), Path(sys.argv[2]))"
    )
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        args = [sys.executable, "-c", code, str(corpus_path), str(tmp_path / seed)]
        subprocess.run(args, env=env, check=True)
    for name in sorted(p.name for p in (tmp_path / "1").iterdir()):
        assert (tmp_path / "1" / name).read_bytes() == (tmp_path / "2" / name).read_bytes(), name
