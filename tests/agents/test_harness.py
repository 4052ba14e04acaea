"""The evaluation harness and CLI: oracle ceiling, resume, concurrency, outputs."""

import json
from dataclasses import replace

import pytest

from agents.config import AgentConfig
from agents.eval_config import eval_env
from agents.harness import EvalConfig, run_eval
from agents.policies.base import FunctionPolicy
from agents.policies.oracle import OraclePolicy
from agents.trajectory import load_records, sft_example
from simweb_core.errors import ConfigError

VOLATILE = {"timings", "llm_seconds", "env_seconds", "seconds", "total_seconds", "tool_stats"}


def outcomes(stats):
    """The executor counters that do not depend on which worker's cache saw a query first."""
    return {k: stats[k] for k in ("calls", "successes", "fallbacks", "failures")}


def stable(obj):
    """A record without wall-clock fields (what concurrency may change)."""
    if isinstance(obj, dict):
        return {k: stable(v) for k, v in obj.items() if k not in VOLATILE}
    if isinstance(obj, list):
        return [stable(v) for v in obj]
    return obj


class Counting(OraclePolicy):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.calls = 0

    def generate(self, batch, sampling=None, seeds=None):
        self.calls += len(batch)
        return super().generate(batch, sampling, seeds)


def cfg(index, out, **kw):
    return EvalConfig(**{"policy": "oracle", "index_dir": str(index), "out": str(out), "progress": False, **kw})


def test_oracle_reaches_every_answer_and_writes_outputs(sample_index, tmp_path):
    res = run_eval(cfg(sample_index, tmp_path, n=6))
    m = res.metrics
    assert m["pass@1"] == 1.0 and m["episodes"] == 6 and m["format_validity"] == 1.0 and m["tool_error_rate"] == 0.0
    assert m["tool_calls_total"] == {"search": 6, "visit": 6} and m["termination"] == {"answer": 6}
    assert all(
        r["policy_info"]["answer_reached_via"] == "search" and r["policy_info"]["answer_page_read"] for r in res.records
    )
    for name in ("trajectories.jsonl", "metrics.json", "plot.png", "sft.jsonl", "run.json"):
        assert (tmp_path / name).is_file(), name
    assert (tmp_path / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((tmp_path / "metrics.json").read_text())["pass@1"] == 1.0
    demos = [json.loads(line) for line in (tmp_path / "sft.jsonl").read_text().splitlines()]
    assert len(demos) == 6 and demos[0]["messages"][-1]["content"].endswith(
        f"<answer>{res.records[0]['gold']}</answer>"
    )
    assert [m["role"] for m in demos[0]["messages"]] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
    ]


