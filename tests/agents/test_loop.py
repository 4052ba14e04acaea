"""The ReAct loop: budgets, Tongyi's forced answer, hallucinated tool responses, ReSum."""

import pytest

from agents.config import AgentConfig, ReSumConfig, SamplingConfig
from agents.loop import ReactAgent, drive, run_episode
from agents.prompts import FORCE_ANSWER_PROMPT, RESUM_SYSTEM
from agents.turn import clean_turn
from simweb_core.errors import ConfigError
from tests.agents.conftest import CountingPolicy, call, searcher_until_forced


def test_plain_episode_records_every_step(make_env, test_tasks):
    task = test_tasks[0]
    turns = iter(
        [call("search", query=[task.question.split('"')[1]]), f"<think>ok</think>\n<answer>{task.answer}</answer>"]
    )
    rec = run_episode(ReactAgent(CountingPolicy(lambda m: next(turns))), make_env(), task).to_dict()
    assert rec["termination"] == "answer" and rec["em"] == 1.0 and rec["prediction"] == task.answer
    assert rec["turns"] == 2 and rec["llm_calls"] == 2 and rec["tool_calls"] == {"search": 1}
    s1, s2 = rec["steps"]
    assert (
        s1["kind"] == "tool_call"
        and s1["tool"] == "search"
        and s1["observation_chars"] > 100
        and s1["obs_error"] is None
    )
    assert s2["kind"] == "answer" and s2["context_tokens"] == 400  # system, question, action, observation
    roles = [m["role"] for m in rec["messages"]]
    assert roles == ["system", "user", "assistant", "user", "assistant"]
    assert rec["messages"][3]["content"].startswith("<tool_response>\n## Web Results") is False  # header first
    assert rec["messages"][3]["content"].startswith("<tool_response>\nA Google search for")
    assert rec["timings"]["total_seconds"] > 0 and "episode_seconds" in rec["timings"]


def test_hallucinated_tool_response_is_cut(make_env, test_tasks):
    assert clean_turn("<tool_call>x</tool_call>\n<tool_response>\nfake\n</tool_response>") == "<tool_call>x</tool_call>"
    task = test_tasks[1]
    turns = iter(
        [call("search", query=["rowing"]) + "\n<tool_response>\nI made this up\n</tool_response>", "<answer>x</answer>"]
    )
    rec = run_episode(ReactAgent(CountingPolicy(lambda m: next(turns))), make_env(), task).to_dict()
    assert "I made this up" not in rec["steps"][0]["action"] and "I made this up" not in rec["messages"][3]["content"]


def test_llm_call_budget_without_forcing_stops_unanswered(make_env, test_tasks):
    pol = CountingPolicy(searcher_until_forced("never"))
    rec = run_episode(ReactAgent(pol, AgentConfig(max_llm_calls=3, force_on=())), make_env(), test_tasks[0]).to_dict()
    assert rec["termination"] == "max_llm_calls" and rec["llm_calls"] == 3 and len(pol.seen) == 3
    assert rec["prediction"] is None and rec["em"] == 0.0


def test_last_llm_call_is_a_forced_answer(make_env, test_tasks):
    task = test_tasks[0]
    pol = CountingPolicy(searcher_until_forced(task.answer))
    rec = run_episode(ReactAgent(pol, AgentConfig(max_llm_calls=4, force_on=("calls",))), make_env(), task).to_dict()
    assert rec["termination"] == "forced_answer:calls" and rec["llm_calls"] == 4 and rec["em"] == 1.0
    assert [s["purpose"] for s in rec["steps"]] == ["act", "act", "act", "force"]
    forced = pol.seen[-1]
    assert forced[-1]["content"] == FORCE_ANSWER_PROMPT and len(forced) == 8  # Tongyi overwrites the last tool response
    assert rec["context"][-2]["content"] == FORCE_ANSWER_PROMPT


