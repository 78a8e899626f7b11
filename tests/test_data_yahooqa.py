"""YahooQA: a fixture in the exact format of the release (``tests/fixtures/yahooqa/env.pkl``, a
Python 2 pickle written by ``make_env_pkl.py`` beside it), the safe unpickler that loads it, and
pickles crafted to run code, which must be refused without running anything."""

from __future__ import annotations

import json
import os
import pickle
import pickletools
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from reranklab import cli
from reranklab.data import get_dataset
from reranklab.data.base import RawFile
from reranklab.data.download import fetch_dataset, sha256_of
from reranklab.data.yahooqa import URL, YahooQA, build, pool_order
from reranklab.errors import ConfigError, DownloadError, FormatError
from reranklab.io import rank_order, read_corpus, read_json, read_qrels, read_queries, read_run
from reranklab.io.safe_pickle import load_pickle
from tests.helpers_scripts import load_script

FIXTURES = Path(__file__).parent / "fixtures"
FIXTURE = FIXTURES / "yahooqa" / "env.pkl"


MAKE = load_script(FIXTURES / "yahooqa" / "make_env_pkl.py", "make_env_pkl")


@pytest.fixture
def raw(tmp_path: Path) -> Path:
    folder = tmp_path / "raw"
    folder.mkdir()
    return folder


def _write(raw: Path, data: bytes) -> Path:
    path = raw / "env.pkl"
    path.write_bytes(data)
    return path


# -- the dataset as data ---------------------------------------------------------------------------


def test_registered_with_the_bertsel_protocol() -> None:
    dataset = get_dataset("yahooqa")
    assert isinstance(dataset, YahooQA)
    expected = {
        "first_stage": "pool",
        "depth": None,
        "inject_relevant": False,
        "split": "predefined",
        "folds": 5,
        "negatives_per_positive": "all",
        "relevance_threshold": 1,
        "positives": "judged",
        "scored": "test",
        "metrics": ["MAP", "MRR", "P@1"],
        "options": {},
    }
    protocol = dataset.protocol.as_dict()
    assert {key: protocol[key] for key in expected} == expected
    # One file, no published size or checksum; the URL is the file in Tay et al.'s repository.
    assert dataset.files == (RawFile(name="env.pkl", url=URL),)
    assert URL == "https://raw.githubusercontent.com/vanzytay/YahooQA_Splits/master/data/env.pkl"
    assert dataset.counts["pairs"] == {"train": "~253K", "dev": "~31.7K", "test": "~31.7K"}
    assert dataset.citation.startswith(
        "Yi Tay, Minh C. Phan, Luu Anh Tuan and Siu Cheung Hui. 2017."
    )


def test_fixture_is_a_python2_pickle_written_by_its_script() -> None:
    data = FIXTURE.read_bytes()
    assert data == MAKE.dumps_py2(MAKE.build_data(), protocol=2)
    opcodes = {op.name for op, _, _ in pickletools.genops(data)}
    # Python 2 str (bytes) and its memo; no unicode opcode, no global.
    assert opcodes == {
        "PROTO",
        "EMPTY_DICT",
        "EMPTY_LIST",
        "BINPUT",
        "BINGET",
        "MARK",
        "SHORT_BINSTRING",
        "BININT1",
        "APPENDS",
        "SETITEMS",
        "STOP",
    }


def test_fetched_from_the_fixture_mirror(tmp_path: Path) -> None:
    manifest = fetch_dataset(YahooQA(), tmp_path / "raw", str(FIXTURES), progress=False)
    assert manifest == {
        "dataset": "yahooqa",
        "files": [
            {
                "name": "env.pkl",
                "size": FIXTURE.stat().st_size,
                "sha256": sha256_of(FIXTURE),
                "source": "mirror:yahooqa/env.pkl",
            }
        ],
    }


# -- parsing -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("yahooqa")
    fetch_dataset(YahooQA(), base / "raw", str(FIXTURES), progress=False)
    stats = YahooQA().prepare(base / "raw", base / "out")
    return {"out": base / "out", "stats": stats}


def test_exact_counts(prepared: dict[str, Any]) -> None:
    assert prepared["stats"] == {
        "passages": 39,
        "queries": 8,
        "judged_queries": 8,
        "judgements": 39,
        "split": {"train": 4, "dev": 2, "test": 2},
        "pool_pairs": 39,
        "pairs": {"train": 21, "dev": 10, "test": 8},
        "positives": {"train": 4, "dev": 2, "test": 2},
        "questions_without_positive": {"train": 0, "dev": 0, "test": 0},
        "questions_with_several_positives": {"train": 0, "dev": 0, "test": 0},
        # train-q3 lists one negative twice
        "duplicate_candidates": {"train": 1, "dev": 0, "test": 0},
        "questions_in_several_splits": 0,
        "texts_not_utf8": 0,
        "ignored_keys": [],
    }
    assert read_json(prepared["out"] / "stats.json") == prepared["stats"]


