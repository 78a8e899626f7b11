"""`reranklab score`: run formats, id numberings, split-only downloads, and the official figures.

The tests that read the real files of the mirror are marked ``mirror`` and skipped without it;
each runs the CLI from a temporary folder with a temporary cache (no workflow, no params.yaml).
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from reranklab.cli import main
from reranklab.data import get_dataset
from reranklab.data._text_files import read_trec_qrels
from reranklab.data.wikiqa import ref_numbering
from reranklab.errors import FormatError
from reranklab.io import read_qrels
from reranklab.score import canonical_ids, read_any_run

REPO = Path(__file__).resolve().parents[1]


def _mirror() -> Path | None:
    configured = os.environ.get("RERANKLAB_MIRROR", "").strip()
    root = Path(configured) if configured else REPO.parent / "shared" / "datasets"
    return root if (root / "wikiqa" / "WikiQA-test.tsv").is_file() else None


MIRROR = _mirror()


def mirror_test(func: Any) -> Any:
    """Mark a test that reads the real files of the mirror; skip it where there is none."""
    skip = pytest.mark.skipif(
        MIRROR is None,
        reason="no dataset mirror: set RERANKLAB_MIRROR (or place it at ../shared/datasets)",
    )
    return pytest.mark.mirror(skip(func))


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh working folder with no params.yaml and no cache set in the environment."""
    folder = tmp_path / "anywhere"
    folder.mkdir()
    monkeypatch.chdir(folder)
    monkeypatch.delenv("RERANKLAB_CACHE", raising=False)
    return folder


def score(
    capsys: pytest.CaptureFixture[str],
    dataset: str,
    split: str,
    *runs: str | Path,
    protocol: str | None = None,
    mirror: Path | None = None,
    cache: Path | None = None,
) -> Any:
    """Run `reranklab score --json` in-process; returns the parsed JSON."""
    argv = ["score", "--json", "--dataset", dataset, "--split", split, *map(str, runs)]
    for flag, value in (("--protocol", protocol), ("--mirror", mirror), ("--cache", cache)):
        if value is not None:
            argv += [flag, str(value)]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def score_error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code = main(["score", *args])
    _, err = capsys.readouterr()
    assert code == 2
    return err


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# -- run formats (no mirror) --------------------------------------------------------------------


def test_formats_are_told_apart_by_their_columns(tmp_path: Path) -> None:
    trec = write_lines(tmp_path / "a.run", ["q1 Q0 d1 1 2.5 tag", "q1 Q0 d2 2 -1e-3 tag"])
    semeval = write_lines(
        tmp_path / "b.pred", ["Q1_R1\tQ1_R1_C1\t0\t0.75\ttrue", "Q1_R1\tQ1_R1_C2\t0\t0.5\tfalse"]
    )
    assert read_any_run(trec) == ({"q1": {"d1": 2.5, "d2": -0.001}}, "trec")
    assert read_any_run(semeval) == ({"Q1_R1": {"Q1_R1_C1": 0.75, "Q1_R1_C2": 0.5}}, "semeval")


@pytest.mark.parametrize(
    ("lines", "line", "problem"),
    [
        (
            ["q1 Q0 d1 1 2.5 tag", "q1 d2 0.5"],
            2,
            "expected a TREC run line .* or a SemEval prediction line .* got 3 field",
        ),
        (["q1 d1 0 0.5 maybe"], 1, "got 5 field"),
        (["q1 Q0 d1 1 2.5 tag", "q1 d2 0 0.5 true"], 2, "a semeval line in a trec file"),
        (["q1 Q0 d1 1 high tag"], 1, "score 'high' is not a number"),
        (["q1 Q0 d1 1 nan tag"], 1, "not a finite number"),
        (
            ["q1 Q0 d1 1 2 tag", "q1 Q0 d1 2 1 tag"],
            2,
            "lists passage d1 a second time",
        ),
    ],
)
def test_malformed_runs_name_file_and_line(
    tmp_path: Path, lines: list[str], line: int, problem: str
) -> None:
    path = write_lines(tmp_path / "bad.run", lines)
    with pytest.raises(FormatError, match=f"bad.run:{line}: .*{problem}") as info:
        read_any_run(path)
    assert info.value.line == line


