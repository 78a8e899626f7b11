"""MS MARCO passage: a fixture in the exact raw format (``tests/fixtures/msmarco``; the mirror has
no MS MARCO files), the streaming corpus path against the in-memory one, and the streaming
writer's guarantees (row groups, duplicates named by line, bounded memory)."""

from __future__ import annotations

import shutil
import tracemalloc
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from reranklab.data import registry
from reranklab.data._options import sample_ids
from reranklab.data._streaming import stream_corpus, tsv_corpus_records
from reranklab.data._text_files import read_trec_qrels
from reranklab.data.msmarco import ARCHIVE_MD5, MsMarcoPassage
from reranklab.errors import ConfigError, DownloadError, FormatError
from reranklab.io import read_corpus, read_json, read_qrels, read_queries
from tests.helpers_data import copy_fixture

FIXTURE = Path(__file__).parent / "fixtures" / "msmarco"
FILES = (
    "collection.tsv",
    "queries.train.tsv",
    "qrels.train.tsv",
    "queries.dev.small.tsv",
    "qrels.dev.small.tsv",
)


@pytest.fixture
def raw(tmp_path: Path) -> Path:
    return copy_fixture("msmarco", tmp_path)


def test_registered_with_the_monobert_protocol() -> None:
    dataset = registry.get_dataset("msmarco-passage")
    assert isinstance(dataset, MsMarcoPassage)
    assert dataset.protocol.as_dict() == {
        "first_stage": "bm25",
        "depth": 1000,
        "inject_relevant": False,
        "split": "predefined",
        "folds": 5,
        "negatives_per_positive": 1,
        "relevance_threshold": 1,
        "positives": "judged",
        "scored": "test",
        "metrics": ["MRR@10"],
        "options": {"train_queries": 20000, "train_seed": 42},
        "scoring": None,
    }
    assert [f.name for f in dataset.files] == list(FILES)
    assert {(f.member, f.archive_md5, f.archive_size) for f in dataset.files} == {
        (name, ARCHIVE_MD5, 1_057_717_952) for name in FILES
    }


