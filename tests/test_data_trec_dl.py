"""TREC DL 2019 passage: the real topics and qrels of the mirror (exact counts, first and last
records) and, since the mirror has no MS MARCO files, the MS MARCO fixture in their place so
that ``prepare`` runs end to end (streaming corpus, train sample, grade mapping)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from reranklab.data import registry
from reranklab.data.download import sha256_of
from reranklab.data.trec_dl import QRELS, TOPICS, TrecDL2019, read_test_topics
from reranklab.errors import ConfigError, FormatError
from reranklab.io import read_json, read_qrels, read_queries
from tests.helpers_data import mirror_folder

FIXTURES = Path(__file__).parent / "fixtures"
MSMARCO_FILES = ("collection.tsv", "queries.train.tsv", "qrels.train.tsv")


def _raw(tmp_path: Path, topics_from: Path) -> Path:
    raw = tmp_path / "raw"
    raw.mkdir()
    for name in MSMARCO_FILES:
        shutil.copy(FIXTURES / "msmarco" / name, raw / name)
    for name in (TOPICS, QRELS):
        shutil.copy(topics_from / name, raw / name)
    return raw


@pytest.fixture
def raw(tmp_path: Path) -> Path:
    return _raw(tmp_path, FIXTURES / "trec_dl_2019")


def test_registered_with_the_track_protocol() -> None:
    dataset = registry.get_dataset("trec-dl-2019")
    assert isinstance(dataset, TrecDL2019)
    assert dataset.mirror_folder == "trec_dl_2019"
    assert dataset.protocol.as_dict() == {
        "first_stage": "bm25",
        "depth": 1000,
        "inject_relevant": False,
        "split": "predefined",
        "folds": 5,
        "negatives_per_positive": 1,
        "relevance_threshold": 2,
        "positives": "judged",
        "scored": "test",
        "metrics": ["nDCG@10", "MAP", "MRR"],
        "options": {"train_queries": 20000, "train_seed": 42, "train_grade": 2},
        "scoring": None,
    }
    assert [f.name for f in dataset.files] == [*MSMARCO_FILES, TOPICS, QRELS]


def test_prepare_fixture_end_to_end(raw: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    stats = TrecDL2019().prepare(raw, out, {"train_queries": "all"})
    assert stats == {
        "passages": 12,
        "queries": 8,
        "judged_queries": 8,
        "judgements": 14,
        "split": {"train": 5, "dev": 0, "test": 3},
        "judged_train_queries": 5,
        "test_judgements_by_grade": {"0": 2, "1": 2, "2": 1, "3": 3},
        "empty_passages": 1,
        "judged_passages_not_in_corpus": 1,  # 8842000 of the fixture qrels
    }
    qrels = read_qrels(out / "qrels.txt")
    assert qrels["920825"] == {"1": 2, "2": 2}  # MS MARCO's binary label → train_grade 2
    assert qrels["9001"] == {"1": 2, "2": 3, "10": 0}  # the track's grades as they are
    assert read_json(out / "split.json") == {
        "train": ["121352", "634306", "920825", "510633", "737889"],
        "dev": [],
        "test": ["9001", "9002", "9003"],
    }
    assert read_queries(out / "queries.tsv")["9003"] == "temperature at which hydrogen turns liquid"
    assert TrecDL2019().parse(raw, {"train_grade": 3}).qrels["121352"] == {"0": 3}


def test_topics_and_qrels_must_agree(raw: Path) -> None:
    with open(raw / QRELS, "a") as out:
        out.write("9999 Q0 1 2\n")
    with pytest.raises(
        FormatError, match=r"judged queries \['9999'\] are not in topics.dl19-passage.txt"
    ):
        read_test_topics(raw)
    shutil.copy(FIXTURES / "trec_dl_2019" / QRELS, raw / QRELS)
    with open(raw / TOPICS, "a") as out:
        out.write("9004\tan unjudged topic\n")
    with pytest.raises(FormatError, match=r"topics \['9004'\] have no judgements"):
        read_test_topics(raw)
    with pytest.raises(ConfigError, match="train_grade: 0 is less than the minimum of 1"):
        TrecDL2019().parse(raw, {"train_grade": 0})


# -- the real topics and qrels -----------------------------------------------------------------


@pytest.mark.mirror
def test_real_topics_and_qrels(mirror: Path) -> None:
    folder = mirror_folder(mirror, "trec_dl_2019", QRELS)
    for spec in TrecDL2019().files[3:]:
        assert ((folder / spec.name).stat().st_size, sha256_of(folder / spec.name)) == (
            spec.size,
            spec.sha256,
        )
    queries, qrels, by_grade = read_test_topics(folder)
    assert (len(queries), sum(len(j) for j in qrels.values())) == (43, 9260)
    assert len({pid for judged in qrels.values() for pid in judged}) == 9139
    assert by_grade == {"0": 5158, "1": 1601, "2": 1804, "3": 697}
    items = list(queries.items())
    assert (items[0], items[-1]) == (
        ("156493", "do goldfish grow"),
        ("146187", "difference between a mcdouble and a double cheeseburger"),
    )
    assert (qrels["19335"]["1017759"], qrels["1133167"]["977421"]) == (
        0,
        0,
    )  # the file's first and last lines
    assert all(any(g >= 2 for g in judged.values()) for judged in qrels.values())


@pytest.mark.mirror
def test_real_topics_with_the_msmarco_fixture(mirror: Path, tmp_path: Path) -> None:
    raw = _raw(tmp_path, mirror_folder(mirror, "trec_dl_2019", QRELS))
    out = tmp_path / "out"
    stats = TrecDL2019().prepare(raw, out, {"train_queries": 2, "train_seed": 3})
    assert stats["split"] == {"train": 2, "dev": 0, "test": 43}
    assert stats["test_judgements_by_grade"] == {"0": 5158, "1": 1601, "2": 1804, "3": 697}
    assert (stats["judgements"], stats["judged_passages_not_in_corpus"]) == (9260 + 2, 9139)
    split = read_json(out / "split.json")
    assert (split["test"][0], split["test"][-1]) == ("156493", "146187")
