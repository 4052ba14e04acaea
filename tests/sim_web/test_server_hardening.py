"""Issue 26: the HTTP server cannot be stalled by slow connections, and its error and health answers leak nothing.

The slow-connection tests run ``sim-web serve`` in a subprocess on a free port. Their waits have generous upper
bounds (a bound on waiting, not an assertion on speed); the timeouts under test are configured short.
"""

from __future__ import annotations

import contextlib
import os
import resource
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from sim_web.serve.conn import ConnectionLimits, default_max_connections
from sim_web.serve.http import create_app
from simweb_core.errors import ConfigError

WAIT_S = 120  # upper bound on any wait below
PARTIAL = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: "  # a request whose headers never end


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serving(index, log: Path, *flags: str, open_files: int | None = None) -> Iterator[int]:
    """``sim-web serve`` on a free loopback port (with at most ``open_files`` descriptors); yields the port.

    Its stderr goes to ``log``, a file: a pipe nobody reads would stall the server once it fills.
    """
    port = _free_port()

    def limit() -> None:
        if open_files is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, open_files))

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sim_web.cli",
            "serve",
            "--index",
            str(index),
            "--port",
            str(port),
            "--warm-searches",
            "0",
            *flags,
        ],
        stdout=subprocess.DEVNULL,
        stderr=log.open("wb"),
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=limit,
    )
    try:
        deadline = time.monotonic() + WAIT_S
        while True:
            assert proc.poll() is None, log.read_text(errors="replace")[-2000:]
            assert time.monotonic() < deadline, "the server did not start"
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            time.sleep(0.3)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def _connect(port: int, data: bytes = b"") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT_S)
    sock.sendall(data)
    return sock


def _until_closed(sock: socket.socket, deadline: float) -> bytes:
    """What the server sends before it closes ``sock``; fails if it is still open at ``deadline``."""
    received = b""
    try:
        while True:
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            chunk = sock.recv(65536)
            if not chunk:
                return received
            received += chunk
    except ConnectionResetError:
        return received
    except TimeoutError:
        pytest.fail(f"the server left a stalled connection open; it sent {received[:200]!r}")
    finally:
        sock.close()


def test_slowloris_past_the_descriptor_limit_neither_stalls_health_nor_stays(sample_index, tmp_path):
    # The case: 400 descriptors, 450 connections that never finish their headers. Default limits only.
    log = tmp_path / "serve.log"
    with serving(sample_index, log, open_files=400) as port:
        slow = [_connect(port, PARTIAL) for _ in range(450)]
        try:
            health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=WAIT_S)
            assert health.status_code == 200 and health.json()["status"] == "healthy"
            deadline = time.monotonic() + WAIT_S
            answers = [_until_closed(s, deadline) for s in slow]
        finally:
            for s in slow:
                s.close()
        assert all(a == b"" or a.startswith(b"HTTP/1.1 408 ") for a in answers)
        assert b"" in answers  # over the cap: the oldest waiting connections were closed
        assert any(a.startswith(b"HTTP/1.1 408 ") and b"not received in full within 20 s" in a for a in answers)
        assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=WAIT_S).status_code == 200
    assert "out of system resource" not in log.read_text(errors="replace")  # no accept ran out of descriptors


def test_header_deadline_keep_alive_and_cap_are_set_from_the_command_line(sample_index, tmp_path):
    flags = ("--workers", "2", "--header-timeout", "3", "--keep-alive", "60", "--max-connections", "4")
    with serving(sample_index, tmp_path / "serve.log", *flags) as port:
        idle, half_line = _connect(port), _connect(port, b"GET /hea")
        slow_body = _connect(
            port,
            b"POST /tools/search HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b'Content-Length: 100\r\n\r\n{"arguments": ',
        )  # 14 of 100 bytes, then nothing
        kept, first = _connect(port, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"), b""
        while b'"status":"healthy"' not in first:
            chunk = kept.recv(65536)
            assert chunk, first
            first += chunk
        kept.sendall(b"GET /health HTTP/1.1\r\nHost")  # the next request on a kept-alive connection, cut short
        deadline = time.monotonic() + WAIT_S
        assert _until_closed(idle, deadline) == b""  # never sent a byte: closed without an answer
        late = _until_closed(half_line, deadline)
        assert late.startswith(b"HTTP/1.1 408 ") and late.endswith(b"request not received in full within 3 s")
        assert _until_closed(kept, deadline).startswith(b"HTTP/1.1 408 ")
        assert _until_closed(slow_body, deadline).startswith(b"HTTP/1.1 408 ")
        slow = [_connect(port, PARTIAL) for _ in range(12)]  # more than the two workers' 2 x 4 connections
        assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=WAIT_S).status_code == 200
        answers = [_until_closed(s, time.monotonic() + WAIT_S) for s in slow]
        assert b"" in answers and all(a == b"" or a.startswith(b"HTTP/1.1 408 ") for a in answers)


