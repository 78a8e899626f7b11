"""``reranklab regress``: grade finished studies against the reproduction matrix and the papers'
claims (OK / FAIL / NOT RUN), as text, JSON, a Markdown file or the generated pages' tables.

A summary is graded on its own study's entries and claims (the quick start's on the quick
start's): the other papers' entries, which it cannot run, are left out unless ``--all-studies``
asks for them. Without any summary the whole matrix is listed (as NOT RUN). The generated pages
(``--readme``, ``--docs``) always show every study.
"""

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
    parser.add_argument(
        "--all-studies",
        action="store_true",
        help="grade every study of the matrix and the claims, not only the studies of the given "
        "summaries (those of other studies are NOT RUN)",
    )
    _add_outputs(parser)


def _add_outputs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--readme",
        default=None,
        help="rewrite the generated tables of this file (README.md: the quick start's) between "
        "its regress:quickstart, regress:matrix, regress:learned and regress:claims markers; "
        "implies --all-studies",
    )
    parser.add_argument(
        "--docs",
        default=None,
        metavar="DIR",
        help="rewrite the generated tables of the Markdown pages under DIR (docs/: the matrix, "
        "whether each trained cell learned, and the findings) between their regress:* markers; "
        "implies --all-studies",
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
    from reranklab.grading import matrix_file, regress
    from reranklab.grading.evidence import load_evidence

    matrix = args.matrix if args.matrix is not None else matrix_file.default_matrix()
    summaries = args.summary
    if summaries is None:
        # No summary given: grade the default one if the study ran, else print the matrix as NOT RUN.
        default = matrix_file.DEFAULT_SUMMARY
        summaries = [default] if Path(default).is_file() else []
    evidence = load_evidence(summaries)
    pages = _pages(args)
    entries = [entry for path in matrix for entry in matrix_file.load_matrix(path)]
    # The run's own studies, unless asked for others (or nothing ran: then the matrix is listed).
    own = (
        regress.studies_run(evidence.rows)
        if evidence.rows and args.study is None and not args.all_studies and not pages
        else None
    )
    scoped = entries if own is None else regress.of_studies_run(entries, evidence.rows)
    grades = regress.grade(scoped, evidence.rows, study=args.study)
    graded_claims = _grade_claims(args, evidence)
    if own is not None:
        graded_claims = [g for g in graded_claims if g.study in own]
    _print(args, grades, graded_claims)
    if own is not None and len(scoped) < len(entries) and not args.json:
        print(
            f"(graded the entries of {', '.join(own)}; {len(entries) - len(scoped)} entries of "
            "other studies left out: --all-studies grades the whole matrix)"
        )
    if args.out:
        _write_markdown(args.out, grades, graded_claims)
    for page in pages:
        _rewrite_page(page, grades, graded_claims, evidence)
    if regress.counts(grades)[matrix_file.FAIL] and not args.exit_zero:
        raise SystemExit(1)


def _pages(args: argparse.Namespace) -> list[Path]:
    """The files whose generated tables to rewrite: --readme, and the pages under --docs that hold
    a regress marker."""
    from reranklab.errors import ConfigError

    pages = [Path(args.readme)] if args.readme else []
    if args.docs:
        folder = Path(args.docs)
        if not folder.is_dir():
            raise ConfigError(f"--docs {folder}: not a folder")
        found = sorted(
            path for path in folder.rglob("*.md") if _sections(path.read_text(encoding="utf-8"))
        )
        if not found:
            raise ConfigError(
                f"--docs {folder}: no Markdown page holds a <!-- regress:... --> marker"
            )
        pages += found
    return pages


def _grade_claims(args: argparse.Namespace, evidence: Any) -> list:
    """The papers' claims graded on the evidence (none with --no-claims or no claims file)."""
    from reranklab.grading.claim_file import load_claims
    from reranklab.grading.claims import grade_claims
    from reranklab.grading.matrix_file import default_path
    from reranklab.models.registry import cross_encoders

    claims_path = args.claims if args.claims is not None else default_path("claims.yaml")
    if not claims_path or args.no_claims:
        return []
    found = load_claims(claims_path)
    return grade_claims(
        found.claims,
        evidence,
        found.alpha,
        found.correction,
        paper=args.study,
        cross_encoders=cross_encoders(),
    )


def _print(args: argparse.Namespace, grades: list, graded_claims: list) -> None:
    from reranklab.grading import claim_grade, regress
    from reranklab.report import claims_table, regress_table

    if args.json:
        matrix = regress.to_json(grades)
        print(json.dumps({**matrix, "claims": claim_grade.to_json(graded_claims)}, indent=2))
    else:
        print(regress_table.format_text(grades), end="")
        if graded_claims:
            print(claims_table.format_text(graded_claims), end="")


def _write_markdown(out: str, grades: list, graded_claims: list) -> None:
    from reranklab.io import atomic_write_text
    from reranklab.report import claims_table, regress_table

    text = regress_table.format_markdown(grades)
    if graded_claims:
        text += "\n" + claims_table.format_markdown(graded_claims)
    atomic_write_text(out, text)
    log.info("regression report written to %s", out)


SECTIONS = ("regress:quickstart", "regress:matrix", "regress:learned", "regress:claims")
"""The generated sections a page may hold, each between its start and end markers."""


def _sections(text: str) -> list[str]:
    """The generated sections whose start marker stands on a line of its own in ``text`` (a page
    that only mentions a marker in its prose holds none)."""
    lines = {line.strip() for line in text.splitlines()}
    return [name for name in SECTIONS if f"<!-- {name}:start -->" in lines]


def _rewrite_page(page: Path, grades: list, graded_claims: list, evidence: Any) -> None:
    """Replace the generated tables of ``page`` that it has markers for (at least one)."""
    from reranklab.errors import ConfigError
    from reranklab.grading.learned import learned_rows
    from reranklab.io import atomic_write_text, markers
    from reranklab.models.registry import cross_encoders
    from reranklab.report import learned_table, regress_table
    from reranklab.report.quickstart_table import format_quickstart

    text = page.read_text(encoding="utf-8")
    present = _sections(text)
    if not present:
        raise ConfigError(
            f"{page}: holds none of the generated sections ({', '.join(SECTIONS)}): needs a line "
            "<!-- <section>:start --> and, after it, one line <!-- <section>:end -->"
        )
    # Each table is built only for a page that holds its section (the learned table regrades
    # every trained cell; the matrix page needs none of it).
    builders = {
        "regress:matrix": lambda: regress_table.format_readme(grades),
        "regress:claims": lambda: graded_claims and _claims_section(graded_claims, evidence),
        "regress:learned": lambda: (
            evidence.rows
            and learned_table.format_markdown(
                learned_rows(evidence, cross_encoders=cross_encoders())
            )
        ),
        "regress:quickstart": lambda: format_quickstart(evidence),
    }
    for name in present:
        table = builders[name]()
        if table:  # no claims graded, no quick start given: the section is left as it is
            text = markers.replace_section(text, name, table, page)
    atomic_write_text(page, text)
    log.info("the generated tables of %s rewritten (%s)", page, ", ".join(present))


def _claims_section(graded_claims: list, evidence: Any) -> str:
    """The claims table, after the sentence that says what they were graded on (the studies'
    encoder, data, training and seeds, read from the rows: claims_table.describe_evidence)."""
    from reranklab.report import claims_table

    table = claims_table.format_markdown(graded_claims, title=None)
    return f"{claims_table.describe_evidence(graded_claims, evidence)}\n\n{table}"
