"""The elasticsearch backend (issue 12).

Three kinds of tests:

- without a client or a server: request bodies built from settings, index-name derivation,
  parsing of responses in Elasticsearch's documented format, the connection from the
  environment, secret redaction, the parity measures;
- with the client (``pip install 'reranklab[es]'``; skipped without it) but no server: the
  real client against a closed port (a server that is down) and against a scripted node over
  real HTTP (tests/helpers_es.py: 429s, rejected bulk items, index reuse, foreign indices,
  ties at the cut);
- against a live server (``RERANKLAB_ES_URL``; skipped without it): index, reuse, search, a
  bulk failure, and parity with bm25s on the `sample` collection.
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import sys

import pytest

from reranklab.errors import ConfigError, FormatError
from reranklab.io import rank_order, write_corpus
from reranklab.retrieval import get_backend
from reranklab.retrieval.es_parity import compare_runs, format_parity, overlap_at_k
from reranklab.retrieval.es_responses import (
    ElasticsearchError,
    bulk_failures,
    count_of,
    error_of,
    msearch_hits,
    reranklab_meta,
    tie_at_cut,
    top,
)
from reranklab.retrieval.es_settings import (
    Connection,
    analysis,
    index_body,
    index_name,
    msearch_lines,
    resolve_connection,
    search_body,
)
from reranklab.retrieval.redact import basic_auth_token, redact, redact_url
from reranklab.settings.elasticsearch import EsAnalyzer

ENV_VARS = (
    "RERANKLAB_ES_URL",
    "RERANKLAB_ES_API_KEY",
    "RERANKLAB_ES_USER",
    "RERANKLAB_ES_PASSWORD",
)
LIVE_URL = os.environ.get("RERANKLAB_ES_URL")
SECRET = "s3cr3t-Pa55word"
API_KEY = "VnVhQ2ZHY0JDZGJrUW0tZTVhT3g6dWkybHAyYXhUTm1zeWFrdzl0dk5udw=="
CORPUS = {
    "p1": "Bake the bread in a hot oven for thirty minutes.",
    "p2": "Bread baking needs flour, water, yeast and salt; baking bread is easy.",
    "p3": "Cycling to work keeps you fit.",
    "p4": "Tyre pressure matters when cycling on wet roads.",
    "p5": "The oven should be preheated.",
}


@pytest.fixture(autouse=True)
def _no_ambient_cluster(request, monkeypatch):
    """Offline tests see no RERANKLAB_ES_* of the developer's shell; live tests keep them."""
    if "elasticsearch_live" in request.keywords:
        return
    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)


@pytest.fixture()
def corpus_path(tmp_path):
    path = tmp_path / "corpus.parquet"
    write_corpus(path, CORPUS)
    return path


# -- request bodies from settings ---------------------------------------------------------------


def test_default_analyzer_rebuilds_lucene_english_analyzer():
    body = index_body({})
    index = body["settings"]["index"]
    analyzer = index["analysis"]["analyzer"]["reranklab_text"]
    # Lucene's EnglishAnalyzer: standard tokenizer -> possessive -> lowercase -> stop -> Porter.
    assert analyzer == {
        "type": "custom",
        "tokenizer": "standard",
        "filter": ["reranklab_possessive", "lowercase", "reranklab_stop", "reranklab_stemmer"],
    }
    assert index["analysis"]["filter"] == {
        "reranklab_possessive": {"type": "stemmer", "language": "possessive_english"},
        "reranklab_stop": {"type": "stop", "stopwords": "_english_"},
        "reranklab_stemmer": {"type": "stemmer", "language": "english"},
    }
    assert index["similarity"]["reranklab_bm25"] == {
        "type": "BM25",
        "k1": 0.9,
        "b": 0.4,
        "discount_overlaps": True,
    }
    assert (index["number_of_shards"], index["number_of_replicas"]) == (1, 0)
    text = body["mappings"]["properties"]["text"]
    assert text == {
        "type": "text",
        "analyzer": "reranklab_text",
        "similarity": "reranklab_bm25",
        "index_options": "freqs",
    }
    assert body["mappings"]["dynamic"] == "strict"
    assert body["mappings"]["_source"] == {"enabled": False}
    json.dumps(body)  # what the client sends


def test_settings_reach_the_body():
    body = index_body(
        {
            "k1": 1.2,
            "b": 0.75,
            "elasticsearch": {
                "shards": 3,
                "replicas": 1,
                "analyzer": {
                    "possessive": False,
                    "stopwords": ["the", "of"],
                    "stemmer": "porter2",
                },
            },
        }
    )
    index = body["settings"]["index"]
    assert (
        index["similarity"]["reranklab_bm25"]["k1"],
        index["similarity"]["reranklab_bm25"]["b"],
    ) == (1.2, 0.75)
    assert (index["number_of_shards"], index["number_of_replicas"]) == (3, 1)
    assert index["analysis"]["analyzer"]["reranklab_text"]["filter"] == [
        "lowercase",
        "reranklab_stop",
        "reranklab_stemmer",
    ]
    assert index["analysis"]["filter"]["reranklab_stop"]["stopwords"] == ["the", "of"]
    assert index["analysis"]["filter"]["reranklab_stemmer"]["language"] == "porter2"


