"""TREC Complex Answer Retrieval (Dietz et al. 2017), v1.5, as monoBERT re-ranks it.

A query is a Wikipedia article title with the heading path of one of its sections; the
relevant passages are the paragraphs that appeared under that heading (automatic judgements).
monoBERT (Nogueira and Cho 2019) re-ranks the BM25 top-1000 over the ~30 M paragraphs of the
de-duplicated paragraph corpus, trains on folds 0-3 of the ``train`` release and tests on the
automatic judgements of the TREC 2017 (Y1) benchmark, reporting MAP.

Raw files (``trec-car.cs.unh.edu/datareleases/v1.5/``, published MD5s from ir_datasets):

- ``paragraphcorpus.cbor`` (in ``paragraphcorpus-v1.5.tar.xz``): the paragraphs, a sequence of
  CBOR items ``[0, paragraph id (bytes), [body, ...]]`` where a body is ``[0, text]`` or
  ``[1, [_, page, [section?], target id, anchor text]]``; a paragraph's text is its bodies'
  text and anchor texts joined (``trec-car-tools``' ``get_text``). A ``CAR`` header followed
  by an indefinite list (the v2.0 layout) is accepted too;
- ``train.fold{0..3}.cbor.hierarchical.qrels`` (in ``train-v1.5.tar.xz``) and
  ``automatic.benchmarkY1test.cbor.hierarchical.qrels`` (in ``trec-car-2017-qrels.tar.gz``):
  TREC qrels whose query ids are ``enwiki:<Title>/<Heading>/...`` (URL-encoded).

The CBOR items are decoded by ``cbor2`` (:func:`cbor_records`), one at a time as the file is
streamed. ``trec-car-tools`` reads the same files, but it needs the unmaintained ``cbor`` C
package (no wheels for current Pythons) and reports no byte position on malformed input.

Canonical form: corpus streamed to Parquet (see :class:`~reranklab.data._streaming.StreamingCorpusDataset`);
query text = title and headings decoded from the query id, joined by spaces (what monoBERT
feeds BERT); qrels grade 1; split = a seeded sample of ``train_queries`` (option) judged queries
of the train folds (``train_folds``) / all Y1 test queries; pool = none (BM25 first stage).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Annotated, Any
from urllib.parse import unquote

import cbor2
from pydantic import Field

from reranklab.data._options import TrainSampleOptions, count_or_all, require_files, sample_ids
from reranklab.data._protocols import passage_ranking
from reranklab.data._streaming import CorpusRecord, StreamingCorpusDataset
from reranklab.data._text_files import read_trec_qrels
from reranklab.data.base import Prepared, RawFile
from reranklab.data.registry import register_dataset
from reranklab.errors import FormatError
from reranklab.io import Qrels
from reranklab.io.text import open_binary

RELEASE = "http://trec-car.cs.unh.edu/datareleases/v1.5/"
PARAGRAPHS = "paragraphcorpus.cbor"
TEST_QRELS = "automatic.benchmarkY1test.cbor.hierarchical.qrels"
FOLDS = (0, 1, 2, 3, 4)


class TrecCarOptions(TrainSampleOptions):
    """TREC CAR's options: the training queries, sampled from its train folds."""

    train_folds: list[Annotated[int, Field(ge=0, le=4)]] = Field(
        [0, 1, 2, 3],
        min_length=1,
        description="train folds (0-4) to draw training queries from; 4 is monoBERT's validation fold",
    )


def fold_qrels(fold: int) -> str:
    """Raw file name of the judgements of one train fold.

    Example:
        >>> fold_qrels(0)
        'train.fold0.cbor.hierarchical.qrels'
    """
    return f"train.fold{fold}.cbor.hierarchical.qrels"


# -- CBOR (decoded by cbor2) ------------------------------------------------------------------


def _peek_byte(stream: IO[bytes]) -> bytes:
    """The next byte of ``stream`` (``b""`` at its end), without consuming it."""
    peek = getattr(stream, "peek", None)
    if peek is not None:
        return peek(1)[:1]
    position = stream.tell()
    byte = stream.read(1)
    stream.seek(position)
    return byte


def _item(decoder: cbor2.CBORDecoder, stream: IO[bytes]) -> tuple[int, Any] | None:
    """``(byte offset, item)`` of the next item, or None when the stream ends before one.

    Raises:
        EOFError: the stream ends inside the item.
        ValueError: bytes that are not well-formed CBOR.
    """
    offset = stream.tell()
    try:
        return offset, decoder.decode()
    except cbor2.CBORDecodeEOF:
        end = stream.tell()
        if end == offset:
            return None  # nothing read: the previous item was the last
        raise EOFError(f"CBOR item at byte {offset} is cut short at byte {end}") from None
    except cbor2.CBORDecodeError as exc:
        raise ValueError(f"malformed CBOR item at byte {offset}: {exc}") from None