def test_resume_takes_a_policy_path_given_relative_or_absolute(sample_index, test_tasks, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("model", "other"):
        (tmp_path / name).mkdir()
    out = tmp_path / "eval"
    run_eval(cfg(sample_index, out, n=2, policy="hf:model"), policy=Counting(test_tasks))
    again = Counting(test_tasks)  # the same folder, named absolute: the finished episodes are kept
    run_eval(cfg(sample_index, out, n=2, policy=f"hf:{tmp_path / 'model'}"), policy=again)
    assert again.calls == 0
    with pytest.raises(ConfigError, match=r"different settings \(policy\)"):
        run_eval(cfg(sample_index, out, n=2, policy="hf:other"), policy=Counting(test_tasks))
    with pytest.raises(ConfigError, match=r"different settings \(policy\)"):  # same path, another kind of policy
        run_eval(cfg(sample_index, out, n=2, policy="openai:model"), policy=Counting(test_tasks))


def test_resume_skips_finished_episodes(sample_index, test_tasks, tmp_path):
    first = Counting(test_tasks)
    run_eval(cfg(sample_index, tmp_path, n=2), policy=first)
    assert first.calls == 6  # 2 episodes x (search, visit, answer)
    # an interrupted write leaves a cut-off line; that episode is rerun, the finished ones are not
    with (tmp_path / "trajectories.jsonl").open("a") as f:
        f.write('{"key": "derived-cut-off", "task_id": "x", "st')
    second = Counting(test_tasks)
    res = run_eval(cfg(sample_index, tmp_path, n=4), policy=second)
    assert second.calls == 6 and res.metrics["episodes"] == 4 and res.metrics["run"]["episodes_resumed"] == 2
    assert [r["task_id"] for r in res.records] == [t.id for t in test_tasks[:4]]
    third = Counting(test_tasks)
    run_eval(cfg(sample_index, tmp_path, n=4), policy=third)
    assert third.calls == 0
    assert len(load_records(tmp_path / "trajectories.jsonl")) == 4
    with pytest.raises(ConfigError, match="different settings"):
        run_eval(cfg(sample_index, tmp_path, n=4, agent=AgentConfig(max_llm_calls=7)), policy=third)
    fresh = Counting(test_tasks)
    run_eval(cfg(sample_index, tmp_path, n=1, resume=False), policy=fresh)
    assert fresh.calls == 3 and len(load_records(tmp_path / "trajectories.jsonl")) == 1


def test_concurrency_gives_the_same_results_as_sequential(sample_index, test_tasks, tmp_path):
    seq = run_eval(cfg(sample_index, tmp_path / "seq", n=8, k=2, workers=1))
    par = run_eval(cfg(sample_index, tmp_path / "par", n=8, k=2, workers=4))
    assert [stable(r) for r in seq.records] == [stable(r) for r in par.records]
    assert seq.metrics["pass@2"] == par.metrics["pass@2"] == 1.0
    # cache hits depend on which worker's env saw a query before; what the calls came to does not
    assert [outcomes(r["tool_stats"]) for r in seq.records] == [outcomes(r["tool_stats"]) for r in par.records]
    assert sum(r["tool_stats"]["cache_hits"] for r in seq.records) >= sum(
        r["tool_stats"]["cache_hits"] for r in par.records
    )

    oracle = OraclePolicy(test_tasks)

    class Lockstep(FunctionPolicy):  # the batched (local-model) path with a deterministic policy
        batched = True

    batched = Lockstep(oracle.act_batch, name="oracle", batched_fn=True)
    bat = run_eval(cfg(sample_index, tmp_path / "bat", n=8, k=2, batch_size=3), policy=batched)
    assert [stable({**r, "policy_info": None}) for r in bat.records] == [
        stable({**r, "policy_info": None}) for r in seq.records
    ]


def test_failed_episodes_are_reported_and_rerun(sample_index, test_tasks, tmp_path):
    down = test_tasks[1].question  # one of the first three held-out tasks

    def flaky(messages):
        if messages[1]["content"] == down:
            raise RuntimeError("endpoint down")
        return "<answer>x</answer>"

    res = run_eval(cfg(sample_index, tmp_path, n=3), policy=FunctionPolicy(flaky))
    assert len(res.failures) == 1 and "endpoint down" in res.failures[0][1] and res.metrics["episodes"] == 2
    again = run_eval(cfg(sample_index, tmp_path, n=3), policy=FunctionPolicy(lambda m: "<answer>x</answer>"))
    assert not again.failures and again.metrics["run"]["episodes_run"] == 1 and again.metrics["episodes"] == 3


def test_sft_example_only_from_successes():
    ok = {
        "task_id": "t",
        "em": 1.0,
        "termination": "answer",
        "messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "<answer>a</answer>"},
        ],
    }
    assert sft_example(ok)["messages"][-1]["content"] == "<answer>a</answer>"
    assert sft_example({**ok, "em": 0.0}) is None and sft_example({**ok, "termination": "max_llm_calls"}) is None


