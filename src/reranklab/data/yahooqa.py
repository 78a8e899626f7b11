"""YahooQA (Tay et al., SIGIR 2017): the Yahoo! Answers answer-selection split of BERTSel.

Tay, Phan, Luu and Hui built it from the Yahoo! Answers Webscope L6 dump for HD-LSTM: each
question keeps its best answer as the one correct candidate, and negatives are answers of
other questions ranked high by BM25 (Lucene) for it (four per question in the papers).
BERTSel (Li et al., 2019) re-ranks each question's candidates and reports MAP and MRR; the
papers give about 50.1K / 6.2K / 6.2K questions and 253K / 31.7K / 31.7K question-answer
pairs for train / dev / test (rounded as published; not checked here against the file).

The distribution (found with the code search of this project; no published checksum):

- ``github.com/vanzytay/YahooQA_Splits``: its ``readme.md`` says the splits are one ``.pkl``
  file holding a dict with ``train``, ``test`` and ``dev``, each a dict
  ``question -> [[answer, label], ...]``; public loaders of it open ``YahooQA_Splits/data/env.pkl``
  and read ``data["train"]``, ``data["dev"]``, ``data["test"]`` with plain ``pickle.load``, and
  compare labels with the integers ``0`` and ``1`` (one of them also meets answers listed twice
  for a question). The file name is therefore ``env.pkl``, from ``data/`` of that repository.
- The pickle was written in 2017 by Python 2 code: its strings may be Python 2 ``str`` (bytes)
  or ``unicode``. It is loaded with :func:`reranklab.io.safe_pickle.load_pickle` (no global is
  ever imported, so the file cannot run code) keeping Python 2 ``str`` as bytes, which are then
  decoded as UTF-8, or as Latin-1 where they are not UTF-8 (counted in ``texts_not_utf8``).

Canonical form:

- queries: qid ``<split>-q<n>``, ``n`` = 1, 2, ... the question's position in its split's dict
  as stored in the file (a pickled dict keeps the order it was written in, so the ids are the
  same on every machine); text = the question (the dict key);
- corpus: one passage per candidate, pid ``<qid>-a<k>``; an answer that is a candidate of two
  questions (negatives are other questions' answers) appears once per question, as the file has it;
- qrels: label 1 → 1, 0 → 0; every pair of the file is kept (duplicates included: they count in
  the papers' pair totals and in ``duplicate_candidates``);
- pool: each question's candidates. A list's order comes from how it was built (the correct
  answer at a fixed place, then the BM25 negatives), so file order could give the labels away (to
  the pool baseline and to ties broken by pid): the candidates are put in a fixed pseudo-random
  order seeded by the qid (as TrecQA's), numbered ``k`` = 1, 2, ... in that order (zero-padded
  to the width of the largest ``k``) and scored so that rank = ``k``;
- split: the file's ``train`` / ``dev`` / ``test``, each in file order. Other top-level keys,
  if any, are ignored and listed in ``ignored_keys``.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from reranklab.data._options import require_files
from reranklab.data._protocols import answer_selection
from reranklab.data.base import Dataset, Prepared, RawFile
from reranklab.data.registry import register_dataset
from reranklab.errors import FormatError
from reranklab.io import Qrels, Run
from reranklab.io.safe_pickle import load_pickle

RAW_FILE = "env.pkl"
REPOSITORY = "https://github.com/vanzytay/YahooQA_Splits"
URL = "https://raw.githubusercontent.com/vanzytay/YahooQA_Splits/master/data/env.pkl"
SPLITS = ("train", "dev", "test")
LABELS = (0, 1)


class _Texts:
    """Decodes the file's strings (Python 2 ``str`` arrive as bytes), counting non-UTF-8 ones."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.not_utf8 = 0

    def text(self, value: Any, what: str) -> str:
        if isinstance(value, bytes):
            try:
                value = value.decode("utf-8")
            except UnicodeDecodeError:
                self.not_utf8 += 1
                value = value.decode("latin-1")  # total: never fails, keeps one char per byte
        if not isinstance(value, str):
            raise FormatError(
                self.path, None, f"{what} is of type {type(value).__name__}, not a string"
            )
        if not value.strip():
            raise FormatError(self.path, None, f"{what} is empty")
        return value


def _label(value: Any, path: Path, what: str) -> int:
    # bool is an int subclass: True/False are the labels 1/0; "1" or 1.0 are not labels.
    if isinstance(value, int) and value in LABELS:
        return int(value)
    raise FormatError(path, None, f"{what}: label {value!r} is not 0 or 1")


