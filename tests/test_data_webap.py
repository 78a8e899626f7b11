"""The WebAP adapter on its fixture and on a synthetic collection for the length distribution."""

from __future__ import annotations

import json
import random
import shutil
import statistics
from pathlib import Path
from typing import Any

import pytest

from reranklab.data import get_dataset
from reranklab.data.download import fetch_dataset
from reranklab.data.webap import PASSAGES_FILE, QUERIES_FILE, WebAP, cut_lengths
from reranklab.errors import ConfigError, DownloadError, FormatError
from reranklab.io import read_corpus, read_json, read_qrels, read_queries

FIXTURES = Path(__file__).parent / "fixtures"
DOC1, DOC2, DOC3, DOC4 = (
    "GX001-01-0000001-701",
    "GX002-44-0000310-701",
    "GX003-12-0004517-702",
    "GX004-07-0000092-703",
)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("webap")
    manifest = fetch_dataset(WebAP(), base / "raw", str(FIXTURES), progress=False)
    stats = get_dataset("webap").prepare(base / "raw", base / "prepared")
    return {"raw": base / "raw", "out": base / "prepared", "manifest": manifest, "stats": stats}


def _broken(tmp_path: Path, name: str, edit: Any) -> Path:
    for other in (PASSAGES_FILE, QUERIES_FILE):
        shutil.copy(FIXTURES / "webap" / other, tmp_path / other)
    path = tmp_path / name
    path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")
    return tmp_path


def _line(lineno: int, edit: Any) -> Any:
    def apply(text: str) -> str:
        lines = text.split("\n")
        lines[lineno - 1] = edit(lines[lineno - 1])
        return "\n".join(lines)

    return apply


def test_registered_with_the_protocol_of_mass_et_al() -> None:
    dataset = get_dataset("webap")
    assert isinstance(dataset, WebAP)
    assert dataset.protocol.as_dict() == {
        "first_stage": "bm25",
        "depth": 100,
        "inject_relevant": True,
        "split": "cv",
        "folds": 5,
        "negatives_per_positive": "all",
        "relevance_threshold": 1,
        "positives": "judged",
        "scored": "test",
        "metrics": ["P@1", "MRR", "MAP"],
        "options": {"seed": 1},
        "scoring": None,
    }
    assert [(f.name, f.url) for f in dataset.files] == [(PASSAGES_FILE, None), (QUERIES_FILE, None)]
    assert all("https://ciir.cs.umass.edu/downloads/WebAP/" in f.manual for f in dataset.files)
    assert all(f"WebAP/gradedText/{f.name}" in f.manual for f in dataset.files)


def test_manual_download_says_which_files_to_place(tmp_path: Path) -> None:
    with pytest.raises(DownloadError) as caught:
        fetch_dataset(WebAP(), tmp_path / "raw", None, progress=False)
    message = str(caught.value)
    assert message.startswith("dataset 'webap': 2 file(s) must be obtained by hand (licence):")
    assert (
        "  - grade.trectext_patched: download the WebAP data from https://ciir.cs.umass.edu/downloads/WebAP/"
        in message
    )
    assert "copy WebAP/gradedText/gov2.query.json" in message
    assert f"Place them, with exactly these names, in {tmp_path / 'raw'}" in message


def test_fetched_from_the_fixture_mirror(prepared: dict[str, Any]) -> None:
    assert [(e["name"], e["source"]) for e in prepared["manifest"]["files"]] == [
        (PASSAGES_FILE, f"mirror:webap/{PASSAGES_FILE}"),
        (QUERIES_FILE, f"mirror:webap/{QUERIES_FILE}"),
    ]


def test_exact_counts(prepared: dict[str, Any]) -> None:
    assert prepared["stats"] == {
        "passages": 14,
        "queries": 2,
        "judged_queries": 2,
        "judgements": 13,  # the passage of 703's document stays in the corpus, unjudged
        "documents": 4,
        "queries_in_file": 4,
        "dropped_queries": ["703", "704"],  # 703: only NONE text; 704: no judged document
        "relevant_passages": 4,
        "relevant_by_grade": {"1": 1, "2": 1, "3": 1, "4": 1},
        "negative_passages": 10,
        "relevant_length": {"mean": 39.75, "std": 19.214},  # 36, 68, 14, 41 words
        "negative_length": {"mean": 17.2, "std": 8.953},
        "seed": 1,
    }
    assert read_json(prepared["out"] / "stats.json") == prepared["stats"]


