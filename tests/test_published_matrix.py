"""studies/published.yaml and studies/external.yaml: the papers' numbers, each where it is printed.

published.yaml holds every number of the five seed papers' result tables and text, each citing
the line of the paper's text that prints it (``cite: papers/<file>:<line>``, ``printed``). The
texts live beside a checkout, in ``../shared/papers/``: where they are, every cite is checked
against its line; where they are not, that check is skipped. external.yaml holds other works'
numbers, with their source instead of a cite.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).parents[1]
STUDIES = ROOT / "studies"
PAPERS_DIR = ROOT.parent / "shared" / "papers"

PAPERS = ("mass2019", "bertsel2020", "monobert2019", "markedbert2020", "bertdmn2021")
DATASETS = {
    "nfl6",
    "webap",
    "wikipassageqa",
    "wikiqa",
    "trecqa",
    "yahooqa",
    "semeval2016",
    "semeval2017",
    "msmarco-passage",
    "trec-car",
    "insuranceqa",
    "antique",
    "trec-dl-2019",
}
SPLITS = {"test", "dev", "eval", "cv", "train"}
IR_MEASURES = {"MAP", "MRR", "P@1", "MRR@10", "nDCG@10", "R@1000"}
OTHER_MEASURES = {
    "batches/s",
    "queries",
    "relative improvement %",
    "relative decrease %",
    "share of queries %",
    "MRR@10 points",
}
VARIANTS = {
    "bm25",
    "pool",
    "pointwise",
    "bertlets",
    "pairwise_ce",
    "chunked_2x128",
    "chunked_3x128",
    "bertsel",
    "bertsel_epoch5",
    "bertsel_large",
    "monobert_base",
    "monobert",
    "marked",
    "bert",
    "bert_lite",
    "dmn",
    "dmn_lite",
    "qa_lstm",
    "knrm",
}
MODELS = {None, "bert-base-uncased", "bert-large-uncased", "word-vectors"}

REQUIRED = {
    "id": str,
    "paper": str,
    "table": str,
    "row": str,
    "column": str,
    "dataset": str,
    "split": str,
    "measure": str,
    "value": (int, float),
    "printed": str,
    "cite": str,
    "variant": (str, type(None)),
    "model": (str, type(None)),
    "condition": dict,
}
OPTIONAL = {
    "scale": int,
    "max_length": int,
    "quoted_from": str,
    "not_reproducible": str,
    "note": str,
}

SLUG_PART = r"[a-z0-9]+(?:-[a-z0-9]+)*"
ID_FORM = re.compile(
    rf"^(?P<paper>{'|'.join(PAPERS)})/(?P<table>table\d+|text-L\d+)/(?P<row>{SLUG_PART})"
    rf"/(?P<column>{SLUG_PART})$"
)
CITE_FORM = re.compile(r"^papers/(?P<file>[a-z0-9]+\.txt):(?P<line>[1-9]\d*)$")

# The regression guard: how many numbers each table (or the text) of each paper holds.
COUNTS = {
    ("mass2019", "Table 2"): 18,
    ("mass2019", "text"): 6,
    ("bertsel2020", "Table 2"): 29,
    ("bertsel2020", "Table 3"): 20,
    ("monobert2019", "Table 1"): 16,
    ("monobert2019", "text"): 2,
    ("markedbert2020", "Table 1"): 4,
    ("markedbert2020", "Table 2"): 54,
    ("markedbert2020", "Table 3"): 24,
    ("markedbert2020", "text"): 19,
    ("bertdmn2021", "Table 2"): 42,
    ("bertdmn2021", "Table 3"): 6,
}


def _load(name: str) -> dict:
    return yaml.safe_load((STUDIES / name).read_text(encoding="utf-8"))


def _entries(name: str = "published.yaml") -> list[dict]:
    return _load(name)["entries"]


def _slug(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _token(printed: str) -> re.Pattern[str]:
    # The printed number as a token of its own: not the tail of 10.55 nor the head of 0.553 / 9.5.
    return re.compile(rf"(?<![\d.]){re.escape(printed)}(?!\d|\.\d)")


def test_file_layout():
    for name in ("published.yaml", "external.yaml"):
        document = _load(name)
        assert set(document) == {"kind", "tolerance", "entries"}, name
        assert document["kind"] == "published" and document["tolerance"] == 0.02, name
        assert isinstance(document["entries"], list) and document["entries"], name


def test_every_entry_has_the_keys_and_types():
    for entry in _entries():
        where = entry.get("id", entry)
        for key, kind in REQUIRED.items():
            assert key in entry, (where, key)
            assert isinstance(entry[key], kind), (where, key, entry[key])
        for key, kind in OPTIONAL.items():
            if key in entry:
                assert isinstance(entry[key], kind) and not isinstance(entry[key], bool), (
                    where,
                    key,
                )
        assert set(entry) <= set(REQUIRED) | set(OPTIONAL), (where, set(entry) - set(REQUIRED))
        assert entry["paper"] in PAPERS, where
        assert entry["dataset"] in DATASETS, where
        assert entry["split"] in SPLITS, where
        assert entry["measure"] in IR_MEASURES | OTHER_MEASURES, where
        assert entry["variant"] is None or entry["variant"] in VARIANTS, where
        assert entry["model"] in MODELS, where
        assert entry["condition"] and all(isinstance(k, str) for k in entry["condition"]), where
        assert entry["table"] == "text" or re.fullmatch(r"Table \d+", entry["table"]), where
        assert entry["row"].strip() and entry["column"].strip(), where
        for key in ("quoted_from", "not_reproducible", "note"):
            assert key not in entry or entry[key].strip(), (where, key)


def test_ids_are_unique_and_spell_paper_table_row_and_column():
    entries = _entries()
    ids = Counter(e["id"] for e in entries)
    assert not [i for i, n in ids.items() if n > 1]
    for entry in entries:
        match = ID_FORM.match(entry["id"])
        assert match, entry["id"]
        assert match["paper"] == entry["paper"], entry["id"]
        line = CITE_FORM.match(entry["cite"])
        assert line, entry["cite"]
        if entry["table"] == "text":
            assert match["table"] == f"text-L{line['line']}", entry["id"]
        else:
            assert match["table"] == "table" + entry["table"].split()[-1], entry["id"]
        # The slugs of the printed labels; MarkedBERT's "#" row (no letters) is query-count.
        assert match["row"] == (_slug(entry["row"]) or "query-count"), entry["id"]
        assert match["column"] == _slug(entry["column"]), entry["id"]


def test_value_is_the_printed_number_over_its_scale():
    for entry in _entries():
        where, measure = entry["id"], entry["measure"]
        assert _number(entry["value"]), where
        assert re.fullmatch(r"\d*\.?\d+", entry["printed"]), where
        scale = entry.get("scale", 1)
        assert scale in (1, 100), where
        assert abs(float(entry["printed"]) / scale - entry["value"]) <= 1e-9, where
        if measure in IR_MEASURES:
            assert 0.0 <= entry["value"] <= 1.0, where
        else:
            assert "scale" not in entry, where


def test_what_cannot_be_graded_says_why():
    for entry in _entries():
        where = entry["id"]
        if entry["measure"] in OTHER_MEASURES or entry["split"] == "eval":
            assert entry.get("not_reproducible"), where
        if entry["variant"] is None:
            assert entry.get("quoted_from") or entry.get("not_reproducible"), where
        if entry["variant"] in VARIANTS - {"bm25", "pool", "qa_lstm", "knrm"}:
            assert entry["model"] not in (None, "word-vectors"), where  # a BERT re-ranker's encoder
        if entry["variant"] in ("bm25", "pool"):
            assert entry["model"] is None, where  # BM25 has none
        if entry["variant"] in ("qa_lstm", "knrm"):
            # The papers' word-vector models read GloVe: not comparable with word pieces.
            assert entry["model"] == "word-vectors", where


def test_every_cite_names_a_line_that_prints_the_number():
    if not PAPERS_DIR.is_dir():
        pytest.skip(f"the papers' texts are not beside this checkout ({PAPERS_DIR})")
    texts: dict[str, list[str]] = {}
    for entry in _entries():
        match = CITE_FORM.match(entry["cite"])
        assert match, entry["cite"]
        assert match["file"] == f"{entry['paper']}.txt", entry["id"]
        path = PAPERS_DIR / match["file"]
        assert path.is_file(), entry["cite"]
        lines = texts.setdefault(match["file"], path.read_text(encoding="utf-8").splitlines())
        number = int(match["line"])
        assert number <= len(lines), entry["cite"]
        assert _token(entry["printed"]).search(lines[number - 1]), (entry["id"], entry["cite"])


def test_counts_per_paper_and_table():
    counts = Counter((e["paper"], e["table"]) for e in _entries())
    assert dict(counts) == COUNTS
    assert sum(COUNTS.values()) == 240


def test_the_misattributed_numbers_are_gone():
    entries = _entries()

    def values(**condition) -> set[float]:
        return {e["value"] for e in entries if all(e.get(k) == v for k, v in condition.items())}

    # Cohen, Yang and Croft 2018's WikiPassageQA BM25, once attributed to Mass et al.
    assert not {0.5373, 0.6258} & values(paper="mass2019")
    assert not values(dataset="wikipassageqa", variant="bm25")
    # Anserini's MS MARCO BM25 (MarkedBERT's quoted BM25 row), once attributed to monoBERT,
    # which prints 16.7 for its own BM25.
    assert 0.184 not in values(paper="monobert2019")
    assert values(paper="monobert2019", dataset="msmarco-passage", variant="bm25", split="dev") == {
        0.167
    }
    assert values(paper="markedbert2020", variant="bm25") == {0.184}
    # BERT-DMN prints no BM25 number at all.
    assert not values(paper="bertdmn2021", variant="bm25")
    assert not values(paper="bertdmn2021", dataset="trec-dl-2019", variant="bm25")


def test_quoted_numbers_name_their_work():
    entries = _entries()
    quoted = [e for e in entries if e.get("quoted_from")]
    # BERTSel's SOTA row (9 cells), monoBERT's Co-PACRR, KNRM, Conv-KNRM and IRNet (7 cells),
    # MarkedBERT's BM25 and Doc2query + BM25 rows of Table 1 (2 cells).
    assert Counter(e["paper"] for e in quoted) == {
        "bertsel2020": 9,
        "monobert2019": 7,
        "markedbert2020": 2,
    }
    assert all(e["row"] == "SOTA" for e in quoted if e["paper"] == "bertsel2020")
    assert all("Doc2query" in e["quoted_from"] for e in quoted if e["paper"] == "markedbert2020")


def test_external_numbers_give_a_source_and_no_cite():
    entries = _entries("external.yaml")
    for entry in entries:
        where = entry.get("id", entry)
        assert isinstance(entry.get("source"), str) and entry["source"].strip(), where
        assert entry.get("verified") is False, where
        assert "cite" not in entry, where
        assert entry["paper"] not in PAPERS, where
        assert entry["measure"] in IR_MEASURES and 0.0 <= entry["value"] <= 1.0, where
        assert entry["dataset"] in DATASETS and entry["split"] in SPLITS, where
    found = {(e["paper"], e.get("study"), e["measure"], e["value"]) for e in entries}
    assert {
        ("cohen2018wikipassageqa", "bm25-wikipassageqa", "MAP", 0.5373),
        ("cohen2018wikipassageqa", "bm25-wikipassageqa", "MRR", 0.6258),
    } <= found
    # MarkedBERT prints Anserini's MS MARCO BM25 (18.4, quoted from Doc2query): published.yaml's.
    assert not any(e["dataset"] == "msmarco-passage" and e["value"] == 0.184 for e in entries)