def test_cli_eval(sample_index, tmp_path, capsys):
    from sim_web.cli import main

    assert (
        main(
            [
                "eval",
                "--policy",
                "oracle",
                "--index",
                str(sample_index),
                "--n",
                "2",
                "--k",
                "2",
                "--out",
                str(tmp_path),
                "--no-progress",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "pass@1" in out and "pass@2" in out and "trajectories:" in out
    assert (
        main(
            [
                "eval",
                "--policy",
                "oracle",
                "--index",
                str(sample_index),
                "--tasks",
                "no-such-set",
                "--out",
                str(tmp_path / "x"),
            ]
        )
        == 2
    )
    assert "neither a file nor a task set" in capsys.readouterr().err
    with pytest.raises(
        ConfigError,
        match="'oracle', 'oracle:search', 'oracle:plan', 'oracle:quote', 'oracle:joint', 'rule:first-title', 'prior', 'hf:PATH' or 'openai:MODEL'",
    ):
        EvalConfig(policy="gpt4")


def test_two_evals_on_one_out_never_run_together(sample_index, tmp_path):
    """A second eval on a folder in use fails fast (no episode recorded twice); a killed holder leaves no stale lock."""
    import signal
    import subprocess
    import sys

    from agents.harness import exclusive_out

    out = tmp_path / "run"
    with exclusive_out(out):
        with pytest.raises(ConfigError, match="in use by another `sim-web eval`"):
            run_eval(cfg(sample_index, out, n=2))
    assert not (out / "trajectories.jsonl").exists()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nfrom pathlib import Path\nfrom agents.harness import "
            "exclusive_out\nwith exclusive_out(Path(sys.argv[1])):\n    print('held', flush=True)\n    "
            "time.sleep(600)",
            str(out),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(ConfigError, match=f"pid {holder.pid}"):
            run_eval(cfg(sample_index, out, n=2))
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    res = run_eval(cfg(sample_index, out, n=2))
    lines = (out / "trajectories.jsonl").read_text().splitlines()
    assert res.metrics["episodes"] == 2 and len(lines) == 2


def test_response_budget_reaches_the_env_and_is_part_of_the_run_identity(sample_index, tmp_path, capsys):
    from sim_web.cli import main

    args = [
        "eval",
        "--policy",
        "oracle",
        "--index",
        str(sample_index),
        "--n",
        "2",
        "--out",
        str(tmp_path),
        "--no-progress",
    ]
    assert main([*args, "--max-response-chars", "400"]) == 0
    records = load_records(tmp_path / "trajectories.jsonl")
    responses = [
        m["content"]
        for r in records
        for m in r["messages"]
        if m["role"] == "user" and "<tool_response>" in m["content"]
    ]
    assert responses and max(len(t) for t in responses) <= 400 + len("<tool_response>\n\n</tool_response>")
    assert any("[" in t and len(t) > 300 for t in responses)  # cut at the cap, not emptied
    assert json.loads((tmp_path / "run.json").read_text())["identity"]["max_response_chars"] == 400
    capsys.readouterr()
    assert main(args) == 2  # the default cap is a different run: resuming it in the same folder is refused
    assert "max_response_chars" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="max_response_chars >= 100"):
        cfg(sample_index, tmp_path, env=replace(eval_env(), max_response_chars=10))


def test_compact_prompt_and_short_results_reach_the_env_and_the_run_identity(sample_index, tmp_path, capsys):
    import re

    from sim_web.cli import main

    args = [
        "eval",
        "--policy",
        "oracle",
        "--index",
        str(sample_index),
        "--n",
        "2",
        "--out",
        str(tmp_path),
        "--no-progress",
    ]
    assert main([*args, "--prompt", "compact", "--search-results", "3", "--snippet-chars", "120"]) == 0
    records = load_records(tmp_path / "trajectories.jsonl")
    assert records and all(r["messages"][0]["content"].startswith("You are a research assistant.") for r in records)
    searches = [m["content"] for r in records for m in r["messages"] if "## Web Results" in m["content"]]
    assert searches and all(len(re.findall(r"^\d+\. \[", t, re.M)) <= 3 for t in searches)
    run = json.loads((tmp_path / "run.json").read_text())
    assert {k: run["identity"][k] for k in ("prompt", "search_results", "snippet_chars")} == {
        "prompt": "compact",
        "search_results": 3,
        "snippet_chars": 120,
    }
    assert json.loads((tmp_path / "metrics.json").read_text())["run"]["prompt"] == "compact"
    capsys.readouterr()
    assert main(args) == 2  # the Tongyi prompt is another run: resuming in the same folder is refused
    assert "prompt" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="EnvConfig.prompt must be one of"):
        cfg(sample_index, tmp_path, env=replace(eval_env(), prompt="short"))


def test_every_env_setting_reaches_the_episodes_and_the_run_identity(sample_index, tmp_path):
    """``EvalConfig.env`` is played as given, settings the flat config dropped (date, reward) included."""
    from sim_web.env.rewards import RewardConfig

    env = replace(eval_env(), date="2024-06-01", reward=RewardConfig(kind="f1"), tools=("search", "visit"))
    res = run_eval(cfg(sample_index, tmp_path, n=2, env=env))
    assert res.metrics["pass@1"] == 1.0
    assert all("Current date: 2024-06-01" in r["messages"][0]["content"] for r in res.records)
    identity = json.loads((tmp_path / "run.json").read_text())["identity"]
    assert (identity["date"], identity["reward"], identity["tools"]) == (
        "2024-06-01",
        {"kind": "f1"},
        ["search", "visit"],
    )
    with pytest.raises(ConfigError, match="date, reward"):  # the default date and reward are another run
        run_eval(cfg(sample_index, tmp_path, n=2, env=replace(eval_env(), tools=("search", "visit"))))


def test_skip_takes_a_later_slice_of_the_tasks(sample_index, tmp_path):
    first = run_eval(cfg(sample_index, tmp_path / "a", n=5))
    later = run_eval(cfg(sample_index, tmp_path / "b", n=2, skip=3))
    assert [r["task_id"] for r in later.records] == [r["task_id"] for r in first.records][3:5]
    with pytest.raises(ConfigError, match="skip >= 0"):
        cfg(sample_index, tmp_path, skip=-1)
    with pytest.raises(ConfigError, match="skip 10000"):
        run_eval(cfg(sample_index, tmp_path / "c", skip=10_000))
