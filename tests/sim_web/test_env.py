import json
import re
import subprocess
import sys
import warnings

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import sim_web
from sim_web.env import EnvConfig, RewardConfig, Task, WebResearchEnv
from simweb_core.errors import ConfigError


def call(name: str, **arguments) -> str:
    return f"<think>step</think>\n<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


@pytest.fixture(scope="module")
def env(sample_index):
    return gym.make("WebResearch-v0", config=EnvConfig(index_dir=str(sample_index), max_turns=8))


@pytest.mark.parametrize("env_id", sim_web.ENV_IDS)
@pytest.mark.parametrize("render_mode", [None, "ansi"])
def test_check_env_passes_without_warnings(env_id, render_mode, sample_index):
    e = gym.make(env_id, config=EnvConfig(index_dir=str(sample_index)), render_mode=render_mode)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        check_env(e.unwrapped)  # the render check included: it warns when no render_fps is declared
    assert not [str(w.message) for w in seen]


@pytest.mark.parametrize("env_id", sim_web.ENV_IDS)
def test_both_registration_paths(env_id, sample_index):
    e = gym.make(f"sim_web:{env_id}", config=EnvConfig(index_dir=str(sample_index)))
    assert isinstance(e.unwrapped, WebResearchEnv)


def test_reset_draws_task_with_seed_and_builds_the_chat(env):
    q1, info1 = env.reset(seed=11)
    q2, info2 = env.reset(seed=11)
    assert q1 == q2 and info1 == info2
    msgs = info1["messages"]
    assert [m["role"] for m in msgs] == ["system", "user"] and msgs[1]["content"] == q1
    assert "<tools>" in msgs[0]["content"] and "2025-01-01" in msgs[0]["content"]
    seen = {env.reset(seed=s)[1]["task_id"] for s in range(20)}
    assert len(seen) > 5  # different seeds draw different tasks


def test_full_episode_search_visit_answer(env):
    task = env.unwrapped.tasks[3]
    q, _ = env.reset(options={"task": task})
    obs, r, term, trunc, info = env.step(call("search", query=[task.question.split('"')[1]]))
    assert obs.startswith("<tool_response>\n") and obs.endswith("\n</tool_response>")
    assert "## Web Results" in obs and "https://en.wikipedia.org/wiki/" in obs
    assert (r, term, trunc) == (0.0, False, False) and info["tool_calls"] == {"search": 1}
    url = (
        "https://en.m.wikipedia.org/wiki/"
        + task.answer.replace(" ", "_").lower()[:1]
        + task.answer.replace(" ", "_")[1:]
    )
    obs, *_ = env.step(call("visit", url=url, goal="what is it"))
    assert "Evidence in page:" in obs and "could not be accessed" not in obs
    obs, r, term, trunc, info = env.step(f"<think>done</think><answer>{task.answer}</answer>")
    assert term and not trunc and r == 1.0 and info["em"] == 1.0
    assert [m["role"] for m in info["messages"]] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    with pytest.raises(gym.error.ResetNeeded):
        env.step("<answer>x</answer>")


def test_call_cost_scales_the_answer_reward_by_the_episode_tool_calls(sample_index):
    cfg = EnvConfig(index_dir=str(sample_index), reward=RewardConfig(call_cost=0.1))
    e = WebResearchEnv(cfg)
    task = e.tasks[3]
    for searches, want in ((0, 1.0), (1, 0.9), (3, 0.7)):
        e.reset(options={"task": task})
        for _ in range(searches):
            e.step(call("search", query=["history"]))
        *_, r, term, _, info = e.step(f"<answer>{task.answer}</answer>")
        assert term and r == pytest.approx(want) and info["em"] == 1.0  # em, what evals count, is untouched
    e.close()


def test_free_calls_oracle_leaves_the_task_s_oracle_searches_uncharged(sample_index):
    cfg = EnvConfig(index_dir=str(sample_index), reward=RewardConfig(call_cost=0.1, free_calls="oracle"))
    e = WebResearchEnv(cfg)
    task = Task("t", "Capital of France?", "Paris", (), {"difficulty": {"oracle_searches": 2}})
    for searches, want in ((1, 1.0), (2, 1.0), (3, 0.9)):
        e.reset(options={"task": task})
        for _ in range(searches):
            e.step(call("search", query=["Paris"]))
        assert e.step("<answer>Paris</answer>")[1] == pytest.approx(want)
    with pytest.raises(ConfigError, match="difficulty.oracle_searches"):
        e.reset(options={"task": Task("u", "Capital of France?", "Paris")})  # at reset, before any work is spent
    e.close()


