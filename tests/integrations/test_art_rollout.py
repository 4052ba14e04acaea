"""``examples/art_rollout.py`` against a token-protected ``sim-web serve`` and a scripted model (issue 58, part 4),
and ``POST /score``, the reward it reads.

The scripted model searches once with the question and then answers (right for the first task, wrong for the
second), through the real ``openai`` client: the episode's tool results must be the server's search results and its
rewards the env's scores. The ART types (``art.Trajectory``, ``art.TrajectoryGroup``) are built where
``openpipe-art`` imports: its 0.5.23 wheel needs Python >= 3.12 (``type`` statements in ``art.trajectories``).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from sim_web.env import resolve_tasks, score_answer
from sim_web.serve.http import create_app
from tests.integrations.scripted_model import ScriptedModel
from tests.sim_web.live_server import running
from wiki_index.search.index import WikiIndex

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "art-rollout-token"


def _example():
    spec = importlib.util.spec_from_file_location("art_rollout", ROOT / "examples" / "art_rollout.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["art_rollout"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def setup(sample_index):
    tasks = resolve_tasks(WikiIndex.from_dir(str(sample_index)), "default", None)[:2]
    answers = {tasks[0].question: tasks[0].answer, tasks[1].question: "certainly not " + tasks[1].answer}

    def policy(body: dict) -> dict:
        question = next(m["content"] for m in body["messages"] if m["role"] == "user")
        if not any(m["role"] == "tool" for m in body["messages"]):
            return {"tool_calls": [{"name": "search", "arguments": json.dumps({"query": [question]})}]}
        return {"content": f"<answer>{answers[question]}</answer>"}

    model = ScriptedModel(policy)
    with running(create_app(str(sample_index), token=TOKEN)) as url:
        yield tasks, model, url.replace("http://", f"http://trainer:{TOKEN}@")
    model.close()


def test_the_example_plays_episodes_with_the_servers_tools_and_reward(setup):
    from openai import AsyncOpenAI

    tasks, model, server = setup
    example = _example()
    client = AsyncOpenAI(base_url=model.base_url, api_key="unused", max_retries=0)

    async def play_all() -> list:
        return [await example.play(client, "scripted", server, t.question, t.answer, list(t.aliases)) for t in tasks]

    episodes = asyncio.run(play_all())
    assert [e.reward for e in episodes] == [1.0, 0.0]
    for episode, task in zip(episodes, tasks):
        assert episode.metrics["tool_calls"] == 1.0 and episode.metrics["turns"] == 2.0
        final = example._ANSWER.findall(episode.messages_and_choices[-1].message.content)[0]
        expected = score_answer(final, task.answer, task.aliases)
        assert (episode.metrics["em"], episode.metrics["f1"]) == (expected["em"], expected["f1"])
        tool_result = next(m for m in episode.messages_and_choices if isinstance(m, dict) and m["role"] == "tool")
        assert "https://en.wikipedia.org/wiki/" in tool_result["content"]
        assert [t["function"]["name"] for t in episode.tools] == ["search", "visit", "google_scholar"]


def test_the_example_builds_arts_own_trajectory_groups(setup):
    pytest.importorskip("art", reason="openpipe-art is not installed (its 0.5.23 wheel needs Python >= 3.12)")
    import art
    from openai import AsyncOpenAI

    tasks, model, server = setup
    client = AsyncOpenAI(base_url=model.base_url, api_key="unused", max_retries=0)
    records = [{"id": t.id, "question": t.question, "answer": t.answer, "aliases": list(t.aliases)} for t in tasks]
    found = asyncio.run(_example().groups(client, "scripted", server, records, per_task=2))
    assert all(isinstance(g, art.TrajectoryGroup) for g in found)
    assert [[t.reward for t in g.trajectories] for g in found] == [[1.0, 1.0], [0.0, 0.0]]


def test_score_is_the_envs_scoring_behind_the_token(sample_index):
    c = TestClient(create_app(str(sample_index), token=TOKEN))
    auth = ("trainer", TOKEN)
    body = {"prediction": "the  Black sea", "answer": "Black Sea", "aliases": ["Euxine"]}
    assert c.post("/score", json=body).status_code == 401
    assert c.post("/score", json=body, auth=auth).json() == {"reward": 1.0, "em": 1.0, "f1": 1.0}
    partial = c.post("/score", json={**body, "prediction": "Black", "kind": "f1"}, auth=auth).json()
    assert partial == {"reward": partial["f1"], "em": 0.0, "f1": score_answer("Black", "Black Sea", ["Euxine"])["f1"]}
    assert 0 < partial["f1"] < 1
    alias = {**body, "prediction": "Euxine"}
    assert c.post("/score", json=alias, auth=auth).json()["em"] == 1.0
    assert c.post("/score", json={**alias, "use_aliases": False}, auth=auth).json()["em"] == 0.0
    for bad in ({"prediction": "x"}, {**body, "kind": "judge"}, {**body, "answer": ""}, {**body, "extra": 1}):
        r = c.post("/score", json=bad, auth=auth)
        assert r.status_code == 422, bad


_GROUPS = """
import asyncio, importlib.util, json, sys
import art
from openai import AsyncOpenAI
spec = importlib.util.spec_from_file_location("art_rollout", sys.argv[1])
example = sys.modules["art_rollout"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(example)
base_url, server, records = sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
client = AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0)
groups = asyncio.run(example.groups(client, "scripted", server, records, per_task=2))
print(json.dumps({
    "groups": [type(g).__module__ + "." + type(g).__name__ for g in groups],
    "trajectories": sorted({type(t).__name__ for g in groups for t in g.trajectories}),
    "rewards": [[t.reward for t in g.trajectories] for g in groups],
    "version": art.__version__ if hasattr(art, "__version__") else None,
}))
"""


def test_the_example_builds_arts_own_groups_in_arts_python(setup):
    from tests.integrations.art_venv import ensure_venv

    python = ensure_venv()
    if python is None:
        pytest.skip("no Python >= 3.12 on this machine for openpipe-art 0.5.23 (tests/integrations/art_venv.py)")
    tasks, model, server = setup
    records = [{"id": t.id, "question": t.question, "answer": t.answer, "aliases": list(t.aliases)} for t in tasks]
    run = subprocess.run(
        [
            str(python),
            "-c",
            _GROUPS,
            str(ROOT / "examples" / "art_rollout.py"),
            model.base_url,
            server,
            json.dumps(records),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["groups"] == ["art.trajectories.TrajectoryGroup"] * 2 and out["trajectories"] == ["Trajectory"]
    assert out["rewards"] == [[1.0, 1.0], [0.0, 0.0]]  # the server's /score of the scripted answers
