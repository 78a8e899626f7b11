"""reranklab: BERT passage re-ranking studies for (non-factoid) QA, from raw data to results."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

__version__ = "0.1.0"

if TYPE_CHECKING:
    import pandas as pd

    from reranklab.evaluation.protocol import Scoring
    from reranklab.io.trec import Qrels, Run
    from reranklab.training.predict import Reranker

__all__ = ["__version__", "evaluate", "load"]


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


def evaluate(
    run: Run,
    qrels: Qrels,
    protocol: str | Scoring | None = None,
    **options: object,
) -> pd.DataFrame:
    """Score a run per query, under a dataset's official protocol or trec_eval's.

    As ``reranklab score`` does for run files, from Python objects: see
    :func:`reranklab.score.evaluate_frame` for ``protocol`` and the ``options`` (``qids``,
    ``measures``, ``relevance``, ``ties``, ``tie_seed``).

    Returns:
        A pandas ``DataFrame`` indexed by ``qid``, a column per measure; ``frame.attrs`` holds
        the ``aggregate`` means, the ``scoring``, the ``excluded`` queries and the ``ties``.

    Example:
        >>> import reranklab
        >>> run = {"q1": {"a": 0.9, "b": 0.5}, "q2": {"c": 0.1, "d": 0.7}}
        >>> qrels = {"q1": {"b": 1}, "q2": {"d": 1}}
        >>> frame = reranklab.evaluate(run, qrels, measures=["MRR"])
        >>> means = frame.attrs["aggregate"]
        >>> frame["MRR"].to_dict(), means["MRR"]
        ({'q1': 0.5, 'q2': 1.0}, 0.75)
    """
    from reranklab.score import evaluate_frame

    return evaluate_frame(run, qrels, protocol, **options)  # type: ignore[arg-type]
