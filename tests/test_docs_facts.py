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


def test_the_studies_page_gives_each_recorded_studys_time():
    import json

    table = {}
    for line in (REPO / "docs/studies.md").read_text().splitlines():
        found = re.match(r"^\| `([\w-]+)\.yaml`.*\| (\d+) min \|$", line)
        if found:
            table[found.group(1)] = int(found.group(2))
    for provenance in sorted((REPO / "studies/results/minilm-cpu").glob("*/provenance.json")):
        study = provenance.parent.name
        minutes = round(json.loads(provenance.read_text())["wall_seconds"] / 60)
        assert table.get(study) == minutes, (study, table.get(study), minutes)


def test_the_own_data_page_shows_the_shipped_config():
    """Copied alone, the entry the page shows must run as the shipped one does (offline, MiniLM),
    not a BERT-base grid that fails without a network."""
    import yaml

    page = (REPO / "docs/own-data.md").read_text(encoding="utf-8")
    shown = re.search(r"Its entry.*?```yaml\n(.*?)```", page, flags=re.S)
    assert shown, "docs/own-data.md: no YAML block after 'Its entry'"
    shipped = yaml.safe_load((REPO / "config/own-data.yaml").read_text(encoding="utf-8"))
    assert yaml.safe_load(shown.group(1)) == shipped
