"""The README's screenshots of a finished study: its HTML report and its runs in the MLflow UI.

    python scripts/screenshots.py                 # after `make quickstart`, in the checkout
    python scripts/screenshots.py --out docs/img --dataset insuranceqa

Drives Debian's headless Chromium (apt-get install chromium) as tests/test_workflow.py does,
through the same helpers (tests/browser_pages.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.browser_pages import mlflow_runs_view, mlflow_ui, report_views  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default="results", help="the study's results folder")
    parser.add_argument("--dataset", default="insuranceqa", help="the dataset whose figure to show")
    parser.add_argument("--out", default="docs/img", help="where the PNGs go")
    args = parser.parse_args()
    results, out = Path(args.results), Path(args.out)
    seen = report_views(results / "report.html", args.dataset, out)
    print(
        f"report: summary table of {len(seen['summary'].splitlines())} lines, figure {seen['figure_width']} px wide"
    )
    record = json.loads((results / "report/mlflow.json").read_text())
    wanted = sorted(record["cell_run_ids"])
    with mlflow_ui(results / "mlflow.db") as url:
        shown = mlflow_runs_view(url, record["experiment_id"], wanted, out / "mlflow-runs.png")
    print(f"MLflow: {sum(shown.values())} of {len(shown)} cell runs visible")


if __name__ == "__main__":
    main()