def test_aliases_map_a_run_written_wholly_in_them() -> None:
    aliases = {"1": ("Q0", {"0": "D0-0", "1": "D0-1"}), "2": ("Q5", {"0": "D4-0"})}
    run = {"1": {"1": 0.5, "0": 0.2}, "2": {"0": 1.0}}
    assert canonical_ids(run, "r", ["Q0", "Q5"], aliases, "wikiqa test") == (
        {"Q0": {"D0-1": 0.5, "D0-0": 0.2}, "Q5": {"D4-0": 1.0}},
        "aliases",
        0,
    )
    # Canonical ids pass through; queries of other splits are left out and counted.
    assert canonical_ids(
        {"Q0": {"D0-0": 1.0}, "Q99": {"D9-0": 1.0}}, "r", ["Q0", "Q5"], aliases, "w"
    )[1:] == ("canonical", 1)
    with pytest.raises(
        FormatError,
        match=r"query ids 3 fit neither the ids of wikiqa test \(e.g. Q0, Q5\) nor its .ref numbering \(1..2",
    ):
        canonical_ids({"1": {"0": 1.0}, "3": {"0": 1.0}}, "r", ["Q0", "Q5"], aliases, "wikiqa test")
    with pytest.raises(
        FormatError, match=r"the run mixes .ref numbers \(1\) with other ids \(Q0\)"
    ):
        canonical_ids(
            {"Q0": {"D0-0": 1.0}, "1": {"0": 1.0}}, "r", ["Q0", "Q5"], aliases, "wikiqa test"
        )
    with pytest.raises(
        FormatError, match=r"question 2 \(Q5 of wikiqa test\) has sentences 0..0, not 7"
    ):
        canonical_ids({"2": {"7": 1.0}}, "r", ["Q0", "Q5"], aliases, "wikiqa test")
    with pytest.raises(
        FormatError, match="none of the run's 1 queries \\(x\\) is a query of trecqa test"
    ):
        canonical_ids({"x": {"d": 1.0}}, "r", ["32.1"], None, "trecqa test")


# -- SemEval: the official scorer's AP@10 on a hand-made run (fixture mirror) -------------------


def _thread(qid: str, labels: list[str]) -> str:
    comments = "".join(
        f'<RelComment RELC_ID="{qid}_C{i}" RELC_RELEVANCE2RELQ="{label}"><RelCText>comment {i}</RelCText></RelComment>\n'
        for i, label in enumerate(labels, start=1)
    )
    return (
        f'<Thread THREAD_SEQUENCE="{qid}"><RelQuestion RELQ_ID="{qid}"><RelQSubject>question {qid}</RelQSubject>'
        f"<RelQBody>body</RelQBody></RelQuestion>\n{comments}</Thread>\n"
    )