def test_prepare_streams_the_fixture(raw: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    stats = MsMarcoPassage().prepare(raw, out, {"train_queries": "all"})
    assert stats == {
        "passages": 12,
        "queries": 8,
        "judged_queries": 8,
        "judgements": 10,
        "split": {"train": 5, "dev": 0, "test": 3},
        "judged_train_queries": 5,
        "test_queries_without_judgements": 0,
        "empty_passages": 1,
        "judged_passages_not_in_corpus": 0,
    }
    assert read_json(out / "stats.json") == stats
    # Train queries keep the order of queries.train.tsv; the unjudged 278900 is left out.
    assert read_json(out / "split.json") == {
        "train": ["121352", "634306", "920825", "510633", "737889"],
        "dev": [],
        "test": ["1048585", "2", "524332"],
    }
    queries = read_queries(out / "queries.tsv")
    assert queries["2"] == "difference between wifi and bluetooth"
    assert read_qrels(out / "qrels.txt")["920825"] == {"1": 1, "2": 1}
    corpus = read_corpus(out / "corpus.parquet")
    assert (len(corpus), corpus["0"], corpus["11"]) == (
        12,
        "Water boils at a lower temperature at altitude because the air pressure is lower.",
        "",
    )
    assert (out / "pool.run").read_text() == ""


def test_in_memory_parse_writes_the_same_files(raw: Path, tmp_path: Path) -> None:
    streamed, in_memory = tmp_path / "streamed", tmp_path / "memory"
    stats = MsMarcoPassage().prepare(raw, streamed, {"train_queries": 3})
    assert MsMarcoPassage().parse(raw, {"train_queries": 3}).write(in_memory) == stats
    for name in ("queries.tsv", "qrels.txt", "split.json", "pool.run", "stats.json"):
        assert (streamed / name).read_bytes() == (in_memory / name).read_bytes(), name
    assert read_corpus(streamed / "corpus.parquet") == read_corpus(in_memory / "corpus.parquet")


def test_train_sample_is_seeded_and_judged(raw: Path) -> None:
    split = MsMarcoPassage().parse(raw, {"train_queries": 2, "train_seed": 1}).split
    assert split == MsMarcoPassage().parse(raw, {"train_queries": 2, "train_seed": 1}).split
    judged = {"121352", "634306", "920825", "510633", "737889"}
    assert set(split["train"]) == sample_ids(sorted(judged), 2, 1) and len(split["train"]) == 2
    assert MsMarcoPassage().parse(raw, {}).stats()["split"]["train"] == 5  # 20,000 > 5 judged: all


def test_option_errors(raw: Path) -> None:
    with pytest.raises(
        ConfigError, match="options.train_queries: expected a positive integer or 'all', got 0"
    ):
        MsMarcoPassage().parse(raw, {"train_queries": 0})
    with pytest.raises(ConfigError, match=r"unknown option\(s\) \['seed'\]"):
        MsMarcoPassage().parse(raw, {"seed": 1})
    (raw / "qrels.dev.small.tsv").unlink()
    with pytest.raises(
        DownloadError,
        match="missing qrels.dev.small.tsv; run the download step for msmarco-passage",
    ):
        MsMarcoPassage().prepare(raw, raw / "out")


def test_malformed_files_name_the_line(raw: Path, tmp_path: Path) -> None:
    with open(raw / "qrels.train.tsv", "a") as out:
        out.write("121352\t0\t5\t2\n")
    with pytest.raises(FormatError, match=r"relevance grade 2 is not one of \[1\]") as caught:
        MsMarcoPassage().parse(raw, {})
    assert (caught.value.path, caught.value.line) == (raw / "qrels.train.tsv", 7)
    shutil.copy(FIXTURE / "qrels.train.tsv", raw / "qrels.train.tsv")
    with open(raw / "collection.tsv", "ab") as out:
        out.write(b"12\tcaf\xe9\n")
    with pytest.raises(FormatError, match="not valid UTF-8") as caught:
        MsMarcoPassage().prepare(raw, tmp_path / "out")
    assert (caught.value.path, caught.value.line) == (raw / "collection.tsv", 13)
    assert not (tmp_path / "out" / "corpus.parquet").exists()  # nothing half-written


# -- the streaming writer ------------------------------------------------------------------------


def _collection(path: Path, n: int, width: int = 80) -> Path:
    with open(path, "w", encoding="utf-8") as out:
        for i in range(n):
            out.write(f"{i}\tpassage {i} " + "x" * (width - len(str(i))) + "\n")
    return path


def test_stream_corpus_row_groups_and_wanted(tmp_path: Path) -> None:
    source = _collection(tmp_path / "collection.tsv", 10)
    out = tmp_path / "corpus.parquet"
    stats = stream_corpus(
        out,
        lambda cb: tsv_corpus_records(source, cb),
        source,
        wanted={"3", "9", "77"},
        row_group=4,
        progress=False,
    )
    assert (stats.passages, stats.empty_passages, stats.found) == (10, 0, {"3", "9"})
    assert pq.ParquetFile(out).metadata.num_row_groups == 3
    assert list(read_corpus(out)) == [str(i) for i in range(10)]


def test_stream_corpus_names_a_duplicate_pid(tmp_path: Path) -> None:
    source = _collection(tmp_path / "collection.tsv", 10)
    with open(source, "a") as out:
        out.write("4\tthe same pid again\n")
    target = tmp_path / "corpus.parquet"
    with pytest.raises(FormatError, match=r"duplicate passage id '4' \(first at 5\)") as caught:
        stream_corpus(
            target, lambda cb: tsv_corpus_records(source, cb), source, row_group=3, progress=False
        )
    assert (caught.value.path, caught.value.line) == (source, 11)
    assert not target.exists() and list(tmp_path.iterdir()) == [source]


def _peak(tmp_path: Path, n: int) -> int:
    source = _collection(tmp_path / f"c{n}.tsv", n)
    tracemalloc.start()
    try:
        stream_corpus(
            tmp_path / f"c{n}.parquet",
            lambda cb: tsv_corpus_records(source, cb),
            source,
            row_group=2_000,
            progress=False,
        )
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_stream_corpus_memory_does_not_grow_with_the_corpus(tmp_path: Path) -> None:
    _peak(tmp_path, 100)  # first use imports and caches inside pyarrow: not the corpus's memory
    small, large = _peak(tmp_path, 10_000), _peak(tmp_path, 60_000)
    # Only the 8-byte hash per passage grows (~1 MB here, with the sort's copy); the texts are
    # held one row group (2,000 passages, ~0.3 MB) at a time.
    assert large - small < 1_500_000, (small, large)
    assert large < 2_000_000, large


def test_read_trec_qrels_mixed_whitespace(tmp_path: Path) -> None:
    path = tmp_path / "q.txt"
    path.write_text("1\tU0\ta\t4\n1 Q0 b 3\n\n2  E0  c  1\n")
    parsed = read_trec_qrels(path)
    assert parsed.qrels == {"1": {"a": 4, "b": 3}, "2": {"c": 1}}
    assert dict(parsed.iterations) == {"U0": 1, "Q0": 1, "E0": 1} and parsed.judgements == 3
