"""The probe table (scripts/probe_table.py): each cell against its own dataset's first stage."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers_scripts import load_script

REPO = Path(__file__).resolve().parents[1]


def _row(dataset: str, variant: str, first: bool, map_: float, **extra) -> dict:
    key = f"{dataset}/{variant}" + ("" if first else "/L64")
    return {
        "dataset": dataset,
        "variant": variant,
        "first_stage": first,
        "key": key,
        "max_length": None if first else 64,
        "n_queries": 10,
        "MAP": map_,
        "MRR": map_,
        **extra,
    }


def test_a_probe_of_two_datasets_reads_each_cell_against_its_own_first_stage(tmp_path):
    probe_table = load_script(REPO / "scripts" / "probe_table.py", "probe_table")
    rows = [
        _row("insuranceqa", "bm25", True, 0.193, recall_at_depth=0.365),
        _row("insuranceqa", "marked", False, 0.200, MAP_p=0.4),
        _row("wikiqa", "pool", True, 0.662),
        _row("wikiqa", "marked", False, 0.611, MAP_p=0.9),
    ]
    losses = {"insuranceqa/marked/L64": [0.69, 0.59], "wikiqa/marked/L64": [0.685, 0.682]}
    summary = {"rows": rows, "probe": {"name": "p", "wall_seconds": 5, "loss": losses}}
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "p.json").write_text(json.dumps(summary))
    lines = probe_table.table(tmp_path).splitlines()[2:]
    # WikiQA's MarkedBERT is read against WikiQA's pool (0.662), not InsuranceQA's BM25.
    assert "| wikiqa pool | marked-L64 | 10 | 0.662 | 0.611 | -0.051 |" in lines[1]
    assert "| insuranceqa bm25 | marked-L64 | 10 | 0.193 | 0.200 | +0.007 |" in lines[0]
    # Each cell's own loss; a first stage without a recall shows none.
    assert "0.690 → 0.590" in lines[0] and "0.685 → 0.682" in lines[1]
    assert "| 0.365 |" in lines[0] and "| – |" in lines[1]
