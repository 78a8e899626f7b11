"""reranklab models in PyTerrier pipelines (``pip install 'reranklab[pyterrier]'``; no Java).

:class:`Reranker` is a PyTerrier transformer: it takes a result frame (``qid``, ``query``,
``docno`` and the passage text, e.g. a BM25 retriever's output with its text attached) and
returns it re-scored by a model reranklab trained or exported, with ``rank`` recomputed. The
scores are the model's raw ones (:meth:`reranklab.training.predict.Reranker.predict`, the same
code as the ``rerank`` step); equal scores are ranked in reranklab's seeded order, never by
``docno``. :func:`run_from_frame` and :func:`frame_from_run` convert between PyTerrier /
ir_measures result frames and reranklab's ``{qid: {docno: score}}`` runs.

Example:
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"qid": ["q1", "q1"], "docno": ["d1", "d2"], "score": [2.0, 1.0]})
    >>> run_from_frame(frame)
    {'q1': {'d1': 2.0, 'd2': 1.0}}
    >>> frame_from_run({"q1": {"d1": 2.0, "d2": 3.0}})[["qid", "docno", "score", "rank"]].values.tolist()
    [['q1', 'd2', 3.0, 0], ['q1', 'd1', 2.0, 1]]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pyterrier as pt

from reranklab.io.trec import TIE_SEED, Run, rank_order

__all__ = ["Reranker", "frame_from_run", "run_from_frame"]


def run_from_frame(frame: pd.DataFrame, score: str = "score") -> Run:
    """A PyTerrier / ir_measures result frame (``qid``, ``docno``, ``score``) as a run."""
    missing = [c for c in ("qid", "docno", score) if c not in frame.columns]
    if missing:
        raise ValueError(
            f"result frame: no column {', '.join(missing)} (has {list(frame.columns)})"
        )
    run: Run = {}
    for qid, docno, value in zip(frame["qid"], frame["docno"], frame[score], strict=True):
        run.setdefault(str(qid), {})[str(docno)] = float(value)
    return run


def _ranks(frame: pd.DataFrame, seed: int) -> pd.DataFrame:
    """``frame`` ordered best first within each query, ``rank`` from 0, ties by the seeded key."""
    pieces = []
    for qid, group in frame.groupby("qid", sort=False):
        scores = dict(zip(group["docno"].astype(str), group["score"], strict=True))
        order = {docno: rank for rank, (docno, _) in enumerate(rank_order(scores, str(qid), seed))}
        ranked = group.assign(rank=group["docno"].astype(str).map(order))
        pieces.append(ranked.sort_values("rank", kind="stable"))
    out = pd.concat(pieces) if pieces else frame.assign(rank=pd.Series(dtype="int64"))
    return out.reset_index(drop=True)


def frame_from_run(run: Run, seed: int = TIE_SEED) -> pd.DataFrame:
    """A run as a PyTerrier result frame: ``qid``, ``docno``, ``score``, ``rank`` (best first)."""
    rows = [(qid, docno, score) for qid, scores in run.items() for docno, score in scores.items()]
    return _ranks(pd.DataFrame(rows, columns=["qid", "docno", "score"]), seed)


class Reranker(pt.Transformer):
    """A reranklab model as a PyTerrier re-ranking stage.

    Args:
        model: a model folder (``results/models/...`` or ``reranklab export``'s), or a loaded
            :class:`reranklab.training.predict.Reranker`.
        text_field: the frame's column holding the passage text.
        batch_size: pairs per forward pass.
        device: ``auto``, ``cpu``, ``cuda`` or ``cuda:N``.
        tie_seed: the seed of the tie order of equal scores.

    Example:
        >>> bm25 = pt.terrier.Retriever(index, wmodel="BM25") >> pt.text.get_text(index, "text")  # doctest: +SKIP
        >>> pipeline = bm25 % 100 >> Reranker("results/models/wikiqa/bertsel-L64/seed42/fold0")  # doctest: +SKIP
    """

    def __init__(
        self,
        model: str | Path | Any,
        *,
        text_field: str = "text",
        batch_size: int = 32,
        device: str = "auto",
        tie_seed: int = TIE_SEED,
    ) -> None:
        if isinstance(model, str | Path):
            import reranklab

            model = reranklab.load(model, device=device)
        self.model = model
        self.text_field = text_field
        self.batch_size = batch_size
        self.tie_seed = tie_seed

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        """Re-score ``inp`` (``qid``, ``query``, ``docno``, ``text_field``) and re-rank it."""
        needed = ["qid", "query", "docno", self.text_field]
        missing = [c for c in needed if c not in inp.columns]
        if missing:
            raise ValueError(
                f"reranklab Reranker: the frame has no column {', '.join(missing)} "
                f"(has {list(inp.columns)}; add the text with pt.text.get_text)"
            )
        pairs = list(zip(inp["query"].astype(str), inp[self.text_field].astype(str), strict=True))
        scores = self.model.predict(pairs, batch_size=self.batch_size)
        return _ranks(inp.assign(score=scores), self.tie_seed)

    def __repr__(self) -> str:
        return f"reranklab.pyterrier.Reranker({self.model!r})"
