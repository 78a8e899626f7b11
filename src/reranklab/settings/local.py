"""``local.<name>``: a collection of one's own, declared in the config (no package edit).

One entry names the files of the collection and how runs on it are scored; the study then lists
``<name>`` in ``datasets`` like a registered dataset, and ``protocol.<name>`` tunes its protocol
(depth, folds, negatives, ...) as for any dataset. :mod:`reranklab.data.local` reads the files.

Relative paths are relative to the working directory, the study folder Snakemake runs in (as
``training.embeddings_path`` and the MLflow sqlite path are), not to the config file's folder.

Example:
    >>> entry = LocalCollection(queries="q.tsv", passages="p.jsonl", qrels="qrels.txt")
    >>> entry.scoring.queries, entry.scoring.measures
    ('relevant', ['P@1', 'MAP', 'MRR', 'MRR@10', 'nDCG@10'])
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from reranklab.settings.base import Keyed, NoOptions, Section, distinct_list
from reranklab.settings.protocol import protocol_model

# The measures a local collection may report: trec_eval's, at any cut-off (P@5, nDCG@20, R@100,
# MAP@10, MRR@10), plus the cut-free MAP and MRR.
MEASURE_PATTERN = r"^(MAP|MRR|(P|nDCG|R|MAP|MRR)@[1-9][0-9]{0,4})$"
LocalMeasure = Annotated[str, Field(pattern=MEASURE_PATTERN)]
# A dataset name: a folder of results/data/ and a rule wildcard (no ``irds:`` prefix).
LOCAL_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.]*(-[A-Za-z0-9_.]+)*$"
PathText = Annotated[str, Field(min_length=1)]


class LocalScoring(Section):
    """How runs on the collection are scored: which queries count, the relevance level and the measures."""

    queries: Literal["judged", "relevant", "relevant_and_nonrelevant"] = Field(
        "relevant",
        description="Which queries count: judged (every judged query, as trec_eval), relevant (those with a relevant passage, the re-ranking papers' choice) or relevant_and_nonrelevant (also a judged non-relevant one).",
    )
    relevance: int | None = Field(
        None,
        ge=1,
        description="Smallest grade the binary measures count as relevant; null = protocol.<name>.relevance_threshold (default 1). nDCG uses the grades as gains.",
    )
    measures: distinct_list(LocalMeasure) = Field(  # type: ignore[valid-type]
        ["P@1", "MAP", "MRR", "MRR@10", "nDCG@10"],
        description="Measures, in report order: MAP, MRR, or P, nDCG, R (recall), MAP, MRR at a cut-off k, written P@5, nDCG@20, R@100 (trec_eval's, by pytrec_eval).",
    )
    missing: Literal["zero", "skip"] = Field(
        "zero",
        description="A counted query without candidates in a run: zero (scores 0) or skip (left out, as trec_eval without -c).",
    )


# ``local.<name>.protocol``: the protocol keys, null = the value the files give (no options, the
# one scoring ``default``).
LocalProtocol = protocol_model("the collection", NoOptions, ("default",))


class LocalCollection(Section):
    """A collection of one's own: its files and how runs on it are scored."""

    queries: PathText = Field(
        description="Queries: TSV (id<TAB>text) or JSONL ({id|_id|qid, text|query}); .gz allowed.",
    )
    passages: PathText = Field(
        description="Passages: TSV (id<TAB>text), JSONL ({id|docid|_id, text|contents}, as Pyserini's JsonCollection and BEIR; a BEIR title is put before the text) or Parquet (columns id|docid|pid and text|contents); .gz allowed.",
    )
    qrels: PathText = Field(
        description="Judgements: TREC qrels (qid iteration docid grade, integer grades); .gz allowed.",
    )
    splits: PathText | None = Field(
        None,
        description='Optional predefined split: JSON {"train": [qids], "dev": [...], "test": [...]} or a folds file with one fold (reranklab\'s folds.json); the protocol\'s split is then predefined.',
    )
    first_stage_run: PathText | None = Field(
        None,
        description="Optional first-stage run (TREC: qid Q0 docid rank score tag): the candidates to re-rank; the protocol's first stage is then pool (this run) instead of BM25.",
    )
    title: str | None = Field(
        None,
        description="How messages and reports call the collection; null = its name.",
    )
    protocol: LocalProtocol = Field(  # type: ignore[valid-type]
        default_factory=LocalProtocol,
        description="The collection's own protocol (depth, folds, negatives_per_positive, ...): any key of a dataset's protocol; null or missing = what the files give (first stage: the run if given, else BM25 top 100; split: the given one, else 5-fold cross-validation). protocol.<name> overrides it as for any dataset.",
        json_schema_extra={"default": {}},
    )
    scoring: LocalScoring = Field(
        default_factory=LocalScoring,
        description="How runs on the collection are scored (the dataset's one scoring protocol, named default).",
        json_schema_extra={"default": {}},
    )


LocalName = Annotated[str, Field(pattern=LOCAL_NAME)]


class LocalBlock(Keyed):
    """``local``: one entry per collection of one's own, keyed by the name ``datasets`` uses."""

    model_config = ConfigDict(
        extra="allow", json_schema_extra={"propertyNames": {"pattern": LOCAL_NAME}}
    )
    kind: ClassVar[str] = "collection"
    # What settings.errors reads to name the keys of an entry (as for the aliases of variants).
    alias_model: ClassVar[type[BaseModel] | None] = LocalCollection
    __pydantic_extra__: dict[LocalName, LocalCollection]  # type: ignore[assignment]
