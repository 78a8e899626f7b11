"""Drive the study's HTML report and the MLflow UI in headless Chromium, as a person would.

Used by tests/test_workflow.py (the assertions) and scripts/screenshots.py (the README's
pictures of the quick start). Chromium is Debian's (``apt-get install chromium``; .ci/run
installs it), driven through Playwright's Python API with ``executable_path`` (Playwright's own
browser download is never used).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

VIEWPORT = {"width": 1400, "height": 900}


def chromium_path() -> str | None:
    """``RERANKLAB_CHROMIUM``, else the first Chromium on PATH."""
    given = os.environ.get("RERANKLAB_CHROMIUM")
    if given:
        return given
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


@contextmanager
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=chromium_path(), args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            yield launched
        finally:
            launched.close()


def open_item(page: Any, category: str, item: str, subcategory: str | None = None) -> Any:
    """From the report's start page, show an item (its eye button) of a category."""
    page.get_by_text(category, exact=True).first.click()
    if subcategory:
        page.get_by_text(subcategory, exact=True).first.click()
    page.locator("tr", has_text=item).locator("a[iconname=eye]").first.click()
    page.wait_for_timeout(700)
    return page


def item_frame(page: Any) -> Any:
    """The frame of an HTML item (the report embeds it as a data: URL)."""
    frames = [frame for frame in page.frames if frame.url.startswith("data:text/html")]
    assert frames, "no HTML item is shown"
    return frames[-1]


def report_views(report: Path, dataset: str, shots: Path) -> dict[str, Any]:
    """Open the report's summary table and a dataset's methods figure; screenshot both.

    Returns what a person sees: the summary's visible text, and the shown figure's width.
    """
    shots.mkdir(parents=True, exist_ok=True)
    with browser() as chromium:
        page = chromium.new_page(viewport=VIEWPORT)
        page.goto(report.resolve().as_uri())
        page.get_by_text("Summary", exact=True).first.wait_for(timeout=30_000)
        open_item(page, "Summary", "summary (table)")
        frame = item_frame(page)
        table = frame.locator("table").first
        table.wait_for(state="visible", timeout=10_000)
        summary_text = table.inner_text()
        page.screenshot(path=str(shots / "report-summary.png"))

        page.goto(report.resolve().as_uri())
        open_item(page, dataset, "MAP and MRR per cell (figure)", "Methods compared")
        image = page.locator("img[src^='data:image/png']").first
        image.wait_for(state="visible", timeout=10_000)
        width = image.evaluate("e => e.naturalWidth")
        page.screenshot(path=str(shots / "report-methods.png"))
    return {"summary": summary_text, "figure_width": width}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def mlflow_ui(store: Path, timeout: float = 90.0) -> Iterator[str]:
    """``mlflow server`` on the study's sqlite store, on 127.0.0.1 only; yields its URL."""
    port = free_port()
    command = [
        str(Path(sys.executable).parent / "mlflow"),
        "server",
        "--backend-store-uri",
        f"sqlite:///{store.resolve()}",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
    ]
    server = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=store.parent
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"mlflow server did not start on {url}") from None
                time.sleep(0.5)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()


def mlflow_runs_view(
    url: str, experiment_id: str, wanted: list[str], shot: Path
) -> dict[str, bool]:
    """Open the experiment's runs view (model-training layout); which run names are visible."""
    shot.parent.mkdir(parents=True, exist_ok=True)
    with browser() as chromium:
        page = chromium.new_page(viewport=VIEWPORT)
        page.goto(f"{url}/#/experiments/{experiment_id}/runs?workflowType=machine_learning")
        page.get_by_text(wanted[0]).first.wait_for(timeout=60_000)
        page.wait_for_timeout(1000)
        # The assistant panel (MLflow 3.x) covers half the page: close it if it is open.
        close = page.locator("button[aria-label='Close']")
        if close.count():
            close.first.click()
            page.wait_for_timeout(300)
        seen = {name: page.get_by_text(name).first.is_visible() for name in wanted}
        page.screenshot(path=str(shot))
    return seen
