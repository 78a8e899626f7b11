"""scripts/screenshots.py, the documentation's pictures of a finished quick start: its arguments
and its refusals (a missing or foreign results folder), without a browser or a study run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers_scripts import load_script

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "screenshots.py"


@pytest.fixture(scope="module")
def screenshots():
    return load_script(SCRIPT, "screenshots_script")


def _finished(results: Path, title: str) -> Path:
    (results / "report").mkdir(parents=True)
    (results / "summary.json").write_text(json.dumps({"title": title, "rows": []}))
    for name in ("report.html", "report/mlflow.json", "mlflow.db"):
        (results / name).write_text("x")
    return results


def test_defaults_are_the_quick_starts_results_and_docs_img(screenshots) -> None:
    args = screenshots.parse_args([])
    assert (args.results, args.study, args.dataset, args.out) == (
        Path("results"),
        "quickstart",
        "insuranceqa",
        Path("docs/img"),
    )
    args = screenshots.parse_args(["--results", "r", "--study", "s", "--out", "o"])
    assert (args.results, args.study, args.out) == (Path("r"), "s", Path("o"))


def test_help_and_unknown_options(screenshots, capsys) -> None:
    with pytest.raises(SystemExit) as shown:
        screenshots.parse_args(["--help"])
    assert shown.value.code == 0 and "--results" in capsys.readouterr().out
    with pytest.raises(SystemExit) as refused:
        screenshots.parse_args(["--nope"])
    assert refused.value.code == 2


def test_a_missing_study_is_refused_saying_what_to_run(screenshots, tmp_path, capsys) -> None:
    assert screenshots.main(["--results", str(tmp_path / "results")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(
        "summary.json is missing (written by the summarize rule): run make quickstart first"
    )
    assert len(err.splitlines()) == 1


def test_another_studys_results_are_refused(screenshots, tmp_path, capsys) -> None:
    results = _finished(tmp_path / "results", "reranklab")
    assert screenshots.problem(results, "reranklab") is None
    assert screenshots.main(["--results", str(results)]) == 2
    assert "holds study 'reranklab', not 'quickstart'" in capsys.readouterr().err
    (results / "report.html").unlink()
    assert "report.html is missing" in screenshots.problem(results, "reranklab")
