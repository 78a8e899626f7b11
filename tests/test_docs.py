"""The front page (README.md) and the documentation site (mkdocs.yml, docs/): the site builds in
strict mode (a broken link or anchor fails it), every generated page and table is the output of
its command, and the README stays a front page whose links lead somewhere."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from reranklab.cli import main

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
RECORDED = sorted(f"{p.parent}/" for p in REPO.glob("studies/results/*/*/summary.json"))
FRONT_PAGE_LINES = 250


class _MkdocsLoader(yaml.SafeLoader):
    """mkdocs.yml as YAML: its ``!ENV`` values (read by mkdocs from the environment) as None."""


_MkdocsLoader.add_constructor("!ENV", lambda loader, node: None)


def _build(site: Path) -> subprocess.CompletedProcess[str]:
    """`mkdocs build --strict` of the checkout into ``site``, as `make docs` runs it."""
    pytest.importorskip(
        "mkdocs", reason="the docs extra is not installed: pip install -e '.[docs]'"
    )
    pytest.importorskip(
        "material", reason="the docs extra is not installed: pip install -e '.[docs]'"
    )
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin", "HOME": str(site.parent)},
        timeout=300,
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("docs") / "site"
    built = _build(out)
    assert built.returncode == 0, built.stdout + built.stderr
    return out


def test_the_site_builds_in_strict_mode_with_every_page(site: Path) -> None:
    nav = yaml.load((REPO / "mkdocs.yml").read_text(encoding="utf-8"), _MkdocsLoader)["nav"]

    def pages(entries: list) -> list[str]:
        found = []
        for entry in entries:
            for value in entry.values():
                found += pages(value) if isinstance(value, list) else [value]
        return found

    listed = pages(nav)
    assert sorted(listed) == sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")), (
        "every page of docs/ is in mkdocs.yml's nav, and every nav entry is a page"
    )
    for page in listed:
        assert (site / page.replace(".md", ".html")).is_file(), page
    # BENCHMARKS.md is included into the speed page, not copied by hand.
    assert "Against the peers" in (site / "speed.html").read_text(encoding="utf-8")


def test_a_broken_anchor_fails_the_build(tmp_path: Path) -> None:
    """mkdocs.yml's validation makes a link to a missing anchor a warning, --strict an error."""
    pytest.importorskip("mkdocs", reason="the docs extra is not installed")
    copy = tmp_path / "repo"
    copy.mkdir()
    shutil.copytree(DOCS, copy / "docs")
    shutil.copy(REPO / "mkdocs.yml", copy / "mkdocs.yml")
    shutil.copy(REPO / "BENCHMARKS.md", copy / "BENCHMARKS.md")
    (copy / "src").symlink_to(REPO / "src")  # the API page is written from the docstrings
    with (copy / "docs/index.md").open("a", encoding="utf-8") as page:
        page.write("\n[broken](studies.md#no-such-section)\n")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "s")],
        cwd=copy,
        capture_output=True,
        text=True,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        timeout=300,
    )
    assert built.returncode != 0
    assert "no-such-section" in built.stdout + built.stderr