def cbor_records(stream: IO[bytes]) -> Iterator[tuple[int, Any]]:
    """``(byte offset, item)`` of a TREC-CAR CBOR file: a plain sequence of items, or a
    ``["CAR", ...]`` header followed by one indefinite-length array of items (v2.0).

    Items are decoded one at a time by :class:`cbor2.CBORDecoder` (the file is never read
    whole); a tag cbor2 does not know comes back as a :class:`cbor2.CBORTag` (TREC-CAR files
    have none).

    Raises:
        ValueError, EOFError: malformed or truncated CBOR (the message names the byte).

    Example:
        >>> import io
        >>> list(cbor_records(io.BytesIO(bytes.fromhex("0183019f0203ff63616263"))))
        [(0, 1), (1, [1, [2, 3], 'abc'])]
    """
    # read_size=1: the decoder reads exactly an item's bytes. With read-ahead it would seek
    # back after every item, and seeking back rewinds a gzip stream to its start.
    decoder = cbor2.CBORDecoder(stream, read_size=1)
    first = _item(decoder, stream)
    if first is None:
        return
    header = first[1]
    if isinstance(header, list) and header and header[0] == "CAR":
        opener = stream.read(1)
        if opener != b"\x9f":
            raise ValueError(
                f"after the CAR header expected an indefinite array (0x9f), got {opener.hex() or 'the end'}"
            )
        while (byte := _peek_byte(stream)) != b"\xff":
            if not byte:
                raise EOFError(
                    f"the indefinite array of items is cut short at byte {stream.tell()} (no break code)"
                )
            item = _item(decoder, stream)
            assert item is not None  # a byte is there
            yield item
        return
    yield first
    while (item := _item(decoder, stream)) is not None:
        yield item


def paragraph(item: Any) -> tuple[str, str]:
    """``(paragraph id, text)`` of a decoded paragraph item.

    Raises:
        ValueError: the item is not a paragraph.

    Example:
        >>> paragraph([0, b"p1", [[0, "Hello "], [1, [0, "World", [], b"enwiki:World", "world"]]]])
        ('p1', 'Hello world')
    """
    if not (
        isinstance(item, list) and len(item) == 3 and item[0] == 0 and isinstance(item[2], list)
    ):
        raise ValueError("not a paragraph [0, id, bodies]")
    pid = item[1].decode("ascii") if isinstance(item[1], bytes) else item[1]
    if not isinstance(pid, str) or not pid or any(ch.isspace() for ch in pid):
        raise ValueError(f"paragraph id {item[1]!r} is empty or not an ASCII word")
    parts = []
    for body in item[2]:
        if isinstance(body, list) and len(body) == 2 and body[0] == 0 and isinstance(body[1], str):
            parts.append(body[1])
        elif (
            isinstance(body, list)
            and len(body) == 2
            and body[0] == 1
            and isinstance(body[1], list)
            and len(body[1]) >= 5
            and isinstance(body[1][4], str)
        ):
            parts.append(body[1][4])  # a link: its anchor text is what the reader sees
        else:
            raise ValueError(
                f"paragraph {pid}: body {body!r:.80} is neither text [0, str] nor a link [1, [...]]"
            )
    return pid, "".join(parts)


def paragraph_records(
    path: str | Path, progress: Callable[[int], None] | None = None
) -> Iterator[CorpusRecord]:
    """``(record number, paragraph id, text)`` of a TREC-CAR paragraph file, streamed.

    Args:
        path: the CBOR file (plain or gzip).
        progress: called with the number of bytes read since the last call.

    Raises:
        FormatError: malformed CBOR or a record that is not a paragraph (with record number and byte).

    Example:
        >>> next(paragraph_records("tests/fixtures/trec_car/paragraphcorpus.cbor"))
        (1, '3f1c0e9a2b', 'Goldfish kept in ponds grow larger than those in bowls.')
    """
    number = 0
    reported = 0
    with open_binary(path) as handle:
        try:
            for number, (offset, item) in enumerate(cbor_records(handle), start=1):
                if progress is not None and offset - reported >= 1 << 22:
                    progress(offset - reported)
                    reported = offset
                try:
                    pid, text = paragraph(item)
                except ValueError as exc:
                    raise FormatError(
                        path, None, f"record {number} (byte {offset}): {exc}"
                    ) from None
                yield number, pid, text
        except (ValueError, EOFError) as exc:
            # Decoding errors carry their own byte position.
            raise FormatError(path, None, f"record {number + 1}: {exc}") from None


# -- dataset -----------------------------------------------------------------------------------


