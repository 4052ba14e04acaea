"""The OpenAI-compatible policy and judge against a local stand-in server (it replays scripted turns)."""

import pytest

from agents.config import AgentConfig, ReSumConfig, SamplingConfig
from agents.harness import EvalConfig, run_eval
from agents.judge import LLMJudge, parse_verdict
from agents.loop import ReactAgent, run_episode
from agents.policies.openai_policy import OpenAIConfig, OpenAIPolicy
from agents.resum import ModelSummariser
from tests.agents.conftest import call
from wiki_index.errors import ConfigError


def policy(stub, **kw):
    return OpenAIPolicy(OpenAIConfig("stub-model", base_url=stub.base_url, api_key="sk-test", backoff=0.01, **kw))


def test_episode_through_the_chat_completions_api(openai_stub, make_env, test_tasks):
    task = test_tasks[0]
    openai_stub.reply = [call("search", query=[task.question.split('"')[1]]), f"<think>found it</think>\n<answer>{task.answer}</answer>"]
    rec = run_episode(ReactAgent(policy(openai_stub)), make_env(), task)
    assert rec["termination"] == "answer" and rec["em"] == 1.0 and rec["policy"] == "openai:stub-model"
    first, second = openai_stub.requests
    assert first["model"] == "stub-model" and first["stop"] == ["\n<tool_response>", "<tool_response>"]
    assert (first["temperature"], first["top_p"], first["presence_penalty"], first["max_tokens"]) == (0.6, 0.95, 1.1, 8192)
    assert first["messages"][0]["role"] == "system" and "<tools>" in first["messages"][0]["content"]
    assert second["messages"][-1]["content"].startswith("<tool_response>\nA Google search for")
    assert isinstance(first["seed"], int) and second["seed"] == first["seed"] + 1
    assert rec["steps"][0]["prompt_tokens"] > 0 and rec["steps"][1]["completion_tokens"] == 4  # the stub's usage (words)


def test_retries_after_a_server_error(openai_stub):
    p = policy(openai_stub)
    openai_stub.fail_next = 1
    openai_stub.reply = ["<answer>ok</answer>"]
    assert p.act([{"role": "user", "content": "hi"}]) == "<answer>ok</answer>"
    assert p.retries == 1 and len(openai_stub.requests) == 2
    openai_stub.fail_next = 3
    with pytest.raises(RuntimeError, match="2 attempts failed"):
        policy(openai_stub, max_retries=1).act([{"role": "user", "content": "hi"}])


def test_empty_reply_is_retried_and_stop_sequences_cut(openai_stub):
    openai_stub.reply = ["", "<answer>a</answer>\n<tool_response>x"]
    p = policy(openai_stub)
    assert p.generate([[{"role": "user", "content": "q"}]], SamplingConfig(stop=("\n<tool_response>",)))[0].text == "<answer>a</answer>"
    assert p.retries == 1


def test_batched_generate_and_config_errors(openai_stub):
    openai_stub.reply = lambda body: "echo " + body["messages"][-1]["content"]
    gens = policy(openai_stub, concurrency=3).generate([[{"role": "user", "content": str(i)}] for i in range(5)])
    assert [g.text for g in gens] == [f"echo {i}" for i in range(5)]
    with pytest.raises(ConfigError, match="name the served model"):
        OpenAIConfig("")


def test_judge_prompt_and_verdicts(openai_stub):
    openai_stub.reply = lambda body: "Correct" if "Assistant's answer: Paris, France" in body["messages"][0]["content"] else "Incorrect."
    judge = LLMJudge(policy(openai_stub))
    assert judge("Capital of France?", "Paris, France", ["Paris"]) == 1.0
    assert judge("Capital of France?", "Lyon", ["Paris"]) == 0.0
    assert judge("Capital of France?", "", ["Paris"]) == 0.0 and len(openai_stub.requests) == 2  # no call for no answer
    body = openai_stub.requests[0]
    assert body["temperature"] == 0.0 and "Gold answer (any of these is correct): Paris" in body["messages"][0]["content"]
    assert parse_verdict("incorrect") == 0.0 and parse_verdict("**Correct**") == 1.0 and parse_verdict("maybe") is None


def test_separate_summariser_model(openai_stub, make_env, test_tasks):
    task = test_tasks[0]

    def reply(body):
        if "reasoning state" in body["messages"][-1]["content"]:
            return "<summary>\nKnown: stub summary"  # the stop sequence removed </summary>
        return f"<answer>{task.answer}</answer>" if "stub summary" in body["messages"][-1]["content"] else call("search", query=["jung"])

    openai_stub.reply = reply
    cfg = AgentConfig(resum=ReSumConfig(enabled=True, trigger_fraction=None, every_n_turns=1, summariser="openai"))
    rec = run_episode(ReactAgent(policy(openai_stub), cfg, ModelSummariser(policy(openai_stub), cfg.resum)), make_env(), task)
    assert rec["em"] == 1.0 and rec["summaries"][0]["summary"] == "<summary>\nKnown: stub summary\n</summary>"
    assert rec["summaries"][0]["summariser"] == "model:openai:stub-model"


def test_eval_harness_with_remote_policy_and_judge(openai_stub, sample_index, tmp_path):
    def reply(body):
        text = body["messages"][-1]["content"]
        if "Reply with exactly one word" in text:
            return "Correct"
        return "<answer>a guess</answer>"

    openai_stub.reply = reply
    res = run_eval(EvalConfig(policy="openai:stub-model", index_dir=str(sample_index), base_url=openai_stub.base_url, api_key="k",
                              judge="openai:judge-model", n=3, workers=3, out=str(tmp_path), progress=False))
    assert res.metrics["em"] == 0.0 and res.metrics["judge"] == 1.0 and res.metrics["pass@1"] == 1.0
    assert {b["model"] for b in openai_stub.requests} == {"stub-model", "judge-model"}