def test_context_limit_forces_answer_like_tongyi(make_env, test_tasks):
    task = test_tasks[2]
    pol = CountingPolicy(searcher_until_forced(task.answer))
    cfg = AgentConfig(max_context_tokens=700, force_on=("context",))  # 100 tokens per message: exceeded at 8 messages
    rec = run_episode(ReactAgent(pol, cfg), make_env(), task).to_dict()
    assert rec["termination"] == "forced_answer:context" and rec["em"] == 1.0
    assert [len(m) for m in pol.seen] == [2, 4, 6, 8] and pol.seen[-1][-1]["content"] == FORCE_ANSWER_PROMPT
    assert pol.seen[-1][-2]["role"] == "assistant"  # the observation was replaced, not appended
    appended = CountingPolicy(searcher_until_forced(task.answer))
    run_episode(
        ReactAgent(appended, AgentConfig(max_context_tokens=700, force_replaces_observation=False)), make_env(), task
    ).to_dict()
    assert len(appended.seen[-1]) == 9 and appended.seen[-1][-2]["content"].startswith("<tool_response>")


def test_context_limit_without_forcing_and_unanswered_forced_turn(make_env, test_tasks):
    rec = run_episode(
        ReactAgent(CountingPolicy(searcher_until_forced("x")), AgentConfig(max_context_tokens=700, force_on=())),
        make_env(),
        test_tasks[0],
    ).to_dict()
    assert rec["termination"] == "max_context_tokens" and rec["llm_calls"] == 3
    stubborn = CountingPolicy(lambda m: call("search", query=["again"]))
    rec = run_episode(ReactAgent(stubborn, AgentConfig(max_context_tokens=700)), make_env(), test_tasks[0]).to_dict()
    assert (
        rec["termination"] == "forced_no_answer:context"
        and rec["prediction"] is None
        and rec["steps"][-1]["purpose"] == "force"
    )


def test_time_limit(make_env, test_tasks):
    task = test_tasks[0]
    pol = CountingPolicy(searcher_until_forced(task.answer))
    rec = run_episode(ReactAgent(pol, AgentConfig(max_seconds=1e-9)), make_env(), task).to_dict()
    assert rec["termination"] == "forced_answer:time" and rec["llm_calls"] == 1 and rec["em"] == 1.0
    assert [m["role"] for m in pol.seen[0]] == ["system", "user", "user"]  # the question is kept, the prompt appended
    rec = run_episode(
        ReactAgent(CountingPolicy(lambda m: "x"), AgentConfig(max_seconds=1e-9, force_on=())), make_env(), task
    ).to_dict()
    assert rec["termination"] == "max_seconds" and rec["llm_calls"] == 0


def test_invalid_actions_are_recorded_not_fatal(make_env, test_tasks):
    turns = iter(["I think the answer is near.", call("search", query=[]), "<answer>nope</answer>"])
    rec = run_episode(ReactAgent(CountingPolicy(lambda m: next(turns))), make_env(), test_tasks[0]).to_dict()
    kinds = [s["kind"] for s in rec["steps"]]
    assert kinds == ["invalid", "tool_call", "answer"] and rec["valid_actions"] == 2
    assert rec["steps"][0]["error"] == "no_action" and rec["steps"][1]["obs_error"] == "bad_argument"
    assert rec["termination"] == "answer" and rec["em"] == 0.0


def _summariser_policy(answer, summary_reply="<summary>\nKnown: the subject is a sport.\n</summary>"):
    def act(messages):
        if messages[0]["content"] == "" or messages[0]["content"].startswith(RESUM_SYSTEM):
            return summary_reply
        if "<summary>" in messages[-1]["content"]:
            return f"<answer>{answer}</answer>"
        return call("search", query=[f"boats and oars {len(messages)}"])

    return act


