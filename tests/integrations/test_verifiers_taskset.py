"""The sim-web-tasks package (integrations/verifiers) run by verifiers' own ``vf-eval`` (issue 58, part 2).

verifiers 0.4 pins ``mcp==2.0.0`` and sim-web's ``openenv`` extra needs ``mcp<2``, so verifiers gets a venv of its
own (:mod:`tests.integrations.vf_venv`: made by ``make install``, else here on first use).

A scripted OpenAI-compatible endpoint plays the model with native tool calls: it searches once with the question,
then answers. It answers every task right but the last, so the rewards must come back 1, ..., 1, 0, keyed by the
sim-web task ids; the tool results it is sent must be the index's search results. Run twice: with the package's own
MCP tool server over the index, and with ``tools.url`` pointing at a token-protected ``sim-web serve`` (the token
in the URL, as HTTP Basic auth). verifiers' own MCP client is also driven against that server with a wrong token.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from sim_web.env import resolve_tasks
from sim_web.serve.http import create_app
from tests.integrations.scripted_model import ScriptedModel
from tests.integrations.vf_venv import ensure_venv
from tests.sim_web.live_server import running
from wiki_index.search.index import WikiIndex

ROOT = Path(__file__).resolve().parents[2]
PINS = ("verifiers==0.4.0", "uv==0.13.8")
TOKEN = "verifiers-taskset-token"
N_TASKS = 3


@pytest.fixture(scope="module")
def vf_python() -> Path:
    """The verifiers venv's interpreter (:func:`tests.integrations.vf_venv.ensure_venv`)."""
    return ensure_venv()


@pytest.fixture(scope="module")
def tasks(sample_index):
    """The first :data:`N_TASKS` tasks of the sample's default task set (what ``-n`` selects, in load order)."""
    return resolve_tasks(WikiIndex.from_dir(str(sample_index)), "default", None)[:N_TASKS]


def _policy(tasks):
    """Search with the question, then answer: right for every task but the last."""
    answers = {t.question: t.answer for t in tasks}
    answers[tasks[-1].question] = "certainly not " + tasks[-1].answer

    def policy(body: dict) -> dict:
        messages = body["messages"]
        question = next(m["content"] for m in messages if m["role"] == "user")
        if not any(m["role"] == "tool" for m in messages):
            search = next(t["function"]["name"] for t in body["tools"] if t["function"]["name"].endswith("search"))
            return {"tool_calls": [{"name": search, "arguments": json.dumps({"query": [question]})}]}
        return {"content": f"Found it. <answer>{answers[question]}</answer>"}

    return policy


