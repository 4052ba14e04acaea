"""Search-R1's ``POST /retrieve`` and the bulk ``POST /backend/search`` (issue 24).

The request and reply shapes are those of Search-R1's published retrieval server and client
(github.com/PeterGriffinJin/Search-R1: ``search_r1/search/retrieval_server.py``, ``search_r1/llm_agent/generation.py``):
the client posts ``{"queries": [...], "topk": k, "return_scores": true}`` as JSON, reads ``["result"]``, and for each
item takes ``["document"]["contents"]``, whose first line is the title and the rest the text.
"""

from __future__ import annotations

import json
import uuid

import pytest
from fastapi.testclient import TestClient
from live_server import running

from sim_web.serve.http import create_app
from sim_web.serve.retrieve import DEFAULT_TOPK, MAX_QUERIES
from wiki_index.search.index import WikiIndex

QUERIES = ["Danube river", "theory of relativity", "capital of France", "Mount Everest first ascent"]


@pytest.fixture(scope="module")
def both(sample_index):
    """The same server twice: FastAPI only, and with the fast routes in front."""
    return tuple(
        TestClient(create_app(str(sample_index), fast_routes=fast), raise_server_exceptions=False)
        for fast in (False, True)
    )


def search_r1_client(url: str, queries: list[str], topk: int) -> list[list[tuple[str, str]]]:
    """A Search-R1 rollout's retrieval call, as their client makes it: one ``requests.post`` with the JSON body,
    no other header; per query, the (title, text) of each document, read from ``contents`` as they read it."""
    requests = pytest.importorskip("requests")
    reply = requests.post(f"{url}/retrieve", json={"queries": queries, "topk": topk, "return_scores": True}).json()
    out = []
    for per_query in reply["result"]:
        lines = [item["document"]["contents"].split("\n") for item in per_query]
        out.append([(doc[0], "\n".join(doc[1:])) for doc in lines])
    return out


def test_search_r1s_own_client_reads_our_retrieve(sample_index):
    index = WikiIndex.from_dir(sample_index)
    with running(create_app(str(sample_index))) as url:
        docs = search_r1_client(url, QUERIES, 3)
    assert len(docs) == len(QUERIES)
    for query, got in zip(QUERIES, docs):
        expected = [(f'"{p.title}"', p.text) for _, p in index.search(query, 3, "bm25")]
        assert got == expected and len(got) == 3, query
    assert docs[0][0][0] == '"Danube"'


def test_reply_shapes_scores_and_defaults(both, sample_index):
    index = WikiIndex.from_dir(sample_index)
    _, fast = both
    scored = fast.post("/retrieve", json={"queries": QUERIES[:2], "topk": 5, "return_scores": True}).json()
    assert set(scored) == {"result"} and len(scored["result"]) == 2
    for query, items in zip(QUERIES, scored["result"]):
        hits = index.search(query, 5, "bm25")
        assert [set(i) for i in items] == [{"document", "score"}] * 5
        assert [set(i["document"]) for i in items] == [{"id", "contents"}] * 5
        assert [i["document"]["id"] for i in items] == [p.docid for _, p in hits]
        assert [i["score"] for i in items] == pytest.approx([h.score for h, _ in hits])
        assert items[0]["score"] >= items[-1]["score"]
    bare = fast.post("/retrieve", json={"queries": QUERIES[:2], "topk": 5}).json()["result"]
    assert bare == [[i["document"] for i in items] for items in scored["result"]]  # return_scores false: the documents
    for topk in ({}, {"topk": None}, {"topk": 0}):  # Search-R1's server: a missing or falsy topk is the default
        r = fast.post("/retrieve", json={"queries": ["Danube"], **topk})
        assert r.status_code == 200 and len(r.json()["result"][0]) == DEFAULT_TOPK, topk
    r = fast.post("/retrieve", json={"queries": ["Danube"], "topk": 2, "request_id": 7})  # unknown fields: ignored
    assert r.status_code == 200 and len(r.json()["result"][0]) == 2
    assert fast.post("/retrieve", json={"queries": []}).json() == {"result": []}


def test_blank_and_long_queries_do_not_fail_the_batch(both):
    _, fast = both
    long = " ".join(f"term{i}" for i in range(1500)) + " Danube"  # over QUERY_MAX: searched on its first part
    raw = json.dumps({"queries": ["", "   ", long], "topk": 2, "return_scores": True})
    raw = raw.replace("]", ', "Danube\\udc80"]').encode()  # a JSON escape that parses to a lone surrogate
    r = fast.post("/retrieve", content=raw, headers={"Content-Type": "application/json"})
    assert r.status_code == 200, r.text
    blank, spaces, cut, surrogate = r.json()["result"]
    assert blank == [] and spaces == [] and len(cut) <= 2 and len(surrogate) == 2
    r.content.decode("utf-8")  # strict: a lone surrogate is replaced


