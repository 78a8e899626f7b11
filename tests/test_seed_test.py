"""The seed-aware test behind every claim grade, its power at the level that decides, and one
test per comparison in a family (reranklab.grading.seed_test, .claims)."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from reranklab.grading.claim_file import Claim
from reranklab.grading.claim_grade import CONFIRMED, INCONCLUSIVE
from reranklab.grading.claims import grade_claims, step_levels
from reranklab.grading.evidence import load_evidence
from reranklab.grading.power import claim_power
from reranklab.grading.seed_test import QUERY_BY_SEED, QUERY_MEANS, seed_aware
from reranklab.grading.significance import correct
from reranklab.io import write_json
from tests.helpers_claims import make_claim

SEEDS = ("42", "1", "2")


def _claim(**overrides) -> Claim:
    return make_claim(
        **{"seeds": 3, "paper_effect": {"value": 0.05, "cite": "papers/p.txt:1"}, **overrides}
    )


def _record(tmp_path: Path, first: np.ndarray, cells: dict[str, np.ndarray]) -> Path:
    """A recorded study of dataset d: BM25's per-query MAP and, for each trained cell, a
    seeds x queries array of MAP (its per-query value is the mean over the seeds)."""
    qids = [f"q{i}" for i in range(len(first))]
    rows = [
        {
            "dataset": "d",
            "variant": "bm25",
            "max_length": None,
            "key": "d/bm25",
            "first_stage": True,
            "study": "p-minilm",
            "paper": "p",
            "n_queries": len(qids),
            "n_seeds": 1,
            "MAP": float(first.mean()),
        }
    ]
    per_query = {"d/bm25": {q: {"MAP": float(v)} for q, v in zip(qids, first, strict=True)}}
    per_seed, per_seed_query = {}, {}
    for variant, by_seed in cells.items():
        key = f"d/{variant}/L64"
        rows.append(
            {
                "dataset": "d",
                "variant": variant,
                "max_length": 64,
                "key": key,
                "first_stage": False,
                "study": "p-minilm",
                "paper": "p",
                "encoder": "tiny-bert",
                "n_queries": len(qids),
                "n_seeds": len(by_seed),
                "MAP": float(by_seed.mean()),
            }
        )
        means = by_seed.mean(axis=0)
        per_query[key] = {q: {"MAP": float(v)} for q, v in zip(qids, means, strict=True)}
        per_seed[key] = {
            s: {"MAP": float(row.mean())} for s, row in zip(SEEDS, by_seed, strict=True)
        }
        per_seed_query[key] = {
            s: {q: {"MAP": float(v)} for q, v in zip(qids, row, strict=True)}
            for s, row in zip(SEEDS, by_seed, strict=True)
        }
    folder = tmp_path / "p-minilm"
    write_json(folder / "summary.json", {"title": "p-minilm", "measures": ["MAP"], "rows": rows})
    write_json(folder / "per_query.json", per_query)
    write_json(folder / "per_seed.json", per_seed)
    write_json(folder / "per_seed_query.json", per_seed_query)
    write_json(folder / "timings.json", {})
    return folder


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def test_the_crossed_test_has_the_mixed_models_standard_error(rng):
    # A balanced query x seed layout: the REML fit of a mixed model with query and seed as
    # crossed random effects (statsmodels MixedLM) gives the same standard error of the mean.
    import statsmodels.formula.api as smf

    queries, seeds = 40, 3
    d = (
        0.05
        + rng.normal(0, 0.1, queries)[None, :]
        + np.array([-0.03, 0.06, 0.01])[:, None]
        + rng.normal(0, 0.03, (seeds, queries))
    )
    test = seed_aware(d)
    frame = pd.DataFrame(
        [(d[s, q], q, s) for s in range(seeds) for q in range(queries)], columns=["d", "q", "s"]
    )
    frame["all"] = 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = smf.mixedlm(
            "d ~ 1", frame, groups="all", vc_formula={"q": "0 + C(q)", "s": "0 + C(s)"}
        ).fit(reml=True)
    assert test.method == QUERY_BY_SEED and test.seeds == 3 and test.queries == 40
    assert test.mean == pytest.approx(fit.fe_params["Intercept"])
    assert test.se == pytest.approx(fit.bse_fe["Intercept"], rel=1e-3)
    assert 2 < test.df < 10  # Satterthwaite: the seed spread leaves few degrees of freedom


def test_without_a_seed_spread_it_is_the_paired_t_test(rng):
    diffs = rng.normal(0.02, 0.1, 50)
    one = seed_aware(query_diffs=diffs)
    assert one.method == QUERY_MEANS and one.df == 49
    assert one.p(0.0, "greater") == pytest.approx(
        stats.ttest_1samp(diffs, 0.0, alternative="greater").pvalue
    )
    # Three seeds that differ only by noise smaller than the queries' (MS_S <= MS_E): the
    # seed part is 0 and the test is the query means' t-test, never looser.
    noise = np.array([[0.001, -0.001] * 25, [-0.001, 0.001] * 25, [0.0] * 50])
    same = seed_aware(diffs[None, :] + noise)
    means = (diffs[None, :] + noise).mean(axis=0)
    assert same.seed_var == 0.0 and same.df == 49
    assert same.se == pytest.approx(np.std(means, ddof=1) / math.sqrt(50))


def test_seeds_that_disagree_keep_a_claim_from_being_confirmed(tmp_path, rng):
    # The query means are clearly above BM25 (seed effects +0.16, -0.02, +0.03: mean +0.057),
    # but one seed is below: over queries and seeds the effect is not established.
    queries = 300
    first = rng.uniform(0.2, 0.6, queries)
    shifts = np.array([0.16, -0.02, 0.03])
    by_seed = first[None, :] + shifts[:, None] + rng.normal(0, 0.05, (3, queries))
    folder = _record(tmp_path, first, {"a": by_seed})
    (grade,) = grade_claims([_claim()], load_evidence([folder]))
    diffs = by_seed.mean(axis=0) - first
    assert stats.ttest_1samp(diffs, 0.0, alternative="greater").pvalue < 1e-10
    assert grade.test == "one-sided paired t-test (over queries and seeds)"
    assert grade.p > 0.05 and grade.status == INCONCLUSIVE  # not seen, and underpowered
    assert grade.seed_test.seed_var > 0 and grade.seed_test.df < 3
    assert set(grade.seed_effects) == set(SEEDS)
    # Seeds that agree: the same mean effect is confirmed.
    agree = first[None, :] + 0.057 + rng.normal(0, 0.05, (3, queries))
    folder = _record(tmp_path / "agree", first, {"a": agree})
    (grade,) = grade_claims([_claim()], load_evidence([folder]))
    assert grade.status == CONFIRMED and grade.p < 1e-6


def test_power_is_at_the_holm_step_that_decides(tmp_path, rng):
    queries = 60
    first = rng.uniform(0.2, 0.6, queries)
    cells = {
        name: first[None, :] + shift + rng.normal(0, 0.08, (3, queries))
        for name, shift in (("a", 0.06), ("b", 0.02), ("c", 0.0))
    }
    folder = _record(tmp_path, first, cells)
    claims = [_claim(id=f"p/{v}", a=v) for v in cells]
    grades = grade_claims(claims, load_evidence([folder]))
    ps = [g.p for g in grades]
    levels = step_levels(ps, 0.05, "holm")
    ranks = stats.rankdata(ps, method="min")
    assert levels == pytest.approx([0.05 / (3 - r + 1) for r in ranks])
    for g, level in zip(grades, levels, strict=True):
        assert g.power_level == pytest.approx(level)
        expected = claim_power("better", g.seed_test, level, 0.05)
        assert g.power == pytest.approx(expected.power) and g.mde == pytest.approx(expected.mde)
    # At the smallest p's step (0.05/3) the power is below what it would be at 0.05.
    low = grades[int(np.argmin(ps))]
    assert low.power < claim_power("better", low.seed_test, 0.05, 0.05).power


def test_two_claims_over_one_comparison_count_once_in_the_family(tmp_path, rng):
    queries = 60
    first = rng.uniform(0.2, 0.6, queries)
    cells = {
        "a": first[None, :] + 0.03 + rng.normal(0, 0.08, (3, queries)),
        "b": first[None, :] + 0.01 + rng.normal(0, 0.08, (3, queries)),
    }
    folder = _record(tmp_path, first, cells)
    claims = [_claim(id="p/a"), _claim(id="p/b", a="b"), _claim(id="p/a-again")]
    grades = grade_claims(claims, load_evidence([folder]))
    # Holm over the two distinct tests, not three.
    assert [g.p_corrected for g in grades[:2]] == pytest.approx(
        correct([grades[0].p, grades[1].p], "holm", 0.05)
    )
    again = grades[2]
    assert again.p_corrected == grades[0].p_corrected and again.status == grades[0].status
    assert "the same test as p/a: counted once in the study's correction" in again.power_note
