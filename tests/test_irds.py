"""``irds:<id>`` datasets, offline: files placed in ir_datasets' cache as it keeps them there.

Each test writes a small collection in the exact layout ir_datasets' own download leaves in
``IR_DATASETS_HOME`` (ANTIQUE's ``collection.tsv``, ``{train,test}/queries.txt`` and
``{train,test}/qrels``; MS MARCO passage's ``collection.tsv``, ``irds_version.txt``,
``dev/small/{queries.tsv,qrels}`` and the QID/PID run ``dev/ms.run``) and runs
``reranklab download`` and ``prepare`` in a subprocess. The network cannot be reached: HTTP(S)
goes through a proxy at a closed local port, so a file missing from the cache fails at once.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.conftest import mirror_path, tool_env

# Not imported here: ir_datasets reads its home (and makes folders there) when first imported.
INSTALLED = importlib.util.find_spec("ir_datasets") is not None
pytestmark = pytest.mark.skipif(
    not INSTALLED, reason="the irds extra is not installed: pip install 'reranklab[irds]'"
)
VERSION = importlib.metadata.version("ir_datasets") if INSTALLED else None

ANTIQUE = {
    "collection.tsv": (
        "2020338_0\tA small group of politicians believed strongly that the fact that Saddam "
        "Hussien remained in power after the first Gulf War was a signal of weakness.\n"
        "2020338_1\tBecause there is a lot of oil in Iraq.\n"
        "3097310_0\tIt is hard to tell without knowing more; an injury or arthritis are common causes.\n"
        "3097310_1\tSee a doctor: swelling with pain can mean an infection of the joint.\n"
        "1964316_0\tThe stars are too far away and too faint to be seen in daylight.\n"
        "1964316_1\tBecause the sky is lit by the sun, its light drowns them out.\n"
        "3910705_0\tIn simple words, a bond is a loan you give to a company or a government.\n"
        '237390_0\tCall a pest control service; do not "smoke them out" yourself.\n'
    ),
    "train/queries.txt": (
        "2020338\tWhy did the U.S. Invade Iraq ?\n"
        "3910705\tWhat is a bond?\n"
        "237390\tHow do I get rid of a wasp nest?\n"
    ),
    # As in the release: the first line of each question tab-separated, the others spaces.
    "train/qrels": (
        "2020338\tU0\t2020338_0\t4\n"
        "2020338 Q0 2020338_1 2\n"
        "3910705\tU0\t3910705_0\t4\n"
        "237390\tU0\t237390_0\t3\n"
        "237390 Q0 2020338_1 1\n"
    ),
    "test/queries.txt": (
        "3097310\tWhat causes severe swelling and pain in the knees?\n"
        "1964316\tWhy can't we see the stars during the day?\n"
    ),
    "test/qrels": (
        "3097310\tU0\t3097310_0\t4\n"
        "3097310 Q0 3097310_1 3\n"
        "3097310 Q0 1964316_1 1\n"
        "1964316\tU0\t1964316_0\t4\n"
        "1964316 Q0 1964316_1 2\n"
    ),
}

MSMARCO = {
    # ir_datasets' marker that its cached collection has the current (fixed) encoding.
    "irds_version.txt": "v2",
    "collection.tsv": (
        "0\tThe presence of communication amid scientific minds was equally important to the "
        "success of the Manhattan Project as scientific intellect.\n"
        "1\tPaula Deen and her brother Earl W. Bubba Hiers are being sued by a former general "
        "manager at Uncle Bubba's.\n"
        "2\tThe Manhattan Project and its atomic bomb helped bring an end to World War II.\n"
        "3\tAndrogen receptor: a nuclear receptor activated by binding androgenic hormones.\n"
        "4\tA treasury bill is a short-term debt obligation backed by the U.S. government.\n"
    ),
    "dev/small/queries.tsv": (
        "1048585\twhat is paula deen's brother\n2\t Androgen receptor define\n524332\ttreasury bill what is\n"
    ),
    "dev/small/qrels": "1048585 0 1 1\n2 0 3 1\n",
    # MS MARCO's top1000.dev as ir_datasets caches it: QID<TAB>PID, no score.
    "dev/ms.run": "1048585\t1\n1048585\t0\n1048585\t2\n2\t3\n2\t4\n524332\t4\n",
}


def place(home: Path, collection: str, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = home / collection / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return home


def offline_env(home: Path) -> dict[str, str]:
    env = tool_env()
    env.update(
        IR_DATASETS_HOME=str(home),
        IR_DATASETS_TMP=str(home / "tmp"),
        IR_DATASETS_SKIP_DISK_FREE="true",
        IR_DATASETS_DL_TRIES="1",
        # Every request goes to a closed local port: nothing can leave the machine.
        HTTP_PROXY="http://127.0.0.1:9",
        HTTPS_PROXY="http://127.0.0.1:9",
        http_proxy="http://127.0.0.1:9",
        https_proxy="http://127.0.0.1:9",
        NO_PROXY="",
        no_proxy="",
    )
    return env


def reranklab(home: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "reranklab.cli", *args],
        env=offline_env(home),
        capture_output=True,
        text=True,
        timeout=300,
    )


def download_and_prepare(home: Path, out: Path, name: str, options: dict | None = None) -> dict:
    spec = json.dumps({"options": options or {}})
    for step in (
        ["download", "--dataset", name, "--out-dir", str(out / "raw"), "--spec", spec],
        ["prepare", "--dataset", name, "--raw-dir", str(out / "raw"), "--out-dir", str(out)],
    ):
        if step[0] == "prepare":
            step += ["--spec", spec]
        result = reranklab(home, *step)
        assert result.returncode == 0, result.stderr[-3000:]
    return json.loads((out / "stats.json").read_text())


def corpus_rows(out: Path) -> list[tuple[str, str]]:
    table = pq.read_table(out / "corpus.parquet").to_pydict()
    return list(zip(table["pid"], table["text"], strict=True))


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


@pytest.fixture(scope="module", autouse=True)
def _irds_home_for_this_process(tmp_path_factory):
    # ir_datasets reads its home when first imported (and makes folders there): in this
    # process, where the configuration test imports it, that is a temporary folder too.
    if "ir_datasets" not in sys.modules:
        os.environ.setdefault("IR_DATASETS_HOME", str(tmp_path_factory.mktemp("irds-home")))


def test_antique_test_alone_is_prepared_for_cross_validation(tmp_path: Path) -> None:
    home = place(tmp_path / "home", "antique", ANTIQUE)
    out = tmp_path / "data"
    stats = download_and_prepare(home, out, "irds:antique/test")

    manifest = json.loads((out / "raw" / "manifest.json").read_text())
    assert manifest == {
        "dataset": "irds:antique/test",
        "source": "ir_datasets",
        "ir_datasets": {"version": VERSION, "home": str(home)},
        "fetched": ["antique/test docs", "antique/test queries", "antique/test qrels"],
        "files": [],
    }
    corpus = corpus_rows(out)
    assert len(corpus) == 8
    assert corpus[0] == (
        "2020338_0",
        "A small group of politicians believed strongly that the fact that Saddam Hussien "
        "remained in power after the first Gulf War was a signal of weakness.",
    )
    assert corpus[-1] == (
        "237390_0",
        'Call a pest control service; do not "smoke them out" yourself.',
    )
    assert lines(out / "queries.tsv") == [
        "3097310\tWhat causes severe swelling and pain in the knees?",
        "1964316\tWhy can't we see the stars during the day?",
    ]
    assert lines(out / "qrels.txt") == [
        "1964316 0 1964316_0 4",
        "1964316 0 1964316_1 2",
        "3097310 0 1964316_1 1",
        "3097310 0 3097310_0 4",
        "3097310 0 3097310_1 3",
    ]
    assert json.loads((out / "split.json").read_text()) is None  # folds over its queries
    assert (out / "pool.run").read_text() == ""  # ANTIQUE has no scored docs: BM25
    assert stats == {
        "passages": 8,
        "queries": 2,
        "judged_queries": 2,
        "judgements": 5,
        "empty_passages": 0,
        "ir_datasets": VERSION,
        "judged_passages_not_in_corpus": 0,
        "judged_queries_without_text": 0,
    }


def test_a_train_id_makes_the_predefined_split(tmp_path: Path) -> None:
    home = place(tmp_path / "home", "antique", ANTIQUE)
    out = tmp_path / "data"
    options = {"train": "antique/train", "train_queries": 2, "train_seed": 42}
    stats = download_and_prepare(home, out, "irds:antique/test", options)

    manifest = json.loads((out / "raw" / "manifest.json").read_text())
    assert manifest["fetched"] == [
        "antique/test docs",
        "antique/test queries",
        "antique/test qrels",
        "antique/train queries",
        "antique/train qrels",
    ]
    # The seeded sample of 2 of the 3 judged train questions, in file order.
    split = json.loads((out / "split.json").read_text())
    assert split == {"train": ["2020338", "237390"], "dev": [], "test": ["3097310", "1964316"]}
    assert lines(out / "queries.tsv") == [
        "3097310\tWhat causes severe swelling and pain in the knees?",
        "1964316\tWhy can't we see the stars during the day?",
        "2020338\tWhy did the U.S. Invade Iraq ?",
        "237390\tHow do I get rid of a wasp nest?",
    ]
    assert lines(out / "qrels.txt")[:4] == [
        "1964316 0 1964316_0 4",
        "1964316 0 1964316_1 2",
        "2020338 0 2020338_0 4",
        "2020338 0 2020338_1 2",
    ]
    assert lines(out / "qrels.txt")[-1] == "3097310 0 3097310_1 3"
    assert (stats["queries"], stats["judgements"], stats["split"]) == (
        4,
        9,
        {"train": 2, "dev": 0, "test": 2},
    )


def test_msmarco_dev_small_scored_docs_become_the_pool(tmp_path: Path) -> None:
    home = place(tmp_path / "home", "msmarco-passage", MSMARCO)
    out = tmp_path / "data"
    stats = download_and_prepare(home, out, "irds:msmarco-passage/dev/small")

    assert json.loads((out / "raw" / "manifest.json").read_text())["fetched"] == [
        "msmarco-passage/dev/small docs",
        "msmarco-passage/dev/small queries",
        "msmarco-passage/dev/small qrels",
        "msmarco-passage/dev/small scoreddocs",
    ]
    corpus = corpus_rows(out)
    assert (len(corpus), corpus[0][0], corpus[-1]) == (
        5,
        "0",
        ("4", "A treasury bill is a short-term debt obligation backed by the U.S. government."),
    )
    # Every query kept (524332 has no judgement); the text as ir_datasets reads it.
    assert lines(out / "queries.tsv") == [
        "1048585\twhat is paula deen's brother",
        "2\tAndrogen receptor define",
        "524332\ttreasury bill what is",
    ]
    assert lines(out / "qrels.txt") == ["1048585 0 1 1", "2 0 3 1"]
    # MS MARCO's top1000 has no scores: ir_datasets gives 0.0, kept as it is; the tied
    # passages are ordered by reranklab's seeded hash, never by file order.
    pool = [line.split() for line in lines(out / "pool.run")]
    assert [(q, p, float(s)) for q, _, p, _, s, _ in pool] == [
        ("1048585", "1", 0.0),
        ("1048585", "0", 0.0),
        ("1048585", "2", 0.0),
        ("2", "3", 0.0),
        ("2", "4", 0.0),
        ("524332", "4", 0.0),
    ]
    assert [int(row[3]) for row in pool] == [1, 2, 3, 1, 2, 1]
    assert (stats["passages"], stats["queries"], stats["judged_queries"], stats["pool_pairs"]) == (
        5,
        3,
        2,
        6,
    )


def test_without_its_files_and_network_the_download_says_where_they_go(tmp_path: Path) -> None:
    files = {k: v for k, v in ANTIQUE.items() if k != "collection.tsv"}
    home = place(tmp_path / "home", "antique", files)
    result = reranklab(
        home, "download", "--dataset", "irds:antique/test", "--out-dir", str(tmp_path / "raw")
    )
    assert result.returncode == 2
    error = result.stderr.strip().splitlines()[-1]
    assert error.startswith(
        "reranklab download: error: irds:antique/test: ir_datasets could not fetch the docs of antique/test: "
    )
    assert f"ir_datasets keeps its files in {home} (IR_DATASETS_HOME)" in error
    assert not (tmp_path / "raw" / "manifest.json").exists()


def test_bad_options_are_named(tmp_path: Path) -> None:
    home = place(tmp_path / "home", "antique", ANTIQUE)
    out = tmp_path / "data"
    for options, message in (
        (
            {"dev": "antique/train"},
            "protocol.irds:antique/test.options.dev: a dev id needs a train id (options.train)",
        ),
        (
            {"train": "antique/test"},
            "protocol.irds:antique/test.options.train: queries ['1964316', '3097310'] of "
            "antique/test are also in another part",
        ),
        (
            {"train": "msmarco-passage/train"},
            "protocol.irds:antique/test.options.train: msmarco-passage/train is not over the "
            "collection of antique/test",
        ),
        (
            {"query_field": "title"},
            "protocol.irds:antique/test.options.query_field: ['title'] not among the fields of "
            "GenericQuery: ['query_id', 'text']",
        ),
    ):
        result = reranklab(
            home,
            "prepare",
            "--dataset",
            "irds:antique/test",
            "--raw-dir",
            str(out / "raw"),
            "--out-dir",
            str(out),
            "--spec",
            json.dumps({"options": options}),
        )
        assert result.returncode == 2
        assert result.stderr.strip().splitlines()[-1] == f"reranklab prepare: error: {message}"


def test_config_takes_irds_names_with_their_protocol() -> None:
    from reranklab.config import resolve_protocol, resolve_scoring, validate_config
    from reranklab.data import dataset_names, get_dataset
    from reranklab.errors import ConfigError

    name = "irds:antique/test"
    config = {
        "datasets": ["sample", name],
        "protocol": {name: {"split": "predefined", "options": {"train": "antique/train"}}},
    }
    validate_config(config, "params.yaml")
    protocol = resolve_protocol(config, name)
    assert (protocol["first_stage"], protocol["depth"], protocol["split"]) == (
        "bm25",
        100,
        "predefined",
    )
    assert protocol["relevance_threshold"] == 3  # ANTIQUE's level
    assert protocol["options"]["train"] == "antique/train"
    scoring = resolve_scoring(config, name)
    assert (scoring.name, scoring.queries, scoring.relevance) == ("default", "relevant", 3)
    assert name not in dataset_names()  # made on demand, never listed

    pool = get_dataset("irds:msmarco-passage/dev/small").protocol
    assert (pool.first_stage, pool.depth, pool.relevance_threshold) == ("pool", None, 1)
    assert get_dataset("irds:msmarco-passage/trec-dl-2019/judged").protocol.relevance_threshold == 2

    for bad, message in (
        (
            {"datasets": ["irds:antique/tset"]},
            "params.yaml: irds:antique/tset: 'antique/tset' is not an ir_datasets id",
        ),
        (
            {"datasets": ["irds:antique"]},
            "params.yaml: irds:antique: ir_datasets' antique has no queries, qrels",
        ),
        (
            {"datasets": [name], "protocol": {name: {"options": {"pool": "yes"}}}},
            "params.yaml: key protocol.irds:antique/test.options.pool: ",
        ),
        (
            {"datasets": ["irds:antique/seed3"]},
            "params.yaml: irds:antique/seed3: not a usable ir_datasets name",
        ),
    ):
        with pytest.raises(ConfigError) as caught:
            validate_config(bad, "params.yaml")
        assert str(caught.value).startswith(message), str(caught.value)


@pytest.mark.mirror
def test_real_antique_test_judgements_match_the_native_dataset(tmp_path: Path) -> None:
    from reranklab.data import get_dataset

    mirror = mirror_path()
    if mirror is None or not (mirror / "antique" / "antique-test.qrel").is_file():
        pytest.skip("the mirror has no antique/antique-test.qrel")
    real = mirror / "antique"
    files = {
        "test/queries.txt": (real / "antique-test-queries.txt").read_text(encoding="utf-8"),
        "test/qrels": (real / "antique-test.qrel").read_text(encoding="utf-8"),
    }
    native_qids, native_qrels = get_dataset("antique").split_judgements(real, "test")
    judged = sorted({pid for grades in native_qrels.values() for pid in grades})
    # The collection (93 MB) is not in the mirror: one line per judged answer stands for it.
    files["collection.tsv"] = "".join(f"{pid}\tanswer {pid}\n" for pid in judged)
    home = place(tmp_path / "home", "antique", files)
    stats = download_and_prepare(home, tmp_path / "data", "irds:antique/test")

    from reranklab.io import read_qrels, read_queries

    assert list(read_queries(tmp_path / "data" / "queries.tsv")) == native_qids
    assert read_qrels(tmp_path / "data" / "qrels.txt") == native_qrels
    assert (stats["queries"], stats["judgements"]) == (200, 6589)
