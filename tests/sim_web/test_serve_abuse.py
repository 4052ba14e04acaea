"""Issue 59, the server's part: one accounting for sessions, connections and callers, nothing heavy on the event loop,
every reply encodable. Each test names the finding it covers; none needs OpenEnv's package, and none times anything
(work is counted: calls, threads, slots)."""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time

import httpx
import pytest
from fastapi.testclient import TestClient
from live_server import running

from sim_web.serve.http import create_app
from sim_web.serve.msgpack_wire import packb
from sim_web.serve.openenv import OpenEnvLimits
from sim_web.serve.pool import THREAD_PREFIX, ToolPool, client_key

TOKEN = "t0ken-for-the-abuse-tests"
A, B = ("10.0.0.1", 40001), ("10.0.0.2", 40002)  # two clients, as TestClient's peer address


def _wait_for(predicate, what: str, deadline_s: float = 60.0) -> None:
    """Wait until the server has done something asynchronous (a bound on a hang, not a timing assertion)."""
    end = time.monotonic() + deadline_s
    while not predicate():
        assert time.monotonic() < end, f"the server never {what}"
        time.sleep(0.01)


def _rpc(method: str, request_id=1, **params) -> dict:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


class _Recording:
    """A stand-in for a module's ``json`` that records the thread of every ``loads``/``dumps`` call."""

    def __init__(self) -> None:
        self.loads_threads: list[tuple[str, int]] = []
        self.dumps_threads: list[tuple[str, str]] = []

    def loads(self, raw, **kw):
        self.loads_threads.append((threading.current_thread().name, len(raw)))
        return json.loads(raw, **kw)

    def dumps(self, value, **kw):
        kind = value.get("type", "") if isinstance(value, dict) else ""
        self.dumps_threads.append((threading.current_thread().name, kind))
        return json.dumps(value, **kw)


# Finding 1: a 1 MiB MessagePack body of empty arrays took 3 s of pure Python on the event loop.
def test_a_msgpack_body_of_a_million_empty_arrays_costs_bounded_work(sample_index):
    app = create_app(str(sample_index), fast_routes=False)
    body = packb({"query": "Danube river", "topk": 3, "pad": [[]] * 1_000_000})
    assert len(body) < 1024 * 1024
    calls, counting = 0, False

    def count(frame, event, arg):
        nonlocal calls
        calls += counting and event == "call"

    threading.setprofile(count)  # every thread started from here on: the server's loop and its tool threads
    sys.setprofile(count)
    try:
        with TestClient(app) as c:
            c.post("/retrieve", content=packb({"query": "warm up"}))  # imports and first-call work out of the count
            counting = True
            r = c.post("/retrieve", content=body)
            counting = False
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    assert r.status_code == 200 and r.headers["content-type"] == "application/msgpack"
    assert calls < 100_000, f"{calls} Python calls for one request: the body was decoded item by item in Python"


# Finding 1 (and "JSON of every size"): a large body is decoded on the tool threads, a small one where it is.
def test_large_json_bodies_are_decoded_on_the_tool_threads(sample_index, monkeypatch):
    import sim_web.serve.fast as fast
    import sim_web.serve.openenv.routes as routes

    recorded = _Recording()
    monkeypatch.setattr(fast, "json", recorded)
    monkeypatch.setattr(routes, "json", recorded)
    pad = "x" * 200_000
    with TestClient(create_app(str(sample_index))) as c:
        assert c.post("/tools/search", json={"arguments": {"query": ["Danube"]}}).status_code == 200
        assert c.post("/tools/search", json={"arguments": {"query": ["Danube"]}, "code": pad}).status_code == 200
        r = c.post(
            "/mcp", content=json.dumps({**_rpc("ping"), "pad": pad}), headers={"content-type": "application/json"}
        )
        assert r.json()["result"] == {}
        with c.websocket_connect("/ws") as ws:  # a large WebSocket message too
            ws.send_text(json.dumps({"type": "state", "pad": pad}))
            assert ws.receive_json()["type"] == "state"
    small, *large = recorded.loads_threads
    assert small[1] < 1000 and not small[0].startswith(THREAD_PREFIX)
    assert len(large) == 3 and all(name.startswith(THREAD_PREFIX) for name, size in large), large