def test_analyzer_without_stop_words_or_stemming_has_no_filters():
    out = analysis(EsAnalyzer(possessive=False, stopwords=None, stemmer=None))
    assert out == {
        "analyzer": {
            "reranklab_text": {"type": "custom", "tokenizer": "standard", "filter": ["lowercase"]}
        }
    }


def test_search_bodies_ask_for_ids_and_scores_only():
    body = search_body("how to bake bread", 101)
    assert body == {
        "query": {"match": {"text": {"query": "how to bake bread"}}},
        "size": 101,
        "_source": False,
        "track_total_hits": False,
    }
    assert search_body("q", 10_000, min_score=2.5)["min_score"] == 2.5
    assert msearch_lines([body, body]) == [{}, body, {}, body]


# -- index names --------------------------------------------------------------------------------

SHA = "3b8a" * 16


def _name(settings, sha=SHA, prefix="reranklab"):
    return index_name(prefix, sha, index_body(settings))


def test_index_name_follows_corpus_and_index_settings_only():
    base = _name({})
    assert base == _name({}) and base.startswith(f"reranklab-{SHA[:16]}-")
    # What changes the index changes the name ...
    changed = [
        {"k1": 1.2},
        {"b": 0.75},
        {"elasticsearch": {"shards": 2}},
        {"elasticsearch": {"replicas": 1}},
        {"elasticsearch": {"analyzer": {"stemmer": "porter2"}}},
        {"elasticsearch": {"analyzer": {"stopwords": None}}},
        {"elasticsearch": {"analyzer": {"possessive": False}}},
    ]
    names = {_name(s) for s in changed}
    assert base not in names and len(names) == len(changed)
    assert _name({}, sha="ff" * 32) != base
    # ... what only changes how it is reached or fed does not.
    for same in (
        {"elasticsearch": {"url": "http://other:9200"}},
        {"elasticsearch": {"timeout": 5, "max_retries": 0, "bulk_docs": 10, "search_queries": 2}},
        {"stemmer": "english", "stopwords": None},  # the bm25s backend's analyzer
    ):
        assert _name(same) == base
    # 0.9 written as an int-valued float or a float is the same index.
    assert _name({"k1": 1}) == _name({"k1": 1.0})


def test_index_names_are_valid_elasticsearch_names():
    for prefix in ("reranklab", "team-a_bm25", "0" * 100):
        name = _name({}, prefix=prefix)
        # Elasticsearch: lower case, none of \ / * ? " < > | space , # :, not starting with - _ +,
        # at most 255 bytes.
        assert name == name.lower() and len(name.encode()) <= 255
        assert not re.search(r'[\\/*?"<>| ,#:]', name) and name[0] not in "-_+"


def test_a_prefix_that_elasticsearch_refuses_is_a_config_error():
    from reranklab.config import validate_config

    for bad in ("Upper", "_hidden", "with space", "a" * 101):
        with pytest.raises(ConfigError, match="retrieval.elasticsearch.index_prefix"):
            validate_config({"retrieval": {"elasticsearch": {"index_prefix": bad}}}, "p.yaml")


# -- responses in the documented format ---------------------------------------------------------

# GET /_msearch, as the Multi search API documents it (hits with _index/_id/_score, an item
# that failed with its error and status), plus a rejected item.
MSEARCH = {
    "took": 4,
    "responses": [
        {
            "took": 3,
            "timed_out": False,
            "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
            "hits": {
                "total": {"value": 3, "relation": "eq"},
                "max_score": 7.4723935,
                "hits": [
                    {"_index": "my-index", "_id": "p2", "_score": 7.4723935},
                    {"_index": "my-index", "_id": "p1", "_score": 3.1415927},
                    {"_index": "my-index", "_id": "p5", "_score": 3.1415927},
                ],
            },
            "status": 200,
        },
        {
            "took": 0,
            "timed_out": False,
            "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
            "hits": {"total": {"value": 0, "relation": "eq"}, "max_score": None, "hits": []},
            "status": 200,
        },
        {
            "error": {
                "root_cause": [
                    {
                        "type": "index_not_found_exception",
                        "reason": "no such index [missing]",
                        "resource.type": "index_or_alias",
                        "resource.id": "missing",
                        "index_uuid": "_na_",
                        "index": "missing",
                    }
                ],
                "type": "index_not_found_exception",
                "reason": "no such index [missing]",
                "resource.type": "index_or_alias",
                "resource.id": "missing",
                "index_uuid": "_na_",
                "index": "missing",
            },
            "status": 404,
        },
        {
            "error": {
                "root_cause": [
                    {
                        "type": "es_rejected_execution_exception",
                        "reason": "rejected execution of TimedRunnable on EsThreadPoolExecutor[name = node-1/search, queue capacity = 1000]",
                    }
                ],
                "type": "search_phase_execution_exception",
                "reason": "all shards failed",
                "phase": "query",
                "grouped": True,
                "caused_by": {
                    "type": "es_rejected_execution_exception",
                    "reason": "rejected execution of TimedRunnable on EsThreadPoolExecutor[name = node-1/search, queue capacity = 1000]",
                },
            },
            "status": 429,
        },
    ],
}


