"""Model selection on dev: score the dev queries after every epoch, keep the best epoch, stop early.

With ``training.validation.measure`` set (the ``bertsel`` and ``dmn`` presets set it, as their
papers select their epoch on dev), the training loop calls a :class:`DevScorer` at the end of
every epoch: the live model (eval mode, no gradients, the featurisation and length-sorted
batching of :func:`reranklab.training.inference.score_features`) scores the first-stage
candidates of the fold's dev queries, and :func:`reranklab.evaluation.evaluate_run` scores
that run under the dataset's own scoring protocol, so a dev MAP means what the test MAP means.
A :class:`ModelSelector` keeps the per-epoch results, the best epoch (a tie keeps the earlier
one), a copy of its weights (``select_best``) and the count of epochs without improvement
(``patience``). It is part of the training checkpoint, so a resumed job makes the same choice
as an uninterrupted one.

The dev queries are the dataset's dev split, or for cross-validation folds a seeded part of the
training fold held out by the split step (``dev_fraction``, :func:`reranklab.splits.hold_out_dev`).
The dev pairs are featurized once, before the first epoch (a lite variant encodes the ones its
frozen-feature cache lacks once, then reuses them), and validation never draws from the random
generators that training uses.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reranklab.errors import ConfigError
from reranklab.settings.base import field_defaults
from reranklab.settings.training import Validation

log = logging.getLogger(__name__)

KEY = "validation"
DEFAULTS: dict[str, Any] = field_defaults(Validation)  # the settings model's training.validation
COMPLETED, EARLY_STOPPING = "completed", "early_stopping"


@dataclass(frozen=True)
class ValidationSettings:
    """The resolved ``training.validation`` block of a cell whose validation is on.

    Args:
        measure: the display name of the dev measure that picks the epoch (e.g. ``MAP``).
        select_best: save the best epoch's weights (else the last epoch's).
        patience: stop after this many epochs in a row without improvement (``None``: never).
        dev_fraction: the share of each dev-less training fold held out by the split step.
    """

    measure: str
    select_best: bool = True
    patience: int | None = None
    dev_fraction: float = 0.0


def validation_settings(
    training: Mapping[str, Any], where: str = "training.validation"
) -> ValidationSettings | None:
    """The validation settings of a resolved ``training`` block, or ``None`` when validation is off.

    Raises:
        ConfigError: the block is not a mapping or ``patience`` is below 1 (the key is named).

    Example:
        >>> validation_settings({"validation": {"measure": "MAP", "patience": 3}})
        ValidationSettings(measure='MAP', select_best=True, patience=3, dev_fraction=0.0)
        >>> validation_settings({}) is None, validation_settings({"validation": None}) is None
        (True, True)
    """
    block = training.get(KEY)
    if block is None:
        return None
    if not isinstance(block, Mapping):
        raise ConfigError(
            f"{where}: expected a mapping (measure, select_best, patience, dev_fraction), got {block!r}"
        )
    merged = {**DEFAULTS, **block}
    if not merged["measure"]:
        return None
    patience = merged["patience"]
    if patience is not None and int(patience) < 1:
        raise ConfigError(
            f"{where}.patience: {patience} must be at least 1 (null = no early stopping)"
        )
    return ValidationSettings(
        measure=str(merged["measure"]),
        select_best=bool(merged["select_best"]),
        patience=None if patience is None else int(patience),
        dev_fraction=float(merged["dev_fraction"] or 0.0),
    )


def check_measure(
    settings: ValidationSettings, scoring: Any, where: str = "training.validation.measure"
) -> None:
    """Raise a ConfigError naming ``where`` if the measure is not one of the scoring's measures.

    Example:
        >>> from reranklab.evaluation.protocol import default_scoring
        >>> check_measure(ValidationSettings("MAP"), default_scoring())
        >>> check_measure(ValidationSettings("map"), default_scoring())
        Traceback (most recent call last):
        ...
        reranklab.errors.ConfigError: training.validation.measure: 'map' is not a measure of the scoring 'default' (its measures: P@1, MAP, MRR, MRR@10, nDCG@10)
    """
    names = [m.name for m in scoring.measures]
    if settings.measure not in names:
        raise ConfigError(
            f"{where}: {settings.measure!r} is not a measure of the scoring {scoring.name!r} (its measures: {', '.join(names)})"
        )


# -- the dev set and its scoring -----------------------------------------------------------------


@dataclass
class DevSet:
    """The dev queries of one fold and what scoring them needs.

    Args:
        qids: the fold's dev queries (``folds.json``).
        candidates: the first-stage run; the dev queries' candidates are re-ranked.
        qrels: the dataset's judgements.
        scoring: the dataset's :class:`~reranklab.evaluation.protocol.Scoring`.
        fold: the fold's name (for messages).
    """

    qids: list[str]
    candidates: Mapping[str, Mapping[str, float]]
    qrels: Mapping[str, Mapping[str, int]]
    scoring: Any
    fold: str = "fold0"

    def check(self, settings: ValidationSettings, where: str = f"training.{KEY}") -> list[str]:
        """The dev queries the scoring counts, after checking that validation can run.

        Raises:
            ConfigError: the measure is not one of the scoring's, the fold has no dev queries,
                or the scoring counts none of them.
        """
        check_measure(settings, self.scoring, f"{where}.measure")
        if not self.qids:
            raise ConfigError(
                f"{self.fold} has no dev queries, but {where} is on (measure {settings.measure}): set "
                f"training.{KEY}.dev_fraction (e.g. 0.1) to hold out part of each training fold in the split step, "
                f"or turn validation off ({where}: null)"
            )
        counted, dropped = self.scoring.counted(self.qrels, self.qids)
        if not counted:
            reasons = ", ".join(f"{len(q)} {reason}" for reason, q in sorted(dropped.items()))
            raise ConfigError(
                f"{self.fold}: the scoring {self.scoring.name!r} counts none of its {len(self.qids)} dev queries ({reasons})"
            )
        without = [qid for qid in counted if not self.candidates.get(qid)]
        if without:
            log.warning(
                "%d of %d dev queries have no first-stage candidates (they score as the scoring says), e.g. %s",
                len(without),
                len(counted),
                without[0],
            )
        return counted


def load_dev_set(
    params: Mapping[str, Any],
    candidates: str | Path | None,
    qrels: str | Path | None,
    folds: str | Path | None,
    fold: int | None,
) -> DevSet | None:
    """The dev set of a ``reranklab train`` job whose cell validates, else ``None``.

    Args:
        params: the job's resolved ``--spec`` (the cell; with validation on, also ``scoring``: the
            dataset's :meth:`Scoring.as_dict`, as the train rule passes it).
        candidates, qrels, folds, fold: the first-stage run, the qrels, ``folds.json`` and the
            fold index (the train rule passes them only to jobs that validate).

    Raises:
        ReranklabError: validation is on and an input or the scoring is missing.

    Example (skipped as a doctest: it needs a study's cell and files;
    ``tests/test_validation.py`` runs it):
        >>> dev = load_dev_set(params, "results/first_stage/wikiqa/candidates.run",
        ...                    "results/data/wikiqa/qrels.txt", "results/splits/wikiqa/folds.json", 0)  # doctest: +SKIP
        >>> len(dev.qids), dev.scoring.name  # doctest: +SKIP
        (126, 'filtered')
    """
    from reranklab.errors import ReranklabError

    if validation_settings(params.get("training") or {}) is None:
        return None
    missing = [
        name
        for name, value in (
            ("--candidates", candidates),
            ("--qrels", qrels),
            ("--folds", folds),
            ("--fold", fold),
        )
        if value is None
    ]
    if missing:
        raise ReranklabError(
            f"train: training.validation is on, so the dev queries need {', '.join(missing)}"
        )
    if "scoring" not in params:
        raise ReranklabError(
            'train: training.validation is on, so --spec needs the dataset\'s scoring protocol: {"scoring": {...}}'
        )
    from reranklab.evaluation.protocol import Scoring
    from reranklab.io import read_folds, read_qrels, read_run

    chosen = read_folds(folds).fold(int(fold))
    return DevSet(
        list(chosen.dev),
        read_run(candidates),
        read_qrels(qrels),
        Scoring.from_dict(params["scoring"]),
        chosen.name,
    )


@contextlib.contextmanager
def untouched_rng() -> Iterator[None]:
    """Restore the Python, NumPy, torch and CUDA generators afterwards: validating must not
    change what training draws next (a validated run trains the very model an unvalidated one does)."""
    from reranklab.training.checkpoint import rng_state, set_rng_state

    saved = rng_state()
    try:
        yield
    finally:
        set_rng_state(saved)


class DevScorer:
    """Scores the dev queries' candidates with the live model and evaluates the run.

    The pairs are featurized once (here); each call scores them with
    :func:`~reranklab.training.inference.score_features` (eval mode, inference mode, the
    cell's precision and ``eval_batch_size``) and evaluates the run with the dev set's scoring.

    Args:
        model: the model being trained (on its device).
        spec: its :class:`~reranklab.models.registry.VariantSpec`.
        dev: the dev set.
        queries, corpus: the texts (the corpus must hold the dev candidates).
        batch_size: pairs per forward pass.
        precision: the autocast of the forward pass (:func:`resolve_precision`).
        frozen_features: the fold's frozen-feature cache (lite variants).
        packing: ``training.packing`` (packed batches where the model reads them).
        progress: show bars.

    Example (skipped as a doctest: it needs a model and a dev set; ``tests/test_validation.py``
    runs it):
        >>> scorer = DevScorer(model, get_variant("bertsel"), dev, queries, corpus, batch_size=128)  # doctest: +SKIP
        >>> scorer(model)["aggregate"]["MAP"]  # after an epoch  # doctest: +SKIP
        0.7412
    """

    def __init__(
        self,
        model: Any,
        spec: Any,
        dev: DevSet,
        queries: Mapping[str, str],
        corpus: Mapping[str, str],
        *,
        batch_size: int,
        precision: Any = None,
        frozen_features: str | Path | None = None,
        packing: bool = False,
        progress: bool = False,
    ) -> None:
        self.dev = dev
        self.packing = packing
        self.batch_size = int(batch_size)
        self.precision = precision
        self.progress = progress
        self.keys = [
            (qid, pid) for qid in dict.fromkeys(dev.qids) for pid in dev.candidates.get(qid, {})
        ]
        was_training = model.training
        model.eval()  # featurizers see the model as it scores (as in rerank_with_model)
        try:
            # A lite featurizer may load the frozen encoder: no draw may leak into training.
            with untouched_rng():
                self.features = spec.featurizer()(
                    model,
                    self.keys,
                    queries,
                    corpus,
                    progress=progress,
                    **spec.featurize_options(frozen_features),
                )
        finally:
            model.train(was_training)

    def __call__(self, model: Any) -> dict[str, Any]:
        """Score and evaluate with ``model`` now: the :func:`evaluate_run` result plus ``seconds``."""
        from reranklab.evaluation.evaluate import evaluate_run
        from reranklab.training.inference import score_features

        started = time.perf_counter()
        with untouched_rng():
            scores = score_features(
                model,
                self.features,
                self.batch_size,
                progress=self.progress,
                desc="validate",
                precision=self.precision,
                packing=self.packing,
            )
        run: dict[str, dict[str, float]] = {}
        for qid, pid in self.keys:
            run.setdefault(qid, {})[pid] = float(scores[self.features[qid, pid]])
        result = evaluate_run(run, self.dev.qrels, self.dev.qids, scoring=self.dev.scoring)
        result["seconds"] = time.perf_counter() - started
        return result


# -- the choice --------------------------------------------------------------------------------


def _cpu_copy(model: Any) -> dict[str, Any]:
    return {
        name: tensor.detach().to("cpu", copy=True) for name, tensor in model.state_dict().items()
    }


class ModelSelector:
    """Per-epoch dev results, the best epoch (with its weights) and the early-stopping count.

    Epochs are numbered from 1. An epoch improves on the best only with a strictly higher
    measure, so a tie keeps the earlier epoch. Everything is in :meth:`state_dict`, which the
    training checkpoint holds.

    Example:
        >>> selector = ModelSelector(ValidationSettings("MAP", select_best=False, patience=2))
        >>> for epoch, value in enumerate([0.5, 0.6, 0.6, 0.55], start=1):
        ...     _ = selector.update(epoch, epoch * 10, {"MAP": value})
        >>> selector.best_epoch, selector.stopped_early, selector.bad_epochs
        (2, True, 2)
    """

    def __init__(self, settings: ValidationSettings) -> None:
        self.settings = settings
        self.history: list[dict[str, Any]] = []
        self.best_epoch: int | None = None
        self.best_score: float | None = None
        self.best_state: dict[str, Any] | None = None
        self.bad_epochs = 0
        self.stopped_early = False

    def update(
        self,
        epoch: int,
        step: int,
        measures: Mapping[str, float | None],
        model: Any = None,
        **extra: Any,
    ) -> bool:
        """Record epoch ``epoch``'s dev measures; keep its weights if it is the best so far.

        Args:
            epoch: the epoch just finished (1-based).
            step: the global optimiser step at its end.
            measures: the dev measures (``evaluate_run``'s ``aggregate``).
            model: the live model (its weights are copied to the CPU when ``select_best``).
            extra: more numbers for the history (queries counted, seconds).

        Returns:
            Whether the epoch improved on the best.
        """
        value = measures.get(self.settings.measure)
        if value is None:
            raise ConfigError(
                f"training.validation.measure: the dev run has no {self.settings.measure} value at epoch {epoch}"
            )
        score = float(value)
        self.history.append(
            {
                "epoch": int(epoch),
                "step": int(step),
                **{k: v for k, v in measures.items() if v is not None},
                **extra,
            }
        )
        improved = self.best_score is None or score > self.best_score
        if improved:
            self.best_epoch, self.best_score, self.bad_epochs = int(epoch), score, 0
            if self.settings.select_best and model is not None:
                self.best_state = _cpu_copy(model)
        else:
            self.bad_epochs += 1
            if self.settings.patience is not None and self.bad_epochs >= self.settings.patience:
                self.stopped_early = True
        return improved

    def describe(self) -> str:
        """One line for the log: the last epoch's measure against the best."""
        last = self.history[-1]
        text = f"epoch {last['epoch']}: dev {self.settings.measure} {last[self.settings.measure]:.4f} (best {self.best_score:.4f} at epoch {self.best_epoch}"
        if self.settings.patience is not None:
            text += f"; {self.bad_epochs} of {self.settings.patience} epochs without improvement"
        return text + ")" + (": stopping early" if self.stopped_early else "")

    def finish(self, model: Any, last_epoch: int) -> int:
        """Load the best epoch's weights into ``model`` when ``select_best``; the epoch saved."""
        if (
            self.settings.select_best
            and self.best_epoch is not None
            and self.best_epoch != last_epoch
        ):
            if self.best_state is None:
                raise RuntimeError(
                    f"select_best: the weights of epoch {self.best_epoch} were not kept"
                )
            model.load_state_dict(self.best_state)
            return self.best_epoch
        return last_epoch

    def summary(self, chosen_epoch: int, epochs: int, dev: DevSet, counted: int) -> dict[str, Any]:
        """What ``train_stats.json`` records under ``validation``."""
        stopped = EARLY_STOPPING if self.stopped_early else COMPLETED
        last = self.history[-1]["epoch"] if self.history else 0
        if self.stopped_early:
            epochs_word = "epoch" if self.settings.patience == 1 else "epochs"
            reason = f"dev {self.settings.measure} did not improve for {self.settings.patience} {epochs_word} after epoch {self.best_epoch}"
        else:
            reason = f"all {epochs} epochs trained"
        return {
            "measure": self.settings.measure,
            "select_best": self.settings.select_best,
            "patience": self.settings.patience,
            "scoring": dev.scoring.name,
            "fold": dev.fold,
            "dev_queries": len(dev.qids),
            "dev_queries_counted": counted,
            "dev_pairs": sum(len(dev.candidates.get(qid, {})) for qid in dict.fromkeys(dev.qids)),
            "history": list(self.history),
            "best_epoch": self.best_epoch,
            "best_score": self.best_score,
            "chosen_epoch": chosen_epoch,
            "chosen_because": f"best dev {self.settings.measure}"
            if chosen_epoch == self.best_epoch and self.settings.select_best
            else "last epoch trained",
            "epochs_trained": last,
            "stopped": stopped,
            "stop_reason": reason,
        }

    def state_dict(self) -> dict[str, Any]:
        """Plain data and tensors (loadable with ``torch.load(weights_only=True)``)."""
        return {
            "history": [dict(item) for item in self.history],
            "best_epoch": self.best_epoch,
            "best_score": self.best_score,
            "best_state": self.best_state,
            "bad_epochs": self.bad_epochs,
            "stopped_early": self.stopped_early,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""
        self.history = [dict(item) for item in state["history"]]
        self.best_epoch = None if state["best_epoch"] is None else int(state["best_epoch"])
        self.best_score = None if state["best_score"] is None else float(state["best_score"])
        self.best_state = state.get("best_state")
        self.bad_epochs = int(state["bad_epochs"])
        self.stopped_early = bool(state["stopped_early"])


def validate_epoch(
    scorer: DevScorer, selector: ModelSelector, model: Any, epoch: int, step: int
) -> None:
    """Score the dev set with ``model`` after epoch ``epoch`` (1-based) and update ``selector``.

    In a DDP job rank 0 scores and every rank receives its measures, so all ranks make the
    same choice (and stop together).
    """
    from reranklab.training import distributed

    result = scorer(model) if distributed.is_main_process() else None
    if distributed.is_active():
        import torch.distributed as dist

        box = [result]
        dist.broadcast_object_list(box, src=0)
        result = box[0]
    assert result is not None
    selector.update(
        epoch,
        step,
        result["aggregate"],
        model,
        queries=result["n_queries"],
        seconds=result["seconds"],
    )
    log.info("%s", selector.describe())
