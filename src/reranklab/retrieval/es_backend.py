"""BM25 on an Elasticsearch cluster (``retrieval.backend: elasticsearch``), with the official
client (``pip install 'reranklab[es]'``; imported only when this backend is used).

``build`` streams ``corpus.parquet`` into an index named after the corpus content and the index
settings (:mod:`~reranklab.retrieval.es_settings`), or reuses that index when a previous run
completed it, and writes ``index.json`` into the index directory (the Snakemake output): the
URL without credentials, the index name, its settings, the passage count and the corpus
digest. ``search`` reads ``index.json`` and asks ``_msearch`` for the top ``depth`` of each
query, ids and scores only.

Failures: the client retries a request that timed out or got 429/502/503/504 (``max_retries``,
with back-off), ``_bulk`` items rejected with 429 are retried by the bulk helper and
``_msearch`` items by :meth:`ElasticsearchRetriever._msearch`; then the step fails with an
:class:`~reranklab.retrieval.es_responses.ElasticsearchError` naming the URL (never its
credentials) and the step.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import random
import time
from collections.abc import Iterator, Mapping
from http import HTTPStatus
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from reranklab.errors import ConfigError, FormatError
from reranklab.io import Run, atomic_path, iter_corpus, read_json, write_json
from reranklab.io.digest import sha256_of
from reranklab.retrieval.base import Retriever
from reranklab.retrieval.es_responses import (
    ElasticsearchError,
    Hits,
    bulk_failures,
    count_of,
    error_of,
    msearch_hits,
    reranklab_meta,
    tie_at_cut,
    top,
)
from reranklab.retrieval.es_settings import (
    ENV_API_KEY,
    ENV_PASSWORD,
    ENV_USER,
    FIELD,
    MAX_RESULT_WINDOW,
    META_KEY,
    MSEARCH_FILTER,
    RETRY_BACKOFF,
    RETRY_ON_STATUS,
    Connection,
    body_digest,
    index_body,
    index_meta,
    index_name,
    msearch_lines,
    resolve_connection,
    retrieval_settings,
    search_body,
)
from reranklab.retrieval.redact import redact

log = logging.getLogger("reranklab")

INDEX_FILE = "index.json"
MAX_FAILURES = 10  # bulk item failures collected before indexing stops


def client_module() -> Any:
    """The ``elasticsearch`` package, or a clear error naming the extra that installs it."""
    try:
        import elasticsearch
    except ImportError:
        raise ConfigError(
            "retrieval.backend: elasticsearch needs the Elasticsearch client: "
            "pip install 'reranklab[es]' (elasticsearch 8.x for an 8.x cluster, 9.x for 9.x)"
        ) from None
    return elasticsearch


def count_passages(corpus_path: Path) -> int:
    """Passages in a corpus file (Parquet: from its footer, without reading the texts)."""
    if Path(corpus_path).suffix == ".jsonl":
        return sum(len(batch) for batch in iter_corpus(corpus_path))
    import pyarrow.parquet as pq

    try:
        return int(pq.ParquetFile(corpus_path).metadata.num_rows)
    except (OSError, ValueError) as exc:
        raise FormatError(corpus_path, None, f"not a corpus Parquet file ({exc})") from None


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "(no reason given)"


def describe(exc: Exception, connection: Connection) -> str:
    """What went wrong, in words, with what to do where it is known (not yet redacted)."""
    import elastic_transport

    es = client_module()
    retries = f"after {connection.max_retries} retries"
    if isinstance(exc, es.ApiError):
        status = exc.meta.status
        body = exc.body
        error = (
            error_of(body["error"], status)
            if isinstance(body, Mapping) and "error" in body
            else None
        )
        text = str(error) if error else f"HTTP {status} {_phrase(status)}"  # HEAD: no body
        if status in (401, 403):
            text += f" (check {ENV_API_KEY}, or {ENV_USER} and {ENV_PASSWORD})"
        elif status in RETRY_ON_STATUS:
            text += f" ({retries})"
        elif error and error.type == "media_type_header_exception":
            text += (
                f" (the client is elasticsearch {es.__versionstr__}: install the major version "
                "of the cluster, e.g. pip install 'elasticsearch>=8,<9' for an 8.x cluster)"
            )
        return text
    if isinstance(exc, elastic_transport.TlsError):
        return (
            f"TLS verification failed ({exc.message}): set retrieval.elasticsearch.ca_certs to the "
            "CA that signed the cluster's certificate"
        )
    if isinstance(exc, elastic_transport.ConnectionTimeout):
        return f"no answer within {connection.timeout:g} s, {retries} ({exc.message})"
    if isinstance(exc, elastic_transport.ConnectionError):
        return f"cannot connect, {retries}: is the server up? ({exc.message})"
    return f"{type(exc).__name__}: {exc}"


class RetryWithoutTraceback(logging.Filter):
    """One line per retry of the transport, not the failed attempt's traceback.

    The client logs every retry at WARNING with the exception's traceback: an unreachable
    server filled a step's log with a dozen identical tracebacks before the one error line the
    step writes (:meth:`ElasticsearchRetriever.step`), which says what failed and what to do.

    Example:
        >>> record = logging.LogRecord("elastic_transport.transport", logging.WARNING, "", 0,
        ...     "Retrying request after failure (attempt %d of %d)", (1, 3),
        ...     (ConnectionError, ConnectionError("refused"), None))
        >>> RetryWithoutTraceback().filter(record), record.getMessage(), record.exc_info
        (True, 'Retrying request after failure (attempt 1 of 3): ConnectionError: refused', None)
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            record.msg = f"{record.getMessage()}: {type(error).__name__}: {error}"
            record.args = ()
            record.exc_info = None
            record.exc_text = None
        return True


