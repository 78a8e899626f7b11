"""The SemEval-2016/2017 Task 3 subtask A adapters on their fixtures."""

from __future__ import annotations

import dataclasses
import os
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest

from reranklab.data import get_dataset
from reranklab.data.base import RawFile
from reranklab.data.download import fetch_dataset, sha256_of
from reranklab.data.semeval import (
    DEV,
    TEST,
    TEST_URLS,
    TRAIN_2015,
    TRAIN_2016,
    TRAINDEV_URL,
    SemEval2016,
    SemEval2017,
    read_threads,
)
from reranklab.errors import ConfigError, DownloadError, FormatError
from reranklab.evaluation import evaluate_run
from reranklab.io import rank_order, read_corpus, read_json, read_qrels, read_queries, read_run

FIXTURES = Path(__file__).parent / "fixtures"
TRAIN_QIDS = ["Q101_R1", "Q101_R4", "Q205_R2", "Q3001_R1", "Q3101_R1", "Q3201_R1"]


def _small(files: tuple[RawFile, ...]) -> list[RawFile]:
    # The fixtures are small stand-ins for the real files: their declared checksums cannot hold.
    return [dataclasses.replace(f, size=None, sha256=None) for f in files]


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # semeval2017 needs the 2016 training and dev files as well: its mirror folder holds both.
    root = tmp_path_factory.mktemp("mirror")
    shutil.copytree(FIXTURES / "semeval2016", root / "semeval2016")
    shutil.copytree(FIXTURES / "semeval2016", root / "semeval2017")
    shutil.copy(FIXTURES / "semeval2017" / TEST[2017], root / "semeval2017")
    return root


@pytest.fixture(scope="module", params=["semeval2016", "semeval2017"])
def prepared(
    request: pytest.FixtureRequest, mirror: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    name = request.param
    base = tmp_path_factory.mktemp(name)
    # semeval2016 reads the fixture folder itself as its mirror.
    source = FIXTURES if name == "semeval2016" else mirror
    manifest = fetch_dataset(
        get_dataset(name),
        base / "raw",
        str(source),
        files=_small(get_dataset(name).files),
        progress=False,
    )
    stats = get_dataset(name).prepare(base / "raw", base / "prepared")
    return {
        "name": name,
        "raw": base / "raw",
        "out": base / "prepared",
        "manifest": manifest,
        "stats": stats,
    }


def _broken(tmp_path: Path, edits: dict[int, Any], name: str = DEV) -> Path:
    """Copy the 2016 fixture files into tmp_path and edit lines of one of them."""
    shutil.copytree(FIXTURES / "semeval2016", tmp_path, dirs_exist_ok=True)
    path = tmp_path / name
    lines = path.read_text(encoding="utf-8").split("\n")
    for lineno, edit in edits.items():
        lines[lineno - 1] = edit(lines[lineno - 1])
    path.write_text("\n".join(lines), encoding="utf-8")
    return tmp_path


def test_registered_with_the_bertsel_protocol() -> None:
    for name, cls, year in (("semeval2016", SemEval2016, 2016), ("semeval2017", SemEval2017, 2017)):
        dataset = get_dataset(name)
        assert isinstance(dataset, cls)
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
            "options": {"with_2015": True},
            "scoring": None,
        }
        specs = [(f.name, f.url, f.member) for f in dataset.files]
        assert specs[:-1] == [
            (TRAIN_2016[0], TRAINDEV_URL, f"v3.2/train/{TRAIN_2016[0]}"),
            (TRAIN_2016[1], TRAINDEV_URL, f"v3.2/train/{TRAIN_2016[1]}"),
            *[(n, TRAINDEV_URL, f"v3.2/train-more-for-subtaskA-from-2015/{n}") for n in TRAIN_2015],
            (DEV, TRAINDEV_URL, f"v3.2/dev/{DEV}"),
        ]
        assert specs[-1] == (
            TEST[year],
            TEST_URLS[year],
            f"SemEval{year}_task3_test/English/{TEST[year]}",
        )
    assert (
        TRAINDEV_URL
        == "http://alt.qcri.org/semeval2016/task3/data/uploads/semeval2016-task3-cqa-ql-traindev-v3.2.zip"
    )
    assert (
        get_dataset("semeval2016").protocol.options
        is not get_dataset("semeval2017").protocol.options
    )


def test_fetched_from_the_mirror(prepared: dict[str, Any]) -> None:
    name = prepared["name"]
    entries = prepared["manifest"]["files"]
    assert [e["name"] for e in entries] == [
        *TRAIN_2016,
        *TRAIN_2015,
        DEV,
        TEST[2016 if name == "semeval2016" else 2017],
    ]
    assert all(e["source"] == f"mirror:{name}/{e['name']}" for e in entries)


