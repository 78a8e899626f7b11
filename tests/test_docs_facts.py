"""Statements of fact in the docs that have a source elsewhere stay in step with it."""

from __future__ import annotations

import re
from pathlib import Path

import tomllib

REPO = Path(__file__).resolve().parents[1]


def test_the_stated_python_version_is_pyprojects():
    required = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"]
    version = re.fullmatch(r">=\s*(3\.\d+)", required).group(1)
    for page in ("docs/getting-started.md", "docs/faq.md"):
        text = (REPO / page).read_text()
        stated = set(re.findall(r"Python (3\.\d+) or later|(3\.\d+) or later", text))
        found = {a or b for a, b in stated}
        assert found == {version}, (page, found, required)


def test_the_citation_file_names_the_five_papers():
    text = (REPO / "CITATION.cff").read_text()
    for arxiv in ("1901.04085", "1908.06780", "1905.07588", "2106.07316"):
        assert arxiv in text
    assert "10.1145/3397271.3401194" in text
