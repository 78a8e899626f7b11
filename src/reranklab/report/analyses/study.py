"""A finished study as the analyses read it: rows, per-query values, queries, training stats."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from reranklab.errors import FormatError
from reranklab.io import read_json
from reranklab.io.queries import read_queries
from reranklab.settings.cell import Cell

FIRST_STAGE = ("bm25", "pool")


@dataclass(frozen=True)
class Row:
    """One row of the summary: a first stage or a (variant, max length) cell of a dataset."""

    dataset: str
    variant: str
    max_length: int | None
    key: str
    overall: dict[str, float]
    metrics_path: Path

    @property
    def first_stage(self) -> bool:
        return self.variant in FIRST_STAGE or self.max_length is None

    @property
    def label(self) -> str:
        """The cell's name, as its folders are named (``pointwise-L128``, or ``bm25``)."""
        return Cell(self.dataset, self.variant, self.max_length).name


@dataclass
class StudyData:
    """The files of a finished study under ``results`` (the working directory's by default).

    Args:
        summary: ``results/summary.json`` (its rows name each cell's metrics file).
        results: the results folder (queries under ``data/<ds>/``, models under ``models/``).

    Example:
        >>> study = StudyData(Path("results/summary.json"))  # doctest: +SKIP
        >>> [row.key for row in study.rows("insuranceqa")]  # doctest: +SKIP
        ['insuranceqa/bm25', 'insuranceqa/biencoder/L128']
    """

    summary: Path
    results: Path = Path("results")
    _per_query: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict, repr=False)

    @cached_property
    def document(self) -> dict[str, Any]:
        document = read_json(self.summary)
        if not isinstance(document, dict) or not isinstance(document.get("rows"), list):
            raise FormatError(self.summary, None, "not a summary.json: needs a 'rows' list")
        return document

    @property
    def measures(self) -> list[str]:
        return list(self.document.get("measures") or [])

    def rows(self, dataset: str) -> list[Row]:
        return [
            Row(
                dataset=row["dataset"],
                variant=row["variant"],
                max_length=row.get("max_length"),
                key=row["key"],
                overall={m: row[m] for m in self.measures if row.get(m) is not None},
                metrics_path=Path(row["metrics_path"]),
            )
            for row in self.document["rows"]
            if row["dataset"] == dataset
        ]

    def datasets(self) -> list[str]:
        return list(dict.fromkeys(row["dataset"] for row in self.document["rows"]))

    def per_query(self, row: Row) -> dict[str, dict[str, float]]:
        """``{qid: {measure: value}}`` of the row's counted test queries."""
        if row.key not in self._per_query:
            metrics = read_json(row.metrics_path)
            if not isinstance(metrics, dict) or "per_query" not in metrics:
                raise FormatError(row.metrics_path, None, "no 'per_query' in a cell metrics file")
            self._per_query[row.key] = metrics["per_query"]
        return self._per_query[row.key]

    def queries(self, dataset: str) -> dict[str, str]:
        path = self.results / "data" / dataset / "queries.tsv"
        return read_queries(path) if path.is_file() else {}

    def train_stats(self, row: Row) -> list[dict[str, Any]]:
        """The ``train_stats.json`` of each fold model of the cell (none for a first stage)."""
        folder = self.results / "models" / row.dataset / row.label
        if row.first_stage or not folder.is_dir():
            return []
        found = []
        for stats in sorted(folder.glob("fold*/train_stats.json"), key=os.fspath):
            found.append({"fold": stats.parent.name, **read_json(stats)})
        return found
