"""TREC-CAR: CBOR decoding (cbor2) on RFC 8949's own examples, and a fixture in the exact raw format
(``tests/fixtures/trec_car``: a paragraph corpus in TREC-CAR's CBOR layout and hierarchical
qrels; there are no real TREC-CAR files in the mirror) prepared end to end."""

from __future__ import annotations

import datetime
import gzip
import io
import math
from pathlib import Path
from typing import Any

import cbor2
import pytest

from reranklab.data import registry
from reranklab.data.trec_car import (
    PARAGRAPHS,
    TEST_QRELS,
    TrecCar,
    cbor_records,
    fold_qrels,
    paragraph_records,
    query_text,
)
from reranklab.errors import ConfigError, FormatError
from reranklab.io import read_corpus, read_json, read_qrels, read_queries
from tests.helpers_data import copy_fixture

FIXTURE = Path(__file__).parent / "fixtures" / "trec_car"

# RFC 8949, Appendix A: encoded bytes → decoded value.
RFC_EXAMPLES = [
    ("00", 0),
    ("17", 23),
    ("1818", 24),
    ("1903e8", 1000),
    ("1a000f4240", 1_000_000),
    ("1b000000e8d4a51000", 1_000_000_000_000),
    ("20", -1),
    ("3903e7", -1000),
    ("f90000", 0.0),
    ("f93c00", 1.0),
    ("fb3ff199999999999a", 1.1),
    ("fa47c35000", 100000.0),
    ("f4", False),
    ("f5", True),
    ("f6", None),
    ("40", b""),
    ("4401020304", b"\x01\x02\x03\x04"),
    ("60", ""),
    ("6161", "a"),
    ("62c3bc", "\u00fc"),
    ("64f0908591", "\U00010151"),
    ("80", []),
    ("83010203", [1, 2, 3]),
    ("8301820203820405", [1, [2, 3], [4, 5]]),
    ("a201020304", {1: 2, 3: 4}),
    ("a26161016162820203", {"a": 1, "b": [2, 3]}),
    (
        "c074323031332d30332d32315432303a30343a30305a",
        datetime.datetime(2013, 3, 21, 20, 4, tzinfo=datetime.timezone.utc),
    ),
    ("d903e86161", cbor2.CBORTag(1000, "a")),  # a tag cbor2 does not know
    ("5f42010243030405ff", b"\x01\x02\x03\x04\x05"),
    ("7f657374726561646d696e67ff", "streaming"),
    ("9f018202039f0405ffff", [1, [2, 3], [4, 5]]),
    ("9fff", []),
    ("bf61610161629f0203ffff", {"a": 1, "b": [2, 3]}),
]


@pytest.mark.parametrize(("hex_bytes", "value"), RFC_EXAMPLES)
def test_cbor_records_on_the_rfc_examples(hex_bytes: str, value: Any) -> None:
    data = bytes.fromhex(hex_bytes)
    stream = io.BytesIO(data + data)  # two items: the second starts where the first ends
    assert list(cbor_records(stream)) == [(0, value), (len(data), value)]


def test_cbor_records_special_values_and_errors() -> None:
    ((_, infinity),) = cbor_records(io.BytesIO(bytes.fromhex("f97c00")))
    assert math.isinf(infinity)
    assert list(cbor_records(io.BytesIO(b""))) == []
    with pytest.raises(EOFError, match="CBOR item at byte 1 is cut short at byte 3"):
        list(cbor_records(io.BytesIO(bytes.fromhex("018301"))))
    with pytest.raises(ValueError, match="malformed CBOR item at byte 0: "):
        list(cbor_records(io.BytesIO(b"\xff")))
    with pytest.raises(ValueError, match="malformed CBOR item at byte 1: "):
        list(cbor_records(io.BytesIO(b"\x01\x1c")))
    with pytest.raises(ValueError, match="malformed CBOR item at byte 0: "):
        list(cbor_records(io.BytesIO(bytes.fromhex("62ffff"))))


# -- a small encoder in the layout of the released files (for the fixture and the error cases) --


def encode(value: Any, indefinite_lists: bool = False) -> bytes:
    """CBOR of ints, bytes, str and lists; Haskell lists (``Indef``) as indefinite arrays."""

    def head(major: int, n: int) -> bytes:
        if n < 24:
            return bytes([major << 5 | n])
        for info, size in ((24, 1), (25, 2), (26, 4), (27, 8)):
            if n < 1 << (8 * size):
                return bytes([major << 5 | info]) + n.to_bytes(size, "big")
        raise ValueError(n)

    if isinstance(value, Indef):
        return b"\x9f" + b"".join(encode(v) for v in value) + b"\xff"
    if isinstance(value, int):
        return head(0, value)
    if isinstance(value, bytes):
        return head(2, len(value)) + value
    if isinstance(value, str):
        data = value.encode("utf-8")
        return head(3, len(data)) + data
    if isinstance(value, list):
        return head(4, len(value)) + b"".join(encode(v) for v in value)
    raise TypeError(value)


