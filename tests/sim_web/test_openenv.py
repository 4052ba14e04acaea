"""WebResearch-v0 over OpenEnv, checked with OpenEnv's own clients and validator (the ``openenv`` extra).

A live server on a free loopback port; ``GenericEnvClient`` plays the same episode as ``gym.make`` and every
observation, reward, end and turn count is compared byte for byte; ``MCPToolClient`` lists and calls the tools in
both of its modes; ``openenv validate`` checks the running server and the manifest; the guards are tried one by one.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import httpx
import pytest
from live_server import running, wait_for

pytest.importorskip("openenv.core", reason="the openenv extra is not installed: pip install -e '.[openenv]'")

from openenv.core.generic_client import GenericEnvClient  # noqa: E402
from openenv.core.mcp_client import MCPToolClient  # noqa: E402

from sim_web.env import EnvConfig  # noqa: E402
from sim_web.serve.http import create_app  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OPENENV_CLI = str(Path(sys.executable).parent / "openenv")
SERVED_TOOLS = ("search", "visit", "google_scholar")  # PythonInterpreter is off unless the server enables it
ACTIONS = [
    '<think>look it up</think>\n<tool_call>{"name": "search", "arguments": {"query": ["Paris", "France"]}}</tool_call>',
    '<tool_call>{"name": "visit", "arguments": {"url": ["https://en.wikipedia.org/wiki/Paris"], "goal": "size"}}'
    "</tool_call>",
    '<tool_call>{"name": "search", "arguments": {"query": "not a list"}</tool_call>',  # an agent mistake
    '<tool_call>{"name": "PythonInterpreter", "arguments": {}}\n<code>\nprint(1)\n</code>\n</tool_call>',  # off
    "<answer>Paris</answer>",
]


@pytest.fixture(scope="module")
def server(sample_index):
    app = create_app(str(sample_index))
    with running(app) as url:
        yield url, app.state.openenv_sessions


def _gym_episode(sample_index, seed: int) -> list[tuple[bytes, float | None, bool, int, list]]:
    env = gym.make("WebResearch-v0", config=EnvConfig(index_dir=str(sample_index), tools=SERVED_TOOLS))
    obs, info = env.reset(seed=seed)
    steps = [(obs.encode(), None, False, info["turn"], info["messages"])]
    for action in ACTIONS:
        obs, reward, terminated, truncated, info = env.step(action)
        steps.append((obs.encode(), reward, terminated or truncated, info["turn"], info["messages"]))
    env.close()
    return steps


def _openenv_episode(url: str, seed: int) -> list[tuple[bytes, float | None, bool, int, list]]:
    with GenericEnvClient(base_url=url).sync() as env:
        result = env.reset(seed=seed, episode_id=f"ep-{seed}")
        state = env.state()
        assert state["episode_id"] == f"ep-{seed}"
        steps = [(result.observation["text"].encode(), result.reward, result.done, state["step_count"])]
        steps[0] += (result.metadata["messages"],)
        for action in ACTIONS:
            result = env.step({"message": action})
            turn = env.state()["step_count"]
            steps.append(
                (result.observation["text"].encode(), result.reward, result.done, turn, result.metadata["messages"])
            )
    return steps


@pytest.mark.parametrize("seed", [0, 7])
def test_an_openenv_episode_is_the_gym_episode_byte_for_byte(server, sample_index, seed):
    url, _ = server
    over_openenv, over_gym = _openenv_episode(url, seed), _gym_episode(sample_index, seed)
    assert over_openenv == over_gym
    texts = [s[0].decode() for s in over_gym]
    assert "wikipedia.org/wiki/" in texts[1] and "Error:" in texts[3] and "Error:" in texts[4]  # the episode is real
    assert over_gym[-1][2] is True and over_gym[-1][3] == len(ACTIONS)


def test_mcp_tool_client_lists_and_calls_the_tools(server):
    """OpenEnv 0.10's MCPToolClient is production-mode only: tools over HTTP /mcp in a session of its own."""
    url, registry = server
    wait_for(lambda: registry.live == 0, "closed the sessions of earlier tests' sockets")  # they detach after the test
    live_before = registry.live

    async def play() -> tuple[list[str], str]:
        async with MCPToolClient(base_url=url) as env:
            names = [t.name for t in await env.list_tools()]
            text = await env.call_tool("search", query=["Eiffel Tower"])
            assert registry.live == live_before + 1  # openenv/session/create
            with pytest.raises(RuntimeError, match="unknown tool"):  # a failed call is visible as failed
                await env.call_tool("PythonInterpreter", code="print(1)")
            return names, text

    names, text = asyncio.run(play())
    assert names == list(SERVED_TOOLS)
    assert text.startswith("A Google search for 'Eiffel Tower' found") and "(https://en.wikipedia.org/wiki/" in text
    assert "Eiffel" in text.split("## Web Results", 1)[1]  # passages from the index, not an error text
    # openenv/session/close closed it: at once, or (when the client's socket is still attached) when the socket goes
    wait_for(lambda: registry.live == live_before, "closed the MCP session")