def test_resum_triggers_at_threshold_and_continues_from_summary(make_env, test_tasks):
    task = test_tasks[0]
    pol = CountingPolicy(_summariser_policy(task.answer))
    cfg = AgentConfig(
        max_context_tokens=1000, resum=ReSumConfig(enabled=True, trigger_fraction=0.5, summariser="policy")
    )
    rec = run_episode(ReactAgent(pol, cfg), make_env(), task).to_dict()
    # 100 tokens/message: 2, 4 messages stay under 500; at 6 messages (600 >= 500) the history is summarised
    assert [len(m) for m in pol.seen] == [2, 4, 2, 2]
    summary_request, after = pol.seen[2], pol.seen[3]
    assert summary_request[0]["content"] == RESUM_SYSTEM and "boats and oars 4" in summary_request[1]["content"]
    assert after[1]["content"].startswith(task.question) and "Known: the subject is a sport." in after[1]["content"]
    (s,) = rec["summaries"]
    assert (s["trigger"], s["turn"], s["tokens_before"], s["tokens_after"], s["fallback"]) == (
        "tokens",
        2,
        600,
        200,
        False,
    )
    assert rec["termination"] == "answer" and rec["em"] == 1.0 and rec["llm_calls"] == 4
    assert rec["context"][1]["content"] == s["context_after"]
    assert len(rec["messages"]) == 7  # the env's transcript keeps everything


def test_resum_falls_back_to_extractive_summary(make_env, test_tasks):
    task = test_tasks[0]
    pol = CountingPolicy(_summariser_policy(task.answer, summary_reply="I will not summarise."))
    cfg = AgentConfig(max_context_tokens=1000, resum=ReSumConfig(enabled=True, trigger_fraction=0.5))
    rec = run_episode(ReactAgent(pol, cfg), make_env(), task).to_dict()
    (s,) = rec["summaries"]
    assert s["fallback"] and s["summary"].startswith('<summary>\nKnown:\n- Searched "boats and oars 2": [')
    assert "Next leads:\n- Visit https://en.wikipedia.org/wiki/" in s["summary"]


def test_resum_every_n_turns_with_extractive_summariser(make_env, test_tasks):
    task = test_tasks[0]
    calls = iter(
        [
            call("search", query=["a"]),
            call("search", query=["b"]),
            call("search", query=["c"]),
            f"<answer>{task.answer}</answer>",
        ]
    )
    pol = CountingPolicy(lambda m: next(calls))
    cfg = AgentConfig(resum=ReSumConfig(enabled=True, trigger_fraction=None, every_n_turns=2, summariser="extractive"))
    rec = run_episode(ReactAgent(pol, cfg), make_env(), task).to_dict()
    assert [s["turn"] for s in rec["summaries"]] == [2] and rec["summaries"][0]["summariser"] == "extractive"
    assert [len(m) for m in pol.seen] == [2, 4, 2, 4]  # no summary request goes to the policy
    assert '- Searched "a"' in pol.seen[2][1]["content"] and '- Searched "b"' in pol.seen[2][1]["content"]


def test_configs_validate_with_helpful_errors():
    with pytest.raises(ConfigError, match="no trigger"):
        ReSumConfig(enabled=True, trigger_fraction=None)
    with pytest.raises(ConfigError, match="fraction of AgentConfig.max_context_tokens"):
        ReSumConfig(trigger_fraction=1.5)
    with pytest.raises(ConfigError, match="bare string"):
        SamplingConfig(stop="</answer>")
    with pytest.raises(ConfigError, match="force_on"):
        AgentConfig(force_on=("tokens",))


def test_drive_batches_episodes_in_lockstep(make_env, test_tasks):
    sizes = []

    class Batched(CountingPolicy):
        batched = True

        def generate(self, batch, sampling=None, seeds=None):
            sizes.append(len(batch))
            return super().generate(batch, sampling, seeds)

    agent = ReactAgent(Batched(searcher_until_forced("x")), AgentConfig(max_llm_calls=3))
    recs = [e.to_dict() for e in drive([agent.episode(make_env(), t) for t in test_tasks[:3]], agent.policy)]
    assert sizes == [3, 3, 3] and [r["task_id"] for r in recs] == [t.id for t in test_tasks[:3]]
    assert all(r["termination"] == "forced_answer:calls" for r in recs)
