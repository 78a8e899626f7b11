"""nfL6 (Cohen and Croft, 2016): non-factoid questions from Yahoo! Answers (Webscope L6).

The raw file ``nfL6.json.gz`` is one JSON list of ``{"id", "question", "answer", "nbestanswers",
"main_category"}`` objects (87,362 items in the released file; its README says 87,361). ``answer``
is the best (highest-voted) answer; ``nbestanswers`` lists the other user answers and is not used.

Protocol of Mass et al. (2019, "A Study of BERT for Non-Factoid Question-Answering under Passage
Length Constraints"): the corpus is all best answers; each question has exactly one relevant
passage, its own best answer; candidates are BM25's top 10 over the whole corpus, with the correct
answer injected at rank 10 when BM25 missed it; 5-fold cross-validation by question; 2 negatives
per positive in training; P@1, MRR and MAP.

Canonical form:

- queries: ``id`` → question; corpus: ``A<id>`` → best answer (the ``A`` keeps the answer's id
  apart from its question's in run and qrels files);
- qrels: ``<id> 0 A<id> 1`` for every question; no split, no pool.

Items whose question or best answer is empty are left out (counted in ``skipped_empty``); other
answers with the same text as a question's own best answer are not relevant to it: they count in
``questions_with_duplicate_answer_text``.

Checksum: the size and sha256 of ``nfL6.json.gz`` are those Hugging Face ``datasets`` publishes
for its URL (``datasets/yahoo_answers_qa/dataset_infos.json``, ``download_checksums``: 49,411,220
bytes, 87,362 items); CIIR publishes none.

nfL6 takes no options.
"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path
from typing import Any

from tqdm import tqdm

from reranklab.data._parsing import iter_json_array, read_text
from reranklab.data._protocols import cross_validated
from reranklab.data.base import Dataset, Prepared, RawFile
from reranklab.data.registry import register_dataset
from reranklab.errors import DownloadError, FormatError
from reranklab.io import Qrels

log = logging.getLogger(__name__)

RAW_FILE = "nfL6.json.gz"
URL = "https://ciir.cs.umass.edu/downloads/nfL6/nfL6.json.gz"
# Published by Hugging Face datasets for this URL (yahoo_answers_qa/dataset_infos.json).
SIZE = 49_411_220
SHA256 = "527ff8a1d898dfbb500e373f102a0e8f2d206dcb2c75c187d59902c3688b4ff3"
_TEXT_FIELDS = ("id", "question", "answer")


def answer_pid(qid: str) -> str:
    """Passage id of the best answer of question ``qid``.

    Example:
        >>> answer_pid("1234")
        'A1234'
    """
    return f"A{qid}"


def parse_nfl6(path: str | Path) -> Prepared:
    """Parse ``nfL6.json.gz`` (gzipped or plain JSON) into the canonical form.

    Args:
        path: the raw file.

    Raises:
        FormatError: (path, line of the item) for invalid JSON, an item that is not an object,
            a missing or non-string ``id`` / ``question`` / ``answer``, an ``nbestanswers`` that
            is not a list of strings, or an id seen twice with a different question or answer
            (an exact repeat is skipped and counted in ``repeated_items``).

    Example:
        >>> prepared = parse_nfl6("raw/nfl6/nfL6.json.gz")  # doctest: +SKIP
        >>> all(judged == {answer_pid(q): 1} for q, judged in prepared.qrels.items())  # doctest: +SKIP
        True
    """
    text = read_text(path)
    queries: dict[str, str] = {}
    corpus: dict[str, str] = {}
    qrels: Qrels = {}
    first_seen: dict[str, tuple[int, str, str]] = {}
    categories: Counter[str] = Counter()
    items = skipped = repeated = nbest = 0
    for line, item in tqdm(
        iter_json_array(text, path), desc="nfL6", unit=" questions", disable=None, leave=False
    ):
        items += 1
        if not isinstance(item, dict):
            raise FormatError(
                path, line, f"item {items} is a JSON {type(item).__name__}, not an object"
            )
        for key in _TEXT_FIELDS:
            if not isinstance(item.get(key), str):
                problem = (
                    "missing" if key not in item else f"a {type(item[key]).__name__}, not a string"
                )
                raise FormatError(path, line, f"item {items}: {key!r} is {problem}")
        answers = item.get("nbestanswers", [])
        if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
            raise FormatError(path, line, f"item {items}: 'nbestanswers' is not a list of strings")
        qid = item["id"].strip()
        if not qid or any(ch.isspace() for ch in qid):
            raise FormatError(
                path, line, f"item {items}: id {item['id']!r} is empty or contains whitespace"
            )
        question, answer = item["question"].strip(), item["answer"].strip()
        if qid in first_seen:
            first, *texts = first_seen[qid]
            if texts != [question, answer]:
                raise FormatError(
                    path,
                    line,
                    f"id {qid!r} is used twice with different texts (first on line {first})",
                )
            repeated += 1
            continue
        first_seen[qid] = (line, question, answer)
        if not question or not answer:
            skipped += 1
            continue
        queries[qid] = question
        corpus[answer_pid(qid)] = answer
        qrels[qid] = {answer_pid(qid): 1}
        categories[str(item.get("main_category", ""))] += 1
        nbest += len(answers)
    if skipped:
        log.warning("%s: %d items with an empty question or answer were left out", path, skipped)
    texts = Counter(corpus.values())
    extra = {
        "items": items,
        "skipped_empty": skipped,
        "repeated_items": repeated,
        "categories": len(categories),
        "nbest_answers": nbest,
        "questions_with_duplicate_answer_text": sum(
            1 for text in corpus.values() if texts[text] > 1
        ),
    }
    return Prepared(
        corpus=corpus, queries=queries, qrels=qrels, split=None, pool=None, extra_stats=extra
    )


@register_dataset
class NFL6(Dataset):
    """nfL6 with the answer-retrieval protocol of Mass et al. (BM25 top-10, inject at 10)."""

    name = "nfl6"
    title = "nfL6: Yahoo! Answers non-factoid questions, retrieve the best answer among all answers"
    source = "Cohen and Croft (2016), CIIR UMass, " + URL
    licence = (
        "Derived from Yahoo! Webscope L6 (Yahoo! Answers Comprehensive Questions and Answers); "
        "research use under the Webscope terms, distributed by CIIR UMass"
    )
    citation = (
        "Daniel Cohen and W. Bruce Croft. 2016. End to End Long Short Term Memory Networks for "
        "Non-Factoid Question Answering. In Proceedings of ICTIR 2016, pages 143-146."
    )
    files = (RawFile(name=RAW_FILE, url=URL, size=SIZE, sha256=SHA256),)
    # From the official file (its README says 87,361 questions); shown until the data is prepared.
    counts = {"items": 87_362}
    protocol = cross_validated(
        10, inject_relevant=True, negatives_per_positive=2, metrics=("P@1", "MRR", "MAP")
    )

    def parse(self, raw_dir: Path, options: dict[str, Any]) -> Prepared:
        """Parse ``nfL6.json.gz`` from ``raw_dir`` (see :func:`parse_nfl6`).

        Args:
            raw_dir: folder with the raw file.
            options: must be empty (nfL6 takes no options).

        Example:
            >>> stats = NFL6().parse(Path("raw/nfl6"), {}).stats()  # doctest: +SKIP
            >>> stats["judgements"] == stats["queries"] == stats["passages"]  # doctest: +SKIP
            True
        """
        self.read_options(options)
        path = Path(raw_dir) / RAW_FILE
        if not path.is_file():
            raise DownloadError(f"{path}: missing; run the download step for {self.name} first")
        return parse_nfl6(path)
