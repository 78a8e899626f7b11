"""``reranklab regress``: grade finished studies against the reproduction matrix and the papers'
claims (OK / FAIL / NOT RUN), as text, JSON, a Markdown file or the README's tables."""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path
from typing import Any

NAME = "regress"
HELP = (
    "grade finished studies against the reproduction matrix (OK / FAIL / NOT RUN); exit 1 on FAIL"
)

log = logging.getLogger("reranklab")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--study", default=None, help="grade only this study's entries")
    parser.add_argument(
        "--summary",
        nargs="*",
        default=None,
        help="summary.json of finished studies, or recorded result folders (studies/results/...); "
        "default: results/summary.json if present (--summary alone: none, the matrix as NOT RUN)",
    )
    parser.add_argument(
        "--matrix",
        nargs="*",
        default=None,
        help="matrix files (default: studies/published.yaml, external.yaml and expected.yaml, "
        "here or shipped in the package)",
    )
    parser.add_argument(
        "--claims",
        default=None,
        help="the papers' findings to grade (default: studies/claims.yaml, here or in the package)",
    )
    parser.add_argument("--no-claims", action="store_true", help="grade the numbers only")
    _add_outputs(parser)


def _add_outputs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--readme",
        default=None,
        help="rewrite the matrix, claims and quick-start tables between this file's "
        "regress:matrix, regress:claims and regress:quickstart markers (README.md)",
    )
    parser.add_argument(
        "--out",
        default=None,
        help="also write the Markdown table here (e.g. results/regression.md)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print JSON instead of one line per entry"
    )
    parser.add_argument(
        "--exit-zero",
        action="store_true",
        help="exit 0 even when an entry FAILs (the DAG's regress rule)",
    )


def run(args: argparse.Namespace) -> None:
    from reranklab.report import regress
    from reranklab.report.evidence import load_evidence

    matrix = args.matrix if args.matrix is not None else regress.default_matrix()
    summaries = args.summary
    if summaries is None:
        # No summary given: grade the default one if the study ran, else print the matrix as NOT RUN.
        summaries = [regress.DEFAULT_SUMMARY] if Path(regress.DEFAULT_SUMMARY).is_file() else []
    evidence = load_evidence(summaries)
    entries = [entry for path in matrix for entry in regress.load_matrix(path)]
    grades = regress.grade(entries, evidence.rows, study=args.study)
    graded_claims = _grade_claims(args, evidence)
    _print(args, grades, graded_claims)
    if args.out:
        _write_markdown(args.out, grades, graded_claims)
    if args.readme:
        _rewrite_readme(Path(args.readme), grades, graded_claims, evidence)
    if regress.counts(grades)[regress.FAIL] and not args.exit_zero:
        raise SystemExit(1)


def _grade_claims(args: argparse.Namespace, evidence: Any) -> list:
    """The papers' claims graded on the evidence (none with --no-claims or no claims file)."""
    from reranklab.report import claims, regress

    claims_path = args.claims if args.claims is not None else regress.default_path("claims.yaml")
    if not claims_path or args.no_claims:
        return []
    found = claims.load_claims(claims_path)
    return claims.grade_claims(
        found.claims, evidence, found.alpha, found.correction, paper=args.study
    )


def _print(args: argparse.Namespace, grades: list, graded_claims: list) -> None:
    from reranklab.report import claims, regress

    if args.json:
        print(
            json.dumps(
                {**regress.to_json(grades), "claims": claims.to_json(graded_claims)}, indent=2
            )
        )
    else:
        print(regress.format_text(grades), end="")
        if graded_claims:
            print(claims.format_text(graded_claims), end="")


def _write_markdown(out: str, grades: list, graded_claims: list) -> None:
    from reranklab.io import atomic_write_text
    from reranklab.report import claims, regress

    text = regress.format_markdown(grades)
    if graded_claims:
        text += "\n" + claims.format_markdown(graded_claims)
    atomic_write_text(out, text)
    log.info("regression report written to %s", out)


def _rewrite_readme(readme: Path, grades: list, graded_claims: list, evidence: Any) -> None:
    """Replace the README's matrix, claims and quick-start tables between their markers."""
    from reranklab.io import atomic_write_text, markers
    from reranklab.report import claims, regress
    from reranklab.report.quickstart_table import format_quickstart

    text = markers.replace_section(
        readme.read_text(encoding="utf-8"),
        "regress:matrix",
        regress.format_readme(grades),
        readme,
    )
    if graded_claims:
        table = claims.format_markdown(graded_claims, title=None)
        text = markers.replace_section(text, "regress:claims", table, readme)
    quickstart = format_quickstart(evidence)
    if quickstart:
        text = markers.replace_section(text, "regress:quickstart", quickstart, readme)
    atomic_write_text(readme, text)
    log.info("the matrix and claims tables of %s rewritten", readme)
