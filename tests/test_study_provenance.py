"""Provenance tags in studies/ say what the cited paper line says.

A study file marks where each value comes from with a trailing comment:

- ``# paper: papers/<file>:<line> ...``: the cited line of the paper states the value;
- ``# paper silent: ...``: the paper gives nothing, reranklab's own choice is kept;
- ``# inferred: ...``: read from something the paper does state (cited), not stated itself;
- ``# default: ...``: a library's or a tool's default (Elasticsearch's BM25, Hugging Face's AdamW);
- ``# deviation: <name>``: the study cannot do what the paper did (its ``deviations:`` entry).

These tests read the five seed papers' texts (``../shared/papers`` beside the checkout; skipped
without them) and check each ``# paper:`` tag against its cited lines, so a value read from a
tool's default or inferred from a table cannot pass as stated. They also check that a published
condition names the encoder's casing only where its paper does, and that studies/external.yaml
holds no number the papers print for the same dataset and measure.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
STUDIES = REPO / "studies"
PAPERS = REPO.parent / "shared" / "papers"

pytestmark = pytest.mark.skipif(
    not PAPERS.is_dir(), reason=f"the seed papers' texts are not beside the checkout ({PAPERS})"
)

# The tag words a trailing comment may open with (before its colon).
TAG_WORDS = {"paper", "paper silent", "inferred", "default", "deviation"}

# reranklab's own tokens for a setting, as a paper words them: a `# paper:` tag on one of these
# values passes when the cited line says it in these words (a regex, case-insensitive).
STATED_AS: dict[tuple[str, Any], str] = {
    ("split", "cv"): r"cross[- ]?validation",
    ("split", "predefined"): r"predefined|already divided into|dedicated",
    ("first_stage", "pool"): r"all passages from the query|candidate answers|candidates",
    ("inject_relevant", True): r"added a correct passage",
    ("depth", None): r"all passages|all of",
    ("select_best", True): r"validation is performed",
    ("lstm_attention", True): r"attention",
}

# Dataset names as the papers print them, beyond what the name's own parts match.
DATASET_WORDS = {
    "semeval2016": "semevalcqa16",
    "semeval2017": "semevalcqa17",
    "trec-dl-2019": "trecdl",
    "msmarco-passage": "msmarco",
}

_NUMBER_WORDS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}
_SUFFIX = {"k": 1e3, "K": 1e3, "M": 1e6}


@dataclass(frozen=True)
class Tag:
    """One trailing comment of a study file and the YAML content it follows."""

    file: Path
    line: int
    content: str
    comment: str

    @property
    def where(self) -> str:
        return f"{self.file.relative_to(REPO)}:{self.line}"


def split_comment(line: str) -> tuple[str, str]:
    """``(content, comment)`` of a YAML line; a ``#`` inside quotes or glued to a word is text."""
    quote = ""
    for i, char in enumerate(line):
        if quote:
            if char == quote:
                quote = ""
        elif char in "\"'" and (i == 0 or line[i - 1] in " :[{,-"):
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1 :].strip()
    return line.rstrip(), ""


def study_files() -> list[Path]:
    return sorted([*STUDIES.glob("*.yaml"), *STUDIES.glob("minilm/*.yaml")])


def tags() -> Iterator[Tag]:
    """Every comment that follows YAML content on its line (a value's provenance)."""
    for path in study_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            content, comment = split_comment(line)
            if comment and content.strip():
                yield Tag(path, number, content, comment)


def comment_tags() -> Iterator[Tag]:
    """Every ``# paper: papers/...`` tag, on a value's line or opening a comment block."""
    for path in study_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            content, comment = split_comment(line)
            if comment.startswith("paper:"):
                yield Tag(path, number, content, comment)


def paper_lines(name: str) -> list[str]:
    return (PAPERS / name).read_text(encoding="utf-8").splitlines()


def cited_lines(comment: str) -> tuple[str, list[int]]:
    """The paper file a ``paper:`` tag cites and every line it names (``:12``, ``:12-14``)."""
    match = re.match(r"paper:\s*papers/([\w.-]+\.txt):(\d+)(?:-(\d+))?", comment)
    if not match:
        raise AssertionError(f"a `paper:` tag without papers/<file>:<line>: {comment!r}")
    name = match.group(1)
    numbers: list[int] = []
    # Only the tag's own cites count: stop where a deviation or another file's cite begins.
    body = re.split(r";\s*deviation|papers/(?!" + re.escape(name) + ")", comment)[0]
    for start, end in re.findall(r":(\d+)(?:-(\d+))?", body):
        numbers.extend(range(int(start), int(end or start) + 1))
    return name, numbers


