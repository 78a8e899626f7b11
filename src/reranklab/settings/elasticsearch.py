"""The ``retrieval.elasticsearch`` block: where the cluster is and how the index is built.

A leaf of the settings package (pydantic and :mod:`~reranklab.settings.base` only). Nothing
here is a secret: credentials come only from the environment (``RERANKLAB_ES_API_KEY``, or
``RERANKLAB_ES_USER`` and ``RERANKLAB_ES_PASSWORD``), so they never reach ``params.yaml``, a
rule's ``--spec``, a log or MLflow.
"""

from __future__ import annotations

from pydantic import Field

from reranklab.settings.base import Section


class EsAnalyzer(Section):
    """The analyzer of the passage field; the defaults rebuild Lucene's ``EnglishAnalyzer``."""

    tokenizer: str = Field(
        "standard",
        description="Elasticsearch tokenizer (standard: Unicode word boundaries, as Lucene's EnglishAnalyzer).",
    )
    possessive: bool = Field(
        True, description="Strip a trailing 's from words (english_possessive), as EnglishAnalyzer."
    )
    lowercase: bool = Field(True, description="Lower-case tokens.")
    stopwords: str | list[str] | None = Field(
        "_english_",
        description="Stop words: a predefined Elasticsearch list (_english_: Lucene's 33 English stop words, the same as bm25s' `en`), a list of words, or null (none).",
    )
    stemmer: str | None = Field(
        "english",
        description="Elasticsearch stemmer language (english: Porter, as EnglishAnalyzer; porter2: Snowball English; light_english; minimal_english), or null (no stemming).",
    )


class EsSettings(Section):
    """An Elasticsearch cluster as the BM25 first stage (``retrieval.backend: elasticsearch``)."""

    url: str | None = Field(
        None,
        description="Cluster URL, e.g. http://localhost:9200 (env RERANKLAB_ES_URL wins); never with credentials: they come from env RERANKLAB_ES_API_KEY or RERANKLAB_ES_USER + RERANKLAB_ES_PASSWORD.",
    )
    ca_certs: str | None = Field(
        None,
        description="CA bundle (PEM file) that signed the cluster's certificate; TLS certificates are always verified.",
    )
    index_prefix: str = Field(
        "reranklab",
        pattern=r"^[a-z0-9][a-z0-9_-]{0,99}$",
        description="Start of the index name; the rest is derived from the corpus content and the index settings, so a changed setting builds a new index and an equal one reuses it.",
    )
    shards: int = Field(
        1, ge=1, description="Primary shards (searches use global term statistics)."
    )
    replicas: int = Field(0, ge=0, description="Replicas of each shard.")
    analyzer: EsAnalyzer = Field(
        default_factory=EsAnalyzer,
        description="Analysis of passages and queries (default: Lucene's English analyzer).",
        json_schema_extra={"default": {}},
    )
    bulk_docs: int = Field(1000, ge=1, description="Passages per _bulk request while indexing.")
    search_queries: int = Field(64, ge=1, description="Queries per _msearch request.")
    timeout: float = Field(
        120.0, gt=0, description="Seconds a request may take before it counts as timed out."
    )
    max_retries: int = Field(
        5,
        ge=0,
        description="Retries, with exponential back-off, of a request that timed out or was answered 429, 502, 503 or 504; then the step fails naming the URL.",
    )
