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


def _losses(folder: Path, summary: dict) -> dict[str, list[float]]:
    # Each trained cell's loss near the start and at the end, as the grading reads it
    # (reranklab.grading.evidence: the means of the first and last tenth of its curve).
    from reranklab.grading.evidence import live_training

    losses = {}
    for row in summary["rows"]:
        if not row["first_stage"]:
            for model in live_training(folder / row["metrics_path"]):
                if model["loss_start"] is not None:
                    losses[row["key"]] = [model["loss_start"], model["loss_end"]]
                    break
    return losses


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


def _loss(probe: dict, row: dict, first_cell: bool) -> list[float]:
    loss = probe.get("loss") or []
    if isinstance(loss, dict):
        return loss.get(row["key"]) or []
    return loss if first_cell else []  # kept before losses were kept per cell: the first one's


def _row(path: Path) -> str:
    summary = json.loads(path.read_text())
    rows = summary["rows"]
    # Each cell against the first stage of its own dataset (a probe may run several datasets).
    firsts = {r["dataset"]: r for r in rows if r["first_stage"]}
    probe = summary.get("probe", {})
    out = []
    trained = [row for row in rows if not row["first_stage"]]
    for index, row in enumerate(trained):
        first = firsts[row["dataset"]]
        loss = _loss(probe, row, index == 0)
        delta = row["MAP"] - first["MAP"]
        p = row.get("MAP_p")
        recall = first.get("recall_at_depth")
        out.append(
            f"| {probe.get('name', path.stem)} | {row['dataset']} {first['variant']} | "
            f"{row['variant']}-L{row['max_length']} | "
            f"{row['n_queries']} | {first['MAP']:.3f} | {row['MAP']:.3f} | {delta:+.3f} | "
            f"{'–' if p is None else f'{p:.3g}'} | {row['MRR']:.3f} | "
            f"{'–' if recall is None else f'{recall:.3f}'} | "
            f"{f'{loss[0]:.3f} → {loss[1]:.3f}' if len(loss) >= 2 else '–'} | "
            f"{probe.get('wall_seconds') or '–'} |"
        )
    return "\n".join(out)


def table(here: Path) -> str:
    lines = [
        "| probe | dev set, first stage | cell | dev queries | first stage MAP | MAP | Δ MAP | p (t-test) | MRR | first-stage recall | loss | wall s |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|",
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