def test_first_and_last_records(prepared: dict[str, Any]) -> None:
    out = prepared["out"]
    queries = list(read_queries(out / "queries.tsv").items())
    assert (queries[0], queries[4], queries[-1]) == (
        ("train-q1", "how do i treat a small burn at home ?"),
        # dev before test, though the file has test first
        ("dev-q1", "why is the moon so big tonight ?"),
        ("test-q2", "how can i fall asleep faster ?"),
    )
    # UTF-8 bytes of a Python 2 str
    assert dict(queries)["test-q1"] == "what is a caf\u00e9 au lait ?"

    corpus = read_corpus(out / "corpus.parquet")
    assert len(corpus) == 39
    assert next(iter(corpus.items())) == (
        "train-q1-a1",
        "Read the lease twice and photograph every room before moving in.",
    )
    assert list(corpus.items())[-1] == (
        "test-q2-a3",
        "The moon looks bigger near the horizon because of an illusion.",
    )
    assert (
        corpus["test-q1-a5"]
        == "A caf\u00e9 au lait is coffee with hot milk, na\u00efve as it sounds."
    )

    qrels = read_qrels(out / "qrels.txt")
    assert qrels["train-q1"] == {
        "train-q1-a1": 0,
        "train-q1-a2": 0,
        "train-q1-a3": 0,
        "train-q1-a4": 0,
        "train-q1-a5": 1,
    }
    assert qrels["train-q3"] == {f"train-q3-a{k}": int(k == 1) for k in range(1, 7)}
    lines = [line.split() for line in (out / "pool.run").read_text().splitlines()]
    first, last = lines[0], lines[-1]
    assert (len(lines), first[:4], float(first[4]), last[:4], float(last[4])) == (
        39,
        ["dev-q1", "Q0", "dev-q1-a1", "1"],
        5.0,
        ["train-q4", "Q0", "train-q4-a5", "5"],
        1.0,
    )
    assert read_json(out / "split.json") == {
        "train": ["train-q1", "train-q2", "train-q3", "train-q4"],
        "dev": ["dev-q1", "dev-q2"],
        "test": ["test-q1", "test-q2"],
    }


def test_pool_order_does_not_give_the_labels_away(prepared: dict[str, Any]) -> None:
    pool = read_run(prepared["out"] / "pool.run")
    qrels = read_qrels(prepared["out"] / "qrels.txt")
    # The file lists every correct answer first; in the pool it lands anywhere (rank = pid order).
    ranks = {}
    for qid, scores in pool.items():
        ranked = [pid for pid, _ in rank_order(scores)]
        assert ranked == sorted(scores)
        ranks[qid] = next(rank for rank, pid in enumerate(ranked, start=1) if qrels[qid][pid])
    assert ranks == {
        "train-q1": 5,
        "train-q2": 5,
        "train-q3": 1,
        "train-q4": 1,
        "dev-q1": 5,
        "dev-q2": 5,
        "test-q1": 5,
        "test-q2": 1,
    }
    # Over many questions the first-listed answer is spread evenly over the five places.
    many = build(
        {
            "train": [
                (f"q{n}", [("yes", 1), ("n1", 0), ("n2", 0), ("n3", 0), ("n4", 0)])
                for n in range(2000)
            ],
            "dev": [],
            "test": [],
        }
    )
    places = Counter(
        next(pid for pid, label in judged.items() if label).rsplit("-a", 1)[1]
        for judged in many.qrels.values()
    )
    assert sorted(places) == ["1", "2", "3", "4", "5"]
    assert all(340 <= count <= 460 for count in places.values()), places
    # The order is a function of the qid alone: the same on every run and machine.
    assert pool_order("train-q1", 5) == [3, 1, 4, 2, 0]


@pytest.mark.parametrize("flavour", ["py2-protocol-0", "py3-protocol-2", "py3-protocol-5"])
def test_other_pickle_flavours_give_the_same_dataset(raw: Path, flavour: str) -> None:
    data = MAKE.build_data()
    _write(
        raw,
        MAKE.dumps_py2(data, protocol=0)
        if flavour == "py2-protocol-0"
        else pickle.dumps(data, protocol=int(flavour[-1])),
    )
    expected = YahooQA().parse(FIXTURE.parent, {})
    got = YahooQA().parse(raw, {})
    assert (got.stats(), got.corpus, got.queries, got.qrels, got.pool) == (
        expected.stats(),
        expected.corpus,
        expected.queries,
        expected.qrels,
        expected.pool,
    )


