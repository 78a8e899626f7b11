"""Reading Elasticsearch's answers (``_msearch``, ``_bulk`` items, ``_count``, ``_mapping``,
error bodies) into plain values; pure functions over the documented JSON shapes.

Scores are kept as the server wrote them (``float`` of the JSON number: Lucene's float32 score,
exactly); ties are left to the caller, who orders them by reranklab's seeded hash
(:func:`reranklab.io.rank_order`), never by the order of the hits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from reranklab.errors import ReranklabError
from reranklab.io import rank_order
from reranklab.retrieval.es_settings import META_KEY

Hits = list[tuple[str, float]]


class ElasticsearchError(ReranklabError):
    """A request to the cluster failed (the message names the URL, without credentials, and
    the step)."""


class ItemError(NamedTuple):
    """The error of one item of a ``_msearch`` or ``_bulk`` answer."""

    status: int | None
    type: str
    reason: str

    def __str__(self) -> str:
        status = "" if self.status is None else f"HTTP {self.status} "
        return f"{status}{self.type}: {self.reason}"


def error_of(error: Any, status: int | None = None) -> ItemError:
    """An error object (``{"type", "reason", "root_cause", "caused_by"}``) or string, plainly.

    The deepest ``caused_by`` reason is added: it is often the one that says what to fix.

    Example:
        >>> error_of({"type": "es_rejected_execution_exception", "reason": "rejected execution"}, 429)
        ItemError(status=429, type='es_rejected_execution_exception', reason='rejected execution')
    """
    if isinstance(error, Mapping):
        kind = str(error.get("type", "error"))
        reason = str(error.get("reason", ""))
        cause = error.get("caused_by")
        while isinstance(cause, Mapping) and isinstance(cause.get("caused_by"), Mapping):
            cause = cause["caused_by"]
        if isinstance(cause, Mapping) and cause.get("reason"):
            reason += f" (caused by {cause.get('type', 'error')}: {cause['reason']})"
        return ItemError(status, kind, reason)
    return ItemError(status, "error", str(error))


def msearch_hits(
    response: Mapping[str, Any], qids: Sequence[str]
) -> tuple[dict[str, Hits], dict[str, ItemError]]:
    """The hits of each query of one ``_msearch`` answer, and the queries that failed.

    Args:
        response: ``{"responses": [...]}``, one item per search, in request order; an item is
            a search response (``hits.hits[]`` with ``_id`` and ``_score``; no ``hits`` when
            ``filter_path`` left none) or ``{"error": ..., "status": ...}``.
        qids: the queries, in request order.

    Returns:
        ``({qid: [(pid, score), ...]}, {qid: ItemError})``: hits in the server's order.

    Raises:
        ElasticsearchError: not as many items as queries, or a hit without ``_id``/``_score``.
    """
    items = response.get("responses")
    if not isinstance(items, list) or len(items) != len(qids):
        got = len(items) if isinstance(items, list) else "no"
        raise ElasticsearchError(
            f"_msearch answered {got} responses for {len(qids)} queries (expected one each)"
        )
    hits: dict[str, Hits] = {}
    errors: dict[str, ItemError] = {}
    for qid, item in zip(qids, items, strict=True):
        if "error" in item:
            errors[qid] = error_of(item["error"], item.get("status"))
            continue
        try:
            hits[qid] = [
                (str(hit["_id"]), float(hit["_score"]))
                for hit in (item.get("hits") or {}).get("hits", [])
            ]
        except (KeyError, TypeError, ValueError) as exc:
            raise ElasticsearchError(
                f"_msearch: a hit of query {qid} has no _id or numeric _score ({exc!r}); "
                "searches must not sort (sorted hits carry no score)"
            ) from None
    return hits, errors


def tie_at_cut(hits: Hits, depth: int) -> float | None:
    """The score tied across the cut at ``depth``, if any (``hits`` in the server's order,
    at least ``depth + 1`` of them to tell).

    Example:
        >>> tie_at_cut([("a", 3.0), ("b", 2.0), ("c", 2.0)], 2), tie_at_cut([("a", 3.0), ("b", 2.0)], 1)
        (2.0, None)
    """
    if depth < 1 or len(hits) <= depth:
        return None
    return hits[depth][1] if hits[depth][1] == hits[depth - 1][1] else None


def top(hits: Hits, qid: str, depth: int) -> list[tuple[str, float]]:
    """The ``depth`` best of ``hits``, best first, ties by reranklab's seeded hash.

    Example:
        >>> top([("a", 3.0), ("b", 2.0), ("c", 2.0)], "q1", 2) in ([("a", 3.0), ("b", 2.0)], [("a", 3.0), ("c", 2.0)])
        True
    """
    return rank_order(dict(hits), qid)[:depth]


def bulk_failures(failures: Sequence[Mapping[str, Any]], show: int = 3) -> str:
    """A line about the failed items of ``_bulk`` answers (``{"index": {"_id", "status",
    "error"}}`` each): how many, and the first ``show`` with their reasons.

    Example:
        >>> bulk_failures([{"index": {"_id": "p1", "status": 400, "error": {"type": "document_parsing_exception", "reason": "bad"}}}])
        '1 passage(s) failed: p1 (HTTP 400 document_parsing_exception: bad)'
    """
    shown = []
    for item in failures[:show]:
        info = next(iter(item.values()), {}) if item else {}
        error = error_of(info.get("error", "unknown error"), info.get("status"))
        shown.append(f"{info.get('_id', '?')} ({error})")
    more = f", and {len(failures) - show} more" if len(failures) > show else ""
    return f"{len(failures)} passage(s) failed: " + "; ".join(shown) + more


def count_of(response: Mapping[str, Any]) -> int:
    """The ``count`` of a ``_count`` answer.

    Example:
        >>> count_of({"count": 3, "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0}})
        3
    """
    try:
        return int(response["count"])
    except (KeyError, TypeError, ValueError):
        raise ElasticsearchError(f"_count answered without a count: {dict(response)!r}") from None


def reranklab_meta(mapping: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``_meta.reranklab`` mark of a ``GET <index>/_mapping`` answer; ``None`` = the
    index is not reranklab's (never delete or write to it).

    Example:
        >>> reranklab_meta({"ix": {"mappings": {"_meta": {"reranklab": {"created_by": "reranklab"}}}}})
        {'created_by': 'reranklab'}
        >>> reranklab_meta({"ix": {"mappings": {"properties": {}}}}) is None
        True
    """
    if len(mapping) != 1:  # an alias over several indices is never ours
        return None
    mappings = next(iter(mapping.values())).get("mappings") or {}
    meta = (mappings.get("_meta") or {}).get(META_KEY)
    if not isinstance(meta, Mapping) or meta.get("created_by") != "reranklab":
        return None
    return dict(meta)