def test_first_and_last_records(prepared: dict[str, Any]) -> None:
    out = prepared["out"]
    assert read_queries(out / "queries.tsv") == {
        "701": "history of the us oil industry",
        "702": "pesticide use on vegetable farms",
    }
    corpus = read_corpus(out / "corpus.parquet")
    assert list(corpus) == [f"{DOC1}-{k}" for k in range(1, 6)] + [
        f"{DOC2}-{k}" for k in range(1, 4)
    ] + [f"{DOC3}-{k}" for k in range(1, 6)] + [f"{DOC4}-1"]
    assert corpus[f"{DOC1}-2"] == (
        "Commercial oil production in the United States began in 1859 when Edwin Drake drilled a well near "
        "Titusville, Pennsylvania. Within a decade, refineries along the rivers of western Pennsylvania "
        "turned crude oil into kerosene for lamps."
    )
    assert (
        corpus[f"{DOC2}-1"]
        == "Oil and gas have been produced in the state since the early twentieth century."
    )
    assert corpus[f"{DOC4}-1"] == (
        "Visitor information for the national seashore: hours, fees, parking and accessibility. "
        "The visitor centre is open daily except on federal holidays in winter."
    )
    qrels = read_qrels(out / "qrels.txt")
    assert {q: {p: g for p, g in judged.items() if g} for q, judged in qrels.items()} == {
        "701": {f"{DOC1}-2": 2, f"{DOC1}-4": 4, f"{DOC2}-1": 1},
        "702": {f"{DOC3}-2": 3},
    }
    assert sorted(p for p, g in qrels["702"].items() if not g) == [
        f"{DOC3}-{k}" for k in (1, 3, 4, 5)
    ]
    lines = (out / "qrels.txt").read_text().splitlines()
    assert (len(lines), lines[0], lines[-1]) == (13, f"701 0 {DOC1}-1 0", f"702 0 {DOC3}-5 0")
    assert read_json(out / "split.json") is None
    assert (out / "pool.run").read_text() == ""


def test_negatives_are_the_irrelevant_text_cut_in_page_order(prepared: dict[str, Any]) -> None:
    corpus = read_corpus(prepared["out"] / "corpus.parquet")
    # GX003's second NONE run (two sentences, 36 words) is cut into pieces 3, 4 and 5.
    run = " ".join(corpus[f"{DOC3}-{k}"] for k in (3, 4, 5))
    assert run == (
        "Survey methods: data were collected from a probability sample of farm operators in the major "
        "producing states during the fall. Estimates are not published when fewer than three reports are "
        "available, to avoid disclosing individual operations."
    )
    assert [len(corpus[f"{DOC3}-{k}"].split()) for k in (3, 4, 5)] == [20, 12, 4]


def test_seed_makes_the_cut_deterministic() -> None:
    raw = FIXTURES / "webap"
    first, again = WebAP().parse(raw, {"seed": 7}), WebAP().parse(raw, {"seed": 7})
    other = WebAP().parse(raw, {"seed": 8})
    assert first.corpus == again.corpus and first.qrels == again.qrels
    assert first.corpus != other.corpus

    def relevant(prepared: Any) -> list[tuple[int, str]]:
        return sorted(
            (g, prepared.corpus[p])
            for judged in prepared.qrels.values()
            for p, g in judged.items()
            if g
        )

    assert relevant(first) == relevant(other) and len(relevant(first)) == 4
    assert " ".join(first.corpus.values()).split() == " ".join(other.corpus.values()).split()


def _synthetic(tmp_path: Path, documents: int = 60) -> list[int]:
    """A WebAP-format collection whose relevant blocks have known lengths; returns them."""
    rng = random.Random(11)
    lengths = [max(5, round(rng.gauss(40, 12))) for _ in range(documents)]
    queries = {"queries": [{"number": str(800 + q), "text": f"query {q}"} for q in range(5)]}
    (tmp_path / QUERIES_FILE).write_text(json.dumps(queries), encoding="utf-8")
    docs = []

    def sentence(n: int, tag: str) -> str:
        return "<SENTENCE>" + " ".join(f"{tag}w{j}" for j in range(n)) + "</SENTENCE>"

    for i, length in enumerate(lengths):
        docs.append(
            f"<DOC><DOCNO>D{i}</DOCNO><TARGET_QID>{800 + i % 5}</TARGET_QID><ORIGINAL_DOCNO>O{i}</ORIGINAL_DOCNO><TEXT>"
            f"<NONE>{sentence(300, f'a{i}')}{sentence(150, f'b{i}')}</NONE><GOOD>{sentence(length, f'r{i}')}</GOOD>"
            f"<NONE>{sentence(400, f'c{i}')}</NONE></TEXT></DOC>"
        )
    (tmp_path / PASSAGES_FILE).write_text(
        "<ROOT>\n" + "\n".join(docs) + "\n</ROOT>\n", encoding="utf-8"
    )
    return lengths


