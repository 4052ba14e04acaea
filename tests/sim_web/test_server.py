"""The HTTP tool server: endpoints, validation, and the remote backend against a real uvicorn process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest
from fastapi.testclient import TestClient

from sim_web.protocol.actions import Action
from sim_web.protocol.errors import BackendError
from sim_web.executor import ExecutorConfig, ToolExecutor
from sim_web.backends.remote import RemoteBackend
from sim_web.serve.http import create_app
from sim_web.backends.sim import SimBackend
from sim_web.tools import Toolbox
from wiki_index.index import WikiIndex


@pytest.fixture(scope="module")
def client(sample_index):
    return TestClient(create_app(str(sample_index)), raise_server_exceptions=False)


@pytest.fixture(scope="module")
def local_toolbox(sample_index):
    return Toolbox(ToolExecutor([SimBackend(WikiIndex.from_dir(sample_index))]))


def test_health_tools_and_openapi(client, sample_index):
    h = client.get("/health").json()
    assert h["status"] == "ok" and h["pages"] > 10_000 and len(h["content_sha256"]) == 64
    names = [t["function"]["name"] for t in client.get("/tools").json()]
    assert names == ["search", "visit", "PythonInterpreter", "google_scholar"]
    spec = client.get("/openapi.json").json()
    assert {"/health", "/tools", "/tools/{name}", "/backend/search", "/backend/visit"} <= set(spec["paths"])


def test_tool_text_is_byte_identical_to_the_env_toolbox(client, local_toolbox):
    for name, args in [("search", {"query": ["Danube river", "Alps"]}), ("google_scholar", {"query": "algebra"}),
                       ("visit", {"url": ["https://en.wikipedia.org/wiki/Danube"], "goal": "length of the river"})]:
        r = client.post(f"/tools/{name}", json={"arguments": args})
        assert r.status_code == 200
        assert r.json()["result"] == local_toolbox.call(Action(kind="tool_call", tool=name, arguments=args))
    r = client.post("/tools/PythonInterpreter", json={"code": "print(sum(range(10)))"})
    assert r.status_code == 200 and "45" in r.json()["result"]


def test_bad_requests_get_clear_4xx(client):
    cases = [
        (client.post("/tools/search", content=b"{not json", headers={"Content-Type": "application/json"}), 422, "json"),
        (client.post("/tools/search", json={"arguments": {}}), 422, "query"),
        (client.post("/tools/search", json={"arguments": {"query": 5}}), 422, "query"),
        (client.post("/tools/search", json={"arguments": {"query": ["x"]}, "extra": 1}), 422, "extra"),
        (client.post("/tools/nope", json={"arguments": {}}), 404, "available"),
        (client.post("/backend/search", json={"query": ""}), 422, "query"),
        (client.post("/backend/search", json={"query": "x", "k": 0}), 422, "k"),
        (client.post("/backend/visit", json={"goal": "g"}), 422, "url"),
        (client.post("/backend/visit", json=[1, 2]), 422, ""),
        (client.get("/tools/search"), 405, ""),
    ]
    for r, status, word in cases:
        assert r.status_code == status, (r.status_code, r.text)
        assert word.lower() in r.text.lower()
    assert client.get("/health").status_code == 200  # still serving


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(sample_index):
    import httpx

    port = _free_port()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "sim_web.cli", "serve", "--index", str(sample_index), "--port", str(port),
                             "--workers", "2"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 120
    while time.time() < deadline:
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.3)
    yield url
    proc.terminate()
    proc.wait(timeout=30)


def test_remote_backend_matches_the_local_one(server, sample_index, local_toolbox):
    remote = Toolbox(ToolExecutor([RemoteBackend(server)]))
    for name, args in [("search", {"query": ["theory of relativity"]}), ("google_scholar", {"query": ["number theory"]}),
                       ("visit", {"url": ["https://en.m.wikipedia.org/wiki/albert_Einstein#Life"], "goal": "birth"}),
                       ("visit", {"url": ["https://example.com/x"], "goal": "g"})]:
        a = Action(kind="tool_call", tool=name, arguments=args)
        assert remote.call(a) == local_toolbox.call(a)  # replicas and local agree byte for byte


def test_remote_errors_are_classified_and_fall_back(server, sample_index):
    dead = RemoteBackend(f"http://127.0.0.1:{_free_port()}", timeout_s=2)
    with pytest.raises(BackendError) as e:
        dead.search("x")
    assert e.value.retryable and "unreachable" in str(e.value)
    bad = RemoteBackend(server)
    with pytest.raises(BackendError) as e:
        bad._post("/backend/search", {"query": ""})
    assert not e.value.retryable and "422" in str(e.value)
    dead.name = "dead"
    ex = ToolExecutor([dead, SimBackend(WikiIndex.from_dir(sample_index))], ExecutorConfig(max_retries=1, backoff_base_s=0.01, jitter_s=0))
    assert ex.search("Danube", 3) and ex.stats.snapshot()["fallbacks"] == 1 and ex.stats.snapshot()["retries"] == 1