def test_msearch_answer_parsed_with_scores_at_full_precision():
    hits, errors = msearch_hits(MSEARCH, ["q1", "q2", "q3", "q4"])
    assert hits == {
        "q1": [("p2", 7.4723935), ("p1", 3.1415927), ("p5", 3.1415927)],
        "q2": [],
    }
    assert hits["q1"][0][1] == float("7.4723935")  # not rounded
    assert errors["q3"] == (404, "index_not_found_exception", "no such index [missing]")
    assert errors["q4"].status == 429 and "es_rejected_execution_exception" in errors["q4"].reason
    assert str(errors["q4"]).startswith(
        "HTTP 429 search_phase_execution_exception: all shards failed"
    )


def test_msearch_answer_reduced_by_filter_path():
    # filter_path drops what is not asked for: a search without hits keeps only its status.
    filtered = {
        "responses": [
            {"hits": {"hits": [{"_id": "p9", "_score": 1.25}]}, "status": 200},
            {"status": 200},
        ]
    }
    assert msearch_hits(filtered, ["a", "b"]) == ({"a": [("p9", 1.25)], "b": []}, {})


def test_msearch_answer_that_does_not_fit_the_request_is_an_error():
    with pytest.raises(ElasticsearchError, match="answered 1 responses for 2 queries"):
        msearch_hits({"responses": [{"status": 200}]}, ["a", "b"])
    with pytest.raises(ElasticsearchError, match="no _id or numeric _score"):
        msearch_hits({"responses": [{"hits": {"hits": [{"_id": "p1", "_score": None}]}}]}, ["a"])


def test_ties_are_broken_by_the_seeded_hash_never_by_the_servers_order():
    hits = [("p2", 7.5), ("p1", 3.0), ("p5", 3.0), ("p7", 3.0), ("p9", 1.0)]
    assert tie_at_cut(hits, 2) == 3.0 and tie_at_cut(hits, 4) is None
    assert tie_at_cut(hits[:2], 2) is None  # nothing beyond the cut to compare with
    expected = rank_order(dict(hits), "q1")[:3]
    assert top(hits, "q1", 3) == expected
    assert top(list(reversed(hits)), "q1", 3) == expected  # the server's order is irrelevant
    # Over many queries the passages tied at the cut are not always the first ones served.
    chosen = {tuple(top(hits, f"q{i}", 2)) for i in range(40)}
    assert len(chosen) > 1


# POST /_bulk with errors: each failed item holds its own status and error.
BULK_FAILED_ITEMS = [
    {
        "index": {
            "_index": "reranklab-x",
            "_id": "p7",
            "status": 400,
            "error": {
                "type": "document_parsing_exception",
                "reason": "[1:9] failed to parse field [text] of type [text] in document with id 'p7'",
                "caused_by": {
                    "type": "illegal_state_exception",
                    "reason": "Can't get text on a START_OBJECT at 1:9",
                },
            },
        }
    },
    {
        "index": {
            "_index": "reranklab-x",
            "_id": "p8",
            "status": 429,
            "error": {"type": "es_rejected_execution_exception", "reason": "rejected execution"},
        }
    },
]


def test_bulk_failures_named_with_their_reasons():
    text = bulk_failures(BULK_FAILED_ITEMS)
    assert text.startswith("2 passage(s) failed: p7 (HTTP 400 document_parsing_exception:")
    assert "caused by illegal_state_exception: Can't get text" in text
    assert "p8 (HTTP 429 es_rejected_execution_exception" in text
    assert bulk_failures(BULK_FAILED_ITEMS * 3, show=2).endswith("and 4 more")


