"""The HTTP tool server: endpoints, validation, and the remote backend against a real uvicorn process."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from fastapi.testclient import TestClient
from live_server import running

from sim_web.backends.remote import RemoteBackend
from sim_web.backends.sim import SimBackend
from sim_web.executor import ExecutorConfig, ToolExecutor
from sim_web.protocol.actions import Action
from sim_web.protocol.errors import BackendError
from sim_web.serve.http import create_app
from sim_web.tools import Toolbox
from wiki_index.search.index import WikiIndex


@pytest.fixture(scope="module")
def client(sample_index):
    return TestClient(create_app(str(sample_index), enable_python=True), raise_server_exceptions=False)


@pytest.fixture(scope="module")
def default_client(sample_index):
    return TestClient(create_app(str(sample_index)), raise_server_exceptions=False)


@pytest.fixture(scope="module")
def local_toolbox(sample_index):
    return Toolbox(ToolExecutor([SimBackend(WikiIndex.from_dir(sample_index))]))


def test_health_tools_and_openapi(client, sample_index):
    h = client.get("/health").json()
    assert h["status"] == "healthy" and h["pages"] > 10_000 and len(h["content_sha256"]) == 64
    names = [t["function"]["name"] for t in client.get("/tools").json()]
    assert names == ["search", "visit", "PythonInterpreter", "google_scholar"]
    spec = client.get("/openapi.json").json()
    assert {"/health", "/tools", "/tools/{name}", "/backend/search", "/backend/visit"} <= set(spec["paths"])


def test_tool_text_is_byte_identical_to_the_env_toolbox(client, local_toolbox):
    for name, args in [
        ("search", {"query": ["Danube river", "Alps"]}),
        ("google_scholar", {"query": "algebra"}),
        ("visit", {"url": ["https://en.wikipedia.org/wiki/Danube"], "goal": "length of the river"}),
    ]:
        r = client.post(f"/tools/{name}", json={"arguments": args})
        assert r.status_code == 200
        assert r.json()["result"] == local_toolbox.call(Action(kind="tool_call", tool=name, arguments=args))


@pytest.mark.needs_sandbox
def test_python_runs_through_the_server(client):
    r = client.post("/tools/PythonInterpreter", json={"code": "print(sum(range(10)))"})
    assert r.status_code == 200 and "45" in r.json()["result"]


#: Agent mistakes in a tool call: (tool, arguments, code). The env answers each with an ``Error: ...`` observation.
AGENT_MISTAKES = [
    ("search", {}, None),  # no query
    ("search", {"queries": ["Danube"]}, None),  # a misspelt argument: 'query' is missing
    ("search", {"query": 5}, None),
    ("search", {"query": []}, None),
    ("search", {"query": ["Danube", "   "]}, None),
    ("search", {"query": [f"q{i}" for i in range(11)]}, None),  # over the 10 queries of one call
    ("search", {"query": ["word " * 300]}, None),  # a query over 1,024 characters
    ("google_scholar", {"query": {"topic": "algebra"}}, None),
    ("visit", {"url": ["https://en.wikipedia.org/wiki/Danube"]}, None),  # no goal
    ("visit", {"url": [], "goal": "length"}, None),
    ("visit", {"url": "https://en.wikipedia.org/wiki/Danube", "goal": 5}, None),
    ("visit", {"url": ["https://en.wikipedia.org/wiki/Danube"], "goal": "why " * 300}, None),  # a goal over 1,000
    ("PythonInterpreter", {}, None),  # no code
    ("PythonInterpreter", {}, "   "),  # blank code
]


def _env_observation(env, tool: str, arguments: dict, code: str | None) -> str:
    """What the env prints for one assistant turn that makes this tool call."""
    body = json.dumps({"name": tool, "arguments": arguments})
    block = "" if code is None else f"\n<code>\n{code}\n</code>"
    env.reset(seed=0)
    obs, _reward, _term, _trunc, info = env.step(f"<tool_call>\n{body}{block}\n</tool_call>")
    assert sum(info["errors"].values()) == 1, obs  # the env counted it as an agent mistake
    return obs


@pytest.mark.parametrize("fast_routes", [True, False])
def test_agent_mistakes_get_the_env_observation_byte_for_byte(sample_index, fast_routes):
    from sim_web.env import EnvConfig, WebResearchEnv
    from sim_web.protocol.formatting import format_tool_response

    env = WebResearchEnv(EnvConfig(index_dir=str(sample_index)))
    served = TestClient(
        create_app(str(sample_index), enable_python=True, fast_routes=fast_routes), raise_server_exceptions=False
    )
    try:
        for tool, arguments, code in AGENT_MISTAKES:
            r = served.post(f"/tools/{tool}", json={"arguments": arguments, **({} if code is None else {"code": code})})
            assert r.status_code == 200, (tool, arguments, r.text)
            assert set(r.json()) == {"result"} and r.json()["result"].startswith("Error: "), r.text
            assert format_tool_response(r.json()["result"]) == _env_observation(env, tool, arguments, code), (
                tool,
                arguments,
            )
    finally:
        env.close()


@pytest.mark.parametrize("fast_routes", [True, False])
def test_only_malformed_http_is_a_4xx_on_the_tool_route(sample_index, fast_routes):
    c = TestClient(create_app(str(sample_index), fast_routes=fast_routes), raise_server_exceptions=False)
    json_body = {"Content-Type": "application/json"}
    cases = [
        (b"{not json", 422),
        (b'{"arguments": ["Danube"]}', 422),
        (b'{"arguments": "Danube"}', 422),
        (b'{"arguments": null}', 422),
        (b"[1, 2]", 422),
        (b'{"arguments": {}, "extra": 1}', 422),
        (b'{"arguments": {}, "code": 5}', 422),
    ]
    for raw, status in cases:
        r = c.post("/tools/search", content=raw, headers=json_body)
        assert r.status_code == status and "detail" in r.json(), (raw, r.text)
    for path in ("/tools/nope", "/tools/Search", "/tools/PythonInterpreter"):  # not a served tool (Python is off)
        r = c.post(path, json={"arguments": {}})
        assert r.status_code == 404 and "available" in r.json()["detail"], (path, r.text)


def test_bad_requests_get_clear_4xx(client):
    cases = [
        (client.post("/tools/search", content=b"{not json", headers={"Content-Type": "application/json"}), 422, "json"),
        (client.post("/tools/search", json={"arguments": ["x"]}), 422, "arguments"),
        (client.post("/tools/search", json={"arguments": {"query": ["x"]}, "code": 5}), 422, "code"),
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
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sim_web.cli",
            "serve",
            "--index",
            str(sample_index),
            "--port",
            str(port),
            "--workers",
            "2",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
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
    for name, args in [
        ("search", {"query": ["theory of relativity"]}),
        ("google_scholar", {"query": ["number theory"]}),
        ("visit", {"url": ["https://en.m.wikipedia.org/wiki/albert_Einstein#Life"], "goal": "birth"}),
        ("visit", {"url": ["https://example.com/x"], "goal": "g"}),
    ]:
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
    ex = ToolExecutor(
        [dead, SimBackend(WikiIndex.from_dir(sample_index))],
        ExecutorConfig(max_retries=1, backoff_base_s=0.01, jitter_s=0),
    )
    assert ex.search("Danube", 3) and ex.stats.snapshot()["fallbacks"] == 1 and ex.stats.snapshot()["retries"] == 1


def test_python_is_off_over_http_unless_enabled(default_client):
    names = [t["function"]["name"] for t in default_client.get("/tools").json()]
    assert names == ["search", "visit", "google_scholar"]
    r = default_client.post("/tools/PythonInterpreter", json={"code": "print(open('/etc/passwd').read())"})
    assert r.status_code == 404 and "root:" not in r.text and "PythonInterpreter" not in r.json()["detail"]
    assert default_client.get("/health").json()["tools"] == names


def test_bearer_token_guards_every_tool_and_backend_route(sample_index):
    token = f"tok-{uuid.uuid4().hex}"
    c = TestClient(create_app(str(sample_index), token=token), raise_server_exceptions=False)
    routes = [
        ("get", "/tools", None),
        ("post", "/tools/search", {"arguments": {"query": ["Danube"]}}),
        ("post", "/backend/search", {"query": "Danube"}),
        ("post", "/backend/scholar", {"query": "Danube"}),
        ("post", "/backend/visit", {"url": "https://en.wikipedia.org/wiki/Danube"}),
    ]
    for method, path, body in routes:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": token}):
            r = (
                getattr(c, method)(path, json=body, headers=headers)
                if body
                else getattr(c, method)(path, headers=headers)
            )
            assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer", (path, headers)
            assert token not in r.text
        ok = (
            getattr(c, method)(path, json=body, headers={"Authorization": f"Bearer {token}"})
            if body
            else getattr(c, method)(path, headers={"Authorization": f"Bearer {token}"})
        )
        assert ok.status_code == 200, (path, ok.text)
    assert c.get("/health").status_code == 200  # the health check stays open for load balancers


def test_non_loopback_bind_needs_a_token(monkeypatch, capsys):
    from sim_web.cli import main
    from sim_web.serve.guards import check_exposure, is_loopback
    from simweb_core.errors import ConfigError

    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost") and is_loopback("127.8.0.1")
    assert not is_loopback("0.0.0.0") and not is_loopback("::") and not is_loopback("10.0.0.5")
    assert not is_loopback("example.com")
    with pytest.raises(ConfigError, match="SIM_WEB_SERVER_TOKEN"):
        check_exposure("0.0.0.0", None)
    check_exposure("0.0.0.0", "secret")  # a token makes it acceptable
    check_exposure("127.0.0.1", None)
    monkeypatch.delenv("SIM_WEB_SERVER_TOKEN", raising=False)
    assert main(["serve", "--host", "0.0.0.0", "--port", "1"]) == 2  # refused before binding anything
    err = capsys.readouterr().err
    assert "refusing to serve" in err and "--token" in err


def test_a_negative_warm_up_is_refused_with_the_expected_value(capsys):
    from sim_web.cli import main

    assert main(["serve", "--warm-searches", "-1", "--port", "1"]) == 2
    assert "warm_searches must be >= 0 (0: no warm-up), got -1" in capsys.readouterr().err


def test_health_answers_while_every_tool_thread_is_busy(sample_index):
    release, lock, running_now, peak = threading.Event(), threading.Lock(), [0], [0]

    def sleeping_python(code: str) -> str:  # stands for 60 sandboxed programs that sleep
        with lock:
            running_now[0] += 1
            peak[0] = max(peak[0], running_now[0])
        release.wait(120)
        with lock:
            running_now[0] -= 1
        return "stdout:\nslept\n"

    app = create_app(
        str(sample_index), enable_python=True, tool_threads=15, max_in_progress=60, python_runner=sleeping_python
    )
    with running(app) as url, ThreadPoolExecutor(60) as clients:
        calls = [
            clients.submit(
                httpx.post, f"{url}/tools/PythonInterpreter", json={"code": "import time; time.sleep(60)"}, timeout=300
            )
            for _ in range(60)
        ]
        try:
            deadline = time.monotonic() + 120
            while (h := httpx.get(f"{url}/health", timeout=30)).json()["tool_calls_in_progress"] < 60:
                assert time.monotonic() < deadline, h.json()
                time.sleep(0.05)
            assert h.status_code == 200
            assert not any(c.done() for c in calls)  # /health answered while all 60 calls were still running
            assert peak[0] == 15  # the tools ran on the bounded pool
            extra = httpx.post(f"{url}/tools/PythonInterpreter", json={"code": "print(1)"}, timeout=30)
            assert extra.status_code == 503 and extra.headers["retry-after"] == "1"  # 60 in progress: no more queued
        finally:
            release.set()
        assert [c.result().json()["result"] for c in calls] == ["stdout:\nslept\n"] * 60


def test_body_limit_and_4xx_never_echo_the_input(sample_index, client):
    marker = uuid.uuid4().hex
    small = TestClient(create_app(str(sample_index), max_body_bytes=1024), raise_server_exceptions=False)
    r = small.post("/tools/search", json={"arguments": {"query": [marker * 100]}})
    assert r.status_code == 413 and marker not in r.text and "1024" in r.json()["detail"]
    assert small.post("/tools/search", json={"arguments": {"query": ["Danube"]}}).status_code == 200
    big = client.post(
        "/tools/search",
        content=b'{"arguments": {}, "junk": "' + marker.encode() * 70_000 + b'"}',
        headers={"Content-Type": "application/json"},
    )
    assert big.status_code == 413 and marker not in big.text and len(big.content) < 300  # 2.2 MB over 1 MiB
    for body in (
        {"arguments": {"query": ["x"]}, marker: marker * 100},
        {"arguments": marker * 100},
        {"arguments": {"query": ["x"]}, "code": [marker]},
    ):
        r = client.post("/tools/search", json=body)
        assert r.status_code == 422 and marker not in r.text and len(r.content) < 1000, r.text
    for path, body in (
        ("/backend/search", {"query": marker * 100}),
        ("/backend/visit", {"url": 5, "goal": marker}),
        ("/backend/search", {"query": "x", "k": marker}),
    ):
        r = client.post(path, json=body)
        assert r.status_code == 422 and marker not in r.text, r.text
    r = client.post(f"/tools/{marker}", json={"arguments": {}})
    assert r.status_code == 404 and marker not in r.text


def test_streamed_body_over_the_limit_is_cut_off(sample_index):
    app = create_app(str(sample_index), max_body_bytes=4096)

    def chunks():
        yield b'{"arguments": {"query": ["'
        for _ in range(100):
            yield b"x" * 1024
        yield b'"]}}'

    with running(app) as url:
        r = httpx.post(
            f"{url}/tools/search", content=chunks(), headers={"Content-Type": "application/json"}, timeout=60
        )
        assert r.status_code == 413 and "4096" in r.text
        assert httpx.get(f"{url}/health", timeout=30).status_code == 200


def test_lone_surrogates_and_long_queries_over_http(client):
    json_body = {"Content-Type": "application/json"}
    cases = [
        (
            "/tools/visit",
            b'{"arguments": {"url": ["https://en.wikipedia.org/wiki/Danube\\udc80"], "goal": "g\\udc80"}}',
        ),
        ("/tools/search", b'{"arguments": {"query": ["Danube\\udc80"]}}'),
        ("/backend/search", b'{"query": "Danube\\udc80"}'),
        ("/backend/visit", b'{"url": "https://en.wikipedia.org/wiki/Danube\\udc80", "goal": "g\\ud800"}'),
    ]
    for path, raw in cases:  # \udc80 JSON escapes: a lone surrogate once parsed
        r = client.post(path, content=raw, headers=json_body)
        assert r.status_code == 200, (path, r.status_code, r.text[:300])
        r.content.decode("utf-8")  # strict: valid UTF-8
        assert "Timeout" not in r.text
    long = " ".join(f"term{i}" for i in range(1100))
    r = client.post("/tools/search", json={"arguments": {"query": [long]}})  # an agent mistake: the env's text
    assert r.status_code == 200 and r.json()["result"].startswith("Error: ") and "the limit is 1024" in r.text


def test_remote_backend_sends_the_bearer_token(sample_index):
    token = f"tok-{uuid.uuid4().hex}"
    client = TestClient(create_app(str(sample_index), token=token), raise_server_exceptions=False)
    with pytest.raises(BackendError, match="needs its bearer token") as e:
        RemoteBackend("http://testserver", client=client).search("Paris")
    assert not e.value.retryable and token not in str(e.value)
    results = RemoteBackend("http://testserver", token=token, client=client).search("Paris")
    assert results and results[0].link.startswith("https://en.wikipedia.org/wiki/")
