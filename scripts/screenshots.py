"""The documentation's screenshots of a finished quick start: its HTML report and its runs in
the MLflow UI (docs/img/report-summary.png, report-methods.png, mlflow-runs.png).

    make quickstart && .venv/bin/python scripts/screenshots.py      # in the checkout
    .venv/bin/python scripts/screenshots.py --results other/results --study my-study --out /tmp/img

It reads the results only; it needs a finished study (the report, the MLflow store and the
study's MLflow record) of the named study (the quick start's by default, so that the pictures
are the quick start's, not a leftover of another study), and Debian's headless Chromium
(apt-get install chromium), driven as tests/test_workflow.py drives it, through the same helpers
(tests/browser_pages.py). A missing piece stops it with one line saying what to run.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# What a finished study leaves that the screenshots show, and the step that writes each.
NEEDED = {
    "summary.json": "the summarize rule",
    "report.html": "snakemake --report results/report.html (make quickstart does it)",
    "report/mlflow.json": "the track_report rule",
    "mlflow.db": "the track rules",
}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=Path("results"), help="the study's results")
    parser.add_argument("--study", default="quickstart", help="the study they must be of")
    parser.add_argument("--dataset", default="insuranceqa", help="the dataset whose figure to show")
    parser.add_argument("--out", type=Path, default=Path("docs/img"), help="where the PNGs go")
    return parser.parse_args(argv)


def problem(results: Path, study: str) -> str | None:
    """Why ``results`` cannot be photographed as study ``study``'s, or None when it can."""
    for name, writer in NEEDED.items():
        if not (results / name).is_file():
            return f"{results / name} is missing (written by {writer}): run make quickstart first"
    try:
        title = json.loads((results / "summary.json").read_text(encoding="utf-8")).get("title")
    except (ValueError, AttributeError):
        return f"{results / 'summary.json'} is not a study summary"
    if title != study:
        return (
            f"{results} holds study {title!r}, not {study!r}: run make quickstart (or pass --study)"
        )
    return None


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    why = problem(args.results, args.study)
    if why is not None:
        print(f"screenshots: {why}", file=sys.stderr)
        return 2
    from tests.browser_pages import chromium_path, mlflow_runs_view, mlflow_ui, report_views

    if chromium_path() is None:
        print("screenshots: no Chromium on PATH: apt-get install chromium", file=sys.stderr)
        return 2
    seen = report_views(args.results / "report.html", args.dataset, args.out)
    lines = len(seen["summary"].splitlines())
    print(f"report: summary table of {lines} lines, figure {seen['figure_width']} px wide")
    record = json.loads((args.results / "report/mlflow.json").read_text(encoding="utf-8"))
    wanted = sorted(record["cell_run_ids"])
    with mlflow_ui(args.results / "mlflow.db") as url:
        shown = mlflow_runs_view(url, record["experiment_id"], wanted, args.out / "mlflow-runs.png")
    print(f"MLflow: {sum(shown.values())} of {len(shown)} cell runs visible")
    print(
        f"wrote {', '.join(str(args.out / n) for n in sorted(p.name for p in args.out.glob('*.png')))}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