class Indef(list):
    """A list that the writer (Haskell's ``serialise``) emits with indefinite length."""


def para(pid: str, *bodies: Any) -> list:
    return [0, pid.encode("ascii"), Indef(bodies)]


def text(value: str) -> list:
    return [0, value]


def link(page: str, anchor: str, section: str | None = None) -> list:
    return [
        1,
        [0, page, Indef([section] if section else []), f"enwiki:{page}".encode("ascii"), anchor],
    ]


PARAS = [
    para(
        "3f1c0e9a2b",
        text("Goldfish kept in "),
        link("Pond", "ponds"),
        text(" grow larger than those in bowls."),
    ),
    para(
        "7a2d41c0e5",
        link("Iron", "Iron", section="Corrosion"),
        text(" rusts when water and oxygen reach it."),
    ),
    para("b19e5d7f03", text("A goldfish bowl limits growth through water quality, not size.")),
    para("c4a8f0e611", text("AC/DC were formed in Sydney in 1973 by Malcolm and Angus Young.")),
    para("d02b9c3e7a", text("Café au lait is made with hot milk, never steamed foam.")),
    para("e5f7a1b2c9", text("The Eiffel Tower is repainted about every seven years.")),
    para("f90c3d4e5b"),
]
EXPECTED = {
    "3f1c0e9a2b": "Goldfish kept in ponds grow larger than those in bowls.",
    "7a2d41c0e5": "Iron rusts when water and oxygen reach it.",
    "b19e5d7f03": "A goldfish bowl limits growth through water quality, not size.",
    "c4a8f0e611": "AC/DC were formed in Sydney in 1973 by Malcolm and Angus Young.",
    "d02b9c3e7a": "Café au lait is made with hot milk, never steamed foam.",
    "e5f7a1b2c9": "The Eiffel Tower is repainted about every seven years.",
    "f90c3d4e5b": "",
}


def test_fixture_is_the_documented_layout() -> None:
    assert (FIXTURE / PARAGRAPHS).read_bytes() == b"".join(encode(p) for p in PARAS)
    assert {pid: value for _, pid, value in paragraph_records(FIXTURE / PARAGRAPHS)} == EXPECTED


def test_v2_header_layout(tmp_path: Path) -> None:
    path = tmp_path / "paragraphs.cbor"
    header = ["CAR", [2, 0], "release v2.0", Indef([])]
    path.write_bytes(encode(header) + b"\x9f" + b"".join(encode(p) for p in PARAS[:2]) + b"\xff")
    assert [pid for _, pid, _ in paragraph_records(path)] == ["3f1c0e9a2b", "7a2d41c0e5"]
    with open(path, "rb") as handle:
        assert [offset for offset, _ in cbor_records(handle)] == [
            len(encode(header)) + 1,
            len(encode(header)) + 1 + len(encode(PARAS[0])),
        ]


def test_v2_layout_without_its_break_code_is_cut_short(tmp_path: Path) -> None:
    path = tmp_path / "paragraphs.cbor"
    path.write_bytes(
        encode(["CAR", [2, 0], "release v2.0", Indef([])]) + b"\x9f" + encode(PARAS[0])
    )
    with pytest.raises(FormatError, match="record 2: the indefinite array of items is cut short"):
        list(paragraph_records(path))


class _ForwardOnlyGzip(gzip.GzipFile):
    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        # Seeking back in a gzip stream decompresses it again from the start (slow on 30 M
        # items); tell() is seek(0, SEEK_CUR), which is free.
        if (offset, whence) != (0, io.SEEK_CUR):
            raise AssertionError(
                f"the decoder seeked to {offset} (whence {whence}) in a gzip stream"
            )
        return super().seek(offset, whence)


def test_gzip_files_are_decoded_without_seeking(tmp_path: Path) -> None:
    path = tmp_path / "paragraphs.cbor.gz"
    path.write_bytes(gzip.compress((FIXTURE / PARAGRAPHS).read_bytes()))
    assert {pid: value for _, pid, value in paragraph_records(path)} == EXPECTED
    with _ForwardOnlyGzip(path) as stream:
        assert [offset for offset, _ in cbor_records(stream)][:2] == [0, len(encode(PARAS[0]))]


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (
            encode([1, b"x", Indef([])]),
            r"record 2 \(byte {offset}\): not a paragraph \[0, id, bodies\]",
        ),
        (
            encode(para("bad id")),
            r"record 2 \(byte {offset}\): paragraph id b'bad id' is empty or not an ASCII word",
        ),
        (
            encode(para("p9", [2, "what"])),
            r"record 2 \(byte {offset}\): paragraph p9: body \[2, 'what'\] is neither text",
        ),
        (
            encode(para("p9", text("cut")))[:-3],
            r"record 2: CBOR item at byte {offset} is cut short at byte {end}",
        ),
        (b"\x1c", r"record 2: malformed CBOR item at byte {offset}: "),
    ],
)
def test_malformed_paragraphs(tmp_path: Path, data: bytes, problem: str) -> None:
    first = encode(PARAS[0])
    path = tmp_path / PARAGRAPHS
    path.write_bytes(first + data)
    with pytest.raises(FormatError, match=problem.format(offset=len(first), end=len(first + data))):
        list(paragraph_records(path))


