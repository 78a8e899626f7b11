"""BM25 (bm25s, Lucene formula, stemming) ranks a hand-made corpus as expected; pools and injection."""

from __future__ import annotations

import pytest

from reranklab.retrieval import get_backend, inject_relevant, pool_candidates

SETTINGS = {"backend": "bm25s", "k1": 0.9, "b": 0.4, "stemmer": "english", "stopwords": "en"}
CORPUS = {
    "p1": "Bake the bread in a hot oven for thirty minutes.",
    "p2": "Bread baking needs flour, water, yeast and salt; baking bread is easy.",
    "p3": "Cycling to work keeps you fit.",
    "p4": "Tyre pressure matters when cycling on wet roads.",
    "p5": "The oven should be preheated.",
}


@pytest.fixture()
def index(tmp_path):
    backend = get_backend(SETTINGS)
    stats = backend.build(CORPUS, tmp_path / "bm25")
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


def test_bm25_settings_change_scores(tmp_path):
    a = get_backend(SETTINGS)
    a.build(CORPUS, tmp_path / "a")
    b = get_backend({**SETTINGS, "k1": 2.0, "b": 1.0})
    b.build(CORPUS, tmp_path / "b")
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