def test_python2_strings_that_are_not_utf8_are_read_as_latin1(raw: Path) -> None:
    data = MAKE.build_data()
    data["dev"]["why is the moon so big tonight ?"][0][0] = "Cr\u00e8me br\u00fbl\u00e9e".encode(
        "latin-1"
    )
    _write(raw, MAKE.dumps_py2(data))
    prepared = YahooQA().parse(raw, {})
    assert prepared.extra_stats["texts_not_utf8"] == 1
    assert "Cr\u00e8me br\u00fbl\u00e9e" in prepared.corpus.values()


# -- pickles that would run code ---------------------------------------------------------------------


class _Shell:
    """Pickles to ``os.system(command)``: what a malicious env.pkl would hold."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (self.command,))


class _Eval:
    def __init__(self, source: str) -> None:
        self.source = source

    def __reduce__(self) -> tuple[Any, ...]:
        return (eval, (self.source,))


def _crafted(kind: str, marker: Path) -> tuple[bytes, str]:
    """A pickle that creates ``marker`` when loaded with ``pickle.load``, and what it imports."""
    touch = f"touch {marker}"
    if kind == "os.system at top level":
        return pickle.dumps(_Shell(touch)), r"the global (posix|os)\.system"
    if kind == "os.system inside a candidate":
        data = {"train": {"q ?": [["a", 1], ["b", _Shell(touch)]]}, "dev": {}, "test": {}}
        return pickle.dumps(data, protocol=2), r"the global (posix|os)\.system"
    if kind == "eval via STACK_GLOBAL":
        return pickle.dumps(
            _Eval(f"__import__('os').system({touch!r})"), protocol=5
        ), r"the global builtins\.eval"
    if kind == "py2 GLOBAL + REDUCE":
        return f"cos\nsystem\n(S'{touch}'\ntR.".encode(), r"the global os\.system"
    if kind == "py2 INST":
        return f"(S'{touch}'\nios\nsystem\n.".encode(), r"the global os\.system"
    raise AssertionError(kind)


KINDS = [
    "os.system at top level",
    "os.system inside a candidate",
    "eval via STACK_GLOBAL",
    "py2 GLOBAL + REDUCE",
    "py2 INST",
]


@pytest.mark.parametrize("kind", KINDS)
def test_crafted_pickle_is_refused_without_running_it(raw: Path, tmp_path: Path, kind: str) -> None:
    marker = tmp_path / "pwned"
    data, imported = _crafted(kind, marker)
    path = _write(raw, data)
    with pytest.raises(
        FormatError, match=f"refused to load {imported}: a pickle may only hold dicts, lists"
    ) as caught:
        YahooQA().parse(raw, {})
    assert (caught.value.path, caught.value.line) == (path, None)
    assert str(caught.value).startswith(f"{path}: refused to load the global ")
    assert not marker.exists()
    # The payload is live: the standard unpickler does run it.
    pickle.loads(data)
    assert marker.exists()


def test_persistent_ids_and_extension_codes_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "p.pkl"
    path.write_bytes(b"Pfile:/etc/passwd\n.")
    with pytest.raises(FormatError, match=r"refused to load the persistent id 'file:/etc/passwd'"):
        load_pickle(path)
    path.write_bytes(b"\x80\x02\x82\x01.")  # EXT1: a global by copyreg code (none registered)
    with pytest.raises(
        FormatError, match=r"not a readable pickle \(ValueError: unregistered extension code 1\)"
    ):
        load_pickle(path)


def test_plain_data_loads_and_what_needs_a_global_does_not(tmp_path: Path) -> None:
    path = tmp_path / "p.pkl"
    plain = {
        "t": (1, 2.5, -3),
        "s": "caf\u00e9",
        "n": None,
        "b": [True, False],
        "big": 2**80,
        "d": {1: [()]},
    }
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        path.write_bytes(pickle.dumps(plain, protocol=protocol))
        assert load_pickle(path) == plain
    # Protocol 4 has opcodes for sets and Python 3 bytes; older protocols reach them via a global.
    more = {
        "set": {b"x", "y"},
        "frozen": frozenset({1}),
        "bytes": b"\x00\xff",
        "array": bytearray(b"a"),
    }
    path.write_bytes(pickle.dumps(more, protocol=5))
    assert load_pickle(path) == more
    path.write_bytes(pickle.dumps({"set": {1}}, protocol=2))
    with pytest.raises(FormatError, match=r"refused to load the global __builtin__\.set"):
        load_pickle(path)
    path.write_bytes(pickle.dumps(b"x", protocol=2))
    with pytest.raises(FormatError, match=r"refused to load the global _codecs\.encode"):
        load_pickle(path)


# -- malformed files --------------------------------------------------------------------------------


def _splits(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "train": {"first ?": [["yes", 1], ["no", 0]]},
        "dev": {"d ?": [["a", 1]]},
        "test": {"t ?": [["b", 1]]},
    }
    data.update(changes)
    return data


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ([["q", "a", 1]], r"expected a dict with keys \['train', 'dev', 'test'\], got a list"),
        (
            {"train": {}, "test": {}},
            r"no \['dev'\] split\(s\) in the top-level dict \(keys: \['test', 'train'\]\)",
        ),
        (
            _splits(dev=[["q", "a", 1]]),
            r"split 'dev' is a list, not a dict question -> \[\[answer, label\], ...\]",
        ),
        (
            _splits(test={"t ?": "b"}),
            r"test question 1 \('t \?'\): candidates are a str, not a list of \[answer, label\]",
        ),
        (
            _splits(train={"first ?": [["yes", 1], ["no"]]}),
            r"train question 1 \('first \?'\), candidate 2 is \['no'\], not an \[answer, label\] pair",
        ),
        (
            _splits(train={"first ?": [["yes", 1, 0]]}),
            r"candidate 1 is \['yes', 1, 0\], not an \[answer, label\] pair",
        ),
        (
            _splits(dev={"d ?": [["a", 2]]}),
            r"dev question 1 \('d \?'\), candidate 1: label 2 is not 0 or 1",
        ),
        (
            _splits(dev={"d ?": [["a", "1"]]}),
            r"dev question 1 \('d \?'\), candidate 1: label '1' is not 0 or 1",
        ),
        (_splits(dev={"d ?": [["a", 1.0]]}), r"label 1.0 is not 0 or 1"),
        (
            _splits(dev={"d ?": [[None, 1]]}),
            r"dev question 1 \('d \?'\), candidate 1: the answer is of type NoneType, not a string",
        ),
        (
            _splits(dev={"d ?": [[" \n", 1]]}),
            r"dev question 1 \('d \?'\), candidate 1: the answer is empty",
        ),
        (_splits(dev={7: [["a", 1]]}), r"dev question 1 is of type int, not a string"),
        (_splits(dev={"  ": [["a", 1]]}), r"dev question 1 is empty"),
    ],
)
def test_malformed_structure_names_file_and_question(raw: Path, data: Any, problem: str) -> None:
    path = _write(raw, pickle.dumps(data, protocol=4))
    with pytest.raises(FormatError, match=problem) as caught:
        YahooQA().parse(raw, {})
    assert (caught.value.path, caught.value.line) == (path, None)


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda data: data[:-40], r"not a readable pickle \((UnpicklingError|EOFError): "),
        (lambda data: data + b"\n", r"1 bytes after the end of the pickle \(at byte 1260\)"),
        (lambda _: b"question\tanswer\tlabel\n", r"not a readable pickle"),
    ],
)
def test_unreadable_pickle(raw: Path, edit: Any, problem: str) -> None:
    path = _write(raw, edit(FIXTURE.read_bytes()))
    with pytest.raises(FormatError, match=problem) as caught:
        YahooQA().parse(raw, {})
    assert caught.value.path == path


def test_other_top_level_keys_are_listed_and_ignored(raw: Path) -> None:
    _write(raw, pickle.dumps(_splits(vocab={"a": 1})))
    assert YahooQA().parse(raw, {}).extra_stats["ignored_keys"] == ["vocab"]


def test_missing_file_and_options(raw: Path) -> None:
    with pytest.raises(
        DownloadError, match="missing env.pkl; run the download step for yahooqa first"
    ):
        YahooQA().parse(raw, {})
    with pytest.raises(
        ConfigError, match=r"protocol.yahooqa.options: YahooQA takes no options, got \['depth'\]"
    ):
        YahooQA().parse(raw, {"depth": 5})


# -- reranklab datasets ------------------------------------------------------------------------------


def test_listed_by_reranklab_datasets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RERANKLAB_MIRROR", raising=False)
    args = ["datasets", "--results-dir", str(tmp_path / "results"), "--mirror", str(FIXTURES)]
    assert cli.main([*args, "--json"]) == 0
    listed = {item["name"]: item for item in json.loads(capsys.readouterr().out)}
    item = listed["yahooqa"]
    assert (item["counts_from"], item["download_bytes"]) == ("declared", None)
    assert [(f["name"], f["where"]) for f in item["raw_files"]] == [("env.pkl", "mirror")]
    assert cli.main(args) == 0
    block = capsys.readouterr().out.split("\n\nyahooqa  ")[1]
    assert (
        "counts:    split train ~50.1K / dev ~6.2K / test ~6.2K; pairs train ~253K / dev ~31.7K / test ~31.7K"
        in block
    )
    assert "protocol:  first stage pool" in block
