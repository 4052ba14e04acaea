"""One scripted episode played by ``sim-web eval``'s loop and by the GRPO rollout counts the same (agents.turn)."""

import json

import pytest

from agents.config import AgentConfig
from agents.episode import Episode
from agents.loop import ReactAgent, run_episode
from agents.metrics import aggregate
from agents.turn import TurnCounts, observation_error
from sim_web.protocol import NO_PYTHON_TOOLS, TOOL_NAMES
from sim_web.tools.python.sandbox import sandbox_problem
from tests.agents.conftest import CountingPolicy
from wiki_index.types import title_to_url

SANDBOX = sandbox_problem() is None
TOOLS = TOOL_NAMES if SANDBOX else NO_PYTHON_TOOLS


def _call(name: str, code: str | None = None, **arguments) -> str:
    body = f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n"
    return body + (f"<code>\n{code}\n</code>\n" if code is not None else "") + "</tool_call>"


def script(task) -> tuple[list[str], TurnCounts]:
    """The assistant turns of the episode and what they must count to."""
    sentence = task.question.split('"')[1]
    turns = [
        "<think>no action here</think>",  # a format error
        _call("search", query=[sentence]),  # a good search
        _call("search", query=[]),  # a bad tool call: the env's bad_argument
        _call("visit", url=["https://en.wikipedia.org/wiki/No_such_page_xyz"], goal="g"),  # an unreachable page
    ]
    if SANDBOX:  # a PythonInterpreter run the sandbox stops (its time limit)
        turns.append(_call("PythonInterpreter", code="import time\ntime.sleep(60)"))
    turns += [
        _call("visit", url=[title_to_url(task.answer)], goal="the subject"),
        f"<think>found</think>\n<answer>{task.answer}</answer>",
    ]
    failed = 3 if SANDBOX else 2
    return turns, TurnCounts(turns=len(turns), tool_calls=len(turns) - 2, tool_errors=failed, format_errors=1)


def test_python_errors_are_classified():
    assert observation_error("<tool_response>\n[Python Interpreter Error]: RuntimeError: x") == "python_error"
    assert (
        observation_error("<tool_response>\n[PythonInterpreter Error] TimeoutError: Execution timed out.")
        == "python_error"
    )
    assert (
        observation_error("<tool_response>\nstderr:\nTraceback ...") is None
    )  # the program ran; its error is its output


def test_eval_loop_and_grpo_rollout_count_one_episode_the_same(sample_index, test_tasks, monkeypatch):
    pytest.importorskip("torch")
    pytest.importorskip("trl")
    from types import SimpleNamespace

    from sim_web.env import EnvConfig, WebResearchEnv
    from sim_web.tools import toolbox
    from sim_web.tools.python.sandbox import PythonConfig, run_python
    from training.grpo import rollout as R
    from training.grpo.tiny import tiny_model
    from training.wire import tokenize

    task = test_tasks[0]
    turns, want = script(task)
    env_config = EnvConfig(index_dir=str(sample_index), tools=TOOLS, max_turns=50)
    # the sandbox stops the sleep at a 1 s wall-clock limit, not the default 10 s: the same stopped run, 18 s sooner
    monkeypatch.setattr(toolbox, "_default_python_runner", lambda code: run_python(code, PythonConfig(timeout_s=1)))

    replies = iter(turns)
    played = run_episode(
        ReactAgent(CountingPolicy(lambda m: next(replies)), AgentConfig(force_on=())),
        WebResearchEnv(env_config, tasks=test_tasks),
        task,
    )

    _, tok = tiny_model(["search visit answer <tool_call> PythonInterpreter"])
    replies = iter(turns)

    def scripted(trainer, contexts, max_new, seed, batch_size=16, **_):
        return [((ids := tokenize(tok, next(replies)) + [tok.eos_token_id]), [-0.5] * len(ids), True) for _ in contexts]

    monkeypatch.setattr(R, "generate", scripted)
    rollout = R.AgentRollout(env_config, test_tasks, R.RolloutConfig(reuse_kv=False))
    fields = rollout(
        [[{"role": "user", "content": task.question}]],
        SimpleNamespace(processing_class=tok, max_completion_length=100_000),
    )
    (rolled,) = rollout.last_episodes

    assert played.counts == want and rolled.counts == want
    assert (
        played.termination == rolled.termination == "answer" and played.prediction == rolled.prediction == task.answer
    )
    assert played.reward == rolled.reward == 1.0 and played.tool_calls == rolled.tool_calls
    assert played.env_errors == rolled.env_errors == {"bad_argument": 1, "no_action": 1}
    # what each side reports: GRPO's fields and the eval's metrics read the same counts
    assert (
        fields["turns"] == [want.turns] and fields["tool_errors"] == [want.tool_errors] and fields["answered"] == [True]
    )
    line = played.to_dict()  # the trajectory-file line, and the episode read back from it
    assert Episode.from_dict(line).to_dict() == line and Episode.from_dict(line).counts == want
    metrics = aggregate([line])
    assert metrics["tool_error_rate"] == round(want.tool_errors / want.tool_calls, 4)
    assert metrics["format_validity"] == round(1 - want.format_errors / want.turns, 4)
    python = ["python_error"] if SANDBOX else []
    assert [s["obs_error"] for s in played.steps] == [
        "no_action",
        None,
        "bad_argument",
        "unreachable",
        *python,
        None,
        None,
    ]
