"""Significance across the grid, checked against independent computations (closed forms,
enumeration of every sign pattern, Holm by hand, a numpy bootstrap)."""

from __future__ import annotations

import csv
import itertools
import math

import numpy as np
import pytest

from reranklab.errors import ConfigError
from reranklab.grading.significance import (
    Significance,
    beaten,
    bootstrap_ci,
    compare_rows,
    correct,
    effect_size,
    randomisation_test,
    t_test,
)
from reranklab.report.summary import summarize
from tests.helpers_metrics import metrics_file

DIFFS = np.array([0.5, -0.1, 0.3, 0.25, 0.0, 0.4, -0.2, 0.6])


def t_p_closed_form_df3(diffs: list[float]) -> float:
    """Two-sided paired t-test with 3 degrees of freedom: the t CDF in closed form."""
    n = len(diffs)
    mean = sum(diffs) / n
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
    x = abs(mean / (sd / math.sqrt(n))) / math.sqrt(3)
    return 1 - 2 * (x / (1 + x * x) + math.atan(x)) / math.pi


def exact_sign_flip_p(diffs: np.ndarray) -> float:
    """Every one of the 2**n sign patterns: the share whose |mean| reaches the observed one."""
    observed = abs(diffs.mean())
    hits = 0
    for signs in itertools.product((1, -1), repeat=len(diffs)):
        hits += abs((diffs * np.array(signs)).mean()) >= observed - 1e-12
    return hits / 2 ** len(diffs)


def holm_by_hand(p: list[float]) -> list[float]:
    order = sorted(range(len(p)), key=lambda i: p[i])
    adjusted = [0.0] * len(p)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))
        adjusted[i] = running
    return adjusted


def test_t_test_matches_the_closed_form():
    diffs = [0.3, 0.1, -0.05, 0.4]
    assert t_test(np.array(diffs)) == pytest.approx(t_p_closed_form_df3(diffs), rel=1e-9)
    assert t_test(np.zeros(5)) == 1.0
    assert t_test(np.array([0.2])) is None


def test_randomisation_test_is_exact_when_every_pattern_fits():
    # 2**8 = 256 patterns <= 1000 resamples: scipy enumerates them all.
    p = randomisation_test(DIFFS, 1000, np.random.default_rng(1))
    assert p == pytest.approx(exact_sign_flip_p(DIFFS), abs=1e-12)
    assert randomisation_test(np.zeros(4), 1000, np.random.default_rng(1)) == 1.0


def test_randomisation_test_samples_close_to_the_exact_value():
    rng = np.random.default_rng(7)
    diffs = rng.normal(0.05, 0.2, size=14)  # 16,384 patterns
    exact = exact_sign_flip_p(diffs)
    sampled = randomisation_test(diffs, 5000, np.random.default_rng(3))
    assert sampled == pytest.approx(exact, abs=0.02)


def test_holm_and_bonferroni_match_the_hand_computation():
    p = [0.01, 0.04, 0.03, 0.2, 0.001]
    assert correct(p, "holm", 0.05) == pytest.approx(holm_by_hand(p))
    assert correct(p, "bonferroni", 0.05) == pytest.approx([min(1, 5 * x) for x in p])
    assert correct(p, "none", 0.05) == p


def test_effect_size_and_bootstrap_interval():
    assert effect_size(DIFFS) == pytest.approx(DIFFS.mean() / DIFFS.std(ddof=1))
    assert effect_size(np.full(3, 0.2)) is None
    assert bootstrap_ci(np.full(4, 0.2), 1000, np.random.default_rng(0)) == (0.2, 0.2)

    diffs = np.random.default_rng(11).normal(0.1, 0.3, size=60)
    low, high = bootstrap_ci(diffs, 20000, np.random.default_rng(5))
    # The percentile interval by hand, with numpy's own resampling.
    rng = np.random.default_rng(99)
    means = diffs[rng.integers(0, len(diffs), size=(20000, len(diffs)))].mean(axis=1)
    hand_low, hand_high = np.percentile(means, [2.5, 97.5])
    assert low == pytest.approx(hand_low, abs=0.01) and high == pytest.approx(hand_high, abs=0.01)
    assert low < diffs.mean() < high


