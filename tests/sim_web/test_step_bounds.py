"""One env step is bounded in work whatever the action: linear parsing, a visit goal cap, a per-turn call cap."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from fastapi.testclient import TestClient

from sim_web.env import EnvConfig, WebResearchEnv
from sim_web.protocol.actions import DEFAULT_MAX_CALLS, parse_action
from sim_web.protocol.arguments import MAX_GOAL_CHARS
from sim_web.protocol.errors import ActionError
from sim_web.serve.http import create_app


def call(name: str, **arguments) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def _executed(info: dict) -> int:
    """Backend calls the executor made in this episode (searches, visits, scholar lookups)."""
    return sum(t["calls"] for t in info["tool_stats"]["tools"].values())


@pytest.fixture(scope="module")
def env(sample_index):
    e = WebResearchEnv(EnvConfig(index_dir=str(sample_index), allow_multiple_calls=True, max_turns=50))
    yield e
    e.close()


def test_fenced_bodies_still_parse_like_before():
    fenced = '<tool_call>\n```json\n{"name": "search", "arguments": {"query": ["x"]}}\n```\n</tool_call>'
    assert parse_action(fenced).arguments == {"query": ["x"]}
    code = '<tool_call>\n{"name": "PythonInterpreter", "arguments": {}}\n<code>\n```python\nprint(1)\n```\n</code>\n</tool_call>'
    assert parse_action(code).code == "print(1)"
    with pytest.raises(ActionError) as e:
        parse_action("<tool_call>\n```" + "a" * 1000 + "\n</tool_call>")
    assert e.value.kind == "bad_json"


def test_adversarial_fences_parse_in_linear_time():
    """A fence then ~50k word characters, in the body and in <code>: the old whole-body regex took ~17 s for one such
    action. Six of them must parse within a CPU-time limit (not wall time, so a busy machine does not matter) that
    quadratic parsing overshoots many times."""
    script = textwrap.dedent("""
        import resource
        from sim_web.protocol.actions import parse_action
        from sim_web.protocol.errors import ActionError
        resource.setrlimit(resource.RLIMIT_CPU, (20, 20))
        n = 49_000
        actions = ["<tool_call>```" + "a" * n + "</tool_call>", "<tool_call>\\n```json\\n" + "a" * n + "\\n</tool_call>",
                   '<tool_call>{"name": "PythonInterpreter", "arguments": {}}<code>```' + "b" * n + "</code></tool_call>",
                   "<tool_call>```" + "-" * n + "```x</tool_call>", "<tool_call>```" + "a" * n + "\\n```\\n</tool_call>",
                   "<tool_call>``` " + "\\t" * n + "</tool_call>"]
        kinds = []
        for a in actions:
            try:
                kinds.append(parse_action(a).kind)
            except ActionError as e:
                kinds.append(e.kind)
        print(",".join(kinds))
    """)
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, check=False)
    assert res.returncode == 0, f"parsing ran out of its CPU budget (exit {res.returncode}): {res.stderr[-500:]}"
    assert res.stdout.strip().split(",") == ["bad_json", "bad_json", "tool_call", "bad_json", "bad_json", "bad_json"]


def test_a_huge_visit_goal_is_a_counted_error_and_reads_no_page(env):
    env.reset(seed=0)
    url = "https://en.wikipedia.org/wiki/Paris"
    obs, *_, info = env.step(call("visit", url=[url] * 10, goal="population history " * 2_400))
    assert f"the limit is {MAX_GOAL_CHARS}" in obs and "45600 characters" in obs
    assert info["errors"] == {"bad_argument": 1} and _executed(info) == 0
    obs, *_, info = env.step(call("visit", url=[url], goal="population " * 90))  # 990 characters: allowed
    assert "Evidence in page" in obs or "could not be accessed" in obs
    assert info["errors"] == {"bad_argument": 1} and _executed(info) == 1


def test_too_many_calls_in_one_turn_is_one_counted_error_and_runs_nothing(env):
    env.reset(seed=0)
    turn = "\n".join(call("search", query=[f"q{i}"]) for i in range(600))
    obs, *_, info = env.step(turn)
    assert f"You made 600 tool calls in one turn; the limit is {DEFAULT_MAX_CALLS}" in obs
    assert info["errors"] == {"multiple_calls": 1} and _executed(info) == 0 and info["tool_calls"] == {}
    obs, *_, info = env.step("\n".join(call("search", query=[f"q{i}"]) for i in range(DEFAULT_MAX_CALLS)))
    assert obs.count("<tool_response>") == DEFAULT_MAX_CALLS and info["tool_calls"] == {"search": DEFAULT_MAX_CALLS}


def test_the_call_cap_is_configurable_and_validated(sample_index):
    with pytest.raises(Exception, match="max_calls_per_turn must be >= 1"):
        EnvConfig(index_dir=str(sample_index), max_calls_per_turn=0)
    with pytest.raises(ActionError, match="the limit is 2"):
        parse_action(call("search", query=["a"]) * 3, allow_multiple=True, max_calls=2)


def test_the_server_bounds_the_goal_on_both_visit_routes(sample_index):
    client = TestClient(create_app(str(sample_index)), raise_server_exceptions=False)
    long_goal = "x " * MAX_GOAL_CHARS
    r = client.post(
        "/tools/visit", json={"arguments": {"url": ["https://en.wikipedia.org/wiki/Paris"], "goal": long_goal}}
    )
    assert f"the limit is {MAX_GOAL_CHARS}" in r.text
    r = client.post("/backend/visit", json={"url": "https://en.wikipedia.org/wiki/Paris", "goal": long_goal})
    assert r.status_code == 422
    r = client.post("/backend/visit", json={"url": "https://en.wikipedia.org/wiki/Paris", "goal": "population"})
    assert r.status_code == 200 and r.json()["ok"]


def test_each_step_says_how_it_read_the_turn_and_what_it_counted(env):
    """info["action"], step_tool_calls and step_errors: the env's verdict, parsed once with its own settings."""
    from sim_web.env import read_action

    _, info = env.reset(seed=0)
    assert (info["action"], info["step_tool_calls"], info["step_errors"]) == (None, {}, {})
    totals_calls, totals_errors = {}, {}
    turns = [
        "no action here",
        call("search", query=["a"]) + "\n" + call("visit", url=["https://en.wikipedia.org/wiki/Paris"], goal="g"),
        call("search", query=[]),  # parses; running it is a bad_argument
        "<answer>Paris</answer>",
    ]
    want = [
        ({"kind": "invalid", "tools": [], "calls": 0, "error": "no_action"}, {}, {"no_action": 1}),
        ({"kind": "tool_call", "tools": ["search", "visit"], "calls": 2, "error": None}, {"search": 1, "visit": 1}, {}),
        (
            {"kind": "tool_call", "tools": ["search"], "calls": 1, "error": "bad_argument"},
            {"search": 1},
            {"bad_argument": 1},
        ),
        ({"kind": "answer", "tools": [], "calls": 0, "error": None, "answer": "Paris"}, {}, {}),
    ]
    for turn, (action, calls, errors) in zip(turns, want):
        *_, info = env.step(turn)
        assert {k: info["action"][k] for k in action} == action
        assert (info["step_tool_calls"], info["step_errors"]) == (calls, errors)
        for total, step in ((totals_calls, calls), (totals_errors, errors)):
            for k, v in step.items():
                total[k] = total.get(k, 0) + v
        assert (info["tool_calls"], info["errors"]) == (totals_calls, totals_errors)  # the totals are the steps' sums
        parsed = read_action(turn, env.config)  # the same reading without a step (a run's own mistakes aside)
        assert parsed["kind"] == action["kind"] and parsed["tools"] == action["tools"]
    assert read_action(turns[1])["kind"] == "invalid"  # the default settings allow one call per turn