def test_negative_lengths_follow_the_relevant_length_distribution(tmp_path: Path) -> None:
    lengths = _synthetic(tmp_path)
    prepared = WebAP().parse(tmp_path, {"seed": 3})
    assert prepared.stats()["relevant_length"] == {
        "mean": round(statistics.fmean(lengths), 3),
        "std": round(statistics.pstdev(lengths), 3),
    }
    full: list[int] = []  # negative pieces that are not the rest at the end of a run
    for i in range(len(lengths)):
        pids = [p for p in prepared.corpus if p.startswith(f"D{i}-")]
        grades = [prepared.qrels[str(800 + i % 5)][p] for p in pids]
        for k, pid in enumerate(pids[:-1]):
            if grades[k] == 0 and grades[k + 1] == 0:
                full.append(len(prepared.corpus[pid].split()))
    assert len(full) > 800
    assert abs(statistics.fmean(full) - statistics.fmean(lengths)) < 1.5
    assert abs(statistics.pstdev(full) - statistics.pstdev(lengths)) < 1.5
    assert min(full) >= 1


def test_cut_lengths_cover_the_run_exactly() -> None:
    rng = random.Random(5)
    for total in (1, 7, 40, 1000):
        sizes = cut_lengths(total, 20.0, 6.0, rng)
        assert sum(sizes) == total and min(sizes) >= 1
    assert cut_lengths(0, 20.0, 6.0, rng) == []
    assert cut_lengths(10, 3.0, 0.0, random.Random(1)) == [3, 3, 3, 1]


@pytest.mark.parametrize(
    ("name", "edit", "line", "problem"),
    [
        (
            PASSAGES_FILE,
            lambda t: t.replace("<GOOD>", "<GREAT>").replace("</GOOD>", "</GREAT>"),
            13,
            f"unexpected <GREAT> in <TEXT> of {DOC1}; expected one of NONE, FAIR, GOOD, EXCEL, PERFECT",
        ),
        (
            PASSAGES_FILE,
            _line(9, lambda s: s.replace("SENTENCE>", "S>")),
            9,
            "unexpected <S> in <NONE>; expected <SENTENCE>",
        ),
        (
            PASSAGES_FILE,
            _line(10, lambda s: s.replace("</SENTENCE>", "")),
            12,
            "malformed XML: mismatched tag",
        ),
        (
            PASSAGES_FILE,
            _line(32, lambda s: s.replace("701", "799")),
            30,
            "TARGET_QID 799 is not a query of gov2.query.json",
        ),
        (PASSAGES_FILE, _line(4, lambda _: ""), 3, "<DOC> without a valid <DOCNO> ('')"),
        (
            PASSAGES_FILE,
            _line(46, lambda _: f"<DOCNO>{DOC2}</DOCNO>"),
            45,
            f"DOCNO {DOC2} is repeated (first on line 30)",
        ),
        (
            QUERIES_FILE,
            _line(4, lambda s: s.replace("pesticide use on vegetable farms", " ")),
            4,
            "query 702: 'text' is missing or empty",
        ),
        (
            QUERIES_FILE,
            _line(5, lambda s: s.replace('"703"', '"701"')),
            5,
            "query number 701 is repeated (first on line 3)",
        ),
        (
            QUERIES_FILE,
            _line(6, lambda s: s.replace('"text"', "text")),
            6,
            "invalid JSON: Expecting property name",
        ),
        (
            QUERIES_FILE,
            lambda t: t.replace('"queries"', '"topics"'),
            8,
            "no 'queries' array in the top-level object",
        ),
    ],
)
def test_malformed_input_names_file_and_line(
    tmp_path: Path, name: str, edit: Any, line: int, problem: str
) -> None:
    raw = _broken(tmp_path, name, edit)
    with pytest.raises(FormatError) as caught:
        WebAP().parse(raw, {})
    assert (caught.value.path, caught.value.line) == (raw / name, line)
    assert problem in caught.value.problem
    assert str(caught.value).startswith(f"{raw / name}:{line}: ")


def test_options_are_checked(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"protocol.webap.options: unknown option\(s\) \['depth'\]"
    ):
        WebAP().parse(tmp_path, {"depth": 5})
    with pytest.raises(
        ConfigError, match=r"protocol.webap.options.seed: expected an integer, got '1'"
    ):
        WebAP().parse(tmp_path, {"seed": "1"})
    with pytest.raises(
        DownloadError, match=r"gov2.query.json: missing; run the download step for webap first"
    ):
        WebAP().parse(tmp_path, {"seed": 1})
