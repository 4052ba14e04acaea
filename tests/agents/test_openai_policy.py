"""The OpenAI-compatible policy and judge against a local stand-in server (it replays scripted turns)."""

import argparse
import email.utils
import logging

import pytest

from agents.config import AgentConfig, ReSumConfig, SamplingConfig
from agents.eval_config import EndpointConfig, EvalConfig
from agents.harness import build_policy, run_eval
from agents.judge import LLMJudge, parse_verdict
from agents.loop import ReactAgent, run_episode
from agents.policies.openai_policy import (
    EndpointAuthError,
    EndpointError,
    OpenAIConfig,
    OpenAIPolicy,
    RequestConfig,
    retry_after,
)
from agents.resum import ModelSummariser
from simweb_core.errors import ConfigError
from tests.agents.conftest import call
from tests.conftest import OpenAIStub

NOW = 1_700_000_000.0  # the injected clock of the Retry-After tests
HI = [{"role": "user", "content": "hi"}]


def policy(stub, sleep=lambda seconds: None, clock=lambda: NOW, **kw):
    return OpenAIPolicy(
        OpenAIConfig("stub-model", base_url=stub.base_url, api_key="sk-test", **{"backoff": 0.01, **kw}),
        sleep=sleep,
        clock=clock,
    )


def test_episode_through_the_chat_completions_api(openai_stub, make_env, test_tasks):
    task = test_tasks[0]
    openai_stub.reply = [
        call("search", query=[task.question.split('"')[1]]),
        f"<think>found it</think>\n<answer>{task.answer}</answer>",
    ]
    rec = run_episode(ReactAgent(policy(openai_stub)), make_env(), task).to_dict()
    assert rec["termination"] == "answer" and rec["em"] == 1.0 and rec["policy"] == "openai:stub-model"
    first, second = openai_stub.requests
    assert first["model"] == "stub-model" and first["stop"] == ["\n<tool_response>", "<tool_response>"]
    assert (first["temperature"], first["top_p"], first["presence_penalty"], first["max_tokens"]) == (
        0.6,
        0.95,
        1.1,
        8192,
    )
    assert first["messages"][0]["role"] == "system" and "<tools>" in first["messages"][0]["content"]
    assert second["messages"][-1]["content"].startswith("<tool_response>\nA Google search for")
    assert isinstance(first["seed"], int) and second["seed"] == first["seed"] + 1
    assert (
        rec["steps"][0]["prompt_tokens"] > 0 and rec["steps"][1]["completion_tokens"] == 4
    )  # the stub's usage (words)


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
    assert (
        p.generate([[{"role": "user", "content": "q"}]], SamplingConfig(stop=("\n<tool_response>",)))[0].text
        == "<answer>a</answer>"
    )
    assert p.retries == 1


def test_batched_generate_and_config_errors(openai_stub):
    openai_stub.reply = lambda body: "echo " + body["messages"][-1]["content"]
    gens = policy(openai_stub, concurrency=3).generate([[{"role": "user", "content": str(i)}] for i in range(5)])
    assert [g.text for g in gens] == [f"echo {i}" for i in range(5)]
    with pytest.raises(ConfigError, match="name the served model"):
        OpenAIConfig("")


def test_judge_prompt_and_verdicts(openai_stub):
    openai_stub.reply = lambda body: (
        "Correct" if "Assistant's answer: Paris, France" in body["messages"][0]["content"] else "Incorrect."
    )
    judge = LLMJudge(policy(openai_stub))
    assert judge("Capital of France?", "Paris, France", ["Paris"]) == 1.0
    assert judge("Capital of France?", "Lyon", ["Paris"]) == 0.0
    assert judge("Capital of France?", "", ["Paris"]) == 0.0 and len(openai_stub.requests) == 2  # no call for no answer
    body = openai_stub.requests[0]
    assert (
        body["temperature"] == 0.0 and "Gold answer (any of these is correct): Paris" in body["messages"][0]["content"]
    )
    assert parse_verdict("incorrect") == 0.0 and parse_verdict("**Correct**") == 1.0 and parse_verdict("maybe") is None