def test_files_come_out_of_the_official_zips(tmp_path: Path) -> None:
    # A mirror may hold the distributions' zips (named as in their URLs) instead of the files.
    folder = tmp_path / "mirror" / "semeval2016"
    folder.mkdir(parents=True)
    for spec in SemEval2016.files:
        with zipfile.ZipFile(folder / spec.url.rsplit("/", 1)[1], "a") as archive:
            archive.write(FIXTURES / "semeval2016" / spec.name, spec.member)
    assert sorted(p.name for p in folder.iterdir()) == [
        "semeval2016-task3-cqa-ql-traindev-v3.2.zip",
        "semeval2016_task3_test.zip",
    ]
    manifest = fetch_dataset(
        SemEval2016(),
        tmp_path / "raw",
        str(tmp_path / "mirror"),
        files=_small(SemEval2016.files),
        progress=False,
    )
    assert manifest["files"][-1]["source"] == (
        "mirror:semeval2016/semeval2016_task3_test.zip!SemEval2016_task3_test/English/SemEval2016-Task3-CQA-QL-test-subtaskA.xml"
    )
    assert SemEval2016().parse(tmp_path / "raw", {"with_2015": True}).stats()["judgements"] == 24


def test_exact_counts(prepared: dict[str, Any]) -> None:
    test_counts = {
        "semeval2016": {
            "comments": 5,
            "good": 2,
            "potentially_useful": 1,
            "bad": 2,
            "questions_with_good": 1,
        },
        "semeval2017": {
            "comments": 5,
            "good": 3,
            "potentially_useful": 0,
            "bad": 2,
            "questions_with_good": 2,
        },
    }[prepared["name"]]
    test_file = TEST[2016 if prepared["name"] == "semeval2016" else 2017]
    assert prepared["stats"] == {
        "passages": 24,
        "queries": 10,
        "judged_queries": 10,
        "judgements": 24,
        "split": {"train": 6, "dev": 2, "test": 2},
        "pool_pairs": 24,
        "files": {"train": [*TRAIN_2016, *TRAIN_2015], "dev": [DEV], "test": [test_file]},
        "comments": {"train": 14, "dev": 5, "test": test_counts["comments"]},
        "good": {"train": 6, "dev": 2, "test": test_counts["good"]},
        "potentially_useful": {"train": 2, "dev": 1, "test": test_counts["potentially_useful"]},
        "bad": {"train": 6, "dev": 2, "test": test_counts["bad"]},
        "questions_with_good": {"train": 5, "dev": 2, "test": test_counts["questions_with_good"]},
        "with_2015": True,
    }
    assert read_json(prepared["out"] / "stats.json") == prepared["stats"]


def test_first_and_last_records(prepared: dict[str, Any]) -> None:
    out = prepared["out"]
    test_qids = (
        ["Q401_R1", "Q402_R6"] if prepared["name"] == "semeval2016" else ["Q501_R1", "Q502_R2"]
    )
    assert read_json(out / "split.json") == {
        "train": TRAIN_QIDS,
        "dev": ["Q301_R1", "Q301_R3"],
        "test": test_qids,
    }
    queries = read_queries(out / "queries.tsv")
    assert queries["Q101_R1"] == (
        "Cost of renting a flat in Doha How much should I expect to pay for a one bedroom flat near the "
        "corniche? Is water & electricity included?"
    )
    assert queries["Q205_R2"] == "Best karak in town?"  # empty body
    corpus = read_corpus(out / "corpus.parquet")
    assert next(iter(corpus.items())) == (
        "Q101_R1_C1",
        "Around 6,000 to 7,500 QR a month for a one bedroom; most landlords include water but not electricity.",
    )
    last_pid, last_text = list(corpus.items())[-1]
    if prepared["name"] == "semeval2016":
        assert (last_pid, last_text) == (
            "Q402_R6_C2",
            "Some schools allow paying per term if you ask the accounts office.",
        )
    else:
        assert (last_pid, last_text) == (
            "Q502_R2_C2",
            "Shipping plus customs duty costs more than buying the same car used here.",
        )
    qrels = read_qrels(out / "qrels.txt")
    assert qrels["Q301_R1"] == {
        "Q301_R1_C1": 0,
        "Q301_R1_C2": 1,
        "Q301_R1_C3": 0,
    }  # Bad, Good, PotentiallyUseful
    assert qrels["Q3201_R1"] == {"Q3201_R1_C1": 0, "Q3201_R1_C2": 0}
    pool = read_run(out / "pool.run")
    assert [pid for pid, _ in rank_order(pool["Q101_R1"])] == [
        "Q101_R1_C1",
        "Q101_R1_C2",
        "Q101_R1_C3",
    ]
    lines = (out / "pool.run").read_text().splitlines()
    assert (len(lines), lines[0]) == (24, "Q101_R1 Q0 Q101_R1_C1 1 3.0 pool")