def _rows():
    rows = [
        {"dataset": "d", "key": "d/bm25"},
        {"dataset": "d", "key": "d/a/L128"},
        {"dataset": "d", "key": "d/b/L128"},
        {"dataset": "e", "key": "e/pool"},
        {"dataset": "e", "key": "e/a/L128"},
    ]
    rng = np.random.default_rng(0)
    qids = [f"q{i}" for i in range(30)]
    base = rng.uniform(0, 0.5, size=30)
    per_query = [
        {q: {"MAP": float(v)} for q, v in zip(qids, base, strict=True)},
        {q: {"MAP": float(v + 0.3)} for q, v in zip(qids, base, strict=True)},  # clearly better
        {q: {"MAP": float(v + rng.normal(0, 0.05))} for q, v in zip(qids, base, strict=True)},
        {"x": {"MAP": 0.5}, "y": {"MAP": 0.5}},
        {"x": {"MAP": 0.5}, "y": {"MAP": 0.5}},
    ]
    return rows, per_query


def test_every_pair_of_a_dataset_is_compared_and_corrected_per_family():
    rows, per_query = _rows()
    settings = Significance(resamples=2000)
    comparisons = compare_rows(rows, per_query, ["MAP"], settings)
    pairs = [(c.dataset, c.a, c.b) for c in comparisons]
    assert pairs == [
        ("d", "d/a/L128", "d/bm25"),
        ("d", "d/b/L128", "d/bm25"),
        ("d", "d/b/L128", "d/a/L128"),
        ("e", "e/a/L128", "e/pool"),
    ]
    family = comparisons[:3]
    assert [c.p_corrected for c in family] == pytest.approx(holm_by_hand([c.t_p for c in family]))
    assert beaten(comparisons, "d/a/L128", "MAP") == ["d/bm25", "d/b/L128"]
    assert beaten(comparisons, "d/bm25", "MAP") == []
    assert comparisons[3].t_p == 1.0 and not comparisons[3].significant
    # Seeded: the same values on every run; the permutation test can decide instead.
    assert compare_rows(rows, per_query, ["MAP"], settings) == comparisons
    by_perm = compare_rows(rows, per_query, ["MAP"], Significance(test="permutation"))
    assert [c.p for c in by_perm] == [c.perm_p for c in by_perm]


def test_summary_marks_the_rows_beaten_and_writes_every_comparison(tmp_path):
    rows, per_query = _rows()
    cells = [
        {"dataset": "d", "variant": variant, "max_length": length, "metrics_path": metrics}
        for variant, length, metrics in (
            ("bm25", None, metrics_file(tmp_path / "bm25.json", per_query[0])),
            ("a", 128, metrics_file(tmp_path / "a.json", per_query[1])),
            ("b", 128, metrics_file(tmp_path / "b.json", per_query[2])),
        )
    ]
    summarize(
        cells,
        tmp_path / "s.csv",
        tmp_path / "s.md",
        tmp_path / "s.json",
        "t",
        significance={"correction": "bonferroni", "resamples": 1000, "reference": "d/b/L128"},
        out_significance_csv=tmp_path / "sig.csv",
        out_significance_md=tmp_path / "sig.md",
    )
    md = (tmp_path / "s.md").read_text()
    row_a = next(line for line in md.splitlines() if "| b | a |" in line)
    assert "ᵃᶜ" in row_a  # a beats bm25 (row a) and b (row c)
    assert "Bonferroni" in md
    with open(tmp_path / "sig.csv", newline="") as handle:
        table = list(csv.DictReader(handle))
    assert len(table) == 3
    assert {"t_p", "perm_p", "p_corrected", "effect_size", "ci_low", "ci_high"} <= set(table[0])
    assert float(table[0]["p_corrected"]) == pytest.approx(min(1.0, 3 * float(table[0]["t_p"])))
    sig = (tmp_path / "sig.md").read_text()
    # The reference cell's pairs lead its family.
    first = next(line for line in sig.splitlines() if line.startswith("| ("))
    assert "d/b/L128" in first


def test_an_unknown_test_is_named_with_its_key(tmp_path, repo):
    from reranklab.config import load_params

    bad = tmp_path / "bad.yaml"
    bad.write_text("report:\n  significance:\n    test: wilcoxon\n")
    with pytest.raises(ConfigError, match=r"report\.significance\.test"):
        load_params([repo / "params.yaml", bad])
