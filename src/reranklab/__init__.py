"""reranklab: BERT passage re-ranking studies for (non-factoid) QA, from raw data to results."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

__version__ = "0.1.0"

if TYPE_CHECKING:
    from reranklab.training.predict import Reranker

__all__ = ["__version__", "load"]


def load(directory: str | Path, device: str | None = "auto") -> Reranker:
    """Load a re-ranker saved by reranklab (any variant), ready to score (query, passage) pairs.

    ``predict`` gives the raw scores that reranklab's run files hold for the model (see
    :func:`reranklab.training.predict.load`). Importing reranklab stays light: torch and
    transformers load on the first call.

    Args:
        directory: a model folder (``results/models/<dataset>/<cell>/fold<k>``, or the output
            of ``reranklab export``).
        device: ``auto`` (CUDA when available), ``cpu``, ``cuda`` or ``cuda:N``.

    Returns:
        A :class:`~reranklab.training.predict.Reranker` with ``predict(pairs)`` and
        ``rank(query, passages)``.

    Raises:
        FormatError: the folder holds no saved re-ranker, or its files do not fit.

    Example:
        >>> import reranklab
        >>> model = reranklab.load("results/models/sample/pointwise-L128/fold0")  # doctest: +SKIP
        >>> model.predict([("how many legs does a spider have", "a spider has eight legs")])  # doctest: +SKIP
        array([2.71...])
    """
    from reranklab.training.predict import load as load_reranker

    return load_reranker(directory, device)