def _vf_eval(vf_python: Path, model: ScriptedModel, out: Path, sample_index, *extra: str) -> list[dict]:
    bin_dir = vf_python.parent
    env = {**os.environ, "SCRIPTED_KEY": "unused", "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    cmd = [str(bin_dir / "vf-eval"), "sim-web-tasks", "-m", "scripted", "-n", str(N_TASKS), "-r", "1", "-c", "3"]
    cmd += ["--env.agent.harness.id", "null", "--env.agent.runtime.type", "subprocess", "--env.agent.max-turns", "4"]
    cmd += ["--client.base-url", model.base_url, "--client.api-key-var", "SCRIPTED_KEY", "--push", "False"]
    cmd += ["--no-rich", "-o", str(out), "--env.taskset.index-dir", str(sample_index), *extra]
    run = subprocess.run(cmd, env=env, cwd=out.parent, capture_output=True, text=True, timeout=540)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    (traces,) = out.glob("*/traces.jsonl")
    return [json.loads(line) for line in traces.read_text().splitlines() if line.strip()]


def _check(rollouts: list[dict], tasks, model: ScriptedModel) -> None:
    scored = {r["task"]["key"]: r["traces"][0] for r in rollouts}
    assert set(scored) == {t.id for t in tasks}
    for task in tasks:
        trace, right = scored[task.id], task is not tasks[-1]
        assert trace["ok"] and not trace["errors"], trace["errors"]
        assert trace["rewards"]["exact_match"]["score"] == (1.0 if right else 0.0)
        assert trace["metrics"]["tool_calls"] == 1.0 and trace["metrics"]["turns"] == 2.0
        assert (trace["metrics"]["f1"] == 1.0) is right
    results = [m["content"] for body in model.requests for m in body["messages"] if m["role"] == "tool"]
    assert len(results) == N_TASKS and all("https://en.wikipedia.org/wiki/" in str(r) for r in results)


def test_vf_eval_runs_the_taskset_with_its_own_tool_server(vf_python, tasks, sample_index, tmp_path):
    model = ScriptedModel(_policy(tasks))
    try:
        _check(_vf_eval(vf_python, model, tmp_path / "out", sample_index), tasks, model)
    finally:
        model.close()
    first = model.requests[0]
    assert first["messages"][0]["role"] == "system" and "<answer>" in first["messages"][0]["content"]
    assert {t["function"]["name"] for t in first["tools"]} == {"web_search", "web_visit"}


#: One interpreter for every probe of verifiers' own code (importing verifiers costs seconds of CPU): its
#: ``parse_action`` of a raw turn, then its MCP client with the right token, then with the wrong one.
_PROBES = """
import asyncio, json, sys, traceback
from verifiers.v1.harnesses.utils.mcp import mcp_client
from verifiers.v1.tasksets.openenv.taskset import parse_action
right, wrong, turn, schema = sys.argv[1:5]
print(json.dumps(parse_action(turn, json.loads(schema))), flush=True)
async def tools(url):
    async with mcp_client({"url": url, "timeout": 60}) as c:
        return sorted(t.name for t in (await c.list_tools()).tools)
print(json.dumps(asyncio.run(tools(right))), flush=True)
print("--- the wrong token", file=sys.stderr, flush=True)
try:
    asyncio.run(tools(wrong))
except BaseException:
    traceback.print_exc()
    print(json.dumps("REFUSED"))
"""
TURN = '<think>look it up</think>\n<tool_call>{"name": "search", "arguments": {"query": ["Danube"]}}</tool_call>'


@pytest.fixture(scope="module")
def token_server(sample_index):
    """A token-protected ``sim-web serve``'s URL, the token in its user info (HTTP Basic auth)."""
    with running(create_app(str(sample_index), token=TOKEN)) as url:
        yield url.replace("http://", f"http://trainer:{TOKEN}@")


@pytest.fixture(scope="module")
def probes(vf_python, token_server):
    """What :data:`_PROBES` printed (one JSON value a line) and its stderr from the wrong token on."""
    import httpx

    schema = httpx.get(token_server + "/schema").json()["action"]
    mcp = token_server + "/mcp"
    args = [mcp, mcp.replace(TOKEN, "n0t-the-secret"), TURN, json.dumps(schema)]
    run = subprocess.run([str(vf_python), "-c", _PROBES, *args], capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-2000:]
    return [json.loads(line) for line in run.stdout.splitlines() if line.strip()], run.stderr


def test_vf_eval_runs_the_taskset_against_a_token_protected_server(
    vf_python, tasks, sample_index, tmp_path, token_server, probes
):
    model = ScriptedModel(_policy(tasks))
    mcp = token_server + "/mcp"
    try:
        _check(_vf_eval(vf_python, model, tmp_path / "out", sample_index, "--env.taskset.tools.url", mcp), tasks, model)
    finally:
        model.close()
    (_action, tools, refusal), stderr = probes
    assert "search" in tools  # verifiers' own MCP client, the token in the URL
    refused = stderr.split("--- the wrong token")[-1]  # mcp reports the 401 as "Server returned an error response"
    assert refusal == "REFUSED" and "MCPError" in refused and TOKEN not in refused, refused[-2000:]


def test_verifiers_openenv_taskset_takes_a_raw_tongyi_turn_as_the_action(probes, sample_index):
    """verifiers' built-in ``openenv`` taskset wraps a reply that is not JSON into the action's one required field
    (``parse_action``): sim-web's ``/schema`` marks ``message``, so a raw Tongyi turn becomes a step the env plays.
    The system prompt it would otherwise miss is the first message of the reset's ``metadata["messages"]``
    (docs/verifiers.md: pass it with ``--env.taskset.system-prompt``)."""
    from fastapi.testclient import TestClient

    (action, _tools, _refusal), _stderr = probes
    assert action == {"message": TURN}
    client = TestClient(create_app(str(sample_index)))
    with client.websocket_connect("/ws") as ws:
        ws.send_json({"type": "reset", "data": {"seed": 0}})
        reset = ws.receive_json()["data"]
        system = reset["metadata"]["messages"][0]
        assert system["role"] == "system" and "<tool_call>" in system["content"]
        ws.send_json({"type": "step", "data": action})
        step = ws.receive_json()["data"]
        assert "A Google search for 'Danube' found" in step["observation"]["text"]