# Finding 1, its last part: a large body the fast routes refuse (a wrong shape), or one they never see (chunked, or a
# route without a fast path), was parsed by FastAPI on the event loop; every body route now decodes it on the pool.
def test_large_bodies_of_every_body_route_are_decoded_on_the_tool_threads(sample_index, monkeypatch):
    from sim_web.serve.pool import INLINE_DECODE_BYTES

    real_loads, decoded = json.loads, []

    def loads(raw, **kw):
        if len(raw) > INLINE_DECODE_BYTES:
            decoded.append(threading.current_thread().name)
        return real_loads(raw, **kw)

    monkeypatch.setattr(json, "loads", loads)  # every caller: starlette's Request.json, the routes, the fast path
    pad = "x" * (2 * INLINE_DECODE_BYTES)
    wrong_shapes = {  # each refused for its shape, after a full decode
        "/tools/search": {"arguments": {"query": ["Danube"]}, "pad": pad},
        "/backend/search": {"query": "Danube", "pad": pad},
        "/backend/scholar": {"query": "algebra", "pad": pad},
        "/backend/visit": {"url": "https://en.wikipedia.org/wiki/Danube", "pad": pad},
        "/score": {"prediction": "Vienna", "answer": "Vienna", "pad": pad},
        "/retrieve": {"queries": "not a list", "pad": pad},
    }
    with TestClient(create_app(str(sample_index))) as c:
        for path, body in wrong_shapes.items():
            r = c.post(path, json=body)
            assert r.status_code == 422 and pad not in r.text, (path, r.text[:200])
        chunked = json.dumps({"arguments": {"query": ["Danube"]}, "code": pad}).encode()
        r = c.post("/tools/search", content=iter([chunked]), headers={"content-type": "application/json"})
        assert r.status_code == 200 and "Danube" in r.json()["result"]  # no Content-Length: straight to FastAPI
    assert len(decoded) >= len(wrong_shapes) + 1
    assert all(name.startswith(THREAD_PREFIX) for name in decoded), decoded


# Finding 2: a session closed over /mcp while a socket held it freed its slot; the socket kept stepping.
def test_a_session_closed_over_mcp_keeps_its_slot_until_its_socket_lets_go(sample_index):
    app = create_app(str(sample_index), openenv_limits=OpenEnvLimits(max_sessions=2))
    registry = app.state.openenv_sessions
    c = TestClient(app)
    session_id = c.post("/mcp", json=_rpc("openenv/session/create")).json()["result"]["session_id"]
    with c.websocket_connect(f"/ws?session_id={session_id}") as ws:
        ws.send_json({"type": "reset", "data": {"seed": 0}})
        assert ws.receive_json()["type"] == "observation"
        assert c.post("/mcp", json=_rpc("openenv/session/close", session_id=session_id)).json()["result"]["closed"]
        assert registry.live == 1  # the socket still holds the env: so does the slot
        ws.send_json({"type": "step", "data": {"message": "<answer>x</answer>"}})
        reply = ws.receive_json()
        assert reply["type"] == "error" and reply["data"]["code"] == "SESSION_CLOSED"
    _wait_for(lambda: registry.live == 0, "freed the slot when the socket let go")
    with c.websocket_connect(f"/ws?session_id={session_id}") as ws:  # closed for good
        assert ws.receive_json()["data"]["code"] == "SESSION_ERROR"


# Finding 6: one client took every session slot, everyone else got CAPACITY_REACHED.
def test_one_client_cannot_take_every_session(sample_index):
    app = create_app(str(sample_index), openenv_limits=OpenEnvLimits(max_sessions=4))
    a, b = TestClient(app, client=A), TestClient(app, client=B)
    replies = [a.post("/mcp", json=_rpc("openenv/session/create")).json() for _ in range(6)]
    assert sum("result" in r for r in replies) == 3  # three quarters of the cap
    assert "its share" in replies[-1]["error"]["message"]
    with b.websocket_connect("/ws") as ws:  # another client still gets a slot, over either route
        ws.send_json({"type": "reset", "data": {"seed": 1}})
        assert ws.receive_json()["type"] == "observation"
    assert app.state.openenv_sessions.held_by(client_key({"client": A})) == 3


# Finding 6: idle sessions were dropped only when another session opened.
def test_idle_sessions_are_reaped_by_a_timer(sample_index):
    app = create_app(str(sample_index), openenv_limits=OpenEnvLimits(idle_timeout_s=0.2))
    registry = app.state.openenv_sessions
    c = TestClient(app)
    assert "result" in c.post("/mcp", json=_rpc("openenv/session/create")).json()
    assert registry.live == 1
    _wait_for(lambda: registry.live == 0, "reaped the idle session without another request")
    registry.close_all()


