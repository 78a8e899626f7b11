"""Write ``first_stages.json`` beside a study recorded before summaries kept their first stages.

For each BM25 dataset of the study it re-runs the workflow up to the first-stage record
(download, prepare, index, retrieve: deterministic, no model) in a fresh ``reranklab init``
folder with the study's own configuration file, then keeps, for the record's test queries, the
first stage's recall at its depth and which queries were given a planted answer. The grading
(:mod:`reranklab.grading.evidence`) reads it when the recorded summary has no ``first_stages``.

    python scripts/backfill_first_stages.py --study-file studies/minilm/monobert2019.yaml \\
        --record studies/results/minilm-cpu/monobert2019

Use it only with the study file the record was made with (its provenance's commit): the
planted answers follow from its protocol.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from statistics import fmean

BIN = Path(sys.executable).parent


def _commit() -> str:
    out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def backfill(study_file: Path, record: Path, work: Path) -> dict:
    summary = json.loads((record / "summary.json").read_text())
    per_query = json.loads((record / "per_query.json").read_text())
    stages = {r["dataset"]: r["key"] for r in summary["rows"] if r.get("first_stage")}
    bm25 = sorted(d for d, key in stages.items() if key.endswith("/bm25"))
    subprocess.run([BIN / "reranklab", "init", str(work)], check=True, capture_output=True)
    targets = [f"results/first_stage/{d}/first_stage.json" for d in bm25]
    subprocess.run(
        [BIN / "snakemake", *targets, "--cores", "2", "--configfile", str(study_file.resolve())],
        cwd=work,
        check=True,
        env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"},
    )
    found = {}
    for dataset in bm25:
        made = json.loads((work / targets[bm25.index(dataset)]).read_text())
        qids = sorted(per_query[stages[dataset]])
        planted = sorted(set(made["planted"]) & set(qids))
        found[dataset] = {
            "first_stage": made["first_stage"],
            "depth": made["depth"],
            "planted_answers": made["planted_answers"],
            "n_queries": len(qids),
            "recall_at_depth": fmean(made["recall"].get(q, 0.0) for q in qids),
            "n_planted": len(planted),
            "planted": planted,
            "made": {
                "by": f"scripts/backfill_first_stages.py --study-file {study_file}",
                "commit": _commit(),
                "on": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            },
        }
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study-file", type=Path, required=True)
    parser.add_argument("--record", type=Path, required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir="results") as tmp:
        found = backfill(args.study_file, args.record, Path(tmp) / "study")
    out = args.record / "first_stages.json"
    out.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
    for dataset, info in found.items():
        print(
            f"{out}: {dataset} recall@{info['depth']} {info['recall_at_depth']:.3f}, "
            f"{info['n_planted']} of {info['n_queries']} planted"
        )


if __name__ == "__main__":
    main()
