"""The server's fast hot routes (sim_web.serve.fast): the same answers as FastAPI, byte for byte, or a hand-over to it."""

from __future__ import annotations

import asyncio
import json
import threading
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from sim_web.protocol.errors import ActionError, ToolUnavailableError
from sim_web.protocol.results import SearchResult, VisitResult
from sim_web.serve.fast import HotRoutes, query_args, tool_args, visit_args
from sim_web.serve.guards import ToolPool
from sim_web.serve.http import create_app, warm_index

JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def both(sample_index):
    """The same server twice: FastAPI only, and with the fast routes in front."""
    slow = TestClient(create_app(str(sample_index), fast_routes=False, token="tok"), raise_server_exceptions=False)
    fast = TestClient(create_app(str(sample_index), token="tok"), raise_server_exceptions=False)
    return slow, fast


def _same(both, path: str, content: bytes, headers: dict[str, str] | None = None) -> httpx.Response:
    slow, fast = both
    headers = {**JSON, "Authorization": "Bearer tok", **(headers or {})}
    a, b = (c.post(path, content=content, headers=headers) for c in (slow, fast))
    assert (b.status_code, b.content) == (a.status_code, a.content), path
    assert b.headers.get("content-type") == a.headers.get("content-type") and b.headers.get(
        "www-authenticate"
    ) == a.headers.get("www-authenticate")
    return b


def test_answers_are_byte_identical_to_fastapi(both):
    ok = [
        ("/tools/search", {"arguments": {"query": ["Danube river", "Alps"]}}),
        (
            "/tools/search",
            {"arguments": {"query": ['Ünïcödé \u2028 tab\there "quoted" \\ back \x01 ctl']}, "code": None},
        ),
        ("/tools/google_scholar", {"arguments": {"query": "algebra"}}),
        ("/tools/visit", {"arguments": {"url": ["https://en.wikipedia.org/wiki/Danube"], "goal": "length"}}),
        ("/tools/visit", {"arguments": {"url": ["https://example.com/x"], "goal": "g"}}),
        ("/backend/search", {"query": "Einstein relativity", "k": 7}),
        ("/backend/scholar", {"query": "number theory"}),
        ("/backend/visit", {"url": "https://en.wikipedia.org/wiki/Danube", "goal": "source"}),
        ("/backend/visit", {"url": "https://en.wikipedia.org/wiki/No_such_page_xyz"}),
    ]
    for path, body in ok:
        assert _same(both, path, json.dumps(body).encode()).status_code == 200, path
    for path, raw in [
        ("/tools/search", b'{"arguments": {"query": ["Danube\\udc80"]}}'),  # lone surrogates
        ("/backend/search", b'{"query": "Danube\\udc80"}'),
        ("/backend/visit", b'{"url": "x\\ud800", "goal": "g"}'),
    ]:
        assert _same(both, path, raw).status_code == 200, path


def test_every_other_request_gets_fastapis_answer(both):
    bad = [
        ("/tools/search", b"{not json"),
        ("/tools/search", b""),
        ("/tools/search", b"[1, 2]"),
        ("/tools/search", b'"x"'),
        ("/tools/search", b'{"arguments": {}}'),  # an agent mistake: 200 with the env's text from either path
        ("/tools/search", b'{"arguments": {"query": 5}}'),
        ("/tools/search", b'{"arguments": [], "code": null}'),
        ("/tools/search", b'{"arguments": {"query": ["x"]}, "extra": 1}'),
        ("/tools/search", b'{"code": 5}'),
        ("/tools/nope", b'{"arguments": {}}'),
        ("/tools/PythonInterpreter", b'{"code": "print(1)"}'),
        ("/backend/search", b'{"query": ""}'),
        ("/backend/search", b'{"query": "x", "k": 0}'),
        ("/backend/search", b'{"query": "x", "k": 101}'),
        ("/backend/search", b'{"query": "x", "k": true}'),
        ("/backend/search", b'{"query": "x", "k": 5.0}'),
        ("/backend/search", b'{"query": "x", "k": "5"}'),
        ("/backend/search", json.dumps({"query": "q" * 2001}).encode()),
        ("/backend/scholar", b'{"query": 1}'),
        ("/backend/visit", b'{"goal": "g"}'),
        ("/backend/visit", b"[1, 2]"),
        ("/backend/visit", b'{"url": "u", "goal": 3}'),
        ("/backend/visit", json.dumps({"url": "u", "goal": "g" * 4001}).encode()),
        ("/tools/search", b"[" * 100_000),
    ]
    statuses = {_same(both, path, raw).status_code for path, raw in bad}
    assert statuses == {200, 400, 404, 422}  # k=5.0 and k="5" pass pydantic's lax mode; deep nesting is a 400
    q = b'{"arguments": {"query": ["Danube"]}}'
    for headers in ({"Authorization": ""}, {"Authorization": "Bearer wrong"}, {"Content-Type": "text/plain"}):
        assert _same(both, "/tools/search", q, headers).status_code in (401, 422)
    assert _same(both, "/tools/search", b'{"arguments": {"query": ["' + b"x" * 2_000_000 + b'"]}}').status_code == 413