# Finding 3: WebSockets counted towards --max-connections but only HTTP connections were closed to make room.
def test_websockets_leave_room_for_health(sample_index):
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    from sim_web.serve.conn import ConnectionLimits, uvicorn_config

    limits = ConnectionLimits(max_connections=8)
    app = create_app(str(sample_index), openenv_limits=OpenEnvLimits(max_sessions=16))  # 12 per client: room
    with running(app, uvicorn_config(app, "127.0.0.1", 0, limits)) as url:
        opened, refused = 0, 0
        with contextlib.ExitStack() as sockets:
            for _ in range(limits.max_connections + 2):
                try:
                    sockets.enter_context(connect(url.replace("http", "ws") + "/ws", open_timeout=60))
                except InvalidStatus as e:
                    assert e.response.status_code == 503
                    refused += 1
                else:
                    opened += 1
            assert refused >= 2 and opened >= 1  # sockets hold part of the cap, never all of it
            for _ in range(3):  # fresh connections each time: room is kept, not found by luck
                with httpx.Client() as h:
                    assert h.get(f"{url}/health").status_code == 200
            assert opened == limits.websocket_cap


# Finding 4: X-Forwarded-For from a loopback peer (uvicorn trusts 127.0.0.1 by default) named any client.
def test_forwarded_for_names_the_client_only_behind_a_trusted_proxy():
    from sim_web.serve.conn import ConnectionLimits, uvicorn_config

    async def echo(scope, receive, send):
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": client_key(scope).encode()})

    forged = {"X-Forwarded-For": "203.0.113.7"}
    with running(echo, uvicorn_config(echo, "127.0.0.1", 0, ConnectionLimits())) as url:
        assert httpx.get(url, headers=forged).text == "loopback"  # the header of an untrusted peer is ignored
    with running(echo, uvicorn_config(echo, "127.0.0.1", 0, ConnectionLimits(), trusted_proxies="127.0.0.1")) as url:
        assert httpx.get(url, headers=forged).text == "203.0.113.7"
    # any loopback source address is one client; an IPv4 address mapped into IPv6 is that address
    assert client_key({"client": ("127.0.0.9", 1)}) == client_key({"client": ("::1", 2)}) == "loopback"
    assert client_key({"client": ("::ffff:10.1.2.3", 1)}) == "10.1.2.3"


# Finding 5: every OpenEnv call ran as client "" in the tool pool.
def test_openenv_calls_run_under_their_callers_client_key(sample_index, monkeypatch):
    seen: list[str] = []
    pool_run = ToolPool.run

    async def recording_run(self, fn, *args, client=""):
        seen.append(client)
        return await pool_run(self, fn, *args, client=client)

    monkeypatch.setattr(ToolPool, "run", recording_run)
    c = TestClient(create_app(str(sample_index)), client=A)
    call = _rpc("tools/call", name="search", arguments={"query": ["Danube"]})
    assert c.post("/mcp", json=call).json()["result"]["isError"] is False
    with c.websocket_connect("/ws") as ws:
        ws.send_json({"type": "reset", "data": {"seed": 0}})
        assert ws.receive_json()["type"] == "observation"
        ws.send_json({"type": "mcp", "data": call})
        assert ws.receive_json()["data"]["result"]["isError"] is False
    assert len(seen) >= 4 and set(seen) == {A[0]}


# Finding 7: a refused handshake went through the tool threads; replies were serialised on the event loop.
def test_refused_handshakes_skip_the_tool_threads_and_replies_are_encoded_off_the_loop(sample_index, monkeypatch):
    import sim_web.serve.openenv.routes as routes

    calls: list[str] = []
    pool_run = ToolPool.run

    async def counting_run(self, fn, *args, client=""):
        calls.append(getattr(fn, "__name__", "?"))
        return await pool_run(self, fn, *args, client=client)

    monkeypatch.setattr(ToolPool, "run", counting_run)
    app = create_app(str(sample_index), openenv_limits=OpenEnvLimits(max_sessions=1))
    recorded = _Recording()
    monkeypatch.setattr(routes, "json", recorded)
    c = TestClient(app)
    with c.websocket_connect("/ws") as held:
        held.send_json({"type": "reset", "data": {"seed": 0}})
        assert held.receive_json()["type"] == "observation"
        before = len(calls)
        for _ in range(20):
            with c.websocket_connect("/ws") as ws:
                assert ws.receive_json()["data"]["code"] == "CAPACITY_REACHED"
        assert len(calls) == before  # refused on the loop: no thread hop, no env built
    observations = [name for name, kind in recorded.dumps_threads if kind == "observation"]
    assert observations and all(name.startswith(THREAD_PREFIX) for name in observations)