def test_fast_and_fastapi_routes_answer_byte_for_byte(both):
    slow, fast = both
    bodies = [
        ("/retrieve", {"queries": QUERIES, "topk": 4, "return_scores": True}),
        ("/retrieve", {"queries": QUERIES, "topk": 4, "return_scores": False}),
        ("/retrieve", {"queries": ["Danube"], "topk": 2.0, "return_scores": 1}),  # lax types: FastAPI's answer
        ("/backend/search", {"queries": QUERIES, "k": 3}),
        ("/backend/search", {"query": "Danube", "k": 3}),
    ]
    for path, body in bodies:
        a, b = (
            c.post(path, content=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
            for c in (slow, fast)
        )
        assert a.status_code == 200 and (b.status_code, b.content) == (a.status_code, a.content), (path, body)
        assert b.headers["content-type"] == a.headers["content-type"] == "application/json"


def test_bulk_backend_search_is_the_single_search_per_query(both):
    _, fast = both
    queries = [
        f"{q} {i}" for i in range(8) for q in QUERIES
    ]  # 32 queries: past the tool's 10 and its 20,000 characters
    r = fast.post("/backend/search", json={"queries": queries, "k": 10})
    assert r.status_code == 200 and len(r.content) > 20_000
    results = r.json()["results"]
    assert len(results) == len(queries) and all(len(per) == 10 for per in results)
    for q in (queries[0], queries[-1]):
        assert results[queries.index(q)] == fast.post("/backend/search", json={"query": q, "k": 10}).json()["results"]
    assert fast.post("/backend/search", json={"queries": [], "k": 3}).json() == {"results": []}


@pytest.mark.parametrize("fast_routes", [True, False])
def test_limits_and_bad_bodies_get_a_clear_4xx_without_echo(sample_index, fast_routes):
    marker = f"SECRET-{uuid.uuid4().hex}"
    c = TestClient(
        create_app(str(sample_index), fast_routes=fast_routes, max_body_bytes=64 * 1024), raise_server_exceptions=False
    )
    cases = [
        ("/retrieve", {"queries": ["x"] * (MAX_QUERIES + 1)}, f"at most {MAX_QUERIES}"),
        ("/retrieve", {"queries": ["x"], "topk": 101}, "less than or equal to 100"),
        ("/retrieve", {"queries": ["x"], "topk": -1}, "greater than or equal to 0"),
        ("/retrieve", {"queries": marker}, "list"),
        ("/retrieve", {"topk": 3}, "missing"),
        ("/retrieve", {"queries": [marker, 3]}, "string"),
        ("/retrieve", {"queries": [marker], "return_scores": marker}, "boolean"),
        ("/backend/search", {"queries": ["x"] * (MAX_QUERIES + 1)}, f"at most {MAX_QUERIES}"),
        ("/backend/search", {"queries": ["ok", ""]}, "at least 1"),
        ("/backend/search", {"queries": ["q" * 2001]}, "at most 2000"),
        ("/backend/search", {"query": marker, "queries": [marker]}, "either 'query'"),
        ("/backend/search", {"k": 3}, "either 'query'"),
        ("/backend/search", {"queries": [marker], "k": 0}, "greater"),
    ]
    for path, body, expected in cases:
        r = c.post(path, json=body)
        assert r.status_code == 422 and expected in r.text and marker not in r.text, (path, r.text)
    r = c.post("/retrieve", json={"queries": [marker * 10] * 300})
    assert r.status_code == 413 and marker not in r.text
    assert c.post("/retrieve", content=b"{not json", headers={"Content-Type": "application/json"}).status_code == 422
    assert c.get("/retrieve").status_code == 405
    assert "/retrieve" in c.get("/openapi.json").json()["paths"]


def test_retrieve_and_bulk_search_need_the_bearer_token(sample_index):
    token = f"tok-{uuid.uuid4().hex}"
    c = TestClient(create_app(str(sample_index), token=token), raise_server_exceptions=False)
    for path, body in (("/retrieve", {"queries": ["Danube"], "topk": 1}), ("/backend/search", {"queries": ["Danube"]})):
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            r = c.post(path, json=body, headers=headers)
            assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer" and token not in r.text
        assert c.post(path, json=body, headers={"Authorization": f"Bearer {token}"}).status_code == 200