def test_without_the_2015_data() -> None:
    prepared = SemEval2016().parse(FIXTURES / "semeval2016", {"with_2015": False})
    assert prepared.split["train"] == ["Q101_R1", "Q101_R4", "Q205_R2"]
    stats = prepared.stats()
    assert (stats["comments"]["train"], stats["good"]["train"], stats["bad"]["train"]) == (8, 4, 3)
    assert (stats["passages"], stats["with_2015"]) == (18, False)


def test_reader_accepts_both_file_layouts() -> None:
    # train-part2 wraps its thread in <OrgQuestion>; the others are bare threads.
    [wrapped] = read_threads(FIXTURES / "semeval2016" / TRAIN_2016[1])
    assert (wrapped.qid, wrapped.line, [c.label for c in wrapped.comments]) == (
        "Q205_R2",
        7,
        ["Good", "Good", "Bad"],
    )
    bare = list(read_threads(FIXTURES / "semeval2016" / DEV))
    assert [(t.qid, t.line) for t in bare] == [("Q301_R1", 3), ("Q301_R3", 22)]
    assert bare[0].comments[1] == (
        "Q301_R1_C2",
        "QIC was the cheapest for me, about 2,800 QR for a sedan with agency repair.",
        "Good",
        13,
    )


@pytest.mark.parametrize(
    ("edits", "line", "problem"),
    [
        (
            {13: lambda s: s.replace('RELQ="Good"', 'RELQ="N/A"')},
            13,
            "comment Q301_R1_C2: RELC_RELEVANCE2RELQ 'N/A' is not one of ['Good', 'PotentiallyUseful', 'Bad']",
        ),
        (
            {4: lambda s: s.replace('RELQ_ID="Q301_R1" ', "")},
            4,
            "RELQ_ID '' is missing, empty or contains spaces",
        ),
        (
            {23: lambda s: s.replace('RELQ_ID="Q301_R3"', 'RELQ_ID="Q301_R1"')},
            22,
            "RELQ_ID Q301_R1 is repeated (first at ",
        ),
        (
            {9: lambda s: s.replace('RELC_ID="Q301_R1_C1"', 'RELC_ID="Q101_R1_C1"')},
            9,
            "RELC_ID Q101_R1_C1 is repeated (first at ",
        ),
        ({14: lambda s: s.replace("</RelCText>", "")}, 15, "malformed XML: mismatched tag"),
        (
            {
                5: lambda s: s.replace("Car insurance", ""),
                6: lambda _: "\t\t\t<RelQBody></RelQBody>",
            },
            4,
            "related question Q301_R1 has neither subject nor body text",
        ),
    ],
)
def test_malformed_input_names_file_and_line(
    tmp_path: Path, edits: dict[int, Any], line: int, problem: str
) -> None:
    raw = _broken(tmp_path, edits)
    with pytest.raises(FormatError) as caught:
        SemEval2016().parse(raw, {})
    assert (caught.value.path, caught.value.line) == (raw / DEV, line)
    assert problem in caught.value.problem
    assert str(caught.value).startswith(f"{raw / DEV}:{line}: ")


def test_thread_without_question(tmp_path: Path) -> None:
    raw = _broken(
        tmp_path,
        {
            4: lambda s: s.replace("<RelQuestion ", "<RelQ "),
            7: lambda s: s.replace("</RelQuestion>", "</RelQ>"),
        },
    )
    with pytest.raises(FormatError, match=r"-dev-subtaskA.xml:3: <Thread> without <RelQuestion>"):
        SemEval2016().parse(raw, {})


def test_options_are_checked(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError,
        match=r"protocol.semeval2017.options.with_2015: expected true or false, got 'yes'",
    ):
        SemEval2017().parse(tmp_path, {"with_2015": "yes"})
    with pytest.raises(
        ConfigError, match=r"protocol.semeval2016.options: unknown option\(s\) \['test'\]"
    ):
        SemEval2016().parse(tmp_path, {"test": "2017"})
    with pytest.raises(
        DownloadError,
        match=r"train-part1-subtaskA.xml: missing; run the download step for semeval2016 first",
    ):
        SemEval2016().parse(tmp_path, {})


