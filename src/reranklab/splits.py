"""Which queries train, tune and test: k-fold cross-validation by query, or a predefined split.

A fold without dev queries of its own (cross-validation) may hold out a seeded part of its
training queries as its dev queries (:func:`hold_out_dev`, ``training.validation.dev_fraction``):
the split step decides it once, so every later step reads the same dev set from ``folds.json``
and the sample step, which draws from ``train`` only, never trains on it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping
from dataclasses import replace

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
        raise ConfigError(
            f"protocol.{dataset}.split: predefined, but the dataset has no predefined split (use cv)"
        )
    unknown = set(split) - {"train", "dev", "test"}
    if unknown or "train" not in split or "test" not in split:
        raise ConfigError(
            f"{dataset}: a predefined split needs train and test (and optionally dev), got {sorted(split)}"
        )
    fold = Fold("fold0", list(split["train"]), list(split.get("dev", [])), list(split["test"]))
    overlap = (set(fold.train) & set(fold.test)) | (set(fold.dev) & set(fold.test))
    if overlap:
        raise ConfigError(
            f"{dataset}: {len(overlap)} queries are both in test and train/dev, e.g. {sorted(overlap)[:3]}"
        )
    return Folds(dataset=dataset, kind="predefined", folds=[fold])


def make_folds(
    protocol: Mapping, judged_qids: Iterable[str], split: Mapping | None, seed: int, dataset: str
) -> Folds:
    """Folds as the protocol says: ``cv`` over the judged queries, or the predefined split."""
    if protocol["split"] == "cv":
        return kfold(judged_qids, int(protocol["folds"]), seed, dataset)
    return predefined(split, dataset)


def hold_out_dev(folds: Folds, fraction: float, seed: int) -> Folds:
    """Move a seeded ``fraction`` of each dev-less fold's training queries to its dev queries.

    Folds that have dev queries (a predefined dev split) are kept as they are. A fold holds
    out ``ceil(fraction * len(train))`` queries (at least one, and at least one stays in
    train), drawn from its sorted training queries by a generator seeded with ``seed`` and the
    fold's name, so the choice depends only on the folds, the fraction and the seed. The
    fraction and seed are recorded in ``folds.meta``.

    Args:
        folds: the folds of :func:`make_folds`.
        fraction: the share of training queries to hold out, ``0 <= fraction < 1``; 0 changes nothing.
        seed: the study seed.

    Returns:
        The folds with ``dev`` filled (``train`` and ``dev`` sorted and disjoint).

    Raises:
        ConfigError: ``fraction`` is out of range, or a fold has too few training queries.

    Example:
        >>> folds = hold_out_dev(kfold([f"q{i}" for i in range(10)], k=2, seed=1), 0.2, seed=1)
        >>> [(len(f.train), len(f.dev), len(f.test)) for f in folds.folds]
        [(4, 1, 5), (4, 1, 5)]
    """
    fraction = float(fraction)
    if not 0 <= fraction < 1:
        raise ConfigError(f"training.validation.dev_fraction: {fraction} is not in [0, 1)")
    if fraction == 0:
        return folds
    held = []
    for fold in folds.folds:
        if fold.dev:
            held.append(fold)
            continue
        ordered = sorted(set(fold.train))
        n = min(max(1, math.ceil(fraction * len(ordered))), len(ordered) - 1)
        if n < 1:
            raise ConfigError(
                f"training.validation.dev_fraction: {folds.dataset or 'dataset'} {fold.name} has {len(ordered)} training "
                "queries, too few to hold out dev queries"
            )
        random.Random(f"{seed}:{fold.name}:dev").shuffle(ordered)
        held.append(replace(fold, train=sorted(ordered[n:]), dev=sorted(ordered[:n])))
    meta = {**folds.meta, "dev_fraction": fraction, "dev_seed": int(seed)}
    return replace(folds, folds=held, meta=meta)


def score_dev(folds: Folds) -> Folds:
    """Each fold scores its dev queries in place of its test queries (``protocol.scored: dev``).

    Settings are chosen on dev: a probe re-ranks and scores the dev queries, and the test
    queries leave the run altogether (no fold trains or scores on them), so nothing a probe
    measures has seen them.

    Raises:
        ConfigError: a fold has no dev queries.

    Example:
        >>> folds = score_dev(hold_out_dev(kfold([f"q{i}" for i in range(10)], 2, 1), 0.2, 1))
        >>> [(len(f.train), len(f.dev), len(f.test)) for f in folds.folds]
        [(4, 0, 1), (4, 0, 1)]
    """
    for fold in folds.folds:
        if not fold.dev:
            raise ConfigError(
                f"protocol.{folds.dataset or '<dataset>'}.scored: dev, but {fold.name} has no dev "
                "queries (a predefined dev split, or training.validation.dev_fraction)"
            )
    scored = [replace(f, test=list(f.dev), dev=[]) for f in folds.folds]
    return replace(folds, folds=scored, meta={**(folds.meta or {}), "scored": "dev"})