def test_call_penalty_charges_a_wrong_answer_s_extra_searches_too(sample_index):
    cfg = EnvConfig(index_dir=str(sample_index), reward=RewardConfig(call_penalty=0.2, free_calls="oracle"))
    e = WebResearchEnv(cfg)
    task = Task("t", "Capital of France?", "Paris", (), {"difficulty": {"oracle_searches": 1}})
    for searches, answer, want in ((1, "Lyon", 0.0), (2, "Lyon", -0.2), (3, "Paris", 0.6)):
        e.reset(options={"task": task})
        for _ in range(searches):
            e.step(call("search", query=["Paris"]))
        *_, r, term, _, info = e.step(f"<answer>{answer}</answer>")
        assert term and r == pytest.approx(want) and info["em"] == float(answer == "Paris")
    e.close()


def test_subgoal_credit_pays_a_wrong_answer_whose_searches_named_the_bridge(sample_index):
    cfg = EnvConfig(index_dir=str(sample_index), reward=RewardConfig(subgoal_credit=0.25))
    e = WebResearchEnv(cfg)
    clues = [{"entity": "France"}, {"entity": "Paris"}]
    task = Task(
        "t", "Which city is the capital of the country whose language is French?", "Paris", (), {"clues": clues}
    )
    assert task.subgoals == ("France",)
    for queries, answer, want in (
        ([["French language"], ["capital of France"]], "Lyon", 0.25),  # found the bridge, answered wrong
        ([["French language"], ["capital of Belgium"]], "Brussels", 0.0),  # never named it
        ([["capital of France"]], "Paris", 1.0),  # right: unchanged
    ):
        e.reset(options={"task": task})
        for q in queries:
            e.step(call("search", query=q))
        *_, r, term, _, info = e.step(f"<answer>{answer}</answer>")
        assert term and r == pytest.approx(want) and info["em"] == float(answer == "Paris")
    e.reset(options={"task": task})
    e.step(call("search", query=["capital of France"]))
    e.reset(options={"task": task})  # a new episode forgets the last one's calls
    assert e.step("<answer>Lyon</answer>")[1] == 0.0
    e.close()


def test_agent_mistakes_become_observations_and_counts(env):
    env.reset(seed=1)
    cases = [
        ("I think the answer is Paris", "no_action"),
        ('<tool_call>{"name": "search", "arguments": </tool_call>', "bad_json"),
        (call("fly", to="moon"), "unknown_tool"),
        (call("search"), "missing_argument"),
        (call("visit", url=["https://example.com/x"], goal=3), "bad_argument"),
    ]
    for action, kind in cases:
        obs, r, term, trunc, info = env.step(action)
        assert obs.startswith("<tool_response>\nError") or "Error" in obs, (action, obs)
        assert info["errors"].get(kind, 0) >= 1, (kind, info["errors"])
        assert not term
    assert info["error_count"] == len(cases)


def test_unknown_page_and_disabled_tool(sample_index):
    e = gym.make("WebResearch-v0", config=EnvConfig(index_dir=str(sample_index), tools=("search", "visit")))
    e.reset(seed=0)
    obs, *_ = e.step(call("visit", url=["https://en.wikipedia.org/wiki/No_such_page_zzz"], goal="x"))
    assert "The provided webpage content could not be accessed." in obs
    obs, _, _, _, info = e.step(call("google_scholar", query=["x"]))
    assert (
        "Tool google_scholar not found. Available tools: search, visit." in obs and info["errors"]["unknown_tool"] == 1
    )
    for bad in ("PythonInterpreter", "nonsense", "Python"):  # every unknown-tool error names exactly the enabled subset
        obs, _, _, _, info = e.step(call(bad))
        assert obs.endswith("Available tools: search, visit.\n</tool_response>"), obs
    assert "google_scholar" not in info["messages"][0]["content"]