def test_at_the_cap_with_every_request_being_answered_a_new_connection_gets_503():
    import asyncio
    import threading

    import uvicorn

    from sim_web.serve.conn import uvicorn_config

    entered, release = [], threading.Event()

    async def busy(scope, receive, send):  # answers once released
        entered.append(scope["path"])
        while not release.is_set():
            await asyncio.sleep(0.01)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    server = uvicorn.Server(uvicorn_config(busy, "127.0.0.1", 0, ConnectionLimits(max_connections=2), lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + WAIT_S
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        calls = [_connect(port, b"GET /slow HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n") for _ in range(2)]
        while len(entered) < 2:
            assert time.monotonic() < deadline, entered
            time.sleep(0.01)
        refused = _until_closed(_connect(port), deadline)
        assert refused.startswith(b"HTTP/1.1 503 ") and b"retry-after: 1" in refused and b"retry later" in refused
        release.set()
        assert all(_until_closed(c, deadline).startswith(b"HTTP/1.1 200 ") for c in calls)
    finally:
        release.set()
        server.should_exit = True
        thread.join(timeout=WAIT_S)


def test_connection_limits_are_checked(capsys):
    from sim_web.cli import main

    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    assert default_max_connections() == max(8, soft // 4) or soft == resource.RLIM_INFINITY
    assert ConnectionLimits().max_connections == default_max_connections()
    for bad in ({"header_timeout_s": 0}, {"keep_alive_s": 0}, {"max_connections": 0}):
        with pytest.raises(ConfigError, match="max_connections >= 1"):
            ConnectionLimits(**bad)
    for flag, value in (
        ("--header-timeout", "0"),
        ("--header-timeout", "nan"),
        ("--max-connections", "0"),
        ("--keep-alive", "-5"),
    ):
        assert main(["serve", flag, value, "--port", "1"]) == 2  # refused before binding anything
        err = capsys.readouterr().err
        assert "connection limits need header_timeout_s > 0, keep_alive_s >= 1 and max_connections >= 1" in err, err


@pytest.mark.parametrize("fast_routes", [True, False])
def test_agent_mistakes_are_the_env_text_and_4xx_never_echo_the_input(sample_index, fast_routes):
    marker = f"SECRET-ECHO-MARKER-{uuid.uuid4().hex}"
    client = TestClient(create_app(str(sample_index), fast_routes=fast_routes), raise_server_exceptions=False)
    cases = [
        ("search", {"query": {marker: 1}}, "'query' must be a non-empty list of strings, got a dict ("),
        ("search", {"query": ["ok", {marker: [marker]}]}, "item a dict ("),
        ("search", {"query": ["ok", "   "]}, "item a str ('   ') is not a non-empty string"),
        ("google_scholar", {"query": [1, marker]}, "item a int (1) is not"),
        ("visit", {"url": {marker: 1}, "goal": "g"}, "'url' must be a non-empty list of strings, got a dict ("),
        (
            "visit",
            {"url": ["https://en.wikipedia.org/wiki/Danube"], "goal": [marker]},
            "'goal' must be a string, got a list (",
        ),
    ]
    for tool, arguments, expected in cases:  # 200: the env's text, which shows the model what it sent
        r = client.post(f"/tools/{tool}", json={"arguments": arguments})
        assert r.status_code == 200 and r.json()["result"].startswith("Error: ") and expected in r.json()["result"], (
            r.text
        )
    for path, body in (
        ("/backend/search", {"query": {marker: 1}}),
        ("/backend/visit", {"url": [marker], "goal": marker}),
        ("/tools/search", {"arguments": [marker]}),
        ("/tools/search", {"arguments": {}, marker: marker}),
        ("/backend/search", {"queries": ["ok", {marker: 1}]}),
        ("/retrieve", {"queries": [marker, 5]}),
    ):
        r = client.post(path, json=body)
        assert r.status_code == 422 and marker not in r.text, r.text


def test_a_message_that_would_still_echo_the_request_is_replaced():
    from sim_web.protocol.errors import ActionError
    from sim_web.serve.guards import action_detail

    marker = f"SECRET-ECHO-MARKER-{uuid.uuid4().hex}"
    detail = action_detail(ActionError("bad_argument", f"search: no good: {marker!r}"), {"query": [marker]})
    assert marker not in detail and detail.startswith("bad_argument: ") and "GET /tools" in detail
    kept = action_detail(ActionError("bad_argument", "search: 'query' must be a non-empty list"), {"query": 5})
    assert kept == "bad_argument: search: 'query' must be a non-empty list"


def test_health_shows_paths_and_tools_only_with_the_token(sample_index):
    token = f"tok-{uuid.uuid4().hex}"
    client = TestClient(create_app(str(sample_index), token=token), raise_server_exceptions=False)
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        r = client.get("/health", headers=headers)
        assert r.status_code == 200 and set(r.json()) == {"status", "pages", "content_sha256"}, r.text
        assert str(sample_index) not in r.text and "/" not in r.text
    full = client.get("/health", headers={"Authorization": f"Bearer {token}"}).json()
    assert full["index"] == str(sample_index) and full["tools"] == ["search", "visit", "google_scholar"]
    assert full["pages"] > 10_000 and "tool_calls_in_progress" in full
    open_server = TestClient(create_app(str(sample_index)), raise_server_exceptions=False)  # loopback, no token
    assert open_server.get("/health").json()["index"] == str(sample_index)
