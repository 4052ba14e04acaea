"""The GRPO rollout: real logprobs from seeded generation, and how episodes end (answer, length, turn cap, rollback)."""

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from types import SimpleNamespace  # noqa: E402

from simweb_core.errors import ConfigError  # noqa: E402
from training.grpo import rollout as R  # noqa: E402
from training.grpo.tiny import tiny_model  # noqa: E402
from training.wire import tokenize  # noqa: E402

TOOLS = ("search", "visit", "google_scholar")


@pytest.fixture(scope="module")
def tiny():
    return tiny_model(["search the answer <tool_call> visit"])


def test_generation_returns_the_sampled_tokens_logprobs_and_leaves_the_global_rng(tiny, tmp_path):
    from training.grpo.tiny import generation_trainer

    model, tok = tiny
    trainer = generation_trainer(model, tok, tmp_path, max_completion_length=16)
    contexts = [
        tokenize(tok, "<|im_start|>user\nsearch the answer<|im_end|>\n<|im_start|>assistant\n"),
        tokenize(tok, "visit"),
    ]
    state = torch.random.get_rng_state()
    outs = R.generate(trainer, contexts, [6, 9], seed=3)
    assert torch.equal(state, torch.random.get_rng_state())
    assert outs == R.generate(trainer, contexts, [6, 9], seed=3)
    assert outs != R.generate(trainer, contexts, [6, 9], seed=4)
    model.eval()
    for ctx, (ids, lps, ended), cap in zip(contexts, outs, [6, 9]):
        assert 1 <= len(ids) <= cap and len(lps) == len(ids)
        assert ended == (ids[-1] == tok.eos_token_id)
        with torch.no_grad():
            logits = model(torch.tensor([ctx + ids])).logits[0, len(ctx) - 1 : -1] / 0.7
        want = torch.log_softmax(logits, -1).gather(1, torch.tensor(ids).unsqueeze(1)).squeeze(1)
        assert lps == pytest.approx(want.tolist(), abs=1e-4)


def scripted(turns, tok, ended=True):
    """A stand-in for ``generate``: the given turns, in order, each with its end-of-turn token (unless cut)."""
    it = iter(turns)

    def gen(trainer, contexts, max_new, seed, batch_size=16, **options):
        out = []
        for _ in contexts:
            ids = tokenize(tok, next(it)) + ([tok.eos_token_id] if ended else [])
            out.append((ids, [-0.5] * len(ids), ended))
        return out

    return gen


def call(name, **arguments):
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


@pytest.fixture(scope="module")
def task_setup(sample_index):
    from sim_web.env import EnvConfig
    from sim_web.env.tasks import derive_tasks
    from wiki_index.search.index import WikiIndex

    tasks = derive_tasks(WikiIndex.from_dir(sample_index).store)[:4]
    return EnvConfig(index_dir=str(sample_index), tools=TOOLS, max_turns=3), tasks


def play(task_setup, tok, turns, budget=100_000, ended=True, monkeypatch=None, **env):
    from dataclasses import replace

    config, tasks = task_setup
    monkeypatch.setattr(R, "generate", scripted(turns, tok, ended))
    trainer = SimpleNamespace(processing_class=tok, max_completion_length=budget)
    return R.AgentRollout(replace(config, **env), tasks)([[{"role": "user", "content": tasks[0].question}]], trainer)


