"""From the ``retrieval`` settings to what is sent to Elasticsearch: the connection, the index
body, its name, and the search requests. Pure functions: no client, no server.

The index is named after what determines its content (the corpus file's sha256 and the index
body: BM25 ``k1``/``b``, the analyzer, shards, replicas), so a second run finds a complete index
to reuse and a changed setting builds a new one beside it. The index body marks the index as
reranklab's in the mapping's ``_meta``; an index without that mark is never deleted.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from reranklab.errors import ConfigError
from reranklab.retrieval.redact import basic_auth_token, redact_url
from reranklab.settings.base import loose
from reranklab.settings.elasticsearch import EsAnalyzer
from reranklab.settings.model import Retrieval

ENV_URL = "RERANKLAB_ES_URL"
ENV_API_KEY = "RERANKLAB_ES_API_KEY"
ENV_USER = "RERANKLAB_ES_USER"
ENV_PASSWORD = "RERANKLAB_ES_PASSWORD"

INDEX_FORMAT = 1  # bump when the body's layout changes: every index name changes with it
FIELD = "text"
ANALYZER = "reranklab_text"
SIMILARITY = "reranklab_bm25"
META_KEY = "reranklab"  # mappings._meta.reranklab marks an index reranklab created
# The HTTP statuses the client retries (with back-off where it supports it): throttling and a
# gateway or node that is briefly unavailable. Timeouts are retried too (retry_on_timeout).
RETRY_ON_STATUS = (429, 502, 503, 504)
RETRY_BACKOFF = (1.0, 30.0)  # base and cap, seconds, of the client's jittered back-off
MAX_RESULT_WINDOW = 10_000  # Elasticsearch's default index.max_result_window


def retrieval_settings(settings: Mapping[str, Any]) -> Retrieval:
    """The ``retrieval`` block typed, missing keys at their defaults; keys that are not
    settings (``threads``: how a job runs, added by the command line) are left out.

    Example:
        >>> retrieval_settings({"backend": "elasticsearch", "k1": 1.2, "threads": 2}).elasticsearch.shards
        1
    """
    known = {k: v for k, v in settings.items() if k in Retrieval.model_fields}
    return loose(Retrieval).model_validate(known)


# -- connection ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Connection:
    """Where the cluster is and how to authenticate; ``repr`` shows no secret.

    Args:
        url: the cluster URL without credentials.
        api_key: from ``RERANKLAB_ES_API_KEY``.
        basic_auth: ``(user, password)`` from ``RERANKLAB_ES_USER``/``RERANKLAB_ES_PASSWORD``
            (or the userinfo of ``RERANKLAB_ES_URL``).
        ca_certs: CA bundle that verifies the cluster's certificate.
        timeout: seconds per request.
        max_retries: retries of a request that timed out or got a status of
            :data:`RETRY_ON_STATUS`.
    """

    url: str
    api_key: str | None = field(default=None, repr=False)
    basic_auth: tuple[str, str] | None = field(default=None, repr=False)
    ca_certs: str | None = None
    timeout: float = 120.0
    max_retries: int = 5

    @property
    def display_url(self) -> str:
        """The URL as messages and ``index.json`` show it (never with credentials)."""
        return redact_url(self.url)

    @property
    def secrets(self) -> tuple[str, ...]:
        """Every value that must be masked wherever a message is shown."""
        out: list[str] = []
        if self.api_key:
            out.append(self.api_key)
        if self.basic_auth:
            user, password = self.basic_auth
            out += [password, basic_auth_token(user, password)]
        return tuple(out)

    def client_options(self) -> dict[str, Any]:
        """Keyword arguments of ``elasticsearch.Elasticsearch`` (TLS always verified).

        Example:
            >>> opts = Connection("https://es:9200", api_key="k", ca_certs="ca.pem").client_options()
            >>> opts["hosts"], opts["verify_certs"], opts["ca_certs"], opts["retry_on_timeout"]
            (['https://es:9200'], True, 'ca.pem', True)
        """
        options: dict[str, Any] = {
            "hosts": [self.url],
            "request_timeout": float(self.timeout),
            "max_retries": int(self.max_retries),
            "retry_on_status": RETRY_ON_STATUS,
            "retry_on_timeout": True,
        }
        if self.url.startswith("https"):
            options["verify_certs"] = True
            if self.ca_certs:
                options["ca_certs"] = self.ca_certs
        if self.api_key:
            options["api_key"] = self.api_key
        elif self.basic_auth:
            options["basic_auth"] = self.basic_auth
        return options


def resolve_connection(
    settings: Mapping[str, Any],
    environ: Mapping[str, str] | None = None,
    fallback_url: str | None = None,
) -> Connection:
    """The cluster of ``retrieval`` settings: URL from ``RERANKLAB_ES_URL`` (else
    ``retrieval.elasticsearch.url``, else ``fallback_url``: the one ``index.json`` recorded),
    credentials only from the environment.

    Raises:
        ConfigError: no URL; a URL that is not http(s); credentials written into the
            settings' URL; a user without a password (or the reverse); both an API key and a
            user; a ``ca_certs`` file that does not exist. Messages never show a secret.

    Example:
        >>> c = resolve_connection({}, {"RERANKLAB_ES_URL": "https://u:pw@es:9200", "RERANKLAB_ES_API_KEY": ""})
        >>> c, c.basic_auth == ("u", "pw")
        (Connection(url='https://es:9200', ca_certs=None, timeout=120.0, max_retries=5), True)
    """
    env = os.environ if environ is None else environ
    es = retrieval_settings(settings).elasticsearch
    url, source = env.get(ENV_URL, "").strip(), ENV_URL
    if not url:
        url, source = (es.url or "").strip(), "retrieval.elasticsearch.url"
    if not url and fallback_url:
        url, source = fallback_url, "the index's index.json"
    if not url:
        raise ConfigError(
            f"retrieval.backend elasticsearch: no cluster URL (set {ENV_URL}, e.g. "
            "http://localhost:9200, or retrieval.elasticsearch.url)"
        )
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises ValueError on a bad port)
    except ValueError as exc:
        raise ConfigError(f"{source}: not a URL: {redact_url(url)} ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{source}: expected http(s)://host[:port], got {redact_url(url)!r}")
    basic_auth = None
    if parts.username is not None or parts.password is not None:
        if source != ENV_URL:
            raise ConfigError(
                f"{source}: credentials in the URL are refused (they would be written to "
                f"params and logs): use {redact_url(url)} and set {ENV_API_KEY}, or "
                f"{ENV_USER} and {ENV_PASSWORD}, in the environment"
            )
        basic_auth = (parts.username or "", parts.password or "")
    api_key = env.get(ENV_API_KEY) or None
    user, password = env.get(ENV_USER) or None, env.get(ENV_PASSWORD) or None
    if (user is None) != (password is None):
        missing = ENV_PASSWORD if password is None else ENV_USER
        raise ConfigError(f"{ENV_USER} and {ENV_PASSWORD} go together: {missing} is not set")
    if user is not None:
        basic_auth = (user, password or "")
    if api_key and basic_auth:
        raise ConfigError(
            f"both {ENV_API_KEY} and a user/password are set: keep one way to authenticate"
        )
    if es.ca_certs and not Path(es.ca_certs).is_file():
        raise ConfigError(f"retrieval.elasticsearch.ca_certs: no such file {es.ca_certs}")
    return Connection(
        url=redact_url(url),
        api_key=api_key,
        basic_auth=basic_auth,
        ca_certs=es.ca_certs,
        timeout=es.timeout,
        max_retries=es.max_retries,
    )


# -- the index ------------------------------------------------------------------------------------


def analysis(analyzer: EsAnalyzer) -> dict[str, Any]:
    """The ``analysis`` settings: one custom analyzer (:data:`ANALYZER`) and its filters.

    The defaults give Lucene's ``EnglishAnalyzer`` chain: standard tokenizer, English
    possessive filter, lower case, the English stop words, the Porter stemmer.

    Example:
        >>> analysis(EsAnalyzer())["analyzer"]["reranklab_text"]["filter"]
        ['reranklab_possessive', 'lowercase', 'reranklab_stop', 'reranklab_stemmer']
    """
    filters: dict[str, Any] = {}
    chain: list[str] = []
    if analyzer.possessive:
        filters["reranklab_possessive"] = {"type": "stemmer", "language": "possessive_english"}
        chain.append("reranklab_possessive")
    if analyzer.lowercase:
        chain.append("lowercase")
    if analyzer.stopwords is not None:
        filters["reranklab_stop"] = {"type": "stop", "stopwords": analyzer.stopwords}
        chain.append("reranklab_stop")
    if analyzer.stemmer:
        filters["reranklab_stemmer"] = {"type": "stemmer", "language": analyzer.stemmer}
        chain.append("reranklab_stemmer")
    out: dict[str, Any] = {
        "analyzer": {ANALYZER: {"type": "custom", "tokenizer": analyzer.tokenizer, "filter": chain}}
    }
    if filters:
        out["filter"] = filters
    return out


def index_body(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The create-index body (``settings`` and ``mappings``, without ``_meta``).

    One ``text`` field: analysed by :data:`ANALYZER`, scored by a BM25 similarity with the
    settings' ``k1`` and ``b``, term frequencies without positions (no phrase queries), no
    ``_source`` (``corpus.parquet`` stays the only copy of the texts). ``refresh_interval``
    is off while bulk indexing; the build refreshes once at the end.

    Example:
        >>> body = index_body({"k1": 1.2, "b": 0.75})
        >>> body["settings"]["index"]["similarity"]["reranklab_bm25"]
        {'type': 'BM25', 'k1': 1.2, 'b': 0.75, 'discount_overlaps': True}
    """
    retrieval = retrieval_settings(settings)
    es = retrieval.elasticsearch
    return {
        "settings": {
            "index": {
                "number_of_shards": int(es.shards),
                "number_of_replicas": int(es.replicas),
                "refresh_interval": "-1",
                "similarity": {
                    SIMILARITY: {
                        "type": "BM25",
                        "k1": float(retrieval.k1),
                        "b": float(retrieval.b),
                        "discount_overlaps": True,
                    }
                },
                "analysis": analysis(es.analyzer),
            }
        },
        "mappings": {
            "dynamic": "strict",
            "_source": {"enabled": False},
            "properties": {
                FIELD: {
                    "type": "text",
                    "analyzer": ANALYZER,
                    "similarity": SIMILARITY,
                    "index_options": "freqs",
                }
            },
        },
    }