@pytest.fixture
def semeval_mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A mirror whose SemEval-2016 dev file holds four hand-made threads (labels by position)."""
    # The hand-made file cannot match the real file's declared size and sha256: drop them for
    # the registered instance only, for this test.
    dataset = get_dataset("semeval2016")
    unchecked = tuple(dataclasses.replace(f, size=None, sha256=None) for f in dataset.files)
    monkeypatch.setattr(dataset, "files", unchecked)
    good, pot, bad = "Good", "PotentiallyUseful", "Bad"
    threads = [
        _thread(
            "Q1_R1", [bad, good, pot, bad, good, bad, bad, bad, bad, bad, good, bad]
        ),  # Good: C2, C5, C11
        _thread("Q2_R1", [bad] * 10 + [good]),  # Good: C11 only
        _thread("Q3_R1", [good, bad, pot, good]),  # Good: C1, C4
        _thread("Q4_R1", [bad, pot]),  # no Good comment, and not in the run
    ]
    folder = tmp_path / "mirror" / "semeval2016"
    folder.mkdir(parents=True)
    (folder / "SemEval2016-Task3-CQA-QL-dev-subtaskA.xml").write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<xml>\n' + "".join(threads) + "</xml>\n",
        encoding="utf-8",
    )
    return tmp_path / "mirror"


def test_semeval_hand_made_run_scores_as_the_official_scorer(
    capsys: pytest.CaptureFixture[str], cwd: Path, semeval_mirror: Path
) -> None:
    # qid aid rank score label; the scorer ranks by score (here: Q1 and Q2 in thread order,
    # Q3 as C4, C2, C1, C3) and ignores the rank and label columns.
    lines = [f"Q1_R1 Q1_R1_C{i} 0 {13 - i} true" for i in range(1, 13)]
    lines += [f"Q2_R1 Q2_R1_C{i} 0 {12 - i} false" for i in range(1, 12)]
    lines += [f"Q3_R1 Q3_R1_C{c} 0 {s} true" for c, s in ((1, 2.0), (2, 3.0), (3, 1.0), (4, 4.0))]
    run = write_lines(cwd / "hand.pred", lines)

    official = score(capsys, "semeval2016", "dev", str(run), mirror=semeval_mirror, cache=cwd / "c")
    # By hand, SemEval AP over the top 10 divides by the Good comments found there:
    # Q1: Good at ranks 2, 5 (and 11, cut): (1/2 + 2/5) / 2 = 0.45; RR 1/2.
    # Q2: its only Good comment is at rank 11: AP 0, RR 0.
    # Q3: Good at ranks 1 and 3: (1/1 + 2/3) / 2 = 5/6; RR 1.
    # Q4: no Good comment and absent from the run: counts, scores 0.
    assert official["queries"] == 4 and official["dropped"] == {} and official["missing"] == 1
    assert official["measures"]["MAP"] == pytest.approx((0.45 + 0 + 5 / 6 + 0) / 4, abs=1e-12)
    assert official["measures"]["MRR"] == pytest.approx((0.5 + 0 + 1 + 0) / 4, abs=1e-12)
    assert official["measures"]["P@1"] == pytest.approx(1 / 4)
    assert round(official["measures"]["MAP"], 4) == 0.3208

    with_good = score(
        capsys,
        "semeval2016",
        "dev",
        str(run),
        protocol="with-good",
        mirror=semeval_mirror,
        cache=cwd / "c",
    )
    # trec_eval over whole rankings, questions with a Good comment only (Q4 dropped):
    # Q1: (1/2 + 2/5 + 3/11) / 3; Q2: 1/11; Q3: 5/6.
    assert with_good["queries"] == 3 and with_good["dropped"] == {"no_relevant": 1}
    assert with_good["measures"]["MAP"] == pytest.approx(
        ((1 / 2 + 2 / 5 + 3 / 11) / 3 + 1 / 11 + 5 / 6) / 3, abs=1e-12
    )
    assert with_good["measures"]["MRR"] == pytest.approx((1 / 2 + 1 / 11 + 1) / 3, abs=1e-12)


# -- the real files of the mirror ---------------------------------------------------------------


@mirror_test
@pytest.mark.parametrize("protocol, expected", [("official", 0.5384), ("with-good", 0.6227)])
def test_semeval2016_dev_chronological_baseline(
    capsys: pytest.CaptureFixture[str], cwd: Path, protocol: str, expected: float
) -> None:
    from reranklab.data.semeval import DEV, read_threads

    # The scorer's IR baseline: each thread's comments in thread order, decreasing scores.
    lines = []
    for thread in read_threads(MIRROR / "semeval2016" / DEV):
        n = len(thread.comments)
        lines += [
            f"{thread.qid} {c.cid} {rank} {float(n - rank)} true"
            for rank, c in enumerate(thread.comments)
        ]
    run = write_lines(cwd / "chronological.pred", lines)

    result = score(
        capsys, "semeval2016", "dev", str(run), protocol=protocol, mirror=MIRROR, cache=cwd / "c"
    )
    assert round(result["measures"]["MAP"], 4) == expected
    assert result["queries"] == (244 if protocol == "official" else 211)
    assert result["format"] == "semeval" and result["ties"] == {"queries": 0, "passages": 0}
    # Only the dev file was fetched into the cache.
    assert sorted(os.listdir(cwd / "c" / "semeval2016" / "raw")) == [
        "SemEval2016-Task3-CQA-QL-dev-subtaskA.xml",
        "manifest.json",
    ]


def _wikiqa_test_rows() -> list[tuple[str, str]]:
    with open(MIRROR / "wikiqa" / "WikiQA-test.tsv", encoding="utf-8", newline="") as handle:
        return [
            (row["QuestionID"], row["SentenceID"])
            for row in csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        ]


@mirror_test
@pytest.mark.parametrize("protocol, counted", [("filtered", 237), ("with-correct", 243)])
def test_wikiqa_ref_numbering_and_canonical_ids_score_the_same(
    capsys: pytest.CaptureFixture[str], cwd: Path, protocol: str, counted: int
) -> None:
    # A hand-made run with many ties, written twice: in the .ref/.rank numbering of the release
    # (question = 1-based position in the file, sentence = 0-based position in the question)
    # and in QuestionID / SentenceID.
    numbers: dict[str, int] = {}
    ref_lines, canonical_lines = [], []
    for qid, sid in _wikiqa_test_rows():
        if qid not in numbers:
            numbers[qid] = len(numbers) + 1
            index = 0
        question = numbers[qid]
        value = float((index * 37 + question) % 4)
        ref_lines.append(f"{question} 0 {index} 0 {value} 0")
        canonical_lines.append(f"{qid} Q0 {sid} 0 {value} hand")
        index += 1
    ref_run = write_lines(cwd / "WikiQA.hand.test.rank", ref_lines)
    canonical_run = write_lines(cwd / "hand.run", canonical_lines)

    both = score(
        capsys,
        "wikiqa",
        "test",
        str(ref_run),
        str(canonical_run),
        protocol=protocol,
        mirror=MIRROR,
        cache=cwd / "c",
    )
    by_ref, by_id = both
    assert by_ref["ids"] == "aliases" and by_id["ids"] == "canonical"
    assert by_ref["measures"] == by_id["measures"] and by_ref["ties"] == by_id["ties"]
    assert by_ref["queries"] == by_id["queries"] == counted
    assert by_ref["ties"]["queries"] > 0
    assert sorted(os.listdir(cwd / "c" / "wikiqa" / "raw")) == ["WikiQA-test.tsv", "manifest.json"]


@mirror_test
@pytest.mark.parametrize("split, counted", [("dev", 122), ("test", 237)])
def test_wikiqa_filtered_ref_is_the_filtered_scoring(split: str, counted: int) -> None:
    folder = MIRROR / "wikiqa"
    dataset = get_dataset("wikiqa")
    qids, qrels = dataset.split_judgements(folder, split)
    numbering = ref_numbering(folder / f"WikiQA-{split}.tsv")

    def mapped(path: Path) -> dict[str, dict[str, int]]:
        return {
            numbering[q][0]: {numbering[q][1][s]: g for s, g in judged.items()}
            for q, judged in read_qrels(path).items()
        }

    assert mapped(folder / f"WikiQA-{split}.ref") == qrels  # every question, every sentence
    kept, _ = dataset.scoring("filtered").counted(qrels, qids)
    assert len(kept) == counted
    assert mapped(folder / f"WikiQA-{split}-filtered.ref") == {qid: qrels[qid] for qid in kept}


@mirror_test
@pytest.mark.parametrize(
    "protocol, counted, dropped",
    [
        ("clean", 68, {"no_relevant": 6, "not_judged": 5, "only_relevant": 21}),
        ("raw", 95, {"not_judged": 5}),
    ],
)
def test_trecqa_test_counts(
    capsys: pytest.CaptureFixture[str],
    cwd: Path,
    protocol: str,
    counted: int,
    dropped: dict[str, int],
) -> None:
    _, qrels = get_dataset("trecqa").split_judgements(MIRROR / "trecqa", "test")
    lines = [
        f"{qid} Q0 {pid} 0 {len(pid) % 3} t" for qid, judged in qrels.items() for pid in judged
    ]
    run = write_lines(cwd / "trecqa.run", lines)

    result = score(
        capsys, "trecqa", "test", str(run), protocol=protocol, mirror=MIRROR, cache=cwd / "c"
    )
    assert result["queries"] == counted and result["dropped"] == dropped
    assert set(result["measures"]) == {"P@1", "MAP", "MRR", "MRR@10", "nDCG@10"}
    # The test split needs the test file only (no TRAIN-ALL, which the mirror lacks).
    assert sorted(os.listdir(cwd / "c" / "trecqa" / "raw")) == [
        "manifest.json",
        "test-less-than-40.manual-edit.xml",
    ]


@mirror_test
@pytest.mark.parametrize(
    "name, folder, qrels_file, counted, files",
    [
        (
            "trec-dl-2019",
            "trec_dl_2019",
            "qrels.dl19-passage.txt",
            43,
            ["manifest.json", "qrels.dl19-passage.txt", "topics.dl19-passage.txt"],
        ),
        (
            "antique",
            "antique",
            "antique-test.qrel",
            200,
            ["antique-test-queries.txt", "antique-test.qrel", "manifest.json"],
        ),
    ],
)
def test_test_split_needs_no_collection(
    capsys: pytest.CaptureFixture[str],
    cwd: Path,
    name: str,
    folder: str,
    qrels_file: str,
    counted: int,
    files: list[str],
) -> None:
    # An ideal run (the judged passages by grade); the mirror has no collection, and scoring
    # the test split must not ask for one.
    qrels = read_trec_qrels(MIRROR / folder / qrels_file, grades=(0, 1, 2, 3, 4)).qrels
    run = write_lines(
        cwd / "ideal.run",
        [f"{q} Q0 {p} 0 {g} t" for q, judged in qrels.items() for p, g in judged.items()],
    )
    result = score(capsys, name, "test", str(run), mirror=MIRROR, cache=cwd / "c")
    assert result["queries"] == counted and result["missing"] == 0
    assert result["measures"]["nDCG@10"] == pytest.approx(1.0)
    assert sorted(os.listdir(cwd / "c" / name / "raw")) == files


@mirror_test
def test_json_shape_from_any_folder(tmp_path: Path) -> None:
    # The installed command, from a folder with no params.yaml, the mirror and cache from the env.
    run = write_lines(tmp_path / "one.run", ["Q0 Q0 D0-0 1 0.5 x", "Q0 Q0 D0-1 2 0.25 x"])
    env = {
        **os.environ,
        "RERANKLAB_MIRROR": str(MIRROR),
        "RERANKLAB_CACHE": str(tmp_path / "cache"),
    }
    command = [
        str(Path(sys.executable).parent / "reranklab"),
        "score",
        "--dataset",
        "wikiqa",
        "--split",
        "test",
        "--json",
    ]
    single = subprocess.run(
        [*command, str(run)], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    )
    result = json.loads(single.stdout)
    assert {"run", "queries", "dropped", "measures", "ties", "scoring"} <= set(result)
    assert (
        result["run"] == str(run) and result["scoring"] == "filtered" and result["queries"] == 237
    )
    assert list(result["measures"]) == ["P@1", "MAP", "MRR", "MRR@10", "nDCG@10"]
    assert result["dropped"] == {"no_relevant": 390, "only_relevant": 6}
    assert (tmp_path / "cache" / "wikiqa" / "raw" / "WikiQA-test.tsv").is_file()

    several = subprocess.run(
        [*command, str(run), str(run)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(several.stdout) == [result, result]

    text = subprocess.run(
        [*command[:-1], str(run)], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    ).stdout
    assert (
        "queries counted  237" in text
        and "dropped          390: no passage graded" in text
        and "MAP" in text
    )


def test_errors_are_clear(capsys: pytest.CaptureFixture[str], cwd: Path) -> None:
    run = write_lines(cwd / "r.run", ["q1 Q0 d1 1 2.5 tag", "q1 Q0 d2 1 tag"])
    assert "unknown dataset 'nope'" in score_error(
        capsys, "--dataset", "nope", "--split", "test", str(run)
    )
    assert "wikiqa has no split 'valid' (its splits: train, dev, test, all)" in score_error(
        capsys, "--dataset", "wikiqa", "--split", "valid", str(run)
    )
    assert (
        "--protocol 'strict': wikiqa has no such scoring (its scorings: filtered, with-correct)"
        in score_error(
            capsys, "--dataset", "wikiqa", "--split", "test", "--protocol", "strict", str(run)
        )
    )
    assert f"{run}:2: expected a TREC run line" in score_error(
        capsys, "--dataset", "wikiqa", "--split", "test", "--cache", str(cwd / "c"), str(run)
    )
    assert not (cwd / "c").exists()  # a run that cannot be scored fetches nothing
    latin1 = cwd / "latin1.run"
    latin1.write_bytes("q1 Q0 caf\xe9 1 2.5 tag\n".encode("latin-1"))
    err = score_error(capsys, "--dataset", "wikiqa", "--split", "test", str(latin1))
    # One line naming the file, its line and the byte; no UnicodeDecodeError traceback.
    assert err.count("\n") == 1 and f"{latin1}:1: not valid UTF-8 (byte 0xe9 at column 10" in err


@mirror_test
def test_trecqa_download_fetches_only_what_the_options_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = tmp_path / "raw"
    code = main(
        [
            "download",
            "--dataset",
            "trecqa",
            "--out-dir",
            str(raw),
            "--mirror",
            str(MIRROR),
            "--spec",
            json.dumps({"options": {"train": "train"}}),
        ]
    )
    assert code == 0, capsys.readouterr().err
    # TRAIN, not TRAIN-ALL (which the mirror lacks), and nothing left behind.
    assert sorted(os.listdir(raw)) == [
        "dev-less-than-40.manual-edit.xml",
        "manifest.json",
        "test-less-than-40.manual-edit.xml",
        "train-less-than-40.manual-edit.xml",
    ]
    manifest = json.loads((raw / "manifest.json").read_text())
    assert [f["name"] for f in manifest["files"]] == [
        "train-less-than-40.manual-edit.xml",
        "dev-less-than-40.manual-edit.xml",
        "test-less-than-40.manual-edit.xml",
    ]
    stats = get_dataset("trecqa").prepare(raw, tmp_path / "prepared", {"train": "train"})
    assert stats["split"] == {"train": 94, "dev": 82, "test": 100}


def test_split_files_of_each_dataset() -> None:
    names = {
        ("wikiqa", "dev"): ["WikiQA-dev.tsv"],
        ("trecqa", "train"): ["train2393.cleanup.xml.gz"],
        ("trecqa", "all"): [
            "train2393.cleanup.xml.gz",
            "dev-less-than-40.manual-edit.xml",
            "test-less-than-40.manual-edit.xml",
        ],
        ("semeval2017", "test"): ["SemEval2017-task3-English-test-subtaskA.xml"],
        ("antique", "dev"): ["antique-train-queries.txt", "antique-train.qrel"],
        ("trec-dl-2019", "test"): ["topics.dl19-passage.txt", "qrels.dl19-passage.txt"],
        ("msmarco-passage", "test"): ["queries.dev.small.tsv", "qrels.dev.small.tsv"],
    }
    for (name, split), expected in names.items():
        assert [f.name for f in get_dataset(name).raw_files({}, [split])] == expected, (name, split)
    semeval = get_dataset("semeval2016")
    assert len(semeval.raw_files({"with_2015": False}, ["train"])) == 2
    assert len(semeval.raw_files({}, ["train"])) == 5
    assert [f.name for f in get_dataset("trecqa").raw_files({"train": "train"})] == [
        "train-less-than-40.manual-edit.xml",
        "dev-less-than-40.manual-edit.xml",
        "test-less-than-40.manual-edit.xml",
    ]
    assert get_dataset("nfl6").raw_files({}) == get_dataset("nfl6").files


def test_official_tie_rules_reproduce_the_tools_order_and_hash_stays_the_default(
    tmp_path: Path,
) -> None:
    # One SemEval question, all ten comments tied: the scorer keeps file order (stable sort),
    # trec_eval orders by id descending, reranklab by the hash unless asked.
    from reranklab.evaluation.ties import untie

    run = {"q": {f"c{i}": 0.0 for i in range(10)}}
    assert list(untie(run, "file")["q"]) == [f"c{i}" for i in range(10)]
    trec = untie(run, "trec_eval")["q"]
    assert sorted(trec, key=trec.get, reverse=True) == [f"c{i}" for i in range(9, -1, -1)]
    # The order pytrec_eval itself gives tied documents is the one untie(trec_eval) writes.
    import pytrec_eval

    qrels = {"q": {"c9": 1, "c0": 0}}
    raw = pytrec_eval.RelevanceEvaluator(qrels, {"P_1"}).evaluate(run)["q"]["P_1"]
    assert (
        raw
        == 1.0
        == pytrec_eval.RelevanceEvaluator(qrels, {"P_1"}).evaluate(untie(run, "trec_eval"))["q"][
            "P_1"
        ]
    )
    with pytest.raises(ValueError, match="untie takes trec_eval or file"):
        untie(run, "hash")


@mirror_test
def test_wikiqa_tied_run_with_official_ties_equals_trec_eval_on_the_filtered_ref(
    capsys: pytest.CaptureFixture[str], cwd: Path
) -> None:
    # A count-like baseline full of ties, in the release's .rank numbering: --ties official
    # gives exactly what trec_eval (pytrec_eval, same C code) gives with WikiQA-test-filtered.ref;
    # the default (hash) differs and says how many ties it met.
    import pytrec_eval

    numbers: dict[str, int] = {}
    lines, run = [], {}
    for qid, _sid in _wikiqa_test_rows():
        if qid not in numbers:
            numbers[qid] = len(numbers) + 1
            index = 0
        question = numbers[qid]
        value = float((index * 7 + question) % 3)
        lines.append(f"{question} 0 {index} 0 {value} 0")
        run.setdefault(str(question), {})[str(index)] = value
        index += 1
    path = write_lines(cwd / "WikiQA.count.test.rank", lines)
    qrels = read_qrels(MIRROR / "wikiqa" / "WikiQA-test-filtered.ref")
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"map", "recip_rank"}).evaluate(run)
    official = {
        m: sum(v[m] for v in per_query.values()) / len(per_query) for m in ("map", "recip_rank")
    }
    assert len(per_query) == 237

    argv = ["score", "--json", "--dataset", "wikiqa", "--split", "test", "--mirror", str(MIRROR)]
    assert main([*argv, "--cache", str(cwd / "c"), "--ties", "official", str(path)]) == 0
    emulated = json.loads(capsys.readouterr()[0])
    assert emulated["tie_rule"] == "trec_eval" and emulated["queries"] == 237
    assert emulated["measures"]["MAP"] == pytest.approx(official["map"], abs=1e-12)
    assert emulated["measures"]["MRR"] == pytest.approx(official["recip_rank"], abs=1e-12)
    assert main([*argv, "--cache", str(cwd / "c"), str(path)]) == 0
    default = json.loads(capsys.readouterr()[0])
    assert (
        default["tie_rule"] == "hash"
        and default["ties"] == emulated["ties"]
        and default["ties"]["queries"] > 200
    )
    assert default["measures"]["MAP"] != pytest.approx(official["map"], abs=1e-4)


def test_queries_from_run_works_with_a_dataset_as_its_hint_says(tmp_path: Path, capsys) -> None:
    from reranklab.cli import main
    from reranklab.score import score_runs

    run_file = tmp_path / "partial.run"
    # Two of the sample's questions, each with one passage: the others are not in the run.
    run_file.write_text("S001 Q0 P0001 1 2.0 mine\nS002 Q0 P0002 1 1.0 mine\n")
    cache = tmp_path / "cache"
    (every,) = score_runs("sample", "all", [run_file], cache=cache)
    (partial,) = score_runs("sample", "all", [run_file], cache=cache, queries_from_run=True)
    assert every["missing"] > 0 and every["queries"] > 2
    assert partial["queries"] == 2 and partial["missing"] == 0
    assert partial["split"] == "all, run queries"
    main(["score", str(run_file), "--dataset", "sample", "--split", "all", "--cache", str(cache)])
    assert "--queries-from-run counts only the run's queries" in capsys.readouterr().out
    code = main(
        [
            "score",
            str(run_file),
            "--dataset",
            "sample",
            "--split",
            "all",
            "--cache",
            str(cache),
            "--queries-from-run",
            "--json",
        ]
    )
    assert code in (0, None) and json.loads(capsys.readouterr().out)["queries"] == 2


def test_a_collection_of_ones_own_is_scored_by_name_from_its_config(tmp_path, monkeypatch, capsys):
    from reranklab.cli import main

    repo = Path(__file__).resolve().parents[1]
    monkeypatch.chdir(repo)  # config/own-data.yaml names its files relative to the checkout
    run_file = tmp_path / "mine.run"
    run_file.write_text("q07 Q0 p01 1 2.0 mine\n")
    args = ["score", str(run_file), "--dataset", "faq", "--split", "test", "--json"]
    args += ["--cache", str(tmp_path / "cache")]
    assert main([*args, "--configfile", "config/own-data.yaml"]) in (0, None)
    result = json.loads(capsys.readouterr().out)
    assert result["dataset"] == "faq" and result["queries"] == 10
    assert main([*args, "--configfile", "params.yaml"]) == 2
    assert (
        "nor a local.faq entry of the configuration files (params.yaml)" in capsys.readouterr().err
    )
