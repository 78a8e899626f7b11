"""Which queries train and which test: k-fold cross-validation by query, or a predefined split."""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping

from reranklab.errors import ConfigError
from reranklab.io import Fold, Folds


def kfold(qids: Iterable[str], k: int, seed: int, dataset: str = "") -> Folds:
    """Split queries into ``k`` folds; fold i tests on part i and trains on the others.

    The assignment depends only on the set of qids and the seed (qids are sorted before a
    seeded shuffle), so it is stable across runs and machines. Part sizes differ by at most one.

    Example:
        >>> folds = kfold(["q1", "q2", "q3", "q4"], k=2, seed=1)
        >>> sorted(q for f in folds.folds for q in f.test)
        ['q1', 'q2', 'q3', 'q4']
    """
    ordered = sorted(set(qids))
    if k < 2:
        raise ConfigError(f"folds must be at least 2 for cross-validation, got {k}")
    if len(ordered) < k:
        raise ConfigError(f"{dataset or 'dataset'}: {len(ordered)} queries cannot make {k} folds")
    random.Random(seed).shuffle(ordered)
    parts = [sorted(ordered[i::k]) for i in range(k)]
    folds = [
        Fold(
            name=f"fold{i}",
            train=sorted(q for j, part in enumerate(parts) if j != i for q in part),
            dev=[],
            test=parts[i],
        )
        for i in range(k)
    ]
    return Folds(dataset=dataset, kind="cv", folds=folds, seed=seed)


def predefined(split: Mapping[str, list[str]] | None, dataset: str = "") -> Folds:
    """The dataset's own split as a single fold (train, dev, test)."""
    if not split:
        raise ConfigError(f"protocol.{dataset}.split: predefined, but the dataset has no predefined split (use cv)")
    unknown = set(split) - {"train", "dev", "test"}
    if unknown or "train" not in split or "test" not in split:
        raise ConfigError(f"{dataset}: a predefined split needs train and test (and optionally dev), got {sorted(split)}")
    fold = Fold("fold0", list(split["train"]), list(split.get("dev", [])), list(split["test"]))
    overlap = (set(fold.train) & set(fold.test)) | (set(fold.dev) & set(fold.test))
    if overlap:
        raise ConfigError(f"{dataset}: {len(overlap)} queries are both in test and train/dev, e.g. {sorted(overlap)[:3]}")
    return Folds(dataset=dataset, kind="predefined", folds=[fold])


def make_folds(protocol: Mapping, judged_qids: Iterable[str], split: Mapping | None, seed: int, dataset: str) -> Folds:
    """Folds as the protocol says: ``cv`` over the judged queries, or the predefined split."""
    if protocol["split"] == "cv":
        return kfold(judged_qids, int(protocol["folds"]), seed, dataset)
    return predefined(split, dataset)
