"""The seed papers' analyses on a small synthetic study whose values are known by construction."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from reranklab.report.analyses.outputs import OUTPUTS, outputs
from reranklab.report.analyses.query_delta import length_bucket, query_type
from reranklab.report.analyses.run import analyze
from reranklab.report.summary import summarize

QUERIES = {
    "q1": "what is term life insurance",  # what, 5 words
    "q2": "how much does a whole life policy cost me",  # how, 9 words
    "q3": "why",  # why, 1 word
    "q4": "can i cancel my policy",  # other, 5 words
}
BM25 = {"q1": 0.5, "q2": 0.25, "q3": 1.0, "q4": 0.2}
# (variant, max length) -> per-query MRR = MAP here (one relevant passage per query)
CELLS = {
    ("bertlets", 64): {"q1": 1.0, "q2": 0.5, "q3": 0.5, "q4": 0.25},
    ("bertlets", 128): {"q1": 1.0, "q2": 1.0, "q3": 0.5, "q4": 0.5},
    ("chunked", 128): {"q1": 1.0, "q2": 1.0, "q3": 1.0, "q4": 0.5},
    ("dmn", 128): {"q1": 0.5, "q2": 0.5, "q3": 1.0, "q4": 1.0},
    ("dmn_lite", 128): {"q1": 0.5, "q2": 0.25, "q3": 1.0, "q4": 1.0},
}


def _metrics(path: Path, values: dict[str, float]) -> str:
    overall = {m: sum(values.values()) / len(values) for m in ("MAP", "MRR")}
    path.write_text(
        json.dumps(
            {
                "measures": ["MAP", "MRR"],
                "overall": overall,
                "fold_mean": overall,
                "fold_std": {"MAP": 0.0, "MRR": 0.0},
                "per_query": {q: {"MAP": v, "MRR": v} for q, v in values.items()},
                "n_queries": len(values),
                "n_excluded": 0,
                "n_folds": 1,
            }
        )
    )
    return str(path)


def _train_stats(results: Path, variant: str, length: int, stats: dict) -> None:
    folder = results / "models" / "toy" / f"{variant}-L{length}" / "fold0"
    folder.mkdir(parents=True)
    (folder / "train_stats.json").write_text(json.dumps(stats))


@pytest.fixture
def study(tmp_path: Path) -> tuple[Path, Path]:
    results = tmp_path / "results"
    (results / "data" / "toy").mkdir(parents=True)
    (results / "data" / "toy" / "queries.tsv").write_text(
        "".join(f"{q}\t{text}\n" for q, text in QUERIES.items())
    )
    cells = [
        {
            "dataset": "toy",
            "variant": "bm25",
            "max_length": None,
            "metrics_path": _metrics(tmp_path / "bm25.json", BM25),
        }
    ]
    for (variant, length), values in CELLS.items():
        cells.append(
            {
                "dataset": "toy",
                "variant": variant,
                "max_length": length,
                "metrics_path": _metrics(tmp_path / f"{variant}{length}.json", values),
            }
        )
    summary = results / "summary.json"
    summarize(cells, results / "s.csv", results / "s.md", summary, "toy study")
    speed = [{"epoch": 1, "steps": 10, "seconds": 5.0, "batches_per_s": 2.0}]
    _train_stats(results, "dmn", 128, {"epoch_speed": speed, "loss_curve": [[1, 0.7], [10, 0.4]]})
    lite = [
        {"epoch": 1, "steps": 10, "seconds": 1.0, "batches_per_s": 10.0},
        {"epoch": 2, "steps": 10, "seconds": 2.0, "batches_per_s": 5.0},
    ]
    _train_stats(results, "dmn_lite", 128, {"epoch_speed": lite})
    validation = {"measure": "MAP", "history": [{"epoch": 1, "step": 5, "MAP": 0.6}]}
    _train_stats(
        results, "bertlets", 128, {"loss_curve": [[1, 1.0], [5, 0.5]], "validation": validation}
    )
    return summary, results


def test_analyses_with_nothing_to_show_are_left_out(study, tmp_path):
    """One max length and no chunked cell: no one-point sweep, no empty chunking table, and
    the learning curves without an empty dev panel (this toy study has dev points)."""
    import json

    summary, results = study
    document = json.loads(summary.read_text())
    document["rows"] = [
        row
        for row in document["rows"]
        if row.get("max_length") in (None, 128) and row["variant"] != "chunked"
    ]
    single = results / "single.json"
    single.write_text(json.dumps(document))
    out = tmp_path / "single"
    written = sorted(p.name for p in analyze(single, "toy", out, results=results))
    assert written == sorted(outputs(["bertlets"], [128]))
    assert not any(name.startswith(("length_sweep", "chunking")) for name in written)
    assert not (out / "length_sweep.png").exists() and not (out / "chunking.csv").exists()
    assert set(OUTPUTS) - set(written) == {
        "length_sweep.png",
        "length_sweep.csv",
        "length_sweep.html",
        "chunking.csv",
        "chunking.html",
    }


def test_the_learning_curves_leave_out_an_empty_dev_panel(tmp_path):
    from reranklab.report.analyses.learning_curves import learning_curves

    class Row:
        label = "pointwise-L64"

    class Study:  # one trained cell whose fold logged a loss curve and no dev measure
        def rows(self, dataset):
            return [Row()]

        def train_stats(self, row):
            return [{"fold": "fold0", "loss_curve": [[1, 0.7], [2, 0.6]]}]

    learning_curves(Study(), "toy", tmp_path)
    from PIL import Image

    with Image.open(tmp_path / "learning_curves.png") as image:
        assert image.size == (550, 380)  # one panel (5.5 x 3.8 in at 100 dpi), not two


def test_query_type_and_length_buckets():
    assert [query_type(text) for text in QUERIES.values()] == ["what", "how", "why", "other"]
    assert [length_bucket(text) for text in QUERIES.values()] == ["1-5", "9-12", "1-5", "1-5"]


def test_every_analysis_is_written_with_the_known_values(study):
    summary, results = study
    out = results / "report" / "toy"
    written = analyze(summary, "toy", out, results=results)
    assert sorted(p.name for p in written) == sorted(OUTPUTS)
    for name in OUTPUTS:
        data = (out / name).read_bytes()
        if name.endswith(".png"):
            assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 5000
        if name.endswith(".html"):
            assert b"<table" in data or b"No rows" in data

    methods = pd.read_csv(out / "methods.csv")
    assert methods.set_index("cell").loc["chunked-L128", "MAP"] == pytest.approx(0.875)

    sweep = pd.read_csv(out / "length_sweep.csv")
    bertlets = sweep[sweep["variant"] == "bertlets"]
    assert list(bertlets["max_length"]) == [64, 128]
    assert list(bertlets["MRR"]) == pytest.approx([0.5625, 0.75])

    chunking = pd.read_csv(out / "chunking.csv")
    assert len(chunking) == 1 and chunking.loc[0, "max_length"] == 128
    assert chunking.loc[0, "MAP_diff"] == pytest.approx(0.875 - 0.75)

    delta = pd.read_csv(out / "query_delta.csv")
    chunked = delta[delta["cell"] == "chunked-L128"]
    assert list(chunked["base"].unique()) == ["bm25"]
    # 1-0.5, 1-0.25, 1-1, 0.5-0.2, sorted from the largest gain; equal gains in qid order
    assert list(chunked["delta_MRR"]) == pytest.approx([0.75, 0.5, 0.3, 0.0])
    assert list(chunked["qid"]) == ["q2", "q1", "q4", "q3"]

    by_type = pd.read_csv(out / "by_query_type.csv").set_index(["cell", "type"])
    assert by_type.loc[("bm25", "other"), "MRR"] == pytest.approx(0.2)
    assert by_type.loc[("bm25", "what"), "queries"] == 1
    by_length = pd.read_csv(out / "by_query_length.csv").set_index(["cell", "length"])
    assert by_length.loc[("bm25", "1-5"), "MRR"] == pytest.approx((0.5 + 1.0 + 0.2) / 3)

    speed = pd.read_csv(out / "training_speed.csv")
    lite = speed[speed["variant"] == "dmn_lite"]
    assert list(lite["batches_per_s"]) == [10.0, 5.0]
    assert list(lite["speedup_over_full"]) == pytest.approx([3.75, 3.75])  # mean 7.5 / 2.0
    assert speed[speed["variant"] == "dmn"]["speedup_over_full"].isna().all()

    curves = pd.read_csv(out / "learning_curves.csv")
    dev = curves[curves["kind"] == "dev MAP"]
    assert list(dev["value"]) == [0.6] and list(dev["cell"]) == ["bertlets-L128"]
    assert len(curves[curves["kind"] == "loss"]) == 4


def test_analyses_are_identical_on_a_second_run(study, tmp_path):
    summary, results = study
    first = analyze(summary, "toy", tmp_path / "a", results=results)
    second = analyze(summary, "toy", tmp_path / "b", results=results)
    for a, b in zip(first, second, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name


def test_the_reference_is_the_base_of_the_delta(study, tmp_path):
    summary, results = study
    analyze(summary, "toy", tmp_path / "r", results=results, reference="toy/dmn/L128")
    delta = pd.read_csv(tmp_path / "r" / "query_delta.csv")
    assert set(delta["base"]) == {"dmn-L128"} and "dmn-L128" not in set(delta["cell"])


def test_an_unknown_dataset_is_named(study, tmp_path):
    summary, results = study
    with pytest.raises(ValueError, match="no row of dataset 'nope'"):
        analyze(summary, "nope", tmp_path, results=results)
