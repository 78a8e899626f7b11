"""A study's probe table, from the kept probe summaries (``make probes``).

``--keep DIR --name NAME``: keep a finished probe's summary (its ``results/summary.json``, with
its wall time and training losses) as ``<folder>/results/NAME.json``; then, always, rewrite the
table between the markers of ``<folder>/README.md`` from every kept summary (``--folder``:
``studies/probes/quickstart`` by default). Every probe is scored on dev questions, never on the
test questions.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "studies" / "probes" / "quickstart"
START, END = "<!-- probes:start -->", "<!-- probes:end -->"


def _losses(folder: Path, summary: dict) -> list[float]:
    # The first trained model's loss near the start and at the end, as the grading reads it
    # (reranklab.report.evidence: the means of the first and last tenth of its curve).
    from reranklab.report.evidence import live_training

    for row in summary["rows"]:
        if not row["first_stage"]:
            for model in live_training(folder / row["metrics_path"]):
                if model["loss_start"] is not None:
                    return [model["loss_start"], model["loss_end"]]
    return []


def keep(here: Path, folder: Path, name: str) -> None:
    summary = json.loads((folder / "results" / "summary.json").read_text())
    wall = folder / "wall-seconds"
    summary["probe"] = {
        "name": name,
        "wall_seconds": int(wall.read_text()) if wall.exists() else None,
        "loss": _losses(folder, summary),
        "settings": yaml.safe_load((here / f"{name}.yaml").read_text()),
    }
    (here / "results").mkdir(parents=True, exist_ok=True)
    (here / "results" / f"{name}.json").write_text(
        json.dumps(summary, indent=1, sort_keys=True) + "\n"
    )


def _row(path: Path) -> str:
    summary = json.loads(path.read_text())
    rows = summary["rows"]
    first = next(r for r in rows if r["first_stage"])
    probe = summary.get("probe", {})
    loss = probe.get("loss") or []
    out = []
    for row in rows:
        if row["first_stage"]:
            continue
        delta = row["MAP"] - first["MAP"]
        p = row.get("MAP_p")
        out.append(
            f"| {probe.get('name', path.stem)} | {row['variant']}-L{row['max_length']} | "
            f"{row['n_queries']} | {first['MAP']:.3f} | {row['MAP']:.3f} | {delta:+.3f} | "
            f"{'–' if p is None else f'{p:.3g}'} | {row['MRR']:.3f} | "
            f"{first.get('recall_at_depth') or float('nan'):.3f} | "
            f"{f'{loss[0]:.3f} → {loss[1]:.3f}' if len(loss) >= 2 else '–'} | "
            f"{probe.get('wall_seconds') or '–'} |"
        )
    return "\n".join(out)


def table(here: Path) -> str:
    lines = [
        "| probe | cell | dev queries | first stage MAP | MAP | Δ MAP | p (t-test) | MRR | first-stage recall | loss | wall s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    lines += [_row(path) for path in sorted((here / "results").glob("*.json"))]
    return "\n".join(lines)


def write_table(here: Path) -> None:
    readme = here / "README.md"
    text = readme.read_text()
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    readme.write_text(f"{head}{START}\n{table(here)}\n{END}{tail}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--folder", type=Path, default=HERE, help="the probes' folder")
    parser.add_argument("--keep", type=Path, help="a finished probe's folder")
    parser.add_argument("--name", help="the probe's name (its YAML file's stem)")
    args = parser.parse_args()
    here = args.folder if args.folder.is_absolute() else ROOT / args.folder
    if args.keep:
        keep(here, args.keep, args.name)
    write_table(here)


if __name__ == "__main__":
    main()