class ElasticsearchRetriever(Retriever):
    """BM25 by an Elasticsearch index; the index directory holds only ``index.json``.

    Args:
        settings: the ``retrieval`` block (``k1``, ``b`` and ``elasticsearch``).

    Example:
        >>> retriever = ElasticsearchRetriever({"backend": "elasticsearch", "k1": 1.2})
        >>> retriever.body["settings"]["index"]["similarity"]["reranklab_bm25"]["k1"]
        1.2
    """

    def __init__(self, settings: Mapping[str, Any]) -> None:
        super().__init__(settings)
        self.retrieval = retrieval_settings(settings)  # wrong settings fail here, before a request
        self.es = self.retrieval.elasticsearch
        self.body = index_body(settings)

    # -- connection and errors ------------------------------------------------------------------

    def connect(self, fallback_url: str | None = None) -> tuple[Any, Connection]:
        """A client for the cluster (no request made yet) and its :class:`Connection`."""
        es = client_module()
        connection = resolve_connection(self.settings, fallback_url=fallback_url)
        options = connection.client_options()
        # 9.x clients back off between retries when asked; 8.x clients have no such option.
        if "retry_backoff_base" in inspect.signature(es.Elasticsearch.__init__).parameters:
            options["retry_backoff_base"], options["retry_backoff_cap"] = RETRY_BACKOFF
        # The transport logs every request at INFO: one line per _bulk/_msearch would bury the
        # step's own log lines. Its warnings (retries) stay.
        transport_log = logging.getLogger("elastic_transport")
        transport_log.setLevel(max(transport_log.getEffectiveLevel(), logging.WARNING))
        retry_log = logging.getLogger("elastic_transport.transport")
        if not any(isinstance(f, RetryWithoutTraceback) for f in retry_log.filters):
            retry_log.addFilter(RetryWithoutTraceback())
        return es.Elasticsearch(**options), connection

    @contextlib.contextmanager
    def step(self, connection: Connection, name: str) -> Iterator[None]:
        """Turn a client failure inside into an :class:`ElasticsearchError` naming the URL and
        the step; every secret in use is masked in its text."""
        import elastic_transport

        es = client_module()
        try:
            yield
        except (es.ApiError, elastic_transport.TransportError) as exc:
            message = f"Elasticsearch at {connection.display_url}: {name} failed: "
            raise ElasticsearchError(
                redact(message + describe(exc, connection), connection.secrets)
            ) from None
        except ElasticsearchError as exc:
            message = f"Elasticsearch at {connection.display_url}: {name} failed: {exc}"
            raise ElasticsearchError(redact(message, connection.secrets)) from None

    # -- build ------------------------------------------------------------------------------------

    def build(self, corpus_path: Path, index_dir: Path) -> dict[str, Any]:
        """Index ``corpus_path`` (or reuse the complete index of the same content and settings)
        and write ``index_dir/index.json``.

        Returns:
            ``{"passages", "vocabulary": None, "index", "url", "reused"}``.

        Raises:
            ElasticsearchError: a request failed after its retries, a passage was rejected,
                the count check failed, or an index of that name exists that reranklab did
                not create (it is left alone).
        """
        corpus_path, index_dir = Path(corpus_path), Path(index_dir)
        passages = count_passages(corpus_path)
        corpus_sha256 = sha256_of(corpus_path)
        name = index_name(self.es.index_prefix, corpus_sha256, self.body)
        meta = index_meta(corpus_sha256, passages, self.body)
        client, connection = self.connect()
        with client:  # closes its connections, also on failure
            reused = self._ensure_index(client, connection, corpus_path, name, meta)
        record = {
            "backend": "elasticsearch",
            "url": connection.display_url,
            "index": name,
            "passages": passages,
            "corpus_sha256": corpus_sha256,
            "body_sha256": body_digest(self.body),
            "settings": {
                "k1": float(self.retrieval.k1),
                "b": float(self.retrieval.b),
                "elasticsearch": self.es.model_dump(
                    include={"index_prefix", "shards", "replicas", "analyzer"}
                ),
            },
        }
        index_dir.mkdir(parents=True, exist_ok=True)
        write_json(index_dir / INDEX_FILE, record)
        log.info(
            "%s index %s on %s: %d passages",
            "reused" if reused else "built",
            name,
            connection.display_url,
            passages,
        )
        return {**record, "vocabulary": None, "reused": reused}

    def _ensure_index(
        self,
        client: Any,
        connection: Connection,
        corpus_path: Path,
        name: str,
        meta: Mapping[str, Any],
    ) -> bool:
        """Reuse the complete index ``name``, or build it; True if reused."""
        passages = int(meta["passages"])
        with self.step(connection, "connect"):
            try:
                client.info()
            except client_module().AuthorizationException:
                pass  # authenticated: a key may hold index privileges only, not `monitor`
        if self._reusable(client, connection, name, meta):
            return True
        self._create(client, connection, name, meta)
        self._bulk(client, connection, corpus_path, name, passages)
        with self.step(connection, f"refresh of index {name}"):
            client.indices.refresh(index=name)
        with self.step(connection, f"count check of index {name}"):
            indexed = count_of(client.count(index=name).body)
            if indexed != passages:
                raise ElasticsearchError(
                    f"{indexed} documents in the index for {passages} passages of "
                    f"{corpus_path} (duplicate pids?); it stays marked incomplete"
                )
        with self.step(connection, f"marking index {name} complete"):
            client.indices.put_mapping(index=name, meta={META_KEY: {**meta, "complete": True}})
        return False

    def _reusable(
        self, client: Any, connection: Connection, name: str, meta: Mapping[str, Any]
    ) -> bool:
        """True if ``name`` is reranklab's, complete, with the expected count; an incomplete
        one of reranklab's is deleted; one that is not reranklab's is an error."""
        with self.step(connection, f"looking up index {name}"):
            if not client.indices.exists(index=name):
                return False
            found = reranklab_meta(client.indices.get_mapping(index=name).body)
        if found is None:
            raise ElasticsearchError(
                f"Elasticsearch at {connection.display_url}: index {name} exists but was not "
                f"created by reranklab (no _meta.{META_KEY} mark): it is left alone; set "
                "retrieval.elasticsearch.index_prefix to build under another name"
            )
        with self.step(connection, f"count check of index {name}"):
            count = count_of(client.count(index=name).body)
        same = {k: found.get(k) for k in ("corpus_sha256", "body_sha256", "passages")} == {
            k: meta[k] for k in ("corpus_sha256", "body_sha256", "passages")
        }
        if found.get("complete") is True and same and count == meta["passages"]:
            return True
        log.warning(
            "index %s is reranklab's but incomplete (%d of %s documents, complete=%s): rebuilding it",
            name,
            count,
            found.get("passages"),
            found.get("complete"),
        )
        with self.step(connection, f"deleting the incomplete index {name}"):
            client.indices.delete(index=name)
        return False

    def _create(
        self, client: Any, connection: Connection, name: str, meta: Mapping[str, Any]
    ) -> None:
        mappings = {**self.body["mappings"], "_meta": {META_KEY: dict(meta)}}
        with self.step(connection, f"creating index {name}"):
            client.indices.create(index=name, settings=self.body["settings"], mappings=mappings)

    def _bulk(
        self, client: Any, connection: Connection, corpus_path: Path, name: str, passages: int
    ) -> None:
        """Stream the corpus through ``helpers.streaming_bulk``: memory holds one batch."""
        from elasticsearch import helpers

        def actions() -> Iterator[dict[str, Any]]:
            for batch in iter_corpus(corpus_path, batch_size=self.es.bulk_docs):
                for pid, text in batch:
                    yield {
                        "_op_type": "index",
                        "_index": name,
                        "_id": pid,
                        "_source": {FIELD: text},
                    }

        failures: list[dict[str, Any]] = []
        bar = tqdm(total=passages, desc="elasticsearch bulk", unit="passage", mininterval=1.0)
        with self.step(connection, f"bulk indexing into {name}"), bar:
            for ok, item in helpers.streaming_bulk(
                client,
                actions(),
                chunk_size=self.es.bulk_docs,
                max_retries=self.es.max_retries,  # items rejected with 429, with back-off
                initial_backoff=RETRY_BACKOFF[0],
                max_backoff=RETRY_BACKOFF[1],
                raise_on_error=False,
                raise_on_exception=True,
            ):
                bar.update(1)
                if not ok:
                    failures.append(item)
                    if len(failures) >= MAX_FAILURES:
                        break
            if failures:
                raise ElasticsearchError(
                    bulk_failures(failures)
                    + (" (stopped there)" if len(failures) >= MAX_FAILURES else "")
                )

    # -- search -----------------------------------------------------------------------------------

    def read_index_file(self, index_dir: Path) -> dict[str, Any]:
        """``index.json`` of ``index_dir``, checked."""
        path = Path(index_dir) / INDEX_FILE
        try:
            record = read_json(path)
        except FileNotFoundError:
            raise FormatError(path, None, "no index.json: run `reranklab index` first") from None
        if not isinstance(record, Mapping) or record.get("backend") != "elasticsearch":
            raise FormatError(path, None, "not an Elasticsearch index.json (backend elasticsearch)")
        for key in ("url", "index", "passages"):
            if key not in record:
                raise FormatError(path, None, f"missing key {key}")
        return dict(record)

    def search(self, index_dir: Path, queries: Mapping[str, str], depth: int) -> Run:
        """Top ``depth`` passages of each query (only passages matching a query term).

        Raises:
            ConfigError: ``depth`` beyond Elasticsearch's result window (10,000).
            ElasticsearchError: the index is missing or incomplete, or a search failed after
                its retries.
        """
        return {qid: dict(ranking) for qid, ranking in self._ranked(index_dir, queries, depth)}

    def search_to_file(
        self, index_dir: Path, queries: Mapping[str, str], depth: int, out: Path, tag: str
    ) -> dict[str, Any]:
        """The run of :meth:`search`, written batch by batch (atomically: renamed at the end):
        the file :func:`reranklab.io.write_run` writes, with one batch of queries in memory."""
        stats = {"queries": 0, "candidates": 0, "empty": 0}
        with atomic_path(out) as tmp, open(tmp, "w", encoding="utf-8") as handle:
            for qid, ranking in self._ranked(index_dir, queries, depth):
                stats["queries"] += 1
                stats["candidates"] += len(ranking)
                stats["empty"] += not ranking
                handle.writelines(
                    f"{qid} Q0 {pid} {rank} {float(score)!r} {tag}\n"
                    for rank, (pid, score) in enumerate(ranking, start=1)
                )
        return stats

    def _ranked(
        self, index_dir: Path, queries: Mapping[str, str], depth: int
    ) -> Iterator[tuple[str, list[tuple[str, float]]]]:
        """``(qid, [(pid, score), ...] best first)`` for every query, in qid order (as
        :func:`reranklab.io.write_run` writes them), one ``_msearch`` batch at a time."""
        record = self.read_index_file(index_dir)
        if depth + 1 > MAX_RESULT_WINDOW:
            raise ConfigError(
                f"depth {depth}: the elasticsearch backend returns at most {MAX_RESULT_WINDOW - 1} passages per query"
            )
        client, connection = self.connect(fallback_url=record["url"])
        with client:  # closes its connections, also on failure
            yield from self._search_batches(client, connection, record["index"], queries, depth)

    def _search_batches(
        self,
        client: Any,
        connection: Connection,
        name: str,
        queries: Mapping[str, str],
        depth: int,
    ) -> Iterator[tuple[str, list[tuple[str, float]]]]:
        """Check that ``name`` is reranklab's and complete, then search it batch by batch."""
        with self.step(connection, f"checking index {name}"):
            found = None
            if client.indices.exists(index=name):
                found = reranklab_meta(client.indices.get_mapping(index=name).body)
            if not found or found.get("complete") is not True:
                raise ElasticsearchError(
                    f"index {name} is missing or incomplete: run `reranklab index` again"
                )
        qids = sorted(queries)
        batch = self.es.search_queries
        for start in tqdm(
            range(0, len(qids), batch),
            desc="elasticsearch search",
            unit="batch",
            disable=len(qids) <= batch,
        ):
            chunk = qids[start : start + batch]
            hits = self._msearch(
                client, connection, name, {q: search_body(queries[q], depth + 1) for q in chunk}
            )
            tied = {q: s for q in chunk if (s := tie_at_cut(hits[q], depth)) is not None}
            if tied:
                # Passages tied at the cut: fetch every passage scoring at least the tied score,
                # so the seeded hash, not the server's order, picks those that make the cut.
                wider = self._msearch(
                    client,
                    connection,
                    name,
                    {
                        q: search_body(queries[q], MAX_RESULT_WINDOW, min_score=s)
                        for q, s in tied.items()
                    },
                )
                for qid, more in wider.items():
                    if len(more) >= MAX_RESULT_WINDOW:
                        log.warning(
                            "query %s: over %d passages tie at rank %d; the server's order picks among them",
                            qid,
                            MAX_RESULT_WINDOW,
                            depth,
                        )
                    hits[qid] = more
            for qid in chunk:
                yield qid, top(hits[qid], qid, depth)

    def _msearch(
        self, client: Any, connection: Connection, name: str, bodies: Mapping[str, dict[str, Any]]
    ) -> dict[str, Hits]:
        """One ``_msearch`` of ``bodies`` ({qid: search body}); searches rejected with a
        retryable status are sent again with back-off, up to ``max_retries`` times."""
        pending = dict(bodies)
        result: dict[str, Hits] = {}
        for attempt in range(self.es.max_retries + 1):
            qids = list(pending)
            with self.step(connection, f"search of index {name} (_msearch)"):
                response = client.msearch(
                    index=name,
                    searches=msearch_lines([pending[q] for q in qids]),
                    search_type="dfs_query_then_fetch",  # global term statistics over shards
                    filter_path=list(MSEARCH_FILTER),
                )
                hits, errors = msearch_hits(response.body, qids)
            result.update(hits)
            fatal = {q: e for q, e in errors.items() if e.status not in RETRY_ON_STATUS}
            if fatal:
                qid, error = next(iter(fatal.items()))
                raise ElasticsearchError(
                    redact(
                        f"Elasticsearch at {connection.display_url}: search of index {name} "
                        f"failed for {len(fatal)} queries, e.g. {qid}: {error}",
                        connection.secrets,
                    )
                )
            if not errors:
                return result
            pending = {q: pending[q] for q in errors}
            if attempt < self.es.max_retries:
                # Equal jitter, as the client's own back-off.
                wait = min(RETRY_BACKOFF[1], RETRY_BACKOFF[0] * 2**attempt) / 2
                time.sleep(wait + random.uniform(0, wait))
        qid, error = next(iter(errors.items()))
        raise ElasticsearchError(
            redact(
                f"Elasticsearch at {connection.display_url}: search of index {name} failed: "
                f"{len(pending)} queries still rejected after {self.es.max_retries} retries, "
                f"e.g. {qid}: {error}",
                connection.secrets,
            )
        )