# Finding 8: a JSON-RPC id that is a lone surrogate or NaN answered 500.
@pytest.mark.parametrize("raw_id", ['"\\ud800"', "NaN", "Infinity", '{"a": 1}'])
def test_an_unencodable_json_rpc_id_is_a_json_rpc_error(sample_index, raw_id):
    c = TestClient(create_app(str(sample_index)), raise_server_exceptions=False)
    body = '{"jsonrpc": "2.0", "id": ' + raw_id + ', "method": "ping"}'
    r = c.post("/mcp", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 200, r.text
    assert r.json() == {
        "jsonrpc": "2.0",
        "error": {"code": -32600, "message": r.json()["error"]["message"]},
        "id": None,
    }


# Finding 8: over /ws a lone surrogate in an id, a question or an episode id dropped the socket with no close code.
def test_lone_surrogates_over_the_socket_get_answers_not_a_dropped_socket(sample_index):
    c = TestClient(create_app(str(sample_index)), raise_server_exceptions=False)
    with c.websocket_connect("/ws") as ws:
        ws.send_text('{"type": "reset", "data": {"seed": 0, "episode_id": "ep\\ud800"}}')
        reply = ws.receive_json()
        assert reply["type"] == "error" and "episode_id" in reply["data"]["message"]
        ws.send_text('{"type": "mcp", "data": {"jsonrpc": "2.0", "id": "\\udc80", "method": "ping"}}')
        assert ws.receive_json()["data"]["error"]["code"] == -32600
        task = {"type": "reset", "data": {"options": {"task": {"question": "Where is LONE?", "answer": "x"}}}}
        ws.send_text(json.dumps(task).replace("LONE", "\\udfff"))  # a question: the reset's observation echoes it
        reply = ws.receive_json()
        assert reply["type"] == "observation" and "Where is \ufffd?" in reply["data"]["observation"]["text"]
        ws.send_json({"type": "reset", "data": {"seed": 0}})
        assert ws.receive_json()["type"] == "observation"
        turn = '<tool_call>\n{"name": "search", "arguments": {"query": ["Danube LONE"]}}\n</tool_call>'
        ws.send_text(json.dumps({"type": "step", "data": {"message": turn}}).replace("LONE", "\\ud800"))
        reply = ws.receive_json()
        assert reply["type"] == "observation" and "\ud800" not in json.dumps(reply, ensure_ascii=False)
        ws.send_text('{"type": "state", "request_id": "r\\ud800"}')
        assert ws.receive_json()["type"] == "state"  # the echoed id made valid (U+FFFD), the socket alive


# Also: a raw client could not tell which reply was whose.
def test_a_request_id_is_echoed_in_the_reply(sample_index):
    c = TestClient(create_app(str(sample_index)))
    with c.websocket_connect("/ws") as ws:
        ws.send_json({"type": "reset", "data": {"seed": 0}, "request_id": "r-1"})
        assert ws.receive_json()["request_id"] == "r-1"
        ws.send_json({"type": "state", "request_id": 7})
        reply = ws.receive_json()
        assert reply["type"] == "state" and reply["request_id"] == 7
        ws.send_json({"type": "nope", "request_id": "r-3"})
        assert ws.receive_json()["request_id"] == "r-3"
        ws.send_json({"type": "state", "request_id": ["not", "an", "id"]})
        assert ws.receive_json()["data"]["code"] == "VALIDATION_ERROR"
        ws.send_json({"type": "state"})
        assert "request_id" not in ws.receive_json()  # OpenEnv's clients send none and get none


# Also: /metadata, /schema, /docs and /openapi.json answered without the token.
def test_the_env_description_and_the_api_docs_are_behind_the_token(sample_index):
    app = create_app(str(sample_index), token=TOKEN, enable_python=True, python_runner=lambda code: "")
    c = TestClient(app)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    for path in ("/metadata", "/schema", "/openapi.json", "/docs"):
        assert c.get(path).status_code == 401, path
        assert c.get(path, headers=auth).status_code == 200, path
    assert "PythonInterpreter" in c.get("/metadata", headers=auth).text
    assert "/retrieve" in c.get("/openapi.json", headers=auth).json()["paths"]
    assert c.get("/redoc").status_code == 404
    assert c.get("/health").json()["status"] == "healthy"
    open_app = TestClient(create_app(str(sample_index)))  # loopback without a token: the docs stay open
    assert open_app.get("/openapi.json").status_code == 200 and open_app.get("/metadata").status_code == 200
