"""The env's ``info`` is the agent layer's only view of a step: counts follow the env's own verdict, and a wrapper
between agent and env changes nothing."""

import gymnasium as gym
import pytest

from agents.config import AgentConfig
from agents.loop import ReactAgent, run_episode
from agents.turn import NO_ANSWER_METRICS, TURN_CAP, TurnCounts
from sim_web.protocol import NO_PYTHON_TOOLS
from tests.agents.conftest import CountingPolicy, call


def _two_searches(task) -> str:
    sentence = task.question.split('"')[1]
    return call("search", query=[sentence]) + "\n" + call("search", query=["rowing"])


def test_a_two_call_turn_the_env_accepted_is_two_calls_not_a_format_error(make_env, test_tasks):
    task = test_tasks[0]
    turns = iter([_two_searches(task), f"<answer>{task.answer}</answer>"])
    played = run_episode(ReactAgent(CountingPolicy(lambda m: next(turns))), make_env(allow_multiple_calls=True), task)
    assert played.env_errors == {} and played.tool_calls == {"search": 2}  # the env ran both
    assert played.counts == TurnCounts(turns=2, tool_calls=2, tool_errors=0, format_errors=0)
    assert played.steps[0]["kind"] == "tool_call" and played.to_dict()["valid_actions"] == 2


class Opaque:
    """A pass-through that forwards ``reset`` and ``step`` and nothing else: no ``unwrapped``, no env attributes
    (what an env behind a process or network boundary looks like)."""

    def __init__(self, env):
        self._env = env

    def reset(self, **kwargs):
        return self._env.reset(**kwargs)

    def step(self, action):
        return self._env.step(action)


def _comparable(record):
    """An episode's record without wall-clock figures."""
    if isinstance(record, dict):
        return {k: _comparable(v) for k, v in record.items() if k != "timings" and not k.endswith("seconds")}
    if isinstance(record, list):
        return [_comparable(v) for v in record]
    return record


@pytest.mark.parametrize(
    "wrap",
    [gym.Wrapper, gym.wrappers.RecordEpisodeStatistics, Opaque],
    ids=["Wrapper", "RecordEpisodeStatistics", "opaque"],
)
def test_a_wrapper_between_agent_and_env_changes_nothing(make_env, test_tasks, wrap):
    task = test_tasks[0]
    turns = [
        "<think>no action here</think>",  # a format error
        _two_searches(task),  # two calls in one turn
        call("search", query=[]),  # the env's bad_argument
        call("visit", url=["https://en.wikipedia.org/wiki/No_such_page_xyz"], goal="g"),  # unreachable
        f"<answer>{task.answer}</answer>",
    ]

    def play(env):
        replies = iter(turns)
        return run_episode(ReactAgent(CountingPolicy(lambda m: next(replies)), AgentConfig(force_on=())), env, task)

    bare = play(make_env(allow_multiple_calls=True))
    wrapped = play(wrap(make_env(allow_multiple_calls=True)))
    assert bare.counts == TurnCounts(turns=5, tool_calls=4, tool_errors=2, format_errors=1)
    assert wrapped.counts == bare.counts and wrapped.termination == bare.termination == "answer"
    assert _comparable(wrapped.to_dict()) == _comparable(bare.to_dict())
    assert bare.env_errors == {"bad_argument": 1, "no_action": 1} and bare.tool_stats is not None


def test_grpo_and_eval_name_a_turn_capped_episode_the_same(make_env, sample_index, test_tasks, monkeypatch):
    pytest.importorskip("torch")
    pytest.importorskip("trl")
    from types import SimpleNamespace

    from sim_web.env import EnvConfig
    from training.grpo import rollout as R
    from training.grpo.tiny import tiny_model
    from training.wire import tokenize

    task, search = test_tasks[0], call("search", query=["rowing"])
    played = run_episode(ReactAgent(CountingPolicy(lambda m: search)), make_env(max_turns=2), task)

    _, tok = tiny_model(["search rowing <tool_call>"])

    def scripted(trainer, contexts, max_new, seed, batch_size=16, **_):
        return [((ids := tokenize(tok, search) + [tok.eos_token_id]), [-0.5] * len(ids), True) for _ in contexts]

    monkeypatch.setattr(R, "generate", scripted)
    rollout = R.AgentRollout(EnvConfig(index_dir=str(sample_index), tools=NO_PYTHON_TOOLS, max_turns=2), test_tasks)
    fields = rollout(
        [[{"role": "user", "content": task.question}]],
        SimpleNamespace(processing_class=tok, max_completion_length=100_000),
    )
    (rolled,) = rollout.last_episodes
    assert played.termination == rolled.termination == TURN_CAP == "env_truncated:max_turns"
    assert fields["no_answer"] == [TURN_CAP] and TURN_CAP in NO_ANSWER_METRICS.values()
    assert played.counts == rolled.counts and played.tool_calls == rolled.tool_calls == {"search": 2}