def test_separate_summariser_model(openai_stub, make_env, test_tasks):
    task = test_tasks[0]

    def reply(body):
        if "reasoning state" in body["messages"][-1]["content"]:
            return "<summary>\nKnown: stub summary"  # the stop sequence removed </summary>
        return (
            f"<answer>{task.answer}</answer>"
            if "stub summary" in body["messages"][-1]["content"]
            else call("search", query=["jung"])
        )

    openai_stub.reply = reply
    cfg = AgentConfig(resum=ReSumConfig(enabled=True, trigger_fraction=None, every_n_turns=1, summariser="openai"))
    rec = run_episode(
        ReactAgent(policy(openai_stub), cfg, ModelSummariser(policy(openai_stub), cfg.resum)), make_env(), task
    ).to_dict()
    assert rec["em"] == 1.0 and rec["summaries"][0]["summary"] == "<summary>\nKnown: stub summary\n</summary>"
    assert rec["summaries"][0]["summariser"] == "model:openai:stub-model"


def test_eval_harness_with_remote_policy_and_judge(openai_stub, sample_index, tmp_path):
    def reply(body):
        text = body["messages"][-1]["content"]
        if "Reply with exactly one word" in text:
            return "Correct"
        return "<answer>a guess</answer>"

    openai_stub.reply = reply
    res = run_eval(
        EvalConfig(
            policy="openai:stub-model",
            index_dir=str(sample_index),
            n=3,
            endpoints=EndpointConfig(base_url=openai_stub.base_url, api_key="k", judge="openai:judge-model"),
            workers=3,
            out=str(tmp_path),
            progress=False,
        )
    )
    assert res.metrics["em"] == 0.0 and res.metrics["judge"] == 1.0 and res.metrics["pass@1"] == 1.0
    assert {b["model"] for b in openai_stub.requests} == {"stub-model", "judge-model"}


def test_retry_after_seconds_and_http_date_are_honoured_and_capped(openai_stub):
    sleeps: list[float] = []
    p = policy(openai_stub, sleep=sleeps.append, backoff=1.0, max_backoff=30.0)
    openai_stub.reply = lambda body: "<answer>ok</answer>"
    openai_stub.fail_status = 429
    for header in ("7", email.utils.formatdate(NOW + 12, usegmt=True), "3600"):  # seconds, an HTTP date, too long
        openai_stub.fail_next, openai_stub.fail_headers = 1, {"Retry-After": header}
        assert p.act(HI) == "<answer>ok</answer>"
    assert sleeps == [7.0, 12.0, 30.0]
    openai_stub.fail_next, openai_stub.fail_headers = 3, {}  # no Retry-After: exponential backoff
    assert p.act(HI) == "<answer>ok</answer>" and sleeps[3:] == [1.0, 2.0, 4.0] and p.retries == 6


def test_retry_after_parsing():
    assert retry_after({"retry-after-ms": "1500", "retry-after": "9"}, NOW) == 1.5
    assert retry_after({"retry-after": email.utils.formatdate(NOW - 5, usegmt=True)}, NOW) == 0.0  # a date gone by
    assert (
        retry_after({"retry-after": "soon"}, NOW) is None
        and retry_after({}, NOW) is None
        and retry_after(None, NOW) is None
    )


@pytest.mark.parametrize("content_type", ["application/json", "text/html"])
def test_a_body_that_is_not_json_is_retried_then_named(openai_stub, content_type):
    openai_stub.raw_content_type = content_type
    openai_stub.raw_next = ["<html>502 Bad Gateway</html>"]
    openai_stub.reply = ["<answer>ok</answer>"]
    p = policy(openai_stub)
    assert p.act(HI) == "<answer>ok</answer>" and p.retries == 1
    openai_stub.raw_next = ["<html>502 Bad Gateway</html>"] * 2
    with pytest.raises(EndpointError, match="2 attempts failed") as e:
        policy(openai_stub, max_retries=1).act(HI)
    assert openai_stub.base_url in str(e.value) and "stub-model" in str(e.value)
    assert "not JSON" in str(e.value) and "<html>502 Bad Gateway" in str(e.value)


@pytest.mark.parametrize("status", [401, 403])
def test_a_rejected_key_fails_at_once_naming_the_endpoint_and_the_key(openai_stub, status):
    openai_stub.fail_next, openai_stub.fail_status = 5, status
    with pytest.raises(EndpointAuthError) as e:
        policy(openai_stub).act(HI)
    assert len(openai_stub.requests) == 1 and isinstance(
        e.value, ConfigError
    )  # no retries; the CLI's config error exit
    for part in (openai_stub.base_url, "stub-model", f"HTTP {status}", "stub failure", "--api-key", "$OPENAI_API_KEY"):
        assert part in str(e.value)


