"""MarkedBERT's per-query analysis: Δ against a base model, sorted, and by kind of query.

Three outputs for one dataset and measure (MRR by default, as MarkedBERT plots):

- ``query_delta.png`` / ``query_delta.csv``: for every cell, each query's value minus the
  base's (the ``reference`` cell of ``report.significance`` when it is in this dataset, else
  the first stage), sorted from the largest gain to the largest loss: where a model helps and
  where it hurts, query by query;
- ``by_query_length.csv``: the mean per cell over queries of each length (in words) bucket;
- ``by_query_type.csv``: the mean per cell over queries of each first question word.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from reranklab.report.analyses.figures import new_figure, save_figure, save_table
from reranklab.report.analyses.study import Row, StudyData

QUESTION_WORDS = ("what", "how", "why", "when", "where", "who", "whom", "whose", "which")
LENGTH_BUCKETS = ((1, 5), (6, 8), (9, 12), (13, None))  # words, inclusive


def query_type(text: str) -> str:
    """The first question word of a query (``what``, ``how``, …), else ``other``.

    Example:
        >>> query_type("How Much Does Life Insurance Cost?"), query_type("is it taxed")
        ('how', 'other')
    """
    words = text.lower().replace("'", " ").split()
    return (
        words[0].strip("?,.:;") if words and words[0].strip("?,.:;") in QUESTION_WORDS else "other"
    )


def length_bucket(text: str) -> str:
    """The length bucket (in whitespace-separated words) of a query: ``1-5`` … ``13+``.

    Example:
        >>> length_bucket("who sells mortgage life insurance"), length_bucket("a " * 20)
        ('1-5', '13+')
    """
    n = len(text.split())
    for low, high in LENGTH_BUCKETS:
        if high is None or n <= high:
            return f"{low}+" if high is None else f"{low}-{high}"
    raise AssertionError("the last bucket is open")


def base_row(study: StudyData, dataset: str, reference: str | None) -> Row | None:
    rows = study.rows(dataset)
    chosen = next((row for row in rows if row.key == reference), None)
    return chosen or next((row for row in rows if row.first_stage), None)


def per_query_table(study: StudyData, dataset: str, measure: str) -> pd.DataFrame:
    """Long form: ``cell, qid, value, words, length, type`` for every row of the dataset."""
    queries = study.queries(dataset)
    records = []
    for row in study.rows(dataset):
        for qid, values in study.per_query(row).items():
            if values.get(measure) is None:
                continue
            text = queries.get(qid, "")
            records.append(
                {
                    "cell": row.label,
                    "qid": qid,
                    "value": values[measure],
                    "words": len(text.split()),
                    "length": length_bucket(text) if text else "unknown",
                    "type": query_type(text) if text else "unknown",
                }
            )
    return pd.DataFrame(records, columns=["cell", "qid", "value", "words", "length", "type"])


def _by(table: pd.DataFrame, column: str, dataset: str, measure: str) -> pd.DataFrame:
    grouped = table.groupby(["cell", column], sort=True)["value"].agg(["mean", "count"])
    out = grouped.reset_index().rename(columns={"mean": measure, "count": "queries"})
    out.insert(0, "dataset", dataset)
    return out


def query_delta(
    study: StudyData,
    dataset: str,
    out_dir: Path,
    measure: str = "MRR",
    reference: str | None = None,
) -> list[Path]:
    """The sorted per-query Δ plot and table, and the tables by query length and type."""
    if measure not in study.measures:
        measure = study.measures[0]
    table = per_query_table(study, dataset, measure)
    base = base_row(study, dataset, reference)
    deltas = []
    figure, axes = new_figure(7.0, 4.0)
    if base is not None:
        base_values = table[table["cell"] == base.label].set_index("qid")["value"]
        for row in study.rows(dataset):
            if row.key == base.key:
                continue
            mine = table[table["cell"] == row.label].set_index("qid")["value"]
            common = mine.index.intersection(base_values.index)
            # Equal Δs in qid order (a display order: nothing is ranked or scored by it).
            delta = (mine[common] - base_values[common]).sort_index()
            delta = delta.sort_values(ascending=False, kind="stable")
            deltas += [
                {
                    "dataset": dataset,
                    "cell": row.label,
                    "base": base.label,
                    "rank": rank,
                    "qid": qid,
                    f"delta_{measure}": value,
                }
                for rank, (qid, value) in enumerate(delta.items(), start=1)
            ]
            axes.plot(range(1, len(delta) + 1), delta.to_numpy(), label=row.label)
        axes.axhline(0, color="grey", linewidth=0.8)
        axes.set_title(f"{dataset}: per-query Δ{measure} against {base.label}, sorted")
    axes.set_xlabel("queries, sorted by Δ")
    axes.set_ylabel(f"Δ{measure}")
    if deltas:
        axes.legend(fontsize=8)
    columns = ["dataset", "cell", "base", "rank", "qid", f"delta_{measure}"]
    return [
        save_figure(figure, out_dir / "query_delta.png"),
        *save_table(
            pd.DataFrame(deltas, columns=columns),
            out_dir / "query_delta.csv",
            f"{dataset}: per-query Δ{measure}, sorted",
        ),
        *save_table(
            _by(table, "length", dataset, measure),
            out_dir / "by_query_length.csv",
            f"{dataset}: {measure} by query length (words)",
        ),
        *save_table(
            _by(table, "type", dataset, measure),
            out_dir / "by_query_type.csv",
            f"{dataset}: {measure} by first question word",
        ),
    ]
