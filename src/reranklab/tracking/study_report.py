"""The study's tables and figures in MLflow, once the report is written.

Two things, logged by the ``track_report`` rule after every cell is tracked and analysed:

- a **study run** (``reranklab.role`` = ``study``, named ``study <name>``): the summary,
  significance and regression tables (Markdown, CSV, HTML) and every dataset's figures and
  tables under ``report/<dataset>/``; a new one replaces (soft-deletes) the study's earlier;
- on **each cell's run** (found through its ``mlflow.json``): its dataset's figures under
  ``figures/`` (the cell is a bar, a line or a box in each) and the model card of its first
  fold (``model_card/README.md``) where the cell trained a model. The run file and the
  per-query metrics are on it already (``track``).

Example:
    >>> track_study("quickstart", [Path("results/summary.md")],
    ...             {"insuranceqa": Path("results/report/insuranceqa")},
    ...             [Path("results/cells/insuranceqa/pointwise-L128/mlflow.json")],
    ...             "sqlite:///results/mlflow.db", "quickstart",
    ...             Path("results/report/mlflow.json"))  # doctest: +SKIP
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reranklab.io import read_json, write_json
from reranklab.settings.cell import Cell
from reranklab.tracking.mlflow_tracking import (
    _retry,
    abandon_runs,
    ensure_experiment,
    open_store,
    store_lock,
)
from reranklab.tracking.source import source_tags
from reranklab.tracking.tags import ROLE_TAG, STUDY_TAG
from reranklab.tracking.ui import runs_link

STUDY_ROLE = "study"
FIGURE_SUFFIXES = (".png", ".svg")


def _study_runs(client: Any, experiment_id: str, study: str) -> list[Any]:
    quoted = study.replace("'", "\\'")
    return list(
        _retry(
            client.search_runs,
            [experiment_id],
            filter_string=f"tags.`{ROLE_TAG}` = '{STUDY_ROLE}' and tags.`{STUDY_TAG}` = '{quoted}'",
            max_results=1000,
        )
    )


# A re-ranker cell's key (Cell.key): the dataset may hold slashes (irds:antique/test).
CELL_KEY = re.compile(
    r"^(?P<dataset>.+)/(?P<variant>[a-z][a-z0-9_]*)/L(?P<length>\d+)(?:/seed(?P<seed>\d+))?$"
)


def model_card_path(key: str, results: Path = Path("results")) -> Path | None:
    """Where the first fold model of the cell ``key`` keeps its card; None for a first stage.

    Example:
        >>> str(model_card_path("irds:antique/test/pointwise/L128/seed3", Path("r")))
        'r/models/irds:antique/test/pointwise-L128/seed3/fold0/README.md'
        >>> model_card_path("wikiqa/bm25") is None
        True
    """
    match = CELL_KEY.match(key)
    if match is None:
        return None
    seed = None if match["seed"] is None else int(match["seed"])
    cell = Cell(match["dataset"], match["variant"], int(match["length"]), seed)
    return Path(cell.path("models", "fold0", "README.md", root=str(results)))


def track_study(
    study: str,
    tables: Sequence[Path],
    report_dirs: Mapping[str, Path],
    cell_records: Sequence[Path],
    tracking_uri: str,
    experiment: str,
    out: Path,
    results: Path = Path("results"),
) -> dict[str, Any]:
    """Log the study run and the cells' figures; write the record to ``out`` (JSON).

    Args:
        study: the study's name (tag ``reranklab.study``).
        tables: the study-wide files (summary, significance, regression).
        report_dirs: dataset -> its folder of figures and tables (``results/report/<ds>``).
        cell_records: the cells' ``mlflow.json`` files (written by ``track``).
        tracking_uri, experiment: the store and experiment of the study.
        out: the record to write (``results/report/mlflow.json``).
        results: the results folder (fold models, for the model cards).
    """
    missing = [str(p) for p in [*tables, *report_dirs.values(), *cell_records] if not p.exists()]
    if missing:
        raise FileNotFoundError(f"track_report: missing {', '.join(missing)}")
    figures = {
        dataset: sorted(p for p in folder.iterdir() if p.suffix in FIGURE_SUFFIXES)
        for dataset, folder in report_dirs.items()
    }
    with store_lock(tracking_uri):
        client = open_store(tracking_uri)
        experiment_id = ensure_experiment(client, experiment, tracking_uri)
        earlier = _study_runs(client, experiment_id, study)
        run = _retry(
            client.create_run,
            experiment_id,
            run_name=f"study {study}",
            tags={**source_tags("track_report"), ROLE_TAG: STUDY_ROLE, STUDY_TAG: study},
        )
        run_id = run.info.run_id
        try:
            for path in tables:
                _retry(client.log_artifact, run_id, str(path), "tables")
            for dataset, folder in report_dirs.items():
                _retry(client.log_artifacts, run_id, str(folder), f"report/{dataset}")
            _retry(client.set_terminated, run_id, "FINISHED")
        except BaseException:
            abandon_runs(client, [run_id])
            raise
        for previous in earlier:
            _retry(client.delete_run, previous.info.run_id)
        cells = {}
        for record_path in cell_records:
            record = read_json(record_path)
            cell_run = record["parent_run_id"]
            dataset = str(record["cell"]).split("/", 1)[0]
            for figure in figures.get(dataset, []):
                _retry(client.log_artifact, cell_run, str(figure), "figures")
            card = model_card_path(str(record["cell"]), results)
            if card is not None and card.is_file():
                _retry(client.log_artifact, cell_run, str(card), "model_card")
            cells[record["cell"]] = cell_run
    result = {
        "tracking_uri": tracking_uri,
        "experiment": experiment,
        "experiment_id": experiment_id,
        "study_run_id": run_id,
        "cell_run_ids": cells,
        "replaced_run_ids": sorted(r.info.run_id for r in earlier),
        "ui": runs_link(tracking_uri, experiment_id),
    }
    write_json(out, result)
    return result