def query_text(qid: str) -> str:
    """The query of a hierarchical TREC-CAR query id: title and headings, URL-decoded.

    Example:
        >>> query_text("enwiki:Aftertaste/Aftertaste%20processing%20in%20the%20cerebral%20cortex")
        'Aftertaste Aftertaste processing in the cerebral cortex'
    """
    path = qid.removeprefix("enwiki:")
    return " ".join(unquote(part) for part in path.split("/") if part)


def _check_qids(path: Path, qrels: Qrels) -> None:
    for qid in qrels:
        if not qid.startswith("enwiki:") or not query_text(qid).strip():
            raise FormatError(
                path, None, f"query id {qid!r} is not a hierarchical 'enwiki:<Title>/<Heading>' id"
            )


@register_dataset
class TrecCar(StreamingCorpusDataset):
    """TREC-CAR v1.5: train folds 0-3 (sampled), test = Y1 automatic judgements, BM25 top-1000."""

    name = "trec-car"
    title = "TREC Complex Answer Retrieval v1.5: Wikipedia section queries, ~30 M paragraphs"
    source = "TREC CAR (Dietz et al. 2017), " + RELEASE
    licence = "CC BY-SA 3.0 (derived from Wikipedia); TREC CAR terms at trec-car.cs.unh.edu"
    citation = (
        "Laura Dietz, Manisha Verma, Filip Radlinski and Nick Craswell. 2017. TREC Complex Answer "
        "Retrieval Overview. In Proceedings of TREC 2017."
    )
    corpus_file = PARAGRAPHS
    files = (
        RawFile(
            name=PARAGRAPHS,
            url=RELEASE + "paragraphcorpus-v1.5.tar.xz",
            member="paragraphcorpus/paragraphcorpus.cbor",
            archive_size=5_114_258_812,
            archive_md5="4d006dd67cbc11541ed7f87b875cb990",
        ),
        *(
            RawFile(
                name=fold_qrels(fold),
                url=RELEASE + "train-v1.5.tar.xz",
                member=f"train/{fold_qrels(fold)}",
                archive_size=2_591_721_692,
                archive_md5="70eb3cf1d9358614f9d96dcd2565dc2b",
            )
            for fold in (0, 1, 2, 3)
        ),
        RawFile(
            name=TEST_QRELS,
            url=RELEASE + "trec-car-2017-qrels.tar.gz",
            member=f"TREC_CAR_2017_qrels/{TEST_QRELS}",
            archive_size=4_334_569,
            archive_md5="1ab7cf01c341757af1bb3db2aedd020f",
        ),
    )
    counts = {"passages": 29_678_367, "test_judgements": 5_820}
    protocol = passage_ranking(
        1000, relevance_threshold=1, metrics=("MAP",), options=TrecCarOptions.defaults()
    )
    options_model = TrecCarOptions

    def corpus_records(
        self, path: Path, progress: Callable[[int], None] | None = None
    ) -> Iterator[CorpusRecord]:
        return paragraph_records(path, progress)

    def parse_topics(self, raw_dir: Path, options: dict[str, Any]) -> Prepared:
        """Sampled train-fold queries and all Y1 test queries, with their automatic judgements.

        Options:
            train_folds: which train folds to draw training queries from (0-4; 4 is monoBERT's validation fold).
            train_queries: judged train queries to sample, or ``"all"``.
            train_seed: seed of that sample.
        """
        typed = self.read_options(options)
        folds = typed.train_folds
        require_files(raw_dir, [fold_qrels(f) for f in folds] + [TEST_QRELS, PARAGRAPHS], self.name)
        n = count_or_all(typed.train_queries)
        train: Qrels = {}
        for fold in folds:
            path = raw_dir / fold_qrels(fold)
            judged = read_trec_qrels(path, grades=(1,)).qrels
            _check_qids(path, judged)
            for qid, passages in judged.items():
                # A heading can recur across folds only if the release is broken; merge, never drop.
                train.setdefault(qid, {}).update(passages)
        chosen = sample_ids(list(train), n, typed.train_seed)
        train_qids = [qid for qid in train if qid in chosen]
        test = read_trec_qrels(raw_dir / TEST_QRELS, grades=(1,)).qrels
        _check_qids(raw_dir / TEST_QRELS, test)
        overlap = sorted(set(train_qids) & test.keys())
        if overlap:
            raise FormatError(
                raw_dir / TEST_QRELS, None, f"test queries {overlap[:3]} are also train queries"
            )
        queries = {qid: query_text(qid) for qid in [*train_qids, *test]}
        return Prepared(
            corpus={},
            queries=queries,
            qrels={**{qid: train[qid] for qid in train_qids}, **test},
            split={"train": train_qids, "dev": [], "test": list(test)},
            pool=None,
            extra_stats={"judged_train_queries": len(train), "train_folds": list(folds)},
        )