def test_a_refused_request_names_the_endpoint(openai_stub):
    openai_stub.fail_next, openai_stub.fail_status = 5, 400
    with pytest.raises(EndpointError, match=r"stub-model at .*refused the request \(HTTP 400: stub failure\)"):
        policy(openai_stub).act(HI)
    assert len(openai_stub.requests) == 1


def test_cli_and_eval_config_set_timeout_and_retries_of_every_endpoint(openai_stub, sample_index, tmp_path):
    from agents.cli import add_parser, config_from_args

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    args = parser.parse_args(
        ["eval", "--policy", "openai:m", "--timeout", "30", "--max-retries", "1", "--backoff", "0"]
    )
    cfg = config_from_args(args)
    assert cfg.endpoints.requests == RequestConfig(timeout=30.0, max_retries=1, backoff=0.0)
    p = build_policy(cfg, [], None)
    assert (p.config.timeout, p.config.max_retries, p.config.backoff, p.client.timeout) == (30.0, 1, 0.0, 30.0)
    with pytest.raises(ConfigError, match="--max-retries"):
        RequestConfig(max_retries=-1)
    judge = OpenAIStub()  # the judge's endpoint always answers 500: it gets the run's retries too
    try:
        judge.fail_next = 100
        openai_stub.reply = lambda body: "<answer>a guess</answer>"
        res = run_eval(
            EvalConfig(
                policy="openai:stub-model",
                index_dir=str(sample_index),
                n=1,
                workers=1,
                out=str(tmp_path),
                progress=False,
                endpoints=EndpointConfig(
                    base_url=openai_stub.base_url,
                    api_key="k",
                    judge="openai:judge-model",
                    judge_base_url=judge.base_url,
                    requests=RequestConfig(max_retries=1, backoff=0.0),
                ),
            )
        )
    finally:
        judge.close()
    assert len(judge.requests) == 2 and len(res.failures) == 1
    assert "judge-model at " + judge.base_url in res.failures[0][1] and "2 attempts failed" in res.failures[0][1]


def test_eval_stops_at_the_first_rejected_key(openai_stub, sample_index, tmp_path, caplog):
    openai_stub.fail_next, openai_stub.fail_status = 100, 401
    caplog.set_level(logging.WARNING)
    with pytest.raises(EndpointAuthError, match="rejected the API key"):
        run_eval(
            EvalConfig(
                policy="openai:stub-model",
                index_dir=str(sample_index),
                n=6,
                endpoints=EndpointConfig(base_url=openai_stub.base_url, api_key="wrong"),
                workers=2,
                out=str(tmp_path),
                progress=False,
            )
        )
    assert len(openai_stub.requests) <= 2  # the episodes in flight, then no new one
    assert not [r for r in caplog.records if r.exc_info]  # no per-episode tracebacks
    assert not (tmp_path / "metrics.json").exists()


def test_cli_prints_only_written_files_and_stops_on_a_rejected_key(openai_stub, sample_index, tmp_path, capsys):
    from sim_web.cli import main

    args = [
        "eval",
        "--policy",
        "openai:stub-model",
        "--base-url",
        openai_stub.base_url,
        "--api-key",
        "k",
        "--index",
        str(sample_index),
        "--n",
        "2",
        "--workers",
        "1",
        "--no-progress",
        "--max-retries",
        "0",
    ]
    openai_stub.fail_next = 100  # HTTP 500: every episode fails, none is written
    assert main([*args, "--out", str(tmp_path / "down")]) == 1
    out, err = capsys.readouterr()
    assert "metrics:" in out and "trajectories:" not in out and "plot:" not in out and "2 episodes failed" in err
    openai_stub.fail_status = 401
    assert main([*args, "--out", str(tmp_path / "key")]) == 2
    out, err = capsys.readouterr()
    assert "the run stopped" in err and openai_stub.base_url in err and "--api-key" in err
    assert "trajectories:" not in out and "metrics:" not in out and err.count("rejected the API key") == 1
