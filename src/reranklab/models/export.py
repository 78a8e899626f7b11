"""``reranklab export MODEL_DIR OUT_DIR``: a trained model as a folder ready for the Hugging Face hub.

The model is loaded with its variant's loader and saved again into ``OUT_DIR`` (atomically), so
the folder is what the current code writes whatever version trained it: for the cross-encoders
with a linear head on [CLS] (``pointwise``, ``monobert``, ``bertlets``, ``pairwise_ce``,
``bertsel``, ``marked``) a standard one-logit ``*ForSequenceClassification`` checkpoint
(safetensors, ``config.json`` with sentence-transformers' ``CrossEncoder`` settings, tokenizer)
that gives the run's scores; for the others reranklab's own layout, loaded with
``reranklab.load``. Either way ``reranklab.load`` reads it, and ``README.md`` is the model card
(YAML front matter: ``library_name``, ``pipeline_tag``, ``tags``, ``base_model``, ``datasets``).

When ``MODEL_DIR`` is a workflow output (``<results>/models/<dataset>/<cell>/fold<k>``) the card
also gives the dataset, the fold and the measures of ``<results>/metrics/<dataset>/<cell>/
fold<k>.json`` and ``<results>/cells/<dataset>/<cell>/metrics.json``. Nothing is uploaded:
``huggingface_hub.upload_folder(folder_path=OUT_DIR, repo_id=...)`` does that.

This module imports nothing heavy at import time (the CLI builds its parser from it).
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reranklab.errors import FormatError, ReranklabError

# Files of a model folder that are not the model: training statistics (with local paths).
_LEFT_OUT = ("train_stats.json",)


@dataclass(frozen=True)
class Provenance:
    """Where a model folder of the workflow comes from.

    Args:
        results: the results folder (``.../results``).
        dataset: the dataset; ``cell``: the cell's name (``pointwise-L128``, ``.../seed3``).
        fold: the fold; ``seed``: the seed of a seed axis, if any.
    """

    results: Path
    dataset: str
    cell: str
    fold: int
    seed: int | None = None

    @property
    def fold_metrics(self) -> Path:
        """``<results>/metrics/<dataset>/<cell>/fold<k>.json``."""
        return self.results / "metrics" / self.dataset / self.cell / f"fold{self.fold}.json"

    def cell_metrics(self) -> Path:
        """``<results>/cells/<dataset>/<cell>/metrics.json`` (the seedless cell's, if only it exists)."""
        path = self.results / "cells" / self.dataset / self.cell / "metrics.json"
        if path.is_file() or self.seed is None:
            return path
        return self.results / "cells" / self.dataset / self.cell.split("/")[0] / "metrics.json"


def provenance(model_dir: str | Path) -> Provenance | None:
    """Read dataset, cell, seed and fold off a workflow model folder's path (``None`` if it is not one).

    Example:
        >>> p = provenance("results/models/wikiqa/pointwise-L256/fold3")
        >>> p.dataset, p.cell, p.fold, p.seed, p.fold_metrics.as_posix().endswith("results/metrics/wikiqa/pointwise-L256/fold3.json")
        ('wikiqa', 'pointwise-L256', 3, None, True)
        >>> provenance("results/models/wikiqa/pointwise-L256/seed2/fold0").cell
        'pointwise-L256/seed2'
        >>> provenance("my-model") is None
        True
    """
    from reranklab.settings.cell import Cell

    path = Path(model_dir).resolve()
    fold = re.fullmatch(r"fold(\d+)", path.name)
    if fold is None:
        return None
    cell_dir, seed = path.parent, None
    seeded = re.fullmatch(r"seed(\d+)", cell_dir.name)
    if seeded is not None:
        seed, cell_dir = int(seeded.group(1)), cell_dir.parent
    dataset_dir = cell_dir.parent
    if dataset_dir.parent.name != "models":
        return None
    try:
        cell = Cell.parse(
            dataset_dir.name, cell_dir.name + ("" if seed is None else f"/seed{seed}")
        )
    except ValueError:
        return None
    return Provenance(
        dataset_dir.parent.parent, dataset_dir.name, cell.name, int(fold.group(1)), seed
    )


def _number_map(path: Path, data: Any, key: str) -> dict[str, float]:
    values = data.get(key) if isinstance(data, dict) else None
    if not isinstance(values, dict) or not all(isinstance(v, int | float) for v in values.values()):
        raise FormatError(path, None, f"no {key!r} object of measure values")
    return {str(name): float(value) for name, value in values.items()}


def read_fold_metrics(path: Path) -> dict[str, Any]:
    """The card facts of an ``evaluate`` metrics file: ``fold_measures``, ``fold_queries``,
    ``measure_order`` (its ``aggregate``, ``n_queries`` and ``measures``).

    Raises:
        FormatError: the file has no ``aggregate`` object of numbers.
    """
    from reranklab.io.json_io import read_json

    data = read_json(path)
    facts: dict[str, Any] = {"fold_measures": _number_map(path, data, "aggregate")}
    if isinstance(data.get("n_queries"), int):
        facts["fold_queries"] = data["n_queries"]
    if isinstance(data.get("measures"), list):
        facts["measure_order"] = tuple(str(m) for m in data["measures"])
    return facts


def read_cell_metrics(path: Path) -> dict[str, Any]:
    """The card facts of an ``aggregate`` cell metrics file: ``cell_measures`` (fold mean and
    std), ``cell_folds``, ``measure_order``.

    Raises:
        FormatError: the file has no ``fold_mean`` / ``fold_std`` objects of numbers.
    """
    from reranklab.io.json_io import read_json

    data = read_json(path)
    mean = _number_map(path, data, "fold_mean")
    std = _number_map(path, data, "fold_std")
    facts: dict[str, Any] = {
        "cell_measures": {name: (value, std.get(name, 0.0)) for name, value in mean.items()}
    }
    if isinstance(data.get("n_folds"), int):
        facts["cell_folds"] = data["n_folds"]
    if isinstance(data.get("measures"), list):
        facts["measure_order"] = tuple(str(m) for m in data["measures"])
    return facts


def export_model(
    model_dir: str | Path,
    out_dir: str | Path,
    *,
    dataset: str | None = None,
    fold: int | None = None,
    metrics: str | Path | None = None,
    cell_metrics: str | Path | None = None,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Write ``model_dir``'s model into ``out_dir`` as a folder ready for ``upload_folder``.

    Args:
        model_dir: a saved model folder (any variant).
        out_dir: the folder to write (replaced as a whole, atomically).
        dataset, fold: what the card says the model was trained on; default: read off a
            workflow path (:func:`provenance`).
        metrics: an ``evaluate`` metrics file of the fold (default: the workflow's, if any).
        cell_metrics: the cell's ``aggregate`` metrics file (default: the workflow's, if any).
        overwrite: replace an existing, non-empty ``out_dir``.

    Returns:
        ``{"out", "variant", "architecture", "standard", "problem", "files"}``.

    Raises:
        FormatError: ``model_dir`` holds no saved re-ranker, or a metrics file is malformed.
        ReranklabError: ``out_dir`` exists and is not empty (without ``overwrite``), or is
            ``model_dir`` or inside it.

    Example:
        >>> import tempfile
        >>> from reranklab.models.reranker import CrossEncoderReranker
        >>> from reranklab.models.tiny import tiny_encoder
        >>> saved = CrossEncoderReranker(*tiny_encoder(["who"]), variant="bertlets", num_outputs=1,
        ...     score="logit", max_length=16).save(tempfile.mkdtemp())
        >>> result = export_model(saved, Path(tempfile.mkdtemp()) / "hub", dataset="wikiqa")
        >>> result["architecture"], "README.md" in result["files"]
        ('BertForSequenceClassification', True)
    """
    from reranklab.io.atomic import atomic_directory
    from reranklab.models.card import facts_from_directory, write_card
    from reranklab.models.registry import get_variant, load_model

    source, out = Path(model_dir), Path(out_dir)
    if out.resolve() == source.resolve() or source.resolve() in out.resolve().parents:
        raise ReranklabError(f"export: {out} is the model folder {source} or inside it")
    if out.exists() and (not out.is_dir() or any(out.iterdir())) and not overwrite:
        raise ReranklabError(f"export: {out} exists and is not empty (--force replaces it)")

    known: dict[str, Any] = {}
    origin = provenance(source)
    if origin is not None:
        known.update(dataset=origin.dataset, fold=origin.fold, seed=origin.seed)
        metrics = metrics if metrics is not None else _existing(origin.fold_metrics)
        cell_metrics = (
            cell_metrics if cell_metrics is not None else _existing(origin.cell_metrics())
        )
    if dataset is not None:
        known["dataset"] = dataset
    if fold is not None:
        known["fold"] = int(fold)
    if cell_metrics is not None:
        known.update(read_cell_metrics(Path(cell_metrics)))
    if metrics is not None:
        known.update(read_fold_metrics(Path(metrics)))  # its measure order wins

    model = load_model(source, device="cpu")
    check = getattr(model, "standard_checkpoint_problem", None)
    problem = check() if callable(check) else None
    known["description"] = get_variant(model.variant).description
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_directory(out) as tmp:
        model.save(tmp)
        for name in _LEFT_OUT:
            (tmp / name).unlink(missing_ok=True)
        facts = facts_from_directory(tmp, problem, **known)
        write_card(tmp, facts)
    return {
        "out": str(out),
        "variant": facts.variant,
        "architecture": facts.architecture,
        "standard": facts.standard,
        "problem": facts.problem,
        "files": sorted(p.name for p in out.iterdir()),
    }


def _existing(path: Path) -> Path | None:
    return path if path.is_file() else None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``reranklab export``."""
    parser.add_argument("model_dir", metavar="MODEL_DIR", help="a trained model folder")
    parser.add_argument(
        "out_dir", metavar="OUT_DIR", help="the folder to write (for upload_folder)"
    )
    parser.add_argument(
        "--dataset",
        default=None,
        help="the dataset the card names (default: from MODEL_DIR's path)",
    )
    parser.add_argument(
        "--fold", type=int, default=None, help="the fold the card names (default: from the path)"
    )
    parser.add_argument(
        "--metrics",
        default=None,
        help="the fold's metrics JSON (default: <results>/metrics/<dataset>/<cell>/fold<k>.json)",
    )
    parser.add_argument(
        "--cell-metrics",
        default=None,
        help="the cell's metrics JSON (default: <results>/cells/<dataset>/<cell>/metrics.json)",
    )
    parser.add_argument("--force", action="store_true", help="replace a non-empty OUT_DIR")


def command(args: argparse.Namespace) -> None:
    """Run ``reranklab export`` and print what was written and how it loads."""
    result = export_model(
        args.model_dir,
        args.out_dir,
        dataset=args.dataset,
        fold=args.fold,
        metrics=args.metrics,
        cell_metrics=args.cell_metrics,
        overwrite=args.force,
    )
    print(f"wrote {result['out']}: {', '.join(result['files'])}")
    if result["standard"]:
        print(
            f"  {result['architecture']} (one logit = the run's score): loads with sentence-transformers'"
            " CrossEncoder, AutoModelForSequenceClassification and reranklab.load"
        )
    else:
        print(f"  reranklab's own layout ({result['problem']}): loads with reranklab.load")
    print(
        "  upload: huggingface_hub.upload_folder(folder_path=..., repo_id=...) (nothing was uploaded)"
    )
