"""Snapshot the workflow's plans for every shipped config, or compare two snapshots.

A refactoring of the rules or of reranklab.workflow.plan must not change which jobs a study runs
or what they write (their commands may change). This script records, for params.yaml,
config/*.yaml and studies/*.yaml, the dry-run plan of every job (``snakemake -n -p --forceall``)
and every output with the rule that makes it (``snakemake --summary --forceall``), then
compares two such snapshots:

    python scripts/compare_plans.py snapshot /tmp/plans/before     # on the old commit
    python scripts/compare_plans.py snapshot /tmp/plans/after      # on the new one
    python scripts/compare_plans.py compare /tmp/plans/before /tmp/plans/after

``compare`` exits 1 when a config's outputs, job messages or job counts differ, and says how
many commands changed. About a minute per snapshot on 2 cores.
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
from pathlib import Path

CONFIGS = [
    "params.yaml",
    *sorted(Path("config").glob("*.yaml")),
    *sorted(Path("studies").glob("*.yaml")),
]
# The graded files of studies/ are not study configs.
NOT_STUDIES = {"published.yaml", "external.yaml", "expected.yaml", "claims.yaml"}


def _configs() -> list[Path]:
    return [Path(c) for c in CONFIGS if Path(c).name not in NOT_STUDIES]


def snapshot(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for config in _configs():
        name = str(config).replace("/", "_")
        extra = [] if str(config) == "params.yaml" else ["--configfile", str(config)]
        base = ["snakemake", "--forceall", "--cores", "8", *extra]
        plan = subprocess.run(
            [*base, "-n", "-p", "--resources", "gpu=1"], capture_output=True, text=True
        )
        (out / f"{name}.plan").write_text(plan.stdout + plan.stderr)
        summary = subprocess.run([*base, "--summary"], capture_output=True, text=True)
        rows = sorted("\t".join(line.split("\t")[:3:2]) for line in summary.stdout.splitlines())
        (out / f"{name}.outputs").write_text("\n".join(rows) + "\n")
        if plan.returncode or summary.returncode:
            print(f"{config}: snakemake failed (see {out / name}.plan)", file=sys.stderr)


def _jobs(text: str) -> tuple[collections.Counter, collections.Counter, str]:
    messages = collections.Counter(re.findall(r"^Job \d+: (.*)$", text, re.M))
    commands = collections.Counter(re.findall(r"^Shell command: .*$", text, re.M))
    stats = text.split("Job stats:")[1].split("\n\n")[0] if "Job stats:" in text else ""
    return messages, commands, stats


def compare(before: Path, after: Path) -> bool:
    same = True
    for path in sorted(before.glob("*.plan")):
        name = path.name.removesuffix(".plan")
        outputs_same = (before / f"{name}.outputs").read_text() == (
            after / f"{name}.outputs"
        ).read_text()
        old, new = _jobs(path.read_text()), _jobs((after / path.name).read_text())
        jobs_same = old[0] == new[0] and old[2] == new[2]
        changed = sum((old[1] - new[1]).values())
        verdict = "same jobs and outputs" if outputs_same and jobs_same else "DIFFERENT"
        print(f"{name}: {sum(old[0].values())} jobs, {verdict}, {changed} commands changed")
        same &= outputs_same and jobs_same
    return same


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("snapshot").add_argument("out", type=Path)
    both = sub.add_parser("compare")
    both.add_argument("before", type=Path)
    both.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.command == "snapshot":
        snapshot(args.out)
        return 0
    return 0 if compare(args.before, args.after) else 1


if __name__ == "__main__":
    sys.exit(main())