@pytest.mark.parametrize("corruption", ["one byte flipped", "same size, other bytes"])
def test_a_corrupted_mirror_copy_is_refused(tmp_path: Path, corruption: str) -> None:
    [spec] = SemEval2016().raw_files({}, ["dev"])
    assert spec.name == DEV and spec.size is not None and spec.sha256 is not None
    if corruption == "one byte flipped":
        data = bytearray(_shared_dev().read_bytes())
        data[len(data) // 2] ^= 0x20
    else:
        data = bytearray(b"<" * spec.size)
    mirror = tmp_path / "mirror" / "semeval2016"
    mirror.mkdir(parents=True)
    (mirror / DEV).write_bytes(data)
    with pytest.raises(DownloadError) as error:
        fetch_dataset(
            SemEval2016(), tmp_path / "raw", str(tmp_path / "mirror"), files=[spec], progress=False
        )
    message = str(error.value)
    assert message.startswith(
        f"{DEV}: sha256 mismatch: expected {spec.sha256}, got {sha256_of(mirror / DEV)}"
    )
    assert str(mirror / DEV) in message
    assert not (tmp_path / "raw" / DEV).exists()


@pytest.mark.mirror
def test_declared_checksums_match_the_real_files() -> None:
    folder = _shared_dev().parent
    declared = [f for f in SemEval2016.files if f.sha256 is not None]
    assert sorted(f.name for f in declared) == sorted(
        [DEV, TRAIN_2016[1], TRAIN_2015[0], TRAIN_2015[1]]
    )
    for spec in declared:
        path = folder / spec.name
        assert (path.stat().st_size, sha256_of(path)) == (spec.size, spec.sha256), spec.name


SHARED_DEV = (
    Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "semeval2016" / DEV
)


def _shared_dev() -> Path:
    configured = os.environ.get("RERANKLAB_MIRROR", "").strip()
    path = Path(configured) / "semeval2016" / DEV if configured else SHARED_DEV
    if not path.is_file():
        pytest.skip(f"no SemEval-2016 dev file in the mirror ({path}): set RERANKLAB_MIRROR")
    return path


def test_official_scoring_on_the_handmade_run() -> None:
    # Three questions, ten comments or fewer; Good at the ranks marked G (1-based):
    # qa: G at 2 and 5 -> AP@10 = (1/2 + 2/5) / 2 = 0.45, RR = 1/2;
    # qb: G at 12 only (outside the top 10) -> AP@10 = 0, RR@10 = 0 (trec_eval's AP: 1/12);
    # qc: no Good comment -> 0 for both, and the question still counts.
    qrels = {
        "qa": {f"a{i:02d}": int(i in (2, 5)) for i in range(1, 11)},
        "qb": {f"b{i:02d}": int(i == 12) for i in range(1, 13)},
        "qc": {f"c{i:02d}": 0 for i in range(1, 5)},
    }
    run = {q: {pid: float(100 - int(pid[1:])) for pid in judged} for q, judged in qrels.items()}
    official = SemEval2016().scoring()
    result = evaluate_run(run, qrels, list(qrels), scoring=official)
    assert result["n_queries"] == 3 and result["dropped"] == {}
    assert result["per_query"]["qa"]["MAP"] == pytest.approx(0.45)
    assert result["per_query"]["qb"]["MAP"] == 0.0 and result["per_query"]["qb"]["MRR"] == 0.0
    assert result["aggregate"]["MAP"] == pytest.approx(0.45 / 3)
    assert result["aggregate"]["MRR"] == pytest.approx(0.5 / 3)
    with_good = evaluate_run(run, qrels, list(qrels), scoring=SemEval2016().scoring("with-good"))
    assert with_good["dropped"] == {"no_relevant": 1}
    assert with_good["aggregate"]["MAP"] == pytest.approx((0.45 + 1 / 12) / 2)


@pytest.mark.mirror
def test_chronological_baseline_scores_the_official_figure_on_the_2016_dev_set() -> None:
    # The scorer's IR baseline (comments in thread order) on SemEval-2016 dev: MAP 53.84.
    threads = list(read_threads(_shared_dev()))
    qrels = {t.qid: {c.cid: int(c.label == "Good") for c in t.comments} for t in threads}
    run = {
        t.qid: {c.cid: float(len(t.comments) - i) for i, c in enumerate(t.comments)}
        for t in threads
    }
    official = evaluate_run(run, qrels, list(qrels), scoring=SemEval2016().scoring("official"))
    assert (official["n_queries"], round(official["aggregate"]["MAP"], 4)) == (244, 0.5384)
    with_good = evaluate_run(run, qrels, list(qrels), scoring=SemEval2016().scoring("with-good"))
    assert (
        with_good["n_queries"],
        with_good["dropped"],
        round(with_good["aggregate"]["MAP"], 4),
    ) == (211, {"no_relevant": 33}, 0.6227)