def test_episode_endings(tiny, task_setup, monkeypatch):
    _, tok = tiny
    gold = task_setup[1][0].answer
    out = play(task_setup, tok, [call("search", query=["x"]), f"<answer>{gold}</answer>"], monkeypatch=monkeypatch)
    assert (out["env_reward"], out["answered"], out["no_answer"], out["turns"]) == ([1.0], [True], [""], [2])
    assert out["tool_calls"] == [{"search": 1}] and out["completion_ids"][0][-1] == tok.eos_token_id
    assert 0 in out["env_mask"][0] and len(out["env_mask"][0]) == len(out["completion_ids"][0]) == len(
        out["logprobs"][0]
    )
    assert [lp for lp, m in zip(out["logprobs"][0], out["env_mask"][0]) if not m] == [0.0] * out["env_mask"][0].count(0)

    cut = play(task_setup, tok, ["<answer>unfinish"], ended=False, monkeypatch=monkeypatch)
    assert (cut["env_reward"], cut["answered"], cut["no_answer"]) == ([0.0], [False], ["length"])

    capped = play(task_setup, tok, [call("search", query=["x"])], monkeypatch=monkeypatch, max_turns=1)
    assert capped["no_answer"] == ["env_truncated:max_turns"] and capped["env_mask"][0] == [1] * len(
        capped["completion_ids"][0]
    )

    first = tokenize(tok, call("search", query=["x"])) + [tok.eos_token_id]
    rolled = play(task_setup, tok, [call("search", query=["x"])], budget=len(first) + 20, monkeypatch=monkeypatch)
    assert rolled["no_answer"] == ["rollback"] and rolled["completion_ids"][0] == first  # the tool output is left out

    bad = play(
        task_setup,
        tok,
        [call("visit", url=["https://en.wikipedia.org/wiki/No_such_page_xyz"], goal="g"), "<answer>x</answer>"],
        monkeypatch=monkeypatch,
    )
    assert bad["tool_errors"] == [1] and bad["env_reward"] == [0.0]


def test_python_interpreter_is_refused_without_its_sandbox_and_unknown_prompts_are_clear(task_setup, monkeypatch):
    from dataclasses import replace

    from sim_web.tools.python import sandbox

    config, tasks = task_setup
    monkeypatch.setattr(sandbox, "sandbox_problem", lambda config=None: "bubblewrap is not on PATH")
    with pytest.raises(ConfigError, match="bubblewrap is not on PATH.*--set env.tools=search,visit,google_scholar"):
        R.AgentRollout(replace(config, tools=(*TOOLS, "PythonInterpreter")), tasks)
    monkeypatch.undo()
    with pytest.raises(ConfigError, match="task_dataset"):
        R.AgentRollout(config, tasks)(
            [[{"role": "user", "content": "not a task"}]],
            SimpleNamespace(processing_class=None, max_completion_length=8),
        )
    ds = R.task_dataset(tasks)
    assert ds[0]["prompt"] == [{"role": "user", "content": tasks[0].question}] and ds[0]["task_id"] == tasks[0].id
    with pytest.raises(ConfigError, match="env_reward"):
        R.env_reward(["x"])


@pytest.mark.skipif(
    __import__("sim_web.tools.python.sandbox", fromlist=["x"]).sandbox_problem() is not None,
    reason="no bubblewrap sandbox here (the sandbox tests in tests/sim_web say why)",
)
def test_python_interpreter_runs_in_the_sandbox_during_rollouts(tiny, task_setup, monkeypatch):
    """A rollout's PythonInterpreter call runs the code in the sandbox, whose output the policy sees as env tokens;
    the task file the env reads is not visible from inside."""
    _, tok = tiny
    code = "import os\nprint(sum(range(5)), os.path.exists(os.environ.get('SIM_WEB_HOME', '/nonexistent')))"
    turn = f'<tool_call>\n{{"name": "PythonInterpreter", "arguments": {{}}}}\n<code>\n{code}\n</code>\n</tool_call>'
    seen = []
    real_step = R.WebResearchEnv.step

    def spy(self, action):
        out = real_step(self, action)
        seen.append(out[0])
        return out

    monkeypatch.setattr(R.WebResearchEnv, "step", spy)
    out = play(
        task_setup, tok, [turn, "<answer>x</answer>"], monkeypatch=monkeypatch, tools=(*TOOLS, "PythonInterpreter")
    )
    assert out["tool_calls"] == [{"PythonInterpreter": 1}] and out["tool_errors"] == [0]
    assert "stdout:\n10 False" in seen[0], seen[0]
    assert 0 in out["env_mask"][0]  # the interpreter's output is in the completion as env tokens, out of the loss