def read_splits(
    path: str | Path,
) -> tuple[dict[str, list[tuple[str, list[tuple[str, int]]]]], dict[str, Any]]:
    """The three splits of ``env.pkl``, validated, as ``{split: [(question, [(answer, label)])]}``.

    Args:
        path: the pickle (loaded without importing anything: see :mod:`reranklab.io.safe_pickle`).

    Returns:
        The splits in file order, and ``{"texts_not_utf8": n, "ignored_keys": [...]}``.

    Raises:
        FormatError: (path) a pickle that references code, is malformed or truncated; a top
            level that is not a dict with ``train``, ``dev`` and ``test``; a split that is not a
            dict of question -> list; a candidate that is not an ``[answer, label]`` pair; an
            empty or non-string text; a label other than 0/1. The message names the split, the question (position and text) and the candidate.

    Example:
        >>> splits, _ = read_splits("raw/yahooqa/env.pkl")  # doctest: +SKIP
        >>> splits["dev"][0][1][0]  # doctest: +SKIP
        ('the first candidate of the first dev question', 1)
    """
    path = Path(path)
    data = load_pickle(path, encoding="bytes")
    texts = _Texts(path)
    if not isinstance(data, dict):
        raise FormatError(
            path, None, f"expected a dict with keys {list(SPLITS)}, got a {type(data).__name__}"
        )
    top: dict[str, Any] = {}
    for key, value in data.items():
        top[texts.text(key, f"top-level key {key!r}")] = value
    missing = [split for split in SPLITS if split not in top]
    if missing:
        raise FormatError(
            path, None, f"no {missing} split(s) in the top-level dict (keys: {sorted(top)[:10]})"
        )
    splits = {split: _read_split(top[split], split, path, texts) for split in SPLITS}
    extra = {
        "texts_not_utf8": texts.not_utf8,
        "ignored_keys": sorted(key for key in top if key not in SPLITS),
    }
    return splits, extra


def _read_split(
    value: Any, split: str, path: Path, texts: _Texts
) -> list[tuple[str, list[tuple[str, int]]]]:
    if not isinstance(value, dict):
        raise FormatError(
            path,
            None,
            f"split {split!r} is a {type(value).__name__}, not a dict question -> [[answer, label], ...]",
        )
    questions: list[tuple[str, list[tuple[str, int]]]] = []
    for n, (key, candidates) in enumerate(value.items(), start=1):
        question = texts.text(key, f"{split} question {n}")
        where = f"{split} question {n} ({question[:60]!r})"
        if not isinstance(candidates, (list, tuple)):
            raise FormatError(
                path,
                None,
                f"{where}: candidates are a {type(candidates).__name__}, not a list of [answer, label]",
            )
        pairs = []
        for k, candidate in enumerate(candidates, start=1):
            what = f"{where}, candidate {k}"
            if not isinstance(candidate, (list, tuple)) or len(candidate) != 2:
                raise FormatError(
                    path, None, f"{what} is {_preview(candidate)}, not an [answer, label] pair"
                )
            answer, label = candidate
            pairs.append((texts.text(answer, f"{what}: the answer"), _label(label, path, what)))
        questions.append((question, pairs))
    return questions