def test_compact_prompt_and_fewer_search_results(sample_index):
    e = gym.make(
        "WebResearch-v0",
        config=EnvConfig(index_dir=str(sample_index), tools=("search", "visit"), prompt="compact", search_results=3),
    )
    _, info = e.reset(seed=0)
    system = info["messages"][0]["content"]
    assert system.startswith("You are a research assistant.") and "<tools>" not in system
    assert system.endswith("Current date: 2025-01-01") and len(system) < 600
    obs, *_ = e.step(call("search", query=["history", "war"]))
    blocks = obs.split("\n=======\n")
    assert len(blocks) == 2 and all("## Web Results" in b for b in blocks)
    for b in blocks:  # "found {n} results", then items "1. [title](link)" ...
        items = re.findall(r"^\d+\. \[", b, re.M)
        assert 1 <= len(items) <= 3 and f"found {len(items)} results" in b, b


def test_bad_prompt_and_search_results_name_the_fix():
    from simweb_core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"EnvConfig.prompt must be one of \('tongyi', 'compact'\), got 'short'"):
        EnvConfig(prompt="short")
    with pytest.raises(ConfigError, match="search_results must be >= 1"):
        EnvConfig(search_results=0)


def test_truncation_by_turns_and_budget(sample_index):
    e = gym.make("WebResearch-v0", config=EnvConfig(index_dir=str(sample_index), max_turns=2))
    e.reset(seed=0)
    assert e.step(call("search", query="x"))[3] is False
    obs, r, term, trunc, info = e.step(call("search", query="y"))
    assert trunc and not term and r == 0.0 and info["truncated_by"] == "max_turns"
    e = gym.make("WebResearch-v0", config=EnvConfig(index_dir=str(sample_index), max_obs_chars=200))
    e.reset(seed=0)
    obs, r, term, trunc, info = e.step(call("search", query="history"))
    assert trunc and info["truncated_by"] == "max_obs_chars"


def test_custom_tasks_and_options(sample_index, tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(
        json.dumps({"id": "q1", "question": "Capital of France?", "answer": "Paris", "aliases": ["Paris, France"]})
        + "\n"
    )
    e = gym.make("WebResearch-v0", config=EnvConfig(index_dir=str(sample_index), tasks=str(path)))
    q, info = e.reset(seed=0)
    assert q == "Capital of France?" and info["task_id"] == "q1"
    obs, r, term, trunc, info = e.step("<answer>paris, france</answer>")
    assert r == 1.0 and term  # an alias counts
    q, _ = e.reset(options={"task": {"question": "2+2?", "answer": "4"}})
    assert q == "2+2?" and e.step("<answer>4</answer>")[1] == 1.0


def test_vector_env(sample_index):
    cfg = EnvConfig(index_dir=str(sample_index))
    venv = gym.vector.SyncVectorEnv([lambda: gym.make("WebResearch-v0", config=cfg) for _ in range(2)])
    obs, info = venv.reset(seed=[1, 2])
    assert len(obs) == 2 and all(isinstance(o, str) and o for o in obs)
    obs, r, term, trunc, info = venv.step(("<answer>x</answer>", call("search", query="Paris")))
    assert term[0] and not term[1] and "Web Results" in obs[1]


SCRIPT = """
import json, sys, gymnasium as gym, sim_web
from sim_web.env import EnvConfig
env = gym.make("WebResearch-v0", config=EnvConfig(index_dir=sys.argv[1]))
out = []
obs, info = env.reset(seed=5)
out.append([obs, info])
for a in sys.argv[2:]:
    obs, r, te, tr, info = env.step(a)
    info.pop("timings", None)
    out.append([obs, r, te, tr, info])
print(json.dumps(out, sort_keys=True))
"""


def test_determinism_across_processes(sample_index):
    actions = [
        call("search", query=["river in Europe"]),
        call("visit", url="https://en.wikipedia.org/wiki/Danube", goal="length"),
        call("google_scholar", query="ancient philosophy"),
        "<answer>Danube</answer>",
    ]
    runs = [
        subprocess.run(
            [sys.executable, "-c", SCRIPT, str(sample_index), *actions], capture_output=True, text=True, check=True
        ).stdout
        for _ in range(2)
    ]
    assert runs[0] == runs[1] and len(json.loads(runs[0])) == 5


def test_a_derived_question_that_names_its_answer_as_the_reward_reads_it_is_dropped():
    from sim_web.env.tasks import _mask

    assert _mask("The arts are a vast subdivision of culture, composed of many creative arts.", "The arts") is None
    assert (
        _mask("Paris (French pronunciation) is the capital of France.", "Paris")
        == "This subject is the capital of France."
    )
    assert (
        _mask("Art is expressed in artistic works.", "Art") == "This subject is expressed in artistic works."
    )  # whole words