# -- the dataset --------------------------------------------------------------------------------


def test_registered_with_the_monobert_protocol() -> None:
    dataset = registry.get_dataset("trec-car")
    assert isinstance(dataset, TrecCar)
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
        "metrics": ["MAP"],
        "options": {"train_folds": [0, 1, 2, 3], "train_queries": 20000, "train_seed": 42},
        "scoring": None,
    }
    assert [f.name for f in dataset.files] == [
        PARAGRAPHS,
        *(fold_qrels(f) for f in range(4)),
        TEST_QRELS,
    ]
    assert dataset.files[0].member == "paragraphcorpus/paragraphcorpus.cbor"


def test_query_text_from_hierarchical_ids() -> None:
    assert query_text("enwiki:AC%2FDC/Band%20members") == "AC/DC Band members"
    assert (
        query_text("enwiki:Caf%C3%A9%20au%20lait/Preparation/Milk")
        == "Café au lait Preparation Milk"
    )


@pytest.fixture
def raw(tmp_path: Path) -> Path:
    return copy_fixture("trec_car", tmp_path)


def test_prepare_fixture_end_to_end(raw: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    stats = TrecCar().prepare(raw, out, {"train_queries": "all"})
    assert stats == {
        "passages": 7,
        "queries": 5,
        "judged_queries": 5,
        "judgements": 7,
        "split": {"train": 4, "dev": 0, "test": 1},
        "judged_train_queries": 4,
        "train_folds": [0, 1, 2, 3],
        "empty_passages": 1,
        "judged_passages_not_in_corpus": 0,
    }
    assert read_corpus(out / "corpus.parquet") == EXPECTED
    assert read_queries(out / "queries.tsv") == {
        "enwiki:Goldfish/Growth%20in%20ponds": "Goldfish Growth in ponds",
        "enwiki:Iron/Corrosion": "Iron Corrosion",
        "enwiki:AC%2FDC/Band%20members": "AC/DC Band members",
        "enwiki:Caf%C3%A9%20au%20lait/Preparation/Milk": "Café au lait Preparation Milk",
        "enwiki:Eiffel%20Tower/Maintenance": "Eiffel Tower Maintenance",
    }
    assert read_qrels(out / "qrels.txt")["enwiki:Goldfish/Growth%20in%20ponds"] == {
        "3f1c0e9a2b": 1,
        "b19e5d7f03": 1,
    }
    assert read_json(out / "split.json")["test"] == ["enwiki:Eiffel%20Tower/Maintenance"]
    assert TrecCar().parse(raw, {"train_queries": "all"}).stats() == stats


def test_train_folds_and_sample(raw: Path) -> None:
    prepared = TrecCar().parse(raw, {"train_folds": [1, 3], "train_queries": "all"})
    assert prepared.split["train"] == [
        "enwiki:Iron/Corrosion",
        "enwiki:Caf%C3%A9%20au%20lait/Preparation/Milk",
    ]
    sample = TrecCar().parse(raw, {"train_queries": 2, "train_seed": 5}).split["train"]
    assert (
        len(sample) == 2
        and sample == TrecCar().parse(raw, {"train_queries": 2, "train_seed": 5}).split["train"]
    )
    with pytest.raises(ConfigError, match=r"train_folds\.0: 5 is greater than the maximum of 4"):
        TrecCar().parse(raw, {"train_folds": [5]})


def test_bad_query_id_and_overlap(raw: Path) -> None:
    with open(raw / TEST_QRELS, "a") as out:
        out.write("enwiki:Iron/Corrosion 0 e5f7a1b2c9 1\n")
    with pytest.raises(
        FormatError, match=r"test queries \['enwiki:Iron/Corrosion'\] are also train queries"
    ):
        TrecCar().parse(raw, {})
    (raw / TEST_QRELS).write_text("Eiffel 0 e5f7a1b2c9 1\n")
    with pytest.raises(FormatError, match="query id 'Eiffel' is not a hierarchical"):
        TrecCar().parse(raw, {})