def test_count_mapping_and_error_bodies():
    assert (
        count_of(
            {"count": 8841823, "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0}}
        )
        == 8841823
    )
    with pytest.raises(ElasticsearchError, match="without a count"):
        count_of({"acknowledged": True})
    ours = {
        "ix": {
            "mappings": {
                "_meta": {"reranklab": {"created_by": "reranklab", "complete": True}},
                "properties": {},
            }
        }
    }
    assert reranklab_meta(ours) == {"created_by": "reranklab", "complete": True}
    for foreign in (
        {"ix": {"mappings": {"properties": {"text": {"type": "text"}}}}},
        {"ix": {"mappings": {"_meta": {"reranklab": {"created_by": "someone"}}}}},
        {"ix": {"mappings": {"_meta": {"owner": "team-a"}}}},
        {"a": ours["ix"], "b": ours["ix"]},  # an alias over two indices
    ):
        assert reranklab_meta(foreign) is None
    # Error bodies: nested causes are reported; an old plain-string error is kept as text.
    assert error_of("IndexMissingException[[x] missing]", 404) == (
        404,
        "error",
        "IndexMissingException[[x] missing]",
    )


# -- connection and secrets ---------------------------------------------------------------------


def test_url_from_environment_wins_and_credentials_come_only_from_it():
    settings = {"elasticsearch": {"url": "http://from-params:9200"}}
    env = {"RERANKLAB_ES_URL": "https://es.example.org:9243", "RERANKLAB_ES_API_KEY": API_KEY}
    c = resolve_connection(settings, env)
    assert c.url == "https://es.example.org:9243" and c.api_key == API_KEY
    options = c.client_options()
    assert options["api_key"] == API_KEY and options["verify_certs"] is True
    assert (options["max_retries"], options["retry_on_timeout"]) == (5, True)
    assert set(options["retry_on_status"]) == {429, 502, 503, 504}
    assert resolve_connection(settings, {}).url == "http://from-params:9200"
    assert (
        resolve_connection({}, {}, fallback_url="http://recorded:9200").url
        == "http://recorded:9200"
    )
    user = resolve_connection(
        settings, {"RERANKLAB_ES_USER": "elastic", "RERANKLAB_ES_PASSWORD": SECRET}
    )
    assert user.client_options()["basic_auth"] == ("elastic", SECRET)
    assert SECRET not in repr(user) and API_KEY not in repr(c)
    assert set(user.secrets) == {SECRET, basic_auth_token("elastic", SECRET)}


def test_userinfo_in_the_environment_url_moves_to_basic_auth():
    c = resolve_connection({}, {"RERANKLAB_ES_URL": f"https://elastic:{SECRET}@es:9200/"})
    assert c.url == "https://es:9200/" and c.basic_auth == ("elastic", SECRET)
    assert SECRET not in c.display_url


def test_connection_errors_name_the_key_and_never_the_secret(tmp_path):
    cases = [
        ({}, {}, "no cluster URL"),
        ({"elasticsearch": {"url": "ftp://es:21"}}, {}, "expected http"),
        (
            {"elasticsearch": {"url": f"https://elastic:{SECRET}@es:9200"}},
            {},
            "credentials in the URL are refused",
        ),
        (
            {},
            {"RERANKLAB_ES_URL": "http://es:9200", "RERANKLAB_ES_USER": "elastic"},
            "RERANKLAB_ES_PASSWORD is not set",
        ),
        (
            {},
            {"RERANKLAB_ES_URL": "http://es:9200", "RERANKLAB_ES_PASSWORD": SECRET},
            "RERANKLAB_ES_USER is not set",
        ),
        (
            {},
            {
                "RERANKLAB_ES_URL": "http://es:9200",
                "RERANKLAB_ES_API_KEY": API_KEY,
                "RERANKLAB_ES_USER": "u",
                "RERANKLAB_ES_PASSWORD": SECRET,
            },
            "keep one way",
        ),
        (
            {"elasticsearch": {"ca_certs": str(tmp_path / "ca.pem")}},
            {"RERANKLAB_ES_URL": "https://es:9200"},
            "ca_certs: no such file",
        ),
        ({}, {"RERANKLAB_ES_URL": f"https://elastic:{SECRET}@es:99999"}, "not a URL"),
    ]
    for settings, env, message in cases:
        with pytest.raises(ConfigError, match=message) as info:
            resolve_connection(settings, env)
        assert SECRET not in str(info.value) and API_KEY not in str(info.value)
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    c = resolve_connection(
        {"elasticsearch": {"ca_certs": str(ca)}}, {"RERANKLAB_ES_URL": "https://es:9200"}
    )
    assert c.client_options()["ca_certs"] == str(ca)


def test_no_setting_can_carry_a_secret():
    from reranklab.config import validate_config

    for key in ("password", "api_key", "user"):
        with pytest.raises(ConfigError, match=f"unknown key retrieval.elasticsearch.{key}"):
            validate_config({"retrieval": {"elasticsearch": {key: "x"}}}, "p.yaml")


def test_redact_url():
    assert (
        redact_url(f"https://elastic:{SECRET}@es.example.org:9243/p?api_key=abc")
        == "https://es.example.org:9243/p"
    )
    assert redact_url("https://token@es:9200") == "https://es:9200"
    assert redact_url(f"http://u:{SECRET}@[::1]:9200") == "http://[::1]:9200"
    assert SECRET not in redact_url(f"http://u:{SECRET}@es:99999")
    assert redact_url("http://localhost:9200") == "http://localhost:9200"


def test_redact_masks_every_secret_in_any_text():
    token = basic_auth_token("elastic", SECRET)
    text = (
        f"ConnectionError(https://elastic:{SECRET}@es:9200) headers={{'authorization': 'Basic {token}'}} "
        f"key={API_KEY} also http://other-user:other-pw@host/x"
    )
    out = redact(text, [SECRET, token, API_KEY, ""])
    for secret in (SECRET, token, API_KEY, "other-pw"):
        assert secret not in out
    assert "https://***@es:9200" in out and "http://***@host/x" in out


# -- parity measures ----------------------------------------------------------------------------


def test_overlap_and_map_difference():
    a = {"q1": {"p1": 3.0, "p2": 2.0, "p3": 1.0}, "q2": {"p4": 1.0}}
    b = {"q1": {"p1": 9.0, "p3": 8.0, "p9": 7.0}, "q2": {"p4": 2.0}}
    assert overlap_at_k(a, b, 1) == 1.0
    assert overlap_at_k(a, b, 3) == pytest.approx((2 / 3 + 1.0) / 2)
    assert overlap_at_k({}, {}, 10) == 1.0 and overlap_at_k({"q": {}}, {"q": {}}, 10) == 1.0
    qrels = {"q1": {"p3": 1}, "q2": {"p4": 1}}
    result = compare_runs(a, b, qrels, ks=(1, 3))
    # MAP: a ranks p3 third (1/3), b second (1/2); q2 is 1 in both.
    assert result["map"]["a"] == pytest.approx((1 / 3 + 1) / 2)
    assert result["map"]["difference"] == pytest.approx((1 / 2 - 1 / 3) / 2)
    assert result["queries"] == 2 and result["overlap"][1] == 1.0
    assert "overlap@3: 0.8333" in format_parity({"depth": 3, **result})


# -- the backend without a client, and the registry --------------------------------------------


def test_registered_and_settings_checked_before_any_request():
    retriever = get_backend({"backend": "elasticsearch", "k1": 1.2, "b": 0.75})
    assert type(retriever).__name__ == "ElasticsearchRetriever"
    assert retriever.body == index_body({"k1": 1.2, "b": 0.75})


def test_search_needs_the_index_file(tmp_path):
    retriever = get_backend({"backend": "elasticsearch"})
    with pytest.raises(FormatError, match="no index.json"):
        retriever.search(tmp_path, {"q": "x"}, 10)
    (tmp_path / "index.json").write_text(json.dumps({"backend": "bm25s"}))
    with pytest.raises(FormatError, match="not an Elasticsearch index.json"):
        retriever.search(tmp_path, {"q": "x"}, 10)


def test_without_the_client_the_backend_loads_and_names_the_extra(
    monkeypatch, corpus_path, tmp_path
):
    monkeypatch.setitem(sys.modules, "elasticsearch", None)  # as if not installed
    monkeypatch.setenv("RERANKLAB_ES_URL", "http://localhost:9200")
    retriever = get_backend({"backend": "elasticsearch"})  # the core install imports fine
    with pytest.raises(
        ConfigError, match=r"needs the Elasticsearch client: pip install 'reranklab\[es\]'"
    ):
        retriever.build(corpus_path, tmp_path / "index")


# -- the real client, no server ------------------------------------------------------------------


@pytest.fixture()
def client():
    return pytest.importorskip(
        "elasticsearch",
        reason="the Elasticsearch client is not installed: pip install 'reranklab[es]'",
    )


@pytest.fixture()
def cluster(client, monkeypatch):
    from tests.helpers_es import FakeCluster, serve

    node = FakeCluster()
    server, url = serve(node)
    monkeypatch.setenv("RERANKLAB_ES_URL", url)
    yield node
    server.shutdown()
    server.server_close()


def _es(**es):
    return get_backend(
        {"backend": "elasticsearch", "elasticsearch": {"timeout": 5, "max_retries": 2, **es}}
    )


def test_client_takes_the_connection_options(client, tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_text("")
    for connection in (
        Connection("https://es:9243", api_key=API_KEY, ca_certs=str(ca)),
        Connection("http://localhost:9200", basic_auth=("elastic", SECRET)),
    ):
        client.Elasticsearch(**connection.client_options()).close()


def test_a_server_that_is_down_is_a_clear_error_without_secrets(
    client, monkeypatch, caplog, corpus_path, tmp_path
):
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("RERANKLAB_ES_URL", f"http://elastic:{SECRET}@127.0.0.1:{port}")
    caplog.set_level(logging.DEBUG)
    with pytest.raises(ElasticsearchError) as info:
        _es(max_retries=1).build(corpus_path, tmp_path / "index")
    message = str(info.value)
    assert message.startswith(
        f"Elasticsearch at http://127.0.0.1:{port}: connect failed: cannot connect, after 1 retries"
    )
    assert SECRET not in message and SECRET not in caplog.text
    assert basic_auth_token("elastic", SECRET) not in caplog.text
    assert not (tmp_path / "index").exists()
    # Each retry is one warning line, not the failed attempt's traceback.
    retries = [r for r in caplog.records if r.name == "elastic_transport.transport"]
    assert retries and all(r.exc_info is None for r in retries)
    assert re.search(
        r"Retrying request after failure \(attempt \d of 1\): ConnectionError", caplog.text
    )
    assert "Traceback" not in caplog.text


def test_429_is_retried_then_named(cluster, monkeypatch, caplog, corpus_path, tmp_path):
    from tests.helpers_es import REJECTED

    monkeypatch.setenv("RERANKLAB_ES_API_KEY", API_KEY)
    cluster.fail_all = (429, REJECTED)
    caplog.set_level(logging.DEBUG)
    with pytest.raises(ElasticsearchError) as info:
        _es(max_retries=2).build(corpus_path, tmp_path / "index")
    message = str(info.value)
    assert message.startswith(
        f"Elasticsearch at {cluster.url}: connect failed: HTTP 429 es_rejected_execution_exception"
    )
    assert "(after 2 retries)" in message
    assert len(cluster.requests) == 3  # the first try and two retries
    # The key was sent to the server, and shown nowhere.
    assert all(r.headers.get("authorization") == f"ApiKey {API_KEY}" for r in cluster.requests)
    assert API_KEY not in message and API_KEY not in caplog.text


def test_503_on_search_names_the_step(cluster, corpus_path, tmp_path):
    from tests.helpers_es import UNAVAILABLE

    retriever = _es(max_retries=1)
    retriever.build(corpus_path, tmp_path / "index")
    cluster.fail_all = (503, UNAVAILABLE)
    with pytest.raises(
        ElasticsearchError,
        match=r"checking index reranklab-\w+-\w+ failed: HTTP 503 Service Unavailable \(after 1 retries\)",
    ):
        retriever.search(tmp_path / "index", {"q1": "bread"}, 3)


def test_build_streams_the_corpus_then_reuses_the_index(cluster, corpus_path, tmp_path):
    retriever = _es(bulk_docs=2)
    stats = retriever.build(corpus_path, tmp_path / "index")
    name = stats["index"]
    assert not stats["reused"] and stats["passages"] == 5 and stats["vocabulary"] is None
    # The index body as built from the settings, marked as reranklab's and complete at the end.
    created = cluster.calls("PUT", f"/{name}")[0].json()
    assert created["settings"] == retriever.body["settings"]
    meta = cluster.indices[name]["mappings"]["_meta"]["reranklab"]
    assert meta["complete"] is True and meta["passages"] == 5 and meta["created_by"] == "reranklab"
    assert created["mappings"]["_meta"]["reranklab"]["complete"] is False
    # Streamed in bulk requests of bulk_docs passages, then refreshed and counted.
    bulks = cluster.calls("PUT", "/_bulk") + cluster.calls("POST", "/_bulk")
    assert [len(r.ndjson()) // 2 for r in bulks] == [2, 2, 1]
    assert cluster.indices[name]["docs"] == CORPUS
    assert cluster.calls("POST", f"/{name}/_refresh") and cluster.calls(
        "POST", f"/{name}/_count"
    ) + cluster.calls("GET", f"/{name}/_count")
    record = json.loads((tmp_path / "index" / "index.json").read_text())
    assert record["index"] == name and record["url"] == cluster.url and record["passages"] == 5
    assert (
        record["settings"]["k1"] == 0.9
        and record["settings"]["elasticsearch"]["analyzer"]["stemmer"] == "english"
    )

    # A second run finds the complete index: no create, no bulk.
    before = len(cluster.requests)
    again = _es(bulk_docs=2).build(corpus_path, tmp_path / "index2")
    assert again["reused"] and again["index"] == name
    assert not [
        r
        for r in cluster.requests[before:]
        if r.path.endswith("_bulk") or r.method == "PUT" and r.path == f"/{name}"
    ]
    # A changed setting builds another index beside it.
    other = get_backend({"backend": "elasticsearch", "k1": 1.2}).build(
        corpus_path, tmp_path / "index3"
    )
    assert other["index"] != name and set(cluster.indices) == {name, other["index"]}


def test_an_incomplete_index_of_ours_is_rebuilt(cluster, corpus_path, tmp_path):
    name = _es().build(corpus_path, tmp_path / "index")["index"]
    cluster.indices[name]["mappings"]["_meta"]["reranklab"]["complete"] = False  # a killed build
    del cluster.indices[name]["docs"]["p3"]
    stats = _es().build(corpus_path, tmp_path / "index")
    assert not stats["reused"] and cluster.calls("DELETE", f"/{name}")
    assert cluster.indices[name]["docs"] == CORPUS


def test_an_index_reranklab_did_not_create_is_never_touched(cluster, corpus_path, tmp_path):
    name = _es().build(corpus_path, tmp_path / "index")["index"]
    cluster.indices[name] = {
        "settings": {},
        "mappings": {"properties": {"text": {"type": "keyword"}}},
        "docs": {"x": "y"},
    }
    before = len(cluster.requests)
    with pytest.raises(
        ElasticsearchError, match=f"index {name} exists but was not created by reranklab"
    ):
        _es().build(corpus_path, tmp_path / "index")
    assert all(r.method in ("GET", "HEAD") for r in cluster.requests[before:])
    assert cluster.indices[name]["docs"] == {"x": "y"}


def test_rejected_passages_and_a_failed_count_check_fail_the_build(cluster, corpus_path, tmp_path):
    cluster.reject_ids = {"p2", "p4"}
    with pytest.raises(
        ElasticsearchError,
        match=r"bulk indexing into reranklab-\w+-\w+ failed: 2 passage\(s\) failed: p2 \(HTTP 400 document_parsing_exception",
    ):
        _es().build(corpus_path, tmp_path / "index")
    assert not (tmp_path / "index" / "index.json").exists()
    cluster.reject_ids = set()
    cluster.drop_ids = {"p5"}
    with pytest.raises(
        ElasticsearchError, match="count check of index .* 4 documents in the index for 5 passages"
    ):
        _es().build(corpus_path, tmp_path / "index")
    name = next(iter(cluster.indices))
    assert cluster.indices[name]["mappings"]["_meta"]["reranklab"]["complete"] is False


def test_search_asks_msearch_for_ids_and_ranks_ties_by_hash(cluster, corpus_path, tmp_path):
    retriever = _es(search_queries=2)
    retriever.build(corpus_path, tmp_path / "index")
    queries = {
        "q1": "baking bread in the oven",
        "q2": "cycling roads",
        "q3": "quantum",
        "q4": "the oven",
    }
    run = retriever.search(tmp_path / "index", queries, depth=2)
    assert run["q3"] == {}
    # The scripted node scores by shared words: q1 -> p1 (bread, in, the, oven) 4, p2 (baking, bread)
    # 2, p5 (the, oven) 2: p2 and p5 tie at the cut, the seeded hash picks one.
    assert list(run["q1"])[0] == "p1" and run["q1"]["p1"] == 4.0
    assert len(run["q1"]) == 2
    tied = {"p2": 2.0, "p5": 2.0}
    assert list(run["q1"])[1] == rank_order(tied, "q1")[0][0]
    msearches = cluster.calls("POST", r"/reranklab-\w+-\w+/_msearch") + cluster.calls(
        "GET", r"/reranklab-\w+-\w+/_msearch"
    )
    first = msearches[0]
    assert first.query["search_type"] == ["dfs_query_then_fetch"]
    lines = first.ndjson()
    assert len(lines) == 4 and lines[1]["size"] == 3 and lines[1]["_source"] is False
    # The tie at the cut was fetched whole with min_score.
    assert any(line.get("min_score") == 2.0 for r in msearches for line in r.ndjson()[1::2])


def test_rejected_searches_are_retried(cluster, corpus_path, tmp_path):
    retriever = _es(max_retries=2)
    retriever.build(corpus_path, tmp_path / "index")
    cluster.reject_searches = 1
    run = retriever.search(tmp_path / "index", {"q1": "cycling", "q2": "oven"}, depth=5)
    assert set(run["q1"]) == {"p3", "p4"} and set(run["q2"]) == {"p1", "p5"}
    cluster.reject_searches = 100
    with pytest.raises(
        ElasticsearchError, match="still rejected after 2 retries, e.g. q1: HTTP 429"
    ):
        retriever.search(tmp_path / "index", {"q1": "cycling"}, depth=5)


# -- a live server (RERANKLAB_ES_URL) ------------------------------------------------------------

live = pytest.mark.skipif(
    not LIVE_URL,
    reason="RERANKLAB_ES_URL is not set: these tests need a live Elasticsearch server "
    "(docker compose up -d --wait; export RERANKLAB_ES_URL=http://localhost:9200)",
)


@pytest.fixture()
def live_prefix(client):
    """A prefix of this run's own; its indices (reranklab's, by construction) are deleted after."""
    import secrets

    prefix = f"reranklab-test-{secrets.token_hex(4)}"
    yield prefix
    connection = resolve_connection({})
    es = client.Elasticsearch(**connection.client_options())
    for name in es.indices.get(index=f"{prefix}-*", expand_wildcards="all").body:
        if reranklab_meta(es.indices.get_mapping(index=name).body) is not None:
            es.indices.delete(index=name)
    es.close()


def _live(prefix, **settings):
    es = {"index_prefix": prefix, **settings.pop("elasticsearch", {})}
    return get_backend({"backend": "elasticsearch", **settings, "elasticsearch": es})


@live
@pytest.mark.elasticsearch_live
def test_live_index_reuse_and_search(live_prefix, corpus_path, tmp_path):
    stats = _live(live_prefix).build(corpus_path, tmp_path / "a")
    assert stats["passages"] == 5 and not stats["reused"]
    assert _live(live_prefix).build(corpus_path, tmp_path / "b")["reused"]
    assert _live(live_prefix, k1=1.2).build(corpus_path, tmp_path / "c")["index"] != stats["index"]
    run = _live(live_prefix).search(
        tmp_path / "a", {"q1": "baked breads", "q2": "cyclists tyres", "q3": "quantum"}, 3
    )
    # Lucene's EnglishAnalyzer: baked/bread(s) -> bake/bread; p2 holds both twice.
    assert list(run["q1"])[:2] == ["p2", "p1"]
    assert list(run["q2"])[0] == "p4" and run["q3"] == {}
    assert all(isinstance(s, float) for s in run["q1"].values())


@live
@pytest.mark.elasticsearch_live
def test_live_bulk_failure_is_reported(live_prefix, tmp_path):
    path = tmp_path / "corpus.jsonl"
    long_id = "p" * 600  # Elasticsearch refuses _id longer than 512 bytes
    path.write_text(
        "\n".join(json.dumps({"pid": p, "text": "some text"}) for p in ("ok", long_id)) + "\n"
    )
    with pytest.raises(ElasticsearchError, match="bulk indexing into reranklab-test-") as info:
        _live(live_prefix).build(path, tmp_path / "index")
    # Refused as an item ("1 passage(s) failed") or as the whole request, but named either way.
    assert "passage(s) failed" in str(info.value) or "too long" in str(info.value)
    assert not (tmp_path / "index" / "index.json").exists()


@live
@pytest.mark.elasticsearch_live
def test_live_parity_with_bm25s_on_sample(live_prefix, tmp_path):
    from reranklab.data import get_dataset
    from reranklab.data.download import fetch_dataset
    from reranklab.io import read_qrels, read_queries
    from reranklab.retrieval.es_parity import parity
    from reranklab.retrieval.es_settings import retrieval_settings

    dataset = get_dataset("sample")
    fetch_dataset(dataset, tmp_path / "raw", None)
    dataset.prepare(tmp_path / "raw", tmp_path / "data", {})
    settings = retrieval_settings({"elasticsearch": {"index_prefix": live_prefix}}).model_dump()
    result = parity(
        tmp_path / "data" / "corpus.parquet",
        read_queries(tmp_path / "data" / "queries.tsv"),
        read_qrels(tmp_path / "data" / "qrels.txt"),
        settings,
        depth=30,
        ks=(10, 30),
        work_dir=tmp_path / "work",
    )
    print(format_parity(result))
    # The bm25s defaults imitate Lucene's English analyzer and one-byte norms: against Lucene
    # 9.9 itself they give the same top 10 on sample (tests/test_lucene_parity.py), so a
    # cluster may differ only by its Lucene version's analysis at the edges.
    assert result["overlap"][10] >= 0.99
    assert abs(result["map"]["difference"]) <= 0.002


def test_index_and_retrieve_steps_on_the_elasticsearch_backend(cluster, corpus_path, tmp_path):
    from reranklab.cli import main
    from reranklab.config import with_defaults
    from reranklab.io import read_run, write_qrels, write_queries

    retrieval = {**with_defaults({})["retrieval"], "backend": "elasticsearch"}
    assert (
        main(
            [
                "index",
                "--corpus",
                str(corpus_path),
                "--out-dir",
                str(tmp_path / "bm25"),
                "--spec",
                json.dumps({"retrieval": retrieval}),
            ]
        )
        == 0
    )
    write_queries(tmp_path / "queries.tsv", {"q1": "bread oven", "q2": "nothing matches"})
    write_qrels(tmp_path / "qrels.txt", {"q1": {"p1": 1}})
    protocol = {
        "first_stage": "bm25",
        "depth": 3,
        "inject_relevant": False,
        "relevance_threshold": 1,
    }
    out = tmp_path / "candidates.run"
    assert (
        main(
            [
                "retrieve",
                "--queries",
                str(tmp_path / "queries.tsv"),
                "--qrels",
                str(tmp_path / "qrels.txt"),
                "--pool",
                str(tmp_path / "none.run"),
                "--index-dir",
                str(tmp_path / "bm25"),
                "--out",
                str(out),
                "--spec",
                json.dumps({"protocol": protocol, "retrieval": retrieval}),
            ]
        )
        == 0
    )
    run = read_run(out)
    # The scripted node scores by shared words: p1 holds bread and oven, p2 bread, p5 oven.
    assert run["q1"] == {"p1": 2.0, "p2": 1.0, "p5": 1.0} and "q2" not in run


def test_run_file_streamed_batch_by_batch_is_write_runs(cluster, corpus_path, tmp_path):
    from reranklab.io import write_run

    retriever = _es(search_queries=2)
    retriever.build(corpus_path, tmp_path / "index")
    queries = {
        f"q{i}": text
        for i, text in enumerate(["bread oven", "cycling", "the oven", "x", "wet roads"])
    }
    stats = retriever.search_to_file(
        tmp_path / "index", queries, 2, tmp_path / "streamed.run", "bm25"
    )
    write_run(tmp_path / "whole.run", retriever.search(tmp_path / "index", queries, 2), tag="bm25")
    assert (tmp_path / "streamed.run").read_bytes() == (tmp_path / "whole.run").read_bytes()
    assert stats == {"queries": 5, "candidates": 7, "empty": 1}
