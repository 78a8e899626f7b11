"""WikiPassageQA (Cohen, Yang and Croft, SIGIR 2018): non-factoid answer passages in Wikipedia.

Each question was written about one Wikipedia article and its answer is one or more consecutive
passages of that article. The re-ranking protocol of Mass et al. ranks *all passages of the
question's article* and reports MAP, MRR and P@1 on the predefined test split.

Raw files (``WikiPassageQA.zip``):

- ``{train,dev,test}.tsv``: header ``QID Question DocumentID DocumentName RelevantPassages``, one
  question a line, ``RelevantPassages`` a comma-separated list of passage ids of the document;
- ``document_passages.json``: ``{DocumentID: {PassageID: text}}`` for the 863 articles.

Canonical form:

- corpus: every passage once, pid ``<DocumentID>_<PassageID>``;
- queries: ``QID`` → question; qrels: the relevant passages, grade 1 (the rest of the article
  is unjudged, i.e. not relevant);
- pool: for each question all passages of its article, in passage order;
- split: the predefined lists of QIDs (file order).

The released splits hold 3,332 / 417 / 416 questions (5,560 / 707 / 700 relevant passages)
over 862 distinct documents, matching the paper.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

from reranklab.data._options import require_files
from reranklab.data._protocols import answer_selection
from reranklab.data._text_files import text_lines
from reranklab.data.base import Dataset, Prepared, RawFile
from reranklab.data.registry import register_dataset
from reranklab.errors import FormatError
from reranklab.io import Qrels, Run

SPLITS = ("train", "dev", "test")
HEADER = ("QID", "Question", "DocumentID", "DocumentName", "RelevantPassages")
PASSAGES = "document_passages.json"
ZIP_URL = "https://ciir.cs.umass.edu/downloads/wikipassageqa/WikiPassageQA.zip"
# Member paths inside the zip: not verified here (no network); a wrong guess fails with the
# list of names the zip holds. (size, sha256) are those of the released split files.
ZIP_FOLDER = "WikiPassageQA/"
_CHECKSUMS = {
    "train": (300_308, "f40b1d7f1ba760bd81e452c8f2165df7d362fe65ae53d36a9b60db521012169f"),
    "dev": (37_625, "cecc7f76072998e4c19013ed7689ba90043853f815a87a5d1bd08511883bd1f1"),
    "test": (37_518, "1065a2891abc0bc012933817cf38fc59a5dabf28398d89d5de821218113759b8"),
}


class Question(NamedTuple):
    """One line of a split file (its line number kept for error messages)."""

    line: int
    qid: str
    question: str
    doc_id: str
    doc_name: str
    relevant: tuple[str, ...]


def read_split(path: str | Path) -> list[Question]:
    """The questions of one ``{train,dev,test}.tsv`` file, header checked.

    Raises:
        FormatError: (file, line) for a wrong header, a wrong field count, an empty field, a
            passage id that is not a non-negative integer, or a passage listed twice.

    Example:
        >>> read_split("raw/wikipassageqa/dev.tsv")[0].relevant  # doctest: +SKIP
        ('22', '23')
    """
    questions: list[Question] = []
    header_seen = False
    for lineno, line in text_lines(path):
        fields = line.split("\t")
        if not header_seen:
            if tuple(fields) != HEADER:
                raise FormatError(
                    path,
                    lineno,
                    f"header {fields!r} is not the WikiPassageQA header {list(HEADER)!r}",
                )
            header_seen = True
            continue
        if len(fields) != len(HEADER):
            raise FormatError(
                path,
                lineno,
                f"expected {len(HEADER)} tab-separated fields ({' '.join(HEADER)}), got {len(fields)}",
            )
        qid, question, doc_id, doc_name, relevant = (value.strip() for value in fields)
        for column, value in zip(HEADER, (qid, question, doc_id, doc_name, relevant), strict=True):
            if not value:
                raise FormatError(path, lineno, f"empty {column}")
        passages = tuple(p.strip() for p in relevant.split(","))
        if not all(p.isdigit() for p in passages):
            raise FormatError(
                path,
                lineno,
                f"RelevantPassages {relevant!r} is not a comma-separated list of passage numbers",
            )
        if len(set(passages)) != len(passages):
            raise FormatError(path, lineno, f"RelevantPassages {relevant!r} lists a passage twice")
        questions.append(Question(lineno, qid, question, doc_id, doc_name, passages))
    if not header_seen:
        raise FormatError(path, None, "empty file (no header)")
    return questions


def read_documents(path: str | Path) -> dict[str, dict[str, str]]:
    """``document_passages.json``: ``{DocumentID: {PassageID: text}}``, checked.

    Raises:
        FormatError: not JSON, or not an object of objects of strings.

    Example:
        >>> read_documents("raw/wikipassageqa/document_passages.json")["672"]["4"][:30]  # doctest: +SKIP
        'Conversionism is the belief ...'
    """
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except json.JSONDecodeError as exc:
        raise FormatError(path, exc.lineno, f"not valid JSON: {exc.msg}") from None
    except UnicodeDecodeError as exc:
        raise FormatError(
            path, None, f"not valid UTF-8 ({exc.reason} at byte {exc.start})"
        ) from None
    if not isinstance(data, dict):
        raise FormatError(path, None, "expected a JSON object {DocumentID: {PassageID: text}}")
    for doc_id, passages in data.items():
        if not isinstance(passages, dict) or not all(isinstance(t, str) for t in passages.values()):
            raise FormatError(
                path, None, f"document {doc_id!r}: expected an object {{PassageID: text}}"
            )
        if not all(p.isdigit() for p in passages):
            raise FormatError(
                path,
                None,
                f"document {doc_id!r}: passage ids must be numbers, got {sorted(passages)[:3]}",
            )
    return data


def passage_id(doc_id: str, passage: str) -> str:
    """Canonical pid of a passage: ``<DocumentID>_<PassageID>``, e.g. ``672_4``."""
    return f"{doc_id}_{passage}"


def _build(
    splits: dict[str, list[Question]],
    documents: dict[str, dict[str, str]],
    files: dict[str, Path],
    docs_path: Path,
) -> Prepared:
    queries: dict[str, str] = {}
    qrels: Qrels = {}
    pool: Run = {}
    split: dict[str, list[str]] = {}
    origin: dict[str, tuple[str, int]] = {}
    used_docs: set[str] = set()
    for name, questions in splits.items():
        path = files[name]
        split[name] = []
        for q in questions:
            if q.qid in origin:
                first_split, first_line = origin[q.qid]
                raise FormatError(
                    path,
                    q.line,
                    f"QID {q.qid} also on line {first_line} of {files[first_split].name}",
                )
            origin[q.qid] = (name, q.line)
            passages = documents.get(q.doc_id)
            if passages is None:
                raise FormatError(
                    path, q.line, f"DocumentID {q.doc_id} ({q.doc_name}) is not in {docs_path.name}"
                )
            absent = [p for p in q.relevant if p not in passages]
            if absent:
                raise FormatError(
                    path,
                    q.line,
                    f"relevant passage(s) {absent} are not passages of document {q.doc_id} in {docs_path.name}",
                )
            ordered = sorted(passages, key=int)
            queries[q.qid] = q.question
            qrels[q.qid] = {passage_id(q.doc_id, p): 1 for p in q.relevant}
            # Decreasing scores keep passage order under the (-score, pid) ranking of run files.
            pool[q.qid] = {
                passage_id(q.doc_id, p): float(len(ordered) - i) for i, p in enumerate(ordered)
            }
            split[name].append(q.qid)
            used_docs.add(q.doc_id)
    corpus = {
        passage_id(doc_id, p): text
        for doc_id in sorted(
            documents, key=lambda d: (not d.isdigit(), int(d) if d.isdigit() else 0, d)
        )
        for p, text in sorted(documents[doc_id].items(), key=lambda item: int(item[0]))
    }
    extra = {
        "documents": len(documents),
        "documents_with_questions": len(used_docs),
        "relevant_passages": {
            name: sum(len(q.relevant) for q in qs) for name, qs in splits.items()
        },
    }
    return Prepared(
        corpus=corpus, queries=queries, qrels=qrels, split=split, pool=pool, extra_stats=extra
    )


@register_dataset
class WikiPassageQA(Dataset):
    """WikiPassageQA with its predefined split; candidates = all passages of the question's article."""

    name = "wikipassageqa"
    title = "WikiPassageQA: non-factoid questions, answer passages in 863 Wikipedia articles"
    source = "CIIR, UMass Amherst (Cohen et al., SIGIR 2018), " + ZIP_URL
    licence = "Research use (CIIR WikiPassageQA release terms); the passages are from Wikipedia (CC BY-SA)"
    citation = (
        "Daniel Cohen, Liu Yang and W. Bruce Croft. 2018. WikiPassageQA: A Benchmark Collection for "
        "Research on Non-factoid Answer Passage Retrieval. In Proceedings of SIGIR 2018, pages 1165-1168."
    )
    files = (
        *(
            RawFile(
                name=f"{split}.tsv",
                url=ZIP_URL,
                member=f"{ZIP_FOLDER}{split}.tsv",
                size=size,
                sha256=sha256,
            )
            for split, (size, sha256) in _CHECKSUMS.items()
        ),
        RawFile(name=PASSAGES, url=ZIP_URL, member=f"{ZIP_FOLDER}{PASSAGES}"),
    )
    counts = {"documents": 863, "split": {"train": 3332, "dev": 417, "test": 416}}
    protocol = answer_selection(("MAP", "MRR", "P@1"), negatives_per_positive=5)

    def parse(self, raw_dir: Path, options: dict[str, Any]) -> Prepared:
        """Parse the three split files and ``document_passages.json`` from ``raw_dir``.

        Args:
            raw_dir: folder with the four raw files.
            options: must be empty (WikiPassageQA has no dataset-specific options).

        Example:
            >>> WikiPassageQA().parse(Path("raw/wikipassageqa"), {}).stats()["split"]  # doctest: +SKIP
            {'train': 3332, 'dev': 417, 'test': 416}
        """
        self.read_options(options)
        raw_dir = Path(raw_dir)
        require_files(raw_dir, [f.name for f in self.files], self.name)
        files = {split: raw_dir / f"{split}.tsv" for split in SPLITS}
        splits = {split: read_split(path) for split, path in files.items()}
        docs_path = raw_dir / PASSAGES
        return _build(splits, read_documents(docs_path), files, docs_path)
