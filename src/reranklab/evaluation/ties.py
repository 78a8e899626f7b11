"""Tie rules: how equal scores of one query are ordered before a run is scored.

reranklab's own rule is ``hash``: a seeded hash of (qid, pid) (:func:`reranklab.io.tie_key`),
never an id or a file order, which would let page order or label order leak into a score.
The other rules exist for one purpose: to reproduce a figure that an official tool computed
on a run that contains ties (a count-based baseline, say), where the tool's own order decided
the result. ``reranklab score --ties official`` applies the dataset's tool's rule and says so.

- ``trec_eval``: equal scores by document id, descending (``strcmp(b, a)`` in trec_eval's
  ``form_res_rels.c``; pytrec_eval does the same), on the ids as the run file writes them;
- ``file``: equal scores in the order of the run file (the SemEval Task 3 scorer sorts with
  Python's stable ``sorted`` over the prediction file's lines).
"""

from __future__ import annotations

from reranklab.io import Run

RULES = ("hash", "trec_eval", "file", "official")
OFFICIAL_RULES = {"semeval2016": "file", "semeval2017": "file"}
"""The official tool's tie rule per dataset; every other dataset is scored by trec_eval."""


def official_rule(dataset: str) -> str:
    """The tie rule of ``dataset``'s official scorer.

    Example:
        >>> official_rule("semeval2016"), official_rule("wikiqa")
        ('file', 'trec_eval')
    """
    return OFFICIAL_RULES.get(dataset, "trec_eval")


def untie(run: Run, rule: str) -> Run:
    """``run`` with its ties resolved by ``rule``: scores replaced by distinct ranks (n .. 1).

    Args:
        run: ``{qid: {pid: score}}`` as read from the file (dicts keep the file's order).
        rule: ``trec_eval`` or ``file`` (``hash`` is applied by the evaluation itself).

    Example:
        >>> untie({"q": {"a": 1.0, "b": 1.0, "c": 2.0}}, "trec_eval")
        {'q': {'c': 3.0, 'b': 2.0, 'a': 1.0}}
        >>> untie({"q": {"a": 1.0, "b": 1.0, "c": 2.0}}, "file")
        {'q': {'c': 3.0, 'a': 2.0, 'b': 1.0}}
    """
    if rule not in ("trec_eval", "file"):
        raise ValueError(f"tie rule {rule!r}: untie takes trec_eval or file")
    out: Run = {}
    for qid, scores in run.items():
        items = list(scores.items())
        if rule == "file":
            ordered = sorted(items, key=lambda item: -item[1])  # stable: file order among equals
        else:
            # Score descending, then pid descending: two stable sorts, the secondary key first.
            ordered = sorted(
                sorted(items, key=lambda item: item[0], reverse=True), key=lambda item: -item[1]
            )
        n = len(ordered)
        out[qid] = {pid: float(n - rank) for rank, (pid, _) in enumerate(ordered)}
    return out