class _Recorder:
    """The app behind the fast routes: counts what reaches it."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = (await receive()).get("body", b"")
        self.paths.append(scope["path"])
        await send({"type": "http.response.start", "status": 299, "headers": []})
        await send({"type": "http.response.body", "body": body})


def _toolbox(call=lambda action: f"result of {action.tool}") -> Any:
    executor = SimpleNamespace(
        search=lambda q, k: [SearchResult(title=q, link="https://x", snippet=str(k))],
        scholar=lambda q, k: [],
        visit=lambda url, goal: VisitResult(url=url, goal=goal, ok=False),
    )
    return SimpleNamespace(executor=executor, call=call)


def _hot(toolbox: Any = None, threads: int = 2, token: str | None = None) -> tuple[HotRoutes, _Recorder]:
    inner = _Recorder()
    return HotRoutes(
        inner,
        toolbox=toolbox or _toolbox(),
        pool=ToolPool(threads),
        names=["search", "visit"],
        max_body_bytes=1000,
        token=token,
    ), inner


def test_well_formed_calls_never_reach_the_app_and_the_rest_do():
    hot, inner = _hot(token="t")
    c = TestClient(hot)
    auth = {"Authorization": "Bearer t"}
    r = c.post("/tools/search", json={"arguments": {"query": ["q"]}}, headers=auth)
    assert r.status_code == 200 and r.content == b'{"result":"result of search"}'
    r = c.post("/backend/search", json={"query": "q", "k": 3}, headers=auth)
    assert r.json() == {"results": [{"title": "q", "link": "https://x", "snippet": "3", "date": None, "source": None}]}
    assert c.post("/backend/visit", json={"url": "u"}, headers=auth).json()["ok"] is False
    assert inner.paths == []
    handed = [
        c.post("/tools/search", json={"arguments": {"query": ["q"]}}),  # no token
        c.post("/tools/search", content=b'{"arguments": {}, "x": 1}', headers={**auth, **JSON}),
        c.post("/tools/python", json={"arguments": {}}, headers=auth),
        c.get("/tools/search", headers=auth),
        c.post("/tools/search", content=b"x" * 1001, headers={**auth, **JSON}),
    ]  # over the body limit
    assert [r.status_code for r in handed] == [299] * 5
    assert handed[1].content == b'{"arguments": {}, "x": 1}'  # the body read by the fast route is replayed whole
    assert inner.paths == ["/tools/search", "/tools/search", "/tools/python", "/tools/search", "/tools/search"]


def test_errors_raised_by_a_call_are_answered_like_the_app_handlers():
    def call(action):
        raise {
            "search": ActionError("missing_argument", "need a query"),
            "visit": ToolUnavailableError("visit", "u", ["sim: down"]),
        }[action.tool]

    c = TestClient(_hot(_toolbox(call))[0])
    r = c.post("/tools/search", json={"arguments": {}})  # an agent mistake: the env's observation text
    assert r.status_code == 200 and r.json() == {"result": "Error: need a query"}
    r = c.post("/tools/visit", json={"arguments": {}})
    assert r.status_code == 503 and r.json() == {
        "detail": "visit is unavailable for 'u': every backend failed (sim: down)"
    }


def test_a_full_pool_answers_503_with_retry_after():
    release = threading.Event()
    hot, _ = _hot(_toolbox(lambda action: release.wait(30) and "done"), threads=1)  # room for 4 calls in progress

    async def main() -> list[httpx.Response]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=hot), base_url="http://t") as c:
            held = [asyncio.create_task(c.post("/tools/search", json={"arguments": {}})) for _ in range(4)]
            while hot.pool.in_progress < 4:
                await asyncio.sleep(0.01)
            extra = await c.post("/tools/search", json={"arguments": {}})
            release.set()
            return [extra, *await asyncio.gather(*held)]

    extra, *held = asyncio.run(main())
    assert (
        extra.status_code == 503
        and extra.headers["retry-after"] == "1"
        and "4 tool calls in progress" in extra.json()["detail"]
    )
    assert [r.json() for r in held] == [{"result": "done"}] * 4


def test_every_tool_call_runs_on_the_pool_whatever_the_executor():
    threads: dict[str, str] = {}

    def call(action):
        threads[action.tool] = threading.current_thread().name
        return "ok"

    for inline in (True, False):  # an in-process index once ran on the event loop (issue 38): never again
        toolbox = _toolbox(call)
        toolbox.executor.inline = inline
        hot = HotRoutes(
            _Recorder(),
            toolbox=toolbox,
            pool=ToolPool(1),
            names=["search", "PythonInterpreter"],
            max_body_bytes=1000,
            token=None,
        )
        c = TestClient(hot)
        assert [c.post(f"/tools/{n}", json={"arguments": {}}).status_code for n in ("search", "PythonInterpreter")] == [
            200
        ] * 2
        assert threads["PythonInterpreter"].startswith("sim-web-tool") and threads["search"].startswith("sim-web-tool")


def test_request_checks_match_the_models():
    assert tool_args({"arguments": {"query": ["x"]}}) == ({"query": ["x"]}, None) and tool_args({}) == ({}, None)
    assert tool_args({"code": 1}) is None and tool_args({"arguments": None}) is None and tool_args([]) is None
    assert query_args({"query": "x"}) == ("x", 10) and query_args({"query": "x", "k": 100}) == ("x", 100)
    assert query_args({"query": "x", "k": False}) is None and query_args({"query": "x", "k": 1.0}) is None
    assert query_args({"query": "\udc80"}) == ("\ufffd", 10) and query_args({"query": "x" * 2001}) is None
    assert visit_args({"url": "u"}) == ("u", "") and visit_args({"url": "", "goal": "g"}) is None
    assert visit_args({"url": "u", "extra": 1}) is None


def test_warm_index_opens_the_local_index_only_and_runs_varied_bm25_searches():
    opened: list[str] = []
    leads = [
        ("Danube", "The Danube is the second-longest river in Europe after the Volga"),
        ("Alps", "The Alps are mountains"),
    ]
    index = SimpleNamespace(
        search=lambda q, k, mode: opened.append(f"search {q!r} {k} {mode}"),
        titles=SimpleNamespace(lookup=lambda q: opened.append("titles")),
        passages=lambda pid: opened.append("columns"),
        store=SimpleNamespace(resolve=lambda t: opened.append("store"), first_passages=lambda n: leads[:n]),
    )
    sim = SimpleNamespace(index=index, search=lambda q, k: pytest.fail("the served mode's search was called"))
    remote = SimpleNamespace(search=lambda q, k: pytest.fail("a remote backend was called"))
    warm_index([remote, SimpleNamespace(sim=sim)])
    assert opened == ["search 'warm up' 1 bm25", "titles", "store", "columns"]
    opened.clear()
    warm_index([remote, SimpleNamespace(sim=sim)], searches=5)
    assert opened[4:] == [
        f"search {q!r} 30 bm25"
        for q in (
            "The Danube is the second-longest river in Europe after the Volga",
            "Danube",
            "river in Europe",
            "The Alps are mountains",
            "Alps",
        )
    ]


def test_warm_queries_come_from_the_corpus(sample_index):
    from sim_web.serve.warm import warm_queries
    from wiki_index.search.index import WikiIndex

    queries = warm_queries(WikiIndex.from_dir(sample_index).store, 300)
    assert len(queries) == 300 and all(q.strip() for q in queries)
    assert (
        len(set(queries)) > 250
        and max(len(q.split()) for q in queries) == 25
        and min(len(q.split()) for q in queries) <= 3
    )


def test_worker_sockets_share_the_port_and_the_kernel_spreads_connections():
    import select
    import socket

    from sim_web.serve.workers import reuse_port_socket
    from simweb_core.errors import ConfigError

    holder = reuse_port_socket("127.0.0.1", 0, listen=False)  # the supervisor's: holds the port, takes no connection
    port = holder.getsockname()[1]
    workers = [reuse_port_socket("127.0.0.1", port, listen=True) for _ in range(2)]
    clients = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(64)]
    accepted = [0, 0]
    while sum(accepted) < len(clients):
        ready, _, _ = select.select(workers, [], [], 30)
        assert ready, f"only {accepted} of {len(clients)} connections reached the workers"
        for sock in ready:
            conn, _ = sock.accept()
            conn.close()
            accepted[workers.index(sock)] += 1
    assert min(accepted) > 0, accepted  # all 64 on one socket: 2 in 2**64 by chance
    for s in [holder, *workers, *clients]:
        s.close()
    with socket.socket() as plain:  # a port held without SO_REUSEPORT: a clear error, not a shared port
        plain.bind(("127.0.0.1", 0))
        plain.listen()
        with pytest.raises(ConfigError, match="cannot serve on 127.0.0.1"):
            reuse_port_socket("127.0.0.1", plain.getsockname()[1], listen=True)