def numbers_in(text: str) -> set[float]:
    """Every number a line of paper text prints, read as generously as papers print them."""
    text = text.replace("−", "-").replace("–", "-").replace("\\cdot", "×").replace("·", "×")
    text = text.replace("\\times", "×")
    found: set[float] = set()
    # "3×10^{-6}", "2 × 10-5", "3\\cdot 10^{-5}": every tail of the mantissa's digits, since a
    # LaTeX-to-text extraction glues the mantissa to the text before it ("1053\\cdot 10^{-5}").
    power = r"([\d.]*\d)?\s*(?:×|\*|x)?\s*(?<![\d.])10\s*\^?\s*\{?\s*(-\d+|\d+(?=\s*\}))\s*\}?"
    for mantissa, exponent in re.findall(power, text):
        scale = 10.0 ** int(exponent)
        found.add(scale)
        for start in range(len(mantissa or "")):
            with contextlib.suppress(ValueError):
                found.add(float(mantissa[start:]) * scale)
    number = r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d*\.\d+|\d+)(e-?\d+)?(%|[kKM](?![a-zA-Z]))?"
    for digits, exponent, suffix in re.findall(number, text):
        value = float(digits.replace(",", "") + (exponent or ""))
        found.add(value)
        if suffix == "%":
            found.add(value / 100)
        elif suffix:
            found.add(value * _SUFFIX[suffix])
    # LaTeX-to-text extraction prints a math number three times over: "323232" is 32.
    for run in re.findall(r"\d[\d.]*\d", text):
        for size in range(1, len(run) // 3 + 1):
            part = run[:size]
            if part * 3 == run:
                with contextlib.suppress(ValueError):
                    found.add(float(part))
    for word, value in _NUMBER_WORDS.items():
        if re.search(rf"\b{word}\b", text, re.IGNORECASE):
            found.add(float(value))
    return found


def _squash(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def states(key: str, value: Any, text: str) -> bool:
    """Whether paper text states ``key: value`` (see the module docstring)."""
    if isinstance(value, (str, bool, type(None))) and (key, value) in STATED_AS:
        return re.search(STATED_AS[key, value], text, re.IGNORECASE) is not None
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, (int, float)):
        return any(math.isclose(n, value, rel_tol=1e-9, abs_tol=1e-12) for n in numbers_in(text))
    if isinstance(value, str):
        squashed = _squash(text)
        if value in DATASET_WORDS and DATASET_WORDS[value] in squashed:
            return True
        parts = [_squash(part) for part in re.split(r"[-_\s]+", value) if part]
        return bool(parts) and all(part in squashed for part in parts)
    if isinstance(value, list):
        return bool(value) and all(states(key, item, text) for item in value)
    if isinstance(value, dict):
        return bool(value) and all(states(k, v, text) for k, v in value.items())
    return False


def tagged_value(content: str) -> tuple[str, Any] | None:
    """The ``key: value`` a line holds; ``None`` for a key that opens a block."""
    text = content.strip()
    if text.startswith("- "):
        text = text[2:]
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    if not isinstance(loaded, dict) or len(loaded) != 1:
        return None
    ((key, value),) = loaded.items()
    if isinstance(value, dict) and not value and text.rstrip().endswith(":"):
        return None
    if value is None and text.rstrip().endswith(":"):
        return None
    return str(key), value


def test_the_study_files_have_tags() -> None:
    paper_tags = [t for t in tags() if t.comment.startswith("paper:")]
    assert len(paper_tags) > 100


def test_trailing_comments_open_with_a_known_tag_word() -> None:
    bad = []
    for tag in tags():
        if tag.file.name in {"published.yaml", "external.yaml", "expected.yaml", "claims.yaml"}:
            continue
        match = re.match(r"([A-Za-z][A-Za-z ]*?)\s*:", tag.comment)
        if match and match.group(1) not in TAG_WORDS:
            bad.append(f"{tag.where}: '# {match.group(1)}:' (tags: {sorted(TAG_WORDS)})")
    assert not bad, "\n".join(bad)


def test_every_paper_tag_cites_lines_that_exist() -> None:
    bad = []
    for tag in comment_tags():
        name, numbers = cited_lines(tag.comment)
        if not (PAPERS / name).is_file():
            bad.append(f"{tag.where}: papers/{name} does not exist")
            continue
        size = len(paper_lines(name))
        bad += [
            f"{tag.where}: papers/{name}:{n} is past the end ({size})" for n in numbers if n > size
        ]
    assert not bad, "\n".join(bad)


def test_a_paper_tag_on_a_value_is_stated_by_its_cited_line() -> None:
    bad = []
    for tag in tags():
        if not tag.comment.startswith("paper:"):
            continue
        pair = tagged_value(tag.content)
        if pair is None:
            continue  # a block's key: the tag speaks for the values below, each tagged itself
        name, numbers = cited_lines(tag.comment)
        lines = paper_lines(name)
        text = "\n".join(lines[n - 1] for n in numbers if 0 < n <= len(lines))
        key, value = pair
        if not states(key, value, text):
            bad.append(f"{tag.where}: {key}: {value!r} is not stated by papers/{name}:{numbers}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize(
    ("key", "value", "text", "expected"),
    [
        ("learning_rate", 2.0e-5, "learning rate  $2e-5$  over three epochs", True),
        ("learning_rate", 3.0e-6, "the initial learning rate set to 3×10^{-6} , $\\beta_1", True),
        ("learning_rate", 3.0e-5, "learning rate set to 31053superscript1053\\cdot 10^{-5}", True),
        ("learning_rate", 2.0e-5, "a rate of 0.00002", True),
        ("warmup_ratio", 0.1, "warm-up over 10% of the steps", True),
        ("batch_size", 32, "We set the batch size to 323232 and", True),
        ("epochs", 3, "a fixed number of three train epochs", True),
        ("batch_size", 32, "the default BERT setup (Devlin et al., 2018)", False),
        ("weight_decay", 0.0, "We use Adam optimizer with the initial learning rate", False),
        ("encoder", "bert-base-uncased", "the pre-trained BERT-Base, Uncased model", True),
        ("encoder", "bert-base-uncased", "We use the base version of BERT (BERT_{base})", False),
        ("split", "cv", "we used a 5-fold cross validation", True),
        ("inject_relevant", False, "we added a correct passage at position k", False),
    ],
)
def test_states_reads_values_as_papers_print_them(
    key: str, value: Any, text: str, expected: bool
) -> None:
    assert states(key, value, text) is expected


def _entries(name: str) -> list[dict[str, Any]]:
    return yaml.safe_load((STUDIES / name).read_text(encoding="utf-8"))["entries"]


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def test_published_conditions_name_a_casing_only_where_the_paper_does() -> None:
    bad = []
    for entry in _entries("published.yaml"):
        paper = (PAPERS / f"{entry['paper']}.txt").read_text(encoding="utf-8").lower()
        for text in _strings(entry.get("condition")):
            for casing in re.findall(r"\b(uncased|cased)\b", text.lower()):
                if not re.search(rf"\b{casing}\b", paper):
                    bad.append(f"{entry['id']}: condition says {casing!r}: {text!r}")
    assert not bad, "\n".join(bad)


def _printed_as(value: float, text: str) -> bool:
    """Whether ``text`` prints ``value`` (a fraction) to its own precision, as is or in percent."""
    for token in re.findall(r"(?<![\w.])(\d*\.\d+)", text):
        decimals = len(token.split(".")[1])
        for scale, least in ((1, 2), (100, 1)):  # ".184"/"0.18"; "18.4" (percent, one decimal)
            if decimals >= least and abs(float(token) - value * scale) <= 0.5 * 10**-decimals:
                return True
    return False


def test_external_numbers_are_not_printed_by_the_papers() -> None:
    # The same context: a paper that studies the entry's dataset (its study file's datasets).
    studies = {
        path.stem: yaml.safe_load(path.read_text(encoding="utf-8"))
        for path in STUDIES.glob("*.yaml")
        if (PAPERS / f"{path.stem}.txt").is_file()
    }
    bad = []
    for entry in _entries("external.yaml"):
        for paper, study in studies.items():
            if entry["dataset"] not in study.get("datasets", []):
                continue
            for number, line in enumerate(paper_lines(f"{paper}.txt"), 1):
                if _printed_as(float(entry["value"]), line):
                    bad.append(
                        f"{entry['id']}: {entry['value']} is printed at papers/{paper}.txt:{number}"
                    )
    assert not bad, "\n".join(bad)


def test_printed_as_reads_a_fraction_at_its_printed_precision() -> None:
    assert _printed_as(0.184, "| BM25 [10] | 18.4 |")
    assert _printed_as(0.7355, "BERTlets (256)\t.776\t.857\t.525\t.683\t.736")
    assert not _printed_as(0.5058, "MRR 0.927 0.961 0.770 0.875 54")
