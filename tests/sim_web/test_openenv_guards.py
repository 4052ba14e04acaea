"""The OpenEnv routes keep the tool server's guards: token, message size, session cap, idle timeout, no leaks.

Clients are OpenEnv's own (``GenericEnvClient``) where the check is about what a user sees, and raw sockets where
a socket must be dropped without a goodbye. The leak check counts live sessions on the server, not time.
"""

from __future__ import annotations

import contextlib
import json
import socket

import httpx
import pytest
from fastapi.testclient import TestClient
from live_server import running, wait_for

pytest.importorskip("openenv.core", reason="the openenv extra is not installed: pip install -e '.[openenv]'")

from openenv.core.generic_client import GenericEnvClient  # noqa: E402
from websockets.exceptions import ConnectionClosed  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

from sim_web.serve.http import create_app  # noqa: E402
from sim_web.serve.openenv import OpenEnvLimits  # noqa: E402
from simweb_core.errors import ConfigError  # noqa: E402

TOKEN = "s3cret-token-for-tests"


def test_the_token_guards_the_socket_and_mcp(sample_index):
    app = create_app(str(sample_index), token=TOKEN)
    with running(app) as url:
        with pytest.raises(ConnectionError):
            GenericEnvClient(base_url=url).sync().reset(seed=0)
        with pytest.raises(ConnectionError):
            GenericEnvClient(base_url=url, headers={"Authorization": "Bearer wrong"}).sync().reset(seed=0)
        with GenericEnvClient(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}).sync() as env:
            assert env.reset(seed=0).observation["text"]
        rpc = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        assert httpx.post(f"{url}/mcp", json=rpc).status_code == 401
        ok = httpx.post(f"{url}/mcp", json=rpc, headers={"Authorization": f"Bearer {TOKEN}"})
        assert ok.status_code == 200 and ok.json()["result"]["tools"]
        assert httpx.get(f"{url}/health").json()["status"] == "healthy"  # open, for load balancers and OpenEnv
    assert app.state.openenv_sessions.live == 0


def test_openenv_clients_authenticate_with_the_token_in_the_url(sample_index):
    """GenericEnvClient (the socket), MCPToolClient (``POST /mcp``) and ``openenv validate --url`` take a URL only:
    its user info is sent as HTTP Basic auth, with the token as the password (issue 58)."""
    import asyncio
    import subprocess
    import sys
    from pathlib import Path

    from openenv.cli._validation import validate_running_environment
    from openenv.core.mcp_client import MCPToolClient

    app = create_app(str(sample_index), token=TOKEN)
    with running(app) as url:
        right, wrong = (url.replace("http://", f"http://trainer:{p}@") for p in (TOKEN, "n0t-the-secret"))
        with GenericEnvClient(base_url=right).sync() as env:
            assert env.reset(seed=0).observation["text"]
        with pytest.raises(ConnectionError, match="403"):
            GenericEnvClient(base_url=wrong).sync().reset(seed=0)

        async def tools(base_url: str) -> list[str]:
            async with MCPToolClient(base_url=base_url) as env:
                return [t.name for t in await env.list_tools()]

        assert "search" in asyncio.run(tools(right))
        with pytest.raises(Exception, match="401"):
            asyncio.run(tools(wrong))
        cli = str(Path(sys.executable).parent / "openenv")  # the command itself once (it takes ~6 s of CPU to start)
        check = subprocess.run([cli, "validate", "--url", right, "--json"], capture_output=True, text=True)
        assert check.returncode == 0 and json.loads(check.stdout)["passed"], check.stdout
        # the wrong token through the report the command prints (its exit status is the report's "passed")
        assert not validate_running_environment(wrong)["passed"] and validate_running_environment(right)["passed"]
    assert app.state.openenv_sessions.live == 0


def test_limits_message_size_sessions_and_idle_time(sample_index):
    limits = OpenEnvLimits(max_sessions=2, max_message_bytes=4096, idle_timeout_s=0.5)
    app = create_app(str(sample_index), openenv_limits=limits)
    registry = app.state.openenv_sessions
    with running(app) as url:
        with GenericEnvClient(base_url=url).sync() as env:
            env.reset(seed=0)
            with pytest.raises(RuntimeError, match="MESSAGE_TOO_LARGE"):
                env.step({"message": "<answer>" + "x" * 5000 + "</answer>"})
        body = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x" * (2 * 1024 * 1024)}}
        assert httpx.post(f"{url}/mcp", json=body).status_code == 413  # the server's body limit

        a, b = GenericEnvClient(base_url=url).sync(), GenericEnvClient(base_url=url).sync()
        a.reset(seed=1), b.reset(seed=2)
        with pytest.raises(RuntimeError, match="CAPACITY_REACHED"):
            GenericEnvClient(base_url=url).sync().reset(seed=3)
        a.close(), b.close()
        wait_for(lambda: registry.live == 0, "closed the two sessions")

        with connect(url.replace("http", "ws") + "/ws") as ws:  # says nothing: closed after idle_timeout_s
            assert '"IDLE_TIMEOUT"' in ws.recv(timeout=60)
        wait_for(lambda: registry.live == 0, "closed the idle session")
    with pytest.raises(ConfigError, match="max_sessions >= 1"):
        OpenEnvLimits(max_sessions=0)


def test_python_is_off_unless_enabled(sample_index):
    app = create_app(str(sample_index))
    with running(app) as url, GenericEnvClient(base_url=url).sync() as env:
        env.reset(seed=0)
        call = {"type": "call_tool", "tool_name": "PythonInterpreter", "arguments": {"code": "print(6 * 7)"}}
        text = env.step(call).observation["text"]
        assert "Error:" in text and "42" not in text
        listed = env.step({"type": "list_tools"}).observation["tools"]
        assert "PythonInterpreter" not in [t["name"] for t in listed]


def test_no_session_leaks_after_300_sessions(sample_index):
    app = create_app(str(sample_index), openenv_limits=OpenEnvLimits(max_sessions=8))
    registry = app.state.openenv_sessions
    client = TestClient(app)  # in-process sockets (no lifespan: the app is served again below)
    for i in range(300):  # closed three ways, 100 each: a way that leaked would fill the 8 slots 12 times over
        with client.websocket_connect("/ws") as ws:
            ws.send_json({"type": "reset", "data": {"seed": i}})
            assert ws.receive_json()["type"] == "observation"
            assert registry.live >= 1
            if i % 3 == 0:
                ws.send_json({"type": "close"})
            elif i % 3 == 1:
                ws.send_json({"type": "step", "data": {"message": "<answer>x</answer>"}})
                assert ws.receive_json()["data"]["done"] is True
            # else: dropped without a word
    assert registry.opened == 300 and registry.live == 0
    with running(app) as url:  # real sockets cut at the TCP level, mid-episode
        host, port = url.removeprefix("http://").split(":")
        for i in range(20):
            with contextlib.suppress(OSError, ConnectionClosed), connect(f"ws://{host}:{port}/ws") as ws:
                ws.send(json.dumps({"type": "reset", "data": {"seed": i}}))
                ws.recv(timeout=60)
                ws.socket.shutdown(socket.SHUT_RDWR)  # no close frame: the server sees the connection drop
        wait_for(lambda: registry.live == 0, "freed the envs of the dropped sockets")
    assert registry.opened == 320
