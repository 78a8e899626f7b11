"""A scripted stand-in for an Elasticsearch node, spoken to over real HTTP by the real client.

It answers the requests the elasticsearch backend makes (``/``, index exists/create/delete,
``_mapping``, ``_bulk``, ``_refresh``, ``_count``, ``_msearch``) with bodies in the shapes
Elasticsearch documents, keeps what it was sent (to check request bodies and headers), and can
be told to fail: every request with one status (429, 503), some bulk items, some search items.
It is not a search engine: a passage's "score" is the number of distinct query words it holds,
which makes ties (and how the backend breaks them) easy to arrange.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

SHARDS = {"total": 1, "successful": 1, "skipped": 0, "failed": 0}
INFO = {
    "name": "node-1",
    "cluster_name": "docker-cluster",
    "cluster_uuid": "8s3wZ4ZpQ2u1T8Q3kQy1mA",
    "version": {"number": "9.0.0", "build_flavor": "default", "lucene_version": "10.1.0"},
    "tagline": "You Know, for Search",
}
# Documented error bodies (the REST API's `{"error": {...}, "status": n}`).
REJECTED = {
    "error": {
        "root_cause": [
            {
                "type": "es_rejected_execution_exception",
                "reason": "rejected execution of coordinating operation [shard_detailed_coordinating_and_primary_bytes=0, coordinating_operation_bytes=108, max_coordinating_and_primary_bytes=107374182]",
            }
        ],
        "type": "es_rejected_execution_exception",
        "reason": "rejected execution of coordinating operation [shard_detailed_coordinating_and_primary_bytes=0, coordinating_operation_bytes=108, max_coordinating_and_primary_bytes=107374182]",
    },
    "status": 429,
}
UNAVAILABLE = {
    "error": {
        "root_cause": [
            {
                "type": "cluster_block_exception",
                "reason": "blocked by: [SERVICE_UNAVAILABLE/1/state not recovered / initialized];",
            }
        ],
        "type": "cluster_block_exception",
        "reason": "blocked by: [SERVICE_UNAVAILABLE/1/state not recovered / initialized];",
    },
    "status": 503,
}


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def ndjson(self) -> list[Any]:
        return [json.loads(line) for line in self.body.splitlines() if line.strip()]


@dataclass
class FakeCluster:
    """The node's state and its scripted failures (set the attributes before requests)."""

    indices: dict[str, dict[str, Any]] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    fail_all: tuple[int, dict[str, Any]] | None = None  # (status, body) for every request
    reject_ids: set[str] = field(default_factory=set)  # bulk items answered 400
    drop_ids: set[str] = field(default_factory=set)  # bulk items "indexed" but never counted
    reject_searches: int = 0  # the next n _msearch items are answered 429
    url: str = ""

    def calls(self, method: str, pattern: str) -> list[Request]:
        return [r for r in self.requests if r.method == method and re.fullmatch(pattern, r.path)]

    # -- the API --------------------------------------------------------------------------------

    def handle(self, req: Request) -> tuple[int, Any]:
        self.requests.append(req)
        if self.fail_all is not None:
            return self.fail_all
        parts = [p for p in req.path.split("/") if p]
        if not parts:
            return 200, INFO
        if parts == ["_bulk"]:
            return self._bulk(req)
        name, action = parts[0], (parts[1] if len(parts) > 1 else None)
        index = self.indices.get(name)
        if action is None:
            return self._index(req, name, index)
        if index is None:
            return 404, self._missing(name)
        if action == "_mapping":
            if req.method == "GET":
                return 200, {name: {"mappings": index["mappings"]}}
            index["mappings"]["_meta"] = req.json()["_meta"]
            return 200, {"acknowledged": True}
        if action == "_refresh":
            return 200, {"_shards": SHARDS}
        if action == "_count":
            counted = [i for i in index["docs"] if i not in self.drop_ids]
            return 200, {"count": len(counted), "_shards": SHARDS}
        if action == "_msearch":
            return self._msearch(req, index)
        return 400, {
            "error": {"type": "illegal_argument_exception", "reason": f"no {req.path}"},
            "status": 400,
        }

    def _missing(self, name: str) -> dict[str, Any]:
        error = {
            "type": "index_not_found_exception",
            "reason": f"no such index [{name}]",
            "resource.type": "index_or_alias",
            "resource.id": name,
            "index": name,
        }
        return {"error": {"root_cause": [error], **error}, "status": 404}

    def _index(self, req: Request, name: str, index: dict[str, Any] | None) -> tuple[int, Any]:
        if req.method == "HEAD":
            return (200 if index is not None else 404), None
        if req.method == "PUT":
            if index is not None:
                return 400, {
                    "error": {
                        "type": "resource_already_exists_exception",
                        "reason": f"index [{name}] already exists",
                    },
                    "status": 400,
                }
            body = req.json()
            self.indices[name] = {
                "settings": body.get("settings", {}),
                "mappings": body.get("mappings", {}),
                "docs": {},
            }
            return 200, {"acknowledged": True, "shards_acknowledged": True, "index": name}
        if req.method == "DELETE":
            if index is None:
                return 404, self._missing(name)
            del self.indices[name]
            return 200, {"acknowledged": True}
        return 405, {"error": "Incorrect HTTP method", "status": 405}

    def _bulk(self, req: Request) -> tuple[int, Any]:
        lines = req.ndjson()
        items = []
        errors = False
        for action, source in zip(lines[::2], lines[1::2], strict=True):
            ((op, meta),) = action.items()
            name, pid = meta["_index"], meta["_id"]
            if pid in self.reject_ids:
                errors = True
                items.append(
                    {
                        op: {
                            "_index": name,
                            "_id": pid,
                            "status": 400,
                            "error": {
                                "type": "document_parsing_exception",
                                "reason": f"[1:9] failed to parse field [text] of type [text] in document with id '{pid}'",
                                "caused_by": {
                                    "type": "illegal_state_exception",
                                    "reason": "Can't get text on a START_OBJECT at 1:9",
                                },
                            },
                        }
                    }
                )
                continue
            index = self.indices.setdefault(name, {"settings": {}, "mappings": {}, "docs": {}})
            created = pid not in index["docs"]
            index["docs"][pid] = source["text"]
            items.append(
                {
                    op: {
                        "_index": name,
                        "_id": pid,
                        "_version": 1,
                        "result": "created" if created else "updated",
                        "_shards": {"total": 1, "successful": 1, "failed": 0},
                        "_seq_no": len(index["docs"]) - 1,
                        "_primary_term": 1,
                        "status": 201 if created else 200,
                    }
                }
            )
        return 200, {"took": 3, "errors": errors, "items": items}

    def _msearch(self, req: Request, index: dict[str, Any]) -> tuple[int, Any]:
        lines = req.ndjson()
        responses = []
        for _header, body in zip(lines[::2], lines[1::2], strict=True):
            if self.reject_searches > 0:
                self.reject_searches -= 1
                responses.append({"error": REJECTED["error"], "status": 429})
                continue
            query = _words(body["query"]["match"]["text"]["query"])
            scored = [
                (pid, float(len(query & _words(text)))) for pid, text in index["docs"].items()
            ]
            # Doc-id order among equal scores, as Lucene's: the order of indexing here.
            hits = [(pid, s) for pid, s in scored if s > 0 and s >= body.get("min_score", 0.0)]
            hits.sort(key=lambda item: -item[1])
            hits = hits[: body["size"]]
            responses.append(
                {
                    "took": 1,
                    "timed_out": False,
                    "_shards": SHARDS,
                    "hits": {
                        "max_score": hits[0][1] if hits else None,
                        "hits": [{"_index": "x", "_id": pid, "_score": s} for pid, s in hits],
                    },
                    "status": 200,
                }
            )
        return 200, {"took": 2, "responses": responses}


def serve(cluster: FakeCluster) -> tuple[ThreadingHTTPServer, str]:
    """Start the node on a free local port; returns the server (``shutdown()`` it) and its URL."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _answer(self) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}  # case-insensitive
            req = Request(self.command, parts.path, parse_qs(parts.query), headers, body)
            status, payload = cluster.handle(req)
            data = b"" if payload is None else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("X-Elastic-Product", "Elasticsearch")
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _answer

        def log_message(self, *args: Any) -> None:  # quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    cluster.url = url
    return server, url
