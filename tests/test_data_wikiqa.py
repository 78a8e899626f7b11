"""The WikiQA adapter on the real files of the local mirror (skipped where there is none)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from reranklab.data import registry
from reranklab.data.download import fetch_dataset
from reranklab.data.wikiqa import WikiQA, raw_name, read_rows
from reranklab.errors import ConfigError, FormatError
from reranklab.evaluation import evaluate_run
from reranklab.io import rank_order, read_corpus, read_json, read_qrels, read_queries, read_run

REPO = Path(__file__).resolve().parents[1]
ROW2_OF_TRAIN = b"Q1\thow are glacier caves formed?\tD1\tGlacier cave\tD1-0\tA partly submerged glacier cave on Perito Moreno Glacier .\t0"


def _mirror() -> Path | None:
    configured = os.environ.get("RERANKLAB_MIRROR", "").strip()
    root = Path(configured) if configured else REPO.parent / "shared" / "datasets"
    return root if (root / "wikiqa" / raw_name("test")).is_file() else None


MIRROR = _mirror()
pytestmark = [
    pytest.mark.mirror,
    pytest.mark.skipif(
        MIRROR is None,
        reason="no WikiQA mirror: set RERANKLAB_MIRROR to a folder with wikiqa/WikiQA-*.tsv "
        "(or place it at ../shared/datasets next to the repository)",
    ),
]


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("wikiqa")
    dataset = WikiQA()
    manifest = fetch_dataset(dataset, base / "raw", str(MIRROR), progress=False)
    stats = dataset.prepare(base / "raw", base / "prepared")
    return {"raw": base / "raw", "out": base / "prepared", "manifest": manifest, "stats": stats}


@pytest.fixture
def raw_copy(prepared: dict[str, Any], tmp_path: Path) -> Path:
    raw = tmp_path / "raw"
    shutil.copytree(prepared["raw"], raw)
    return raw


def _edit_line(path: Path, lineno: int, edit: Any) -> None:
    lines = path.read_bytes().split(b"\r\n")
    lines[lineno - 1] = edit(lines[lineno - 1])
    path.write_bytes(b"\r\n".join(lines))


def test_registered_with_the_papers_protocol() -> None:
    dataset = registry._DATASETS["wikiqa"]
    assert isinstance(dataset, WikiQA)
    assert dataset.protocol.as_dict() == {
        "first_stage": "pool",
        "depth": None,
        "inject_relevant": False,
        "split": "predefined",
        "folds": 5,
        "negatives_per_positive": "all",
        "relevance_threshold": 1,
        "positives": "judged",
        "scored": "test",
        "metrics": ["MAP", "MRR"],
        "options": {},
        "scoring": None,
    }
    assert [f.name for f in dataset.files] == [
        "WikiQA-train.tsv",
        "WikiQA-dev.tsv",
        "WikiQA-test.tsv",
    ]
    assert {f.member for f in dataset.files} == {
        f"WikiQACorpus/WikiQA-{s}.tsv" for s in ("train", "dev", "test")
    }
    assert {f.archive_size for f in dataset.files} == {7_094_233}


def test_fetched_from_the_mirror_and_verified(prepared: dict[str, Any]) -> None:
    assert prepared["manifest"] == {
        "dataset": "wikiqa",
        "files": [
            {
                "name": "WikiQA-train.tsv",
                "size": 4379303,
                "sha256": "295757943bc4df27f09763fc73b9f63063b13a577718b17805cbc9bb436f9dbe",
                "source": "mirror:wikiqa/WikiQA-train.tsv",
            },
            {
                "name": "WikiQA-dev.tsv",
                "size": 579837,
                "sha256": "023c530e742caca2a760d48bd249e13259248c11f3b880a4c1842aa259a30a54",
                "source": "mirror:wikiqa/WikiQA-dev.tsv",
            },
            {
                "name": "WikiQA-test.tsv",
                "size": 1310942,
                "sha256": "3c3b66966cb183b71abf19510bc2302295c68dd7a25284ec9cf8b63d5b6929e3",
                "source": "mirror:wikiqa/WikiQA-test.tsv",
            },
        ],
    }


def test_exact_counts(prepared: dict[str, Any]) -> None:
    assert prepared["stats"] == {
        "passages": 26270,  # distinct SentenceIDs (26,196 distinct texts)
        "queries": 3047,
        "judged_queries": 3047,
        "judgements": 29258,
        "split": {"train": 2118, "dev": 296, "test": 633},
        "pool_pairs": 29258,
        "rows": {"train": 20360, "dev": 2733, "test": 6165},
        "correct_answers": {"train": 1040, "dev": 140, "test": 293},
        "evaluable_questions": {"train": 873, "dev": 126, "test": 243},
        "questions_with_correct_and_incorrect": {"train": 857, "dev": 122, "test": 237},
        "passages_in_several_splits": 1165,
    }
    assert read_json(prepared["out"] / "stats.json") == prepared["stats"]


def test_first_and_last_records(prepared: dict[str, Any]) -> None:
    out = prepared["out"]
    queries = read_queries(out / "queries.tsv")
    assert next(iter(queries.items())) == ("Q1", "how are glacier caves formed?")
    assert list(queries.items())[-1] == ("Q3045", "what is an open mare?")

    corpus = read_corpus(out / "corpus.parquet")
    assert len(corpus) == 26270
    assert next(iter(corpus.items())) == (
        "D1-0",
        "A partly submerged glacier cave on Perito Moreno Glacier .",
    )
    assert list(corpus.items())[-1] == (
        "D2809-8",
        'Occasionally the term "horse" is used in a restrictive sense to designate only a male horse.',
    )

    qrels_lines = (out / "qrels.txt").read_text().splitlines()
    assert (len(qrels_lines), qrels_lines[0], qrels_lines[-1]) == (
        29258,
        "Q0 0 D0-0 0",
        "Q999 0 D964-0 1",
    )
    qrels = read_qrels(out / "qrels.txt")
    assert qrels["Q1"] == {"D1-0": 0, "D1-1": 0, "D1-2": 0, "D1-3": 1, "D1-4": 0}
    assert qrels["Q3045"] == {f"D2809-{i}": 0 for i in range(9)}

    pool_lines = (out / "pool.run").read_text().splitlines()
    assert (len(pool_lines), pool_lines[0], pool_lines[-1]) == (
        29258,
        "Q0 Q0 D0-0 1 6.0 pool",
        "Q999 Q0 D964-0 1 1.0 pool",
    )

    split = read_json(out / "split.json")
    assert {name: (qids[0], qids[-1], len(qids)) for name, qids in split.items()} == {
        "train": ("Q1", "Q3046", 2118),
        "dev": ("Q8", "Q3018", 296),
        "test": ("Q0", "Q3045", 633),
    }


def test_pool_order_is_page_order(prepared: dict[str, Any]) -> None:
    pool = read_run(prepared["out"] / "pool.run")
    # Q40 has 30 sentences: page order D40-0..D40-29 differs from the lexicographic pid order.
    ranked = [pid for pid, _ in rank_order(pool["Q40"])]
    assert ranked == [f"D40-{i}" for i in range(30)]
    file_order = [
        row.sid for row in read_rows(prepared["raw"] / "WikiQA-train.tsv") if row.qid == "Q40"
    ]
    assert ranked == file_order
    assert all(
        [pid for pid, _ in rank_order(scores)]
        == sorted(scores, key=lambda pid: int(pid.rsplit("-", 1)[1]))
        for scores in pool.values()
    )


def test_missing_field_names_file_and_line(raw_copy: Path) -> None:
    dev = raw_copy / "WikiQA-dev.tsv"
    _edit_line(dev, 500, lambda line: line.rsplit(b"\t", 1)[0])  # drop the Label
    with pytest.raises(FormatError) as caught:
        WikiQA().parse(raw_copy, {})
    assert (caught.value.path, caught.value.line) == (dev, 500)
    assert str(caught.value) == (
        f"{dev}:500: expected 7 tab-separated fields "
        "(QuestionID Question DocumentID DocumentTitle SentenceID Sentence Label), got 6"
    )


@pytest.mark.parametrize(
    ("lineno", "edit", "problem"),
    [
        (1, lambda line: line.replace(b"Sentence\t", b"Answer\t"), "is not the WikiQA header"),
        (3, lambda line: line[:-1] + b"2", "Label '2' is not 0 or 1"),
        (3, lambda _: ROW2_OF_TRAIN, "question Q1 lists sentence D1-0 twice"),
        (
            4,
            lambda line: line.replace(b"\tD1-2\t", b"\tD1-0\t"),
            "SentenceID D1-0 has a different text than at",
        ),
        (
            5,
            lambda line: line.replace(b"how are glacier", b"how were glacier"),
            "question Q1 has a different text than on line 2",
        ),
        (
            7,
            lambda line: line.replace(b"Q2\t", b"Q1\t", 1),
            "question Q1 has a different text than on line 2",
        ),
        (8, lambda line: line.replace(b"\tIt can", b"\tIt \xffcan"), "not valid UTF-8"),
    ],
)
def test_malformed_train_lines(raw_copy: Path, lineno: int, edit: Any, problem: str) -> None:
    train = raw_copy / "WikiQA-train.tsv"
    _edit_line(train, lineno, edit)
    with pytest.raises(FormatError, match=problem) as caught:
        WikiQA().parse(raw_copy, {})
    assert (caught.value.path, caught.value.line) == (train, lineno)


def test_question_in_two_splits_is_refused(raw_copy: Path) -> None:
    test = raw_copy / "WikiQA-test.tsv"
    # Q0's first row is line 2 of the test file; rename it to a train question.
    _edit_line(test, 2, lambda line: line.replace(b"Q0\tHOW AFRICAN", b"Q1\tHOW AFRICAN"))
    with pytest.raises(
        FormatError, match=r"question Q1 is also in the train split \(.*WikiQA-train.tsv:2\)"
    ) as caught:
        WikiQA().parse(raw_copy, {})
    assert (caught.value.path, caught.value.line) == (test, 2)


def test_options_are_refused() -> None:
    with pytest.raises(
        ConfigError, match=r"protocol.wikiqa.options: WikiQA takes no options, got \['depth'\]"
    ):
        WikiQA().parse(Path("unused"), {"depth": 5})


def _expected_ap_of_a_random_order(n: int, relevant: int) -> float:
    # E[AP] over all orders = (1/n) [H_n + (R-1)/(n-1) (n - H_n)] (see tests/test_evaluation.py).
    harmonic = sum(1 / k for k in range(1, n + 1))
    return (harmonic + (relevant - 1) / (n - 1) * (n - harmonic)) / n if n > 1 else 1.0


def test_scorings_count_the_official_questions_and_ties_do_not_follow_page_order(
    prepared: dict[str, Any],
) -> None:
    out = prepared["out"]
    qrels, split, pool = (
        read_qrels(out / "qrels.txt"),
        read_json(out / "split.json"),
        read_run(out / "pool.run"),
    )
    filtered, with_correct = WikiQA().scoring(), WikiQA().scoring("with-correct")
    assert filtered.name == "filtered"
    counts = {}
    for name, scoring in (("filtered", filtered), ("with-correct", with_correct)):
        for part in ("dev", "test"):
            result = evaluate_run(
                {q: pool[q] for q in split[part]}, qrels, split[part], scoring=scoring
            )
            counts[name, part] = (result["n_queries"], result["dropped"])
    assert counts == {
        ("filtered", "dev"): (122, {"no_relevant": 170, "only_relevant": 4}),
        ("filtered", "test"): (237, {"no_relevant": 390, "only_relevant": 6}),
        ("with-correct", "dev"): (126, {"no_relevant": 170}),
        ("with-correct", "test"): (243, {"no_relevant": 390}),
    }
    # Every candidate with the same score: page order (MAP ~0.63) must not leak through; the
    # result stays within a few standard errors of the exact expectation of a random order.
    test = split["test"]
    constant = {q: dict.fromkeys(pool[q], 0.0) for q in test}
    result = evaluate_run(constant, qrels, test, scoring=filtered)
    counted = sorted(result["per_query"])
    expected = [
        _expected_ap_of_a_random_order(len(qrels[q]), sum(qrels[q].values())) for q in counted
    ]
    values = [result["per_query"][q]["MAP"] for q in counted]
    mean_expected = sum(expected) / len(expected)
    stderr = (
        sum((v - e) ** 2 for v, e in zip(values, expected, strict=True)) / len(values)
    ) ** 0.5 / len(values) ** 0.5
    assert abs(result["aggregate"]["MAP"] - mean_expected) < 4 * stderr
    assert (
        result["aggregate"]["MAP"]
        < 0.5
        < evaluate_run({q: pool[q] for q in test}, qrels, test, scoring=filtered)["aggregate"][
            "MAP"
        ]
    )
    assert result["ties"]["queries"] == sum(1 for q in counted if len(pool[q]) > 1)