def test_the_reference_pages_are_the_commands_output(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/reference/ is `reranklab docs-reference`'s output: settings from the schema, the
    command line from --help."""
    assert main(["docs-reference", "--check", "--out", str(DOCS / "reference")]) in (0, None), (
        "run: reranklab docs-reference"
    )
    settings = (DOCS / "reference/settings.md").read_text(encoding="utf-8")
    assert "| `learning_rate` |" in settings and "## Training {#def-training}" in settings
    cli = (DOCS / "reference/cli.md").read_text(encoding="utf-8")
    assert (
        "### reranklab regress" in cli and "--all-studies" in cli and "### reranklab train" in cli
    )


def test_docs_reference_check_names_a_stale_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["docs-reference", "--out", str(tmp_path)]) in (0, None)
    (tmp_path / "cli.md").write_text("stale\n", encoding="utf-8")
    with pytest.raises(SystemExit) as stopped:
        main(["docs-reference", "--check", "--out", str(tmp_path)])
    assert stopped.value.code == 1
    assert f"{tmp_path / 'cli.md'}: out of date" in capsys.readouterr().err


def test_the_generated_tables_are_the_commands_output(tmp_path: Path, monkeypatch) -> None:
    """The README's quick-start table and docs/'s matrix and findings are `make readme-tables`'
    output (`reranklab regress --readme README.md --docs docs`), never pasted."""
    monkeypatch.chdir(REPO)
    shutil.copy(REPO / "README.md", tmp_path / "README.md")
    shutil.copytree(DOCS, tmp_path / "docs", ignore=shutil.ignore_patterns("img"))
    args = ["regress", "--summary", *RECORDED, "--readme", str(tmp_path / "README.md")]
    main([*args, "--docs", str(tmp_path / "docs"), "--exit-zero"])
    for page in ["README.md", *(f"docs/{p.relative_to(DOCS)}" for p in DOCS.rglob("*.md"))]:
        assert (tmp_path / page).read_text(encoding="utf-8") == (REPO / page).read_text(
            encoding="utf-8"
        ), f"{page}: run make readme-tables"
    matrix = (DOCS / "reproduction.md").read_text(encoding="utf-8")
    assert "<!-- regress:matrix:start -->" in matrix and "Every entry (" in matrix
    assert "<!-- regress:claims:start -->" in (DOCS / "findings.md").read_text(encoding="utf-8")


def test_the_readme_is_a_front_page_whose_links_lead_somewhere() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= FRONT_PAGE_LINES, f"README.md has {len(lines)} lines: move detail to docs/"
    # The two commands for a fresh machine come first, before any other section.
    first_block = text.index("```bash")
    assert "make quickstart" in text[first_block : first_block + 300]
    assert "make test" in text[first_block : first_block + 300]
    assert "<!-- regress:quickstart:start -->" in text
    assert "regress:matrix" not in text and "regress:claims" not in text  # on the docs pages
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if not target.startswith(("http://", "https://")):
            assert (REPO / target).exists(), f"README.md links to {target}, which does not exist"
    # Outside the generated table, a number the README shows would be one no command keeps.
    start, end = text.index("regress:quickstart:start"), text.index("regress:quickstart:end")
    prose = re.sub(r"`[^`]*`|\([^)]*\)", "", text[:start] + text[end:])
    stray = re.findall(r"(?<![\w@.-])\d+(?:[.,]\d+)*(?:\s?(?:min|s|%|GiB|MB))?(?![\w.-])", prose)
    assert stray == [], f"README.md prose shows numbers no command writes: {stray}"


def test_docs_rewrites_only_pages_with_markers_and_says_when_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "plain.md").write_text("# no markers\n", encoding="utf-8")
    code = main(["regress", "--summary", "--no-claims", "--docs", str(tmp_path)])
    assert code == 2
    assert "no Markdown page holds a <!-- regress:... --> marker" in capsys.readouterr().err
    assert (tmp_path / "plain.md").read_text(encoding="utf-8") == "# no markers\n"


def test_the_site_start_page_in_chromium(site: Path, tmp_path: Path) -> None:
    """The built site's start page, as a person sees it: the title, the navigation to every
    task's page and the quick start's table, in headless Chromium (as the report's tests)."""
    from tests.browser_pages import chromium_path

    pytest.importorskip("playwright.sync_api", reason="the browser tests need playwright")
    if chromium_path() is None:
        pytest.skip("no Chromium on PATH: apt-get install chromium (.ci/run installs it)")
    from tests.browser_pages import VIEWPORT, browser

    with browser() as chromium:
        page = chromium.new_page(viewport=VIEWPORT)
        page.goto((site / "index.html").resolve().as_uri())
        page.get_by_role("heading", name="reranklab").first.wait_for(timeout=30_000)
        nav = page.locator("nav.md-nav--primary").inner_text()
        for title in ("Getting started", "Variants", "Reproduction matrix", "Settings"):
            assert title in nav, title
        table = page.locator("table").first.inner_text()
        assert "bm25" in table and "MAP" in table
        page.screenshot(path=str(tmp_path / "site.png"))
        page.get_by_role("link", name="Getting started").first.click()
        page.get_by_role("heading", name="Getting started").first.wait_for(timeout=30_000)


def test_the_site_searches_as_a_file_without_a_network(site: Path) -> None:
    """Opened from disk (file://), as the README says: search finds pages, and no page loads a
    script from the network (Material's offline plugin would link its web-worker shim from
    unpkg.com; mkdocs.yml ships it in docs/javascripts/)."""
    from tests.browser_pages import chromium_path

    pytest.importorskip("playwright.sync_api", reason="the browser tests need playwright")
    if chromium_path() is None:
        pytest.skip("no Chromium on PATH: apt-get install chromium (.ci/run installs it)")
    from tests.browser_pages import VIEWPORT, browser

    remote = [
        page.relative_to(site)
        for page in site.rglob("*.html")
        if re.search(r"<script[^>]+src=\"https?://", page.read_text(encoding="utf-8"))
    ]
    assert not remote, f"pages loading a script from the network: {remote[:3]}"
    with browser() as chromium:
        page = chromium.new_page(viewport=VIEWPORT)
        requests: list[str] = []
        page.on("request", lambda request: requests.append(request.url))
        page.goto((site / "reference" / "cli.html").resolve().as_uri())
        box = page.locator("input.md-search__input")
        box.click()
        box.press_sequentially("pytrec_eval", delay=50)  # typed, as a reader does
        meta = page.locator(".md-search-result__meta")
        meta.filter(has_text="matching document").wait_for(timeout=30_000)
        assert page.locator("li.md-search-result__item").count() >= 1
        first = page.locator("li.md-search-result__item a").first.get_attribute("href")
        assert first and not first.startswith("http")
    assert all(url.startswith(("file:", "data:", "blob:", "about:")) for url in requests), [
        u for u in requests if not u.startswith("file:")
    ][:3]
