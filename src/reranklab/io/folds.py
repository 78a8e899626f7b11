"""Folds as JSON: which queries train, tune and test each fold.

``folds.json``::

    {"dataset": "sample", "kind": "cv", "seed": 42,
     "folds": [{"name": "fold0", "train": [...], "dev": [...], "test": [...]}, ...]}

For k-fold cross-validation the test sets partition the queries; for a predefined split there
is a single fold holding the dataset's own train/dev/test queries.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field

from reranklab.errors import FormatError
from reranklab.io.json_io import read_json, write_json


@dataclass(frozen=True)
class Fold:
    name: str
    train: list[str]
    dev: list[str]
    test: list[str]


@dataclass(frozen=True)
class Folds:
    dataset: str
    kind: str  # "cv" or "predefined"
    folds: list[Fold]
    seed: int | None = None
    meta: dict = field(default_factory=dict)

    def fold(self, index: int) -> Fold:
        return self.folds[index]


def write_folds(path: str | os.PathLike[str], folds: Folds) -> None:
    write_json(path, asdict(folds))


def read_folds(path: str | os.PathLike[str]) -> Folds:
    raw = read_json(path)
    try:
        return Folds(
            dataset=raw["dataset"],
            kind=raw["kind"],
            seed=raw.get("seed"),
            meta=raw.get("meta", {}),
            folds=[
                Fold(f["name"], list(f["train"]), list(f["dev"]), list(f["test"]))
                for f in raw["folds"]
            ],
        )
    except (KeyError, TypeError) as exc:
        raise FormatError(path, None, f"not a folds file: missing {exc}") from None
