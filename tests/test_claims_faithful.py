"""studies/claims.yaml against the papers' texts: quotes exact, tables read off, effects known.

The YAML is read as it stands (``yaml.safe_load``), not through reranklab's loader, so that
these checks hold whatever keys the grader accepts. The papers' texts are not part of the
project: the checks that need them skip when ``../shared/papers`` is not beside the checkout.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
CLAIMS = REPO / "studies" / "claims.yaml"
PUBLISHED = REPO / "studies" / "published.yaml"
PAPERS_DIR = REPO.parent / "shared" / "papers"
PAPERS = ("mass2019", "bertsel2020", "monobert2019", "markedbert2020", "bertdmn2021")
ELLIPSIS = " … "
# A quote that gives one line may run over this many following lines (a sentence broken by a
# page or a blank line); a range cite (`:first-last`) bounds the quote exactly.
RUN_OVER = 5
# An `equal` margin must clear the paper's own |A − B| by this much ("with room").
ROOM = 0.005
CITE = re.compile(r"papers/(?P<paper>\w+)\.txt:(?P<first>\d+)(?:-(?P<last>\d+))?")
PAIRED = ("better", "no_worse", "equal")


def _claims() -> list[dict[str, Any]]:
    return yaml.safe_load(CLAIMS.read_text(encoding="utf-8"))["claims"]


@cache
def _published() -> dict[str, dict[str, Any]]:
    entries = yaml.safe_load(PUBLISHED.read_text(encoding="utf-8"))["entries"]
    return {entry["id"]: entry for entry in entries}


@cache
def _study(paper: str) -> dict[str, Any]:
    return yaml.safe_load((REPO / "studies" / f"{paper}.yaml").read_text(encoding="utf-8"))


@cache
def _lines(paper: str) -> list[str]:
    return (PAPERS_DIR / f"{paper}.txt").read_text(encoding="utf-8").splitlines()


def _normalise(text: str) -> str:
    return " ".join(text.split())


def _cites(claim: Mapping[str, Any]) -> list[str]:
    cite = claim["cite"]
    return list(cite) if isinstance(cite, list) else [cite]


def _parsed(cite: str) -> tuple[str, int, int | None]:
    match = CITE.fullmatch(cite)
    assert match, f"{cite!r}: expected papers/<file>:<line> or papers/<file>:<first>-<last>"
    last = match.group("last")
    return match.group("paper"), int(match.group("first")), None if last is None else int(last)


def _variant(cell: Any) -> str:
    return cell if isinstance(cell, str) else cell["variant"]


def _max_length(cell: Any) -> int | None:
    return None if isinstance(cell, str) else cell.get("max_length")


def _paper_effect(claim: Mapping[str, Any]) -> float:
    effect = claim["paper_effect"]
    if "value" in effect:
        return float(effect["value"])
    published = _published()
    return float(published[effect["a"]]["value"]) - float(published[effect["b"]]["value"])


def _needs_papers() -> None:
    if not PAPERS_DIR.is_dir():
        pytest.skip(f"the papers' texts are not beside the checkout ({PAPERS_DIR} is absent)")


# -- the file's shape ---------------------------------------------------------------------------


def test_there_are_enough_claims_with_unique_ids_for_every_paper():
    claims = _claims()
    ids = [str(claim.get("id")) for claim in claims]
    assert len(claims) >= 34, len(claims)
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})
    for claim in claims:
        assert claim["id"].startswith(claim["paper"] + "/"), claim["id"]
    assert {claim["paper"] for claim in claims} == set(PAPERS)


def test_every_claim_names_its_source():
    for claim in _claims():
        assert claim.get("source") in ("stated", "table"), claim["id"]
        if "stand_in" in claim:
            assert isinstance(claim["stand_in"], str) and claim["stand_in"].strip(), claim["id"]


def test_a_table_claim_says_it_is_read_off_a_table():
    for claim in _claims():
        if claim["source"] == "table":
            assert claim["claim"].startswith("Read off "), claim["id"]
        else:
            assert not claim["claim"].startswith("Read off "), claim["id"]


def test_every_claim_compares_cells_its_papers_study_can_name():
    """A cell outside the study's grid stays NOT RUN: its claim's note must say so."""
    for claim in _claims():
        study = _study(claim["paper"])
        assert claim["dataset"] in study["datasets"], claim["id"]
        known = {*study["grid"]["variant"], "bm25", "pool"}
        for side in ("a", "b"):
            if _variant(claim[side]) not in known:
                assert claim.get("not_run") or "NOT RUN" in claim.get("note", ""), (
                    claim["id"],
                    side,
                )


# -- the paper's own numbers --------------------------------------------------------------------


def test_every_paper_effect_names_published_entries_of_the_claims_dataset_and_measure():
    published = _published()
    for claim in _claims():
        effect = claim.get("paper_effect")
        if effect is None:
            continue
        assert claim["kind"] in PAIRED, claim["id"]
        if "value" in effect:
            assert set(effect) == {"value", "cite"}, claim["id"]
            _parsed(effect["cite"])
            continue
        assert set(effect) == {"a", "b"}, claim["id"]
        for side in ("a", "b"):
            entry = published.get(effect[side])
            assert entry is not None, (claim["id"], effect[side], "not in studies/published.yaml")
            assert entry["paper"] == claim["paper"], (claim["id"], effect[side])
            assert entry["dataset"] == claim["dataset"], (claim["id"], effect[side])
            assert entry["measure"] == claim["measure"], (claim["id"], effect[side])


def _printed(paper: str, dataset: str, measure: str, cell: Any) -> bool:
    """Whether the paper prints a number of this cell on this dataset and measure."""
    for entry in _published().values():
        if (entry["paper"], entry["dataset"], entry["measure"]) != (paper, dataset, measure):
            continue
        if entry.get("variant") != _variant(cell):
            continue
        length, printed_length = _max_length(cell), entry.get("max_length")
        if length is None or printed_length is None or length == printed_length:
            return True
    return False


def test_a_claim_whose_paper_prints_both_numbers_has_its_paper_effect():
    for claim in _claims():
        if claim["kind"] not in PAIRED or "paper_effect" in claim:
            continue
        both = all(
            _printed(claim["paper"], claim["dataset"], claim["measure"], claim[side])
            for side in ("a", "b")
        )
        assert not both, f"{claim['id']}: the paper prints both numbers: give paper_effect"


def test_the_papers_own_numbers_pass_its_own_margins():
    for claim in _claims():
        kind = claim["kind"]
        if kind in ("no_worse", "equal"):
            assert claim.get("delta", 0) > 0, claim["id"]
        if "paper_effect" not in claim:
            continue
        effect, delta = _paper_effect(claim), claim.get("delta")
        if kind == "no_worse":
            assert effect > -delta, (claim["id"], effect, delta)
        elif kind == "equal":
            assert abs(effect) < delta - ROOM, (claim["id"], effect, delta)


def test_a_ratio_claims_published_speeds_pass_its_at_least():
    published = _published()
    for claim in _claims():
        if claim["kind"] != "ratio":
            continue
        full, lite = (published[i] for i in claim["published"])
        assert lite["value"] / full["value"] >= claim["at_least"], claim["id"]


# -- against the papers' texts ------------------------------------------------------------------


def test_every_cited_line_exists_in_its_paper():
    _needs_papers()
    for claim in _claims():
        cites = _cites(claim)
        if "paper_effect" in claim and "cite" in claim["paper_effect"]:
            cites.append(claim["paper_effect"]["cite"])
        for cite in cites:
            paper, first, last = _parsed(cite)
            assert paper == claim["paper"], (claim["id"], cite)
            lines = _lines(paper)
            assert 1 <= first <= (last or first) <= len(lines), (claim["id"], cite)
            assert lines[first - 1].strip(), (claim["id"], cite, "an empty line")


def _quote_found(quote: str, lines: list[str], first: int, last: int | None) -> bool:
    """Every fragment in order, the first one starting on line ``first``."""
    end = last if last is not None else min(len(lines), first + RUN_OVER)
    opening = _normalise(lines[first - 1])
    text = _normalise(" ".join(lines[first - 1 : end]))
    fragments = [_normalise(part) for part in quote.split(ELLIPSIS)]
    start = text.find(fragments[0])
    # The quote opens on the cited line: its first fragment starts within that line's text.
    if start == -1 or start >= len(opening):
        return False
    position = start + len(fragments[0])
    for fragment in fragments[1:]:
        found = text.find(fragment, position)
        if found == -1:
            return False
        position = found + len(fragment)
    return True


def test_every_stated_claim_quotes_its_paper_exactly():
    _needs_papers()
    for claim in _claims():
        if claim["source"] != "stated":
            continue
        cites = _cites(claim)
        assert len(cites) == 1, f"{claim['id']}: a quote has one cite (its first line or range)"
        paper, first, last = _parsed(cites[0])
        assert _quote_found(claim["claim"], _lines(paper), first, last), (
            f"{claim['id']}: not found verbatim at {cites[0]}: {claim['claim']!r}"
        )


def test_a_table_claims_numbers_are_on_its_cited_rows():
    _needs_papers()
    for claim in _claims():
        if claim["source"] != "table":
            continue
        rows = " ".join(_lines(_parsed(c)[0])[_parsed(c)[1] - 1] for c in _cites(claim))
        numbers = re.findall(r"\d*\.\d+", claim["claim"])
        assert len(numbers) >= 2, claim["id"]
        for number in numbers:
            assert number in rows, (claim["id"], number)


def test_the_quote_check_finds_only_what_the_text_says():
    lines = ["", "We find that A beats B", "by a wide margin. Then C.", "", "D is E."]
    assert _quote_found("We find that A beats B by a wide margin.", lines, 2, None)
    assert _quote_found("A beats B … margin", lines, 2, None)
    assert _quote_found("by a wide margin. Then C. D is E.", lines, 3, None)
    assert not _quote_found("by a wide margin.", lines, 2, None)  # opens on the next line
    assert not _quote_found("margin … A beats B", lines, 2, None)  # fragments out of order
    assert not _quote_found("We find that A beats C", lines, 2, None)
    assert not _quote_found("Then C. D is E.", lines, 3, 3)  # beyond the range cite