def _preview(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def pool_order(qid: str, count: int) -> list[int]:
    """Positions (0-based, in file order) of ``qid``'s ``count`` candidates, in pool order.

    The order is a shuffle seeded by the qid: the same on every machine, and unrelated to the
    labels (whose place in the file's lists follows how the lists were built).

    Example:
        >>> sorted(pool_order("test-q1", 5))
        [0, 1, 2, 3, 4]
        >>> pool_order("test-q1", 5) == pool_order("test-q1", 5)
        True
    """
    order = list(range(count))
    random.Random(f"yahooqa:{qid}").shuffle(order)
    return order


def build(splits: dict[str, list[tuple[str, list[tuple[str, int]]]]]) -> Prepared:
    """The canonical form of the validated splits (see the module docstring for the ids).

    Example:
        >>> prepared = build({"train": [("why?", [("because", 1), ("no", 0)])], "dev": [], "test": []})
        >>> sorted(prepared.qrels["train-q1"].items())  # the correct answer, listed first, is a2
        [('train-q1-a1', 0), ('train-q1-a2', 1)]
    """
    corpus: dict[str, str] = {}
    queries: dict[str, str] = {}
    qrels: Qrels = {}
    pool: Run = {}
    split_ids: dict[str, list[str]] = {}
    stats: dict[str, dict[str, int]] = {
        key: {}
        for key in (
            "pairs",
            "positives",
            "questions_without_positive",
            "questions_with_several_positives",
            "duplicate_candidates",
        )
    }
    splits_of_text: dict[str, set[str]] = {}
    for split in SPLITS:
        qids: list[str] = []
        counts = dict.fromkeys(stats, 0)
        for n, (question, pairs) in enumerate(splits[split], start=1):
            qid = f"{split}-q{n}"
            qids.append(qid)
            queries[qid] = question
            splits_of_text.setdefault(question, set()).add(split)
            order = pool_order(qid, len(pairs))
            width = len(str(len(pairs)))
            judged = qrels.setdefault(qid, {})
            ranked = pool.setdefault(qid, {})
            for rank, index in enumerate(order, start=1):
                answer, label = pairs[index]
                pid = f"{qid}-a{rank:0{width}d}"
                corpus[pid] = answer
                judged[pid] = label
                ranked[pid] = float(len(pairs) - rank + 1)
            if not pairs:
                del qrels[qid], pool[qid]
            positives = sum(label for _, label in pairs)
            counts["pairs"] += len(pairs)
            counts["positives"] += positives
            counts["questions_without_positive"] += positives == 0
            counts["questions_with_several_positives"] += positives > 1
            counts["duplicate_candidates"] += len(pairs) - len({answer for answer, _ in pairs})
        split_ids[split] = qids
        for key, value in counts.items():
            stats[key][split] = value
    extra: dict[str, Any] = dict(stats)
    extra["questions_in_several_splits"] = sum(
        1 for found in splits_of_text.values() if len(found) > 1
    )
    return Prepared(
        corpus=corpus, queries=queries, qrels=qrels, split=split_ids, pool=pool, extra_stats=extra
    )


@register_dataset
class YahooQA(Dataset):
    """YahooQA (Tay et al.'s splits) with its predefined split and its own candidates."""

    name = "yahooqa"
    title = "YahooQA: Yahoo! Answers questions, best answer vs. four BM25-sampled negatives"
    source = "Tay et al. (SIGIR 2017) splits of Yahoo! Answers (Webscope L6), " + REPOSITORY
    licence = (
        "No licence stated by the splits' author (research use; the README asks to be told if "
        "they should not be public); the content is Yahoo! Answers from Yahoo! Webscope L6, "
        "whose terms restrict it to non-commercial research"
    )
    citation = (
        "Yi Tay, Minh C. Phan, Luu Anh Tuan and Siu Cheung Hui. 2017. Learning to Rank Question "
        "Answer Pairs with Holographic Dual LSTM Architecture. In Proceedings of SIGIR 2017, "
        "pages 695-704, Shinjuku, Tokyo, Japan."
    )
    # No size or checksum is published for env.pkl (the repository's readme gives none), so
    # the download cannot be verified; the manifest records the sha256 of what was fetched.
    files = (RawFile(name=RAW_FILE, url=URL, sha256=None, size=None),)
    # As published (Tay et al.; Li et al.), rounded; replaced by the exact counts once prepared.
    counts = {
        "split": {"train": "~50.1K", "dev": "~6.2K", "test": "~6.2K"},
        "pairs": {"train": "~253K", "dev": "~31.7K", "test": "~31.7K"},
    }
    protocol = answer_selection(("MAP", "MRR", "P@1"))

    def parse(self, raw_dir: Path, options: dict[str, Any]) -> Prepared:
        """Parse ``env.pkl`` from ``raw_dir`` (without running any code it may hold).

        Args:
            raw_dir: folder with the raw file.
            options: must be empty (YahooQA takes no options).

        Raises:
            ConfigError: an option was given.
            DownloadError: ``env.pkl`` is not in ``raw_dir``.
            FormatError: see :func:`read_splits`.

        Example:
            >>> YahooQA().parse(Path("raw/yahooqa"), {}).split["dev"][:2]  # doctest: +SKIP
            ['dev-q1', 'dev-q2']
        """
        self.read_options(options)
        raw_dir = Path(raw_dir)
        require_files(raw_dir, [RAW_FILE], self.name)
        splits, extra = read_splits(raw_dir / RAW_FILE)
        prepared = build(splits)
        prepared.extra_stats.update(extra)
        return prepared