def body_digest(body: Mapping[str, Any]) -> str:
    """sha256 of the body's canonical JSON (with :data:`INDEX_FORMAT`)."""
    canonical = json.dumps(
        {"format": INDEX_FORMAT, "body": body}, sort_keys=True, separators=(",", ":")
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def index_name(prefix: str, corpus_sha256: str, body: Mapping[str, Any]) -> str:
    """``<prefix>-<corpus sha256, 16 hex>-<body digest, 12 hex>``: lower case, at most 130 bytes.

    Example:
        >>> index_name("reranklab", "ab" * 32, index_body({}))  # doctest: +ELLIPSIS
        'reranklab-abababababababab-...'
    """
    return f"{prefix}-{corpus_sha256[:16]}-{body_digest(body)[:12]}"


def index_meta(corpus_sha256: str, passages: int, body: Mapping[str, Any]) -> dict[str, Any]:
    """The ``_meta.reranklab`` mark: who made the index, from what, and whether it is complete.

    Example:
        >>> index_meta("ab" * 32, 3, {})["complete"]
        False
    """
    return {
        "created_by": "reranklab",
        "format": INDEX_FORMAT,
        "corpus_sha256": corpus_sha256,
        "passages": int(passages),
        "body_sha256": body_digest(body),
        "complete": False,
    }


# -- searching ------------------------------------------------------------------------------------


def search_body(text: str, size: int, min_score: float | None = None) -> dict[str, Any]:
    """One search of ``_msearch``: a BM25 ``match`` of the query (its terms OR-ed, as Lucene's
    bag of words), ``size`` hits, ids and scores only.

    ``min_score`` (every hit scoring at least this) fetches a whole group of passages tied at
    the cut, so which of them make the top ``depth`` is decided by reranklab's seeded hash,
    not by Elasticsearch's internal order.

    Example:
        >>> search_body("what is bm25", 11)
        {'query': {'match': {'text': {'query': 'what is bm25'}}}, 'size': 11, '_source': False, 'track_total_hits': False}
    """
    body: dict[str, Any] = {
        "query": {"match": {FIELD: {"query": text}}},
        "size": int(size),
        "_source": False,
        "track_total_hits": False,
    }
    if min_score is not None:
        body["min_score"] = float(min_score)
    return body


def msearch_lines(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``_msearch`` NDJSON lines: an empty header (the index is the request's) per body.

    Example:
        >>> msearch_lines([{"size": 1}, {"size": 2}])
        [{}, {'size': 1}, {}, {'size': 2}]
    """
    lines: list[dict[str, Any]] = []
    for body in bodies:
        lines += [{}, body]
    return lines


# Only what is read back: statuses, errors, ids and scores (no _index, no total, no _source).
MSEARCH_FILTER = (
    "responses.status",
    "responses.error",
    "responses.hits.hits._id",
    "responses.hits.hits._score",
)