def test_mcp_tool_client_steps_an_episode_on_its_session(server):
    """Its socket attaches to the HTTP session (/ws?session_id=...): a CallToolAction step is an env turn."""
    from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation

    url, registry = server
    wait_for(lambda: registry.live == 0, "closed the sessions of earlier tests' sockets")  # they detach after the test
    live_before = registry.live

    async def play() -> tuple[object, int, float | None, bool]:
        async with MCPToolClient(base_url=url) as env:
            assert (await env.reset(seed=3)).observation.text
            step = await env.step(CallToolAction(tool_name="search", arguments={"query": ["Eiffel Tower"]}))
            turns = (await env.state()).step_count
            done = await env.step(CallToolAction(tool_name="visit", arguments={"url": ["Eiffel Tower"]}))
            return step.observation, turns, done.reward, done.done

    observation, turns, reward, done = asyncio.run(play())
    assert isinstance(observation, CallToolObservation) and observation.tool_name == "search"
    assert observation.result.startswith("<tool_response>\nA Google search for 'Eiffel Tower' found")
    assert turns == 1 and reward == 0.0 and done is False
    wait_for(lambda: registry.live == live_before, "closed the MCP session")  # after its socket let go


def test_mcp_json_rpc_answers_errors_as_json_rpc(server):
    url, _ = server
    empty = httpx.post(f"{url}/mcp", json={})
    assert empty.status_code == 200 and empty.json()["error"]["code"] == -32600
    unknown = httpx.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                             "params": {"name": "PythonInterpreter", "arguments": {"code": "1"}}})  # fmt: skip
    assert unknown.json()["error"]["code"] == -32602 and "available" in unknown.json()["error"]["message"]
    listed = httpx.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).json()
    assert [t["name"] for t in listed["result"]["tools"]] == list(SERVED_TOOLS)
    assert listed["result"]["tools"][0]["inputSchema"]["required"] == ["query"]


def test_openenv_validate_passes_on_the_running_server_and_the_manifest(server):
    url, _ = server
    running_check = subprocess.run([OPENENV_CLI, "validate", "--url", url, "--json"], capture_output=True, text=True)
    report = json.loads(running_check.stdout)
    assert running_check.returncode == 0 and report["passed"], report
    assert report["mode"] == "production" and {c["id"] for c in report["criteria"]} >= {
        "health_endpoint", "metadata_endpoint", "schema_endpoint", "mcp_endpoint", "mode_endpoint_consistency"
    }  # fmt: skip
    static = subprocess.run(
        [OPENENV_CLI, "validate", str(ROOT / "deploy" / "openenv"), "--level", "static", "--skip-build", "--json"],
        capture_output=True,
        text=True,
    )
    assert static.returncode == 0, static.stdout + static.stderr
    assert json.loads(static.stdout)["verdict"] == "pass"


def test_the_manifest_declares_the_served_tools_and_the_reward_range(server):
    import yaml

    url, _ = server
    manifest = yaml.safe_load((ROOT / "deploy" / "openenv" / "openenv.yaml").read_text(encoding="utf-8"))
    declared = manifest["validation"]["capabilities"]["declared_tools"]
    assert declared == httpx.get(f"{url}/metadata").json()["tools"] == list(SERVED_TOOLS)
    assert manifest["validation"]["reward"]["range"] == [0.0, 1.0]
    dockerfile = (ROOT / "deploy" / "openenv" / "Dockerfile").read_text(encoding="utf-8")
    assert f"docker build -f deploy/openenv/Dockerfile -t {manifest['image']} ." in dockerfile  # the image it names


def test_the_compatibility_table_names_what_the_tests_run():
    import re
    from importlib.metadata import version

    doc = (ROOT / "docs" / "tools-and-wire-format.md").read_text(encoding="utf-8")
    table = doc.split("<!-- checked: tests/sim_web/test_openenv.py", 1)[1].split("\n\n", 1)[0]
    rows = [r for r in table.splitlines()[3:] if r.startswith("|")]
    tests = "".join(p.read_text(encoding="utf-8") for p in Path(__file__).parent.glob("test_openenv*.py"))
    assert len(rows) >= 5
    for row in rows:
        name = row.rstrip(" |").rsplit("`", 2)[-2]
        assert f"def {name}(" in tests, f"the docs name a test that does not exist: {name}"
        for package, claimed in re.findall(r"\b(openenv|trl) (\d+\.\d+(?:\.\d+)?)", row):
            assert version(package).startswith(claimed), f"docs say {package} {claimed}, tested {version(package)}"
