"""One real oracle trajectory, three ways: as the SFT example, as the GRPO rollout builds it, as the eval loop prompts.

Every assistant span and every tool span must be the same token ids in all three, and the answer must be
scored by the same reward code (the env's ``score_answer``). Both system prompt styles (``EnvConfig.prompt``).
"""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from types import SimpleNamespace  # noqa: E402

TOOLS = ("search", "visit", "google_scholar")  # PythonInterpreter off, as in every training recipe


@pytest.fixture(scope="module", params=["tongyi", "compact"])
def oracle_run(sample_index, request):
    """An oracle episode run through the real eval loop, with the HF prompt of every policy call recorded."""
    from agents.config import AgentConfig
    from agents.loop import ReactAgent, run_episode
    from agents.policies.oracle import OraclePolicy
    from sim_web.env import EnvConfig, WebResearchEnv
    from sim_web.env.tasks import derive_tasks
    from sim_web.tools import system_prompt, tool_schema
    from training.grpo.tiny import tiny_model
    from wiki_index.search.index import WikiIndex

    tasks = [t for t in derive_tasks(WikiIndex.from_dir(sample_index).store) if t.metadata["split"] == "test"]
    style = request.param
    model, tok = tiny_model(
        [system_prompt([tool_schema(t) for t in TOOLS], "2025-01-01", style=style)] + [t.question for t in tasks[:20]]
    )
    env_config = EnvConfig(index_dir=str(sample_index), tools=TOOLS, max_turns=12, prompt=style)
    env = WebResearchEnv(env_config, tasks=tasks)
    from agents.policies.hf_policy import HFConfig, HFPolicy

    hf = HFPolicy(HFConfig("tiny"), model=model, tokenizer=tok)

    class RecordingOracle(OraclePolicy):
        prompts: list[str] = []

        def generate(self, batch, sampling=None, seeds=None):
            self.prompts.extend(hf.prompt(m) for m in batch)
            return super().generate(batch, sampling, seeds)

    for task in tasks:
        policy = RecordingOracle(tasks, env.index.store)
        policy.prompts = []
        rec = run_episode(ReactAgent(policy, AgentConfig(max_llm_calls=10)), env, task).to_dict()
        if rec["em"] == 1.0 and sum(rec["tool_calls"].values()) >= 2:
            assert rec["messages"][0]["content"] == env.system_prompt
            return SimpleNamespace(
                rec=rec, prompts=policy.prompts, tok=tok, env_config=env_config, tasks=tasks, task=task
            )
    pytest.fail("the oracle solved no held-out task of the sample with two tool calls")


def runs(mask):
    """``(value, start, end)`` of each run of equal values."""
    out, start = [], 0
    for i in range(1, len(mask) + 1):
        if i == len(mask) or mask[i] != mask[start]:
            out.append((mask[start], start, i))
            start = i
    return out


def test_sft_rollout_and_eval_agree_token_for_token(oracle_run, monkeypatch):
    from agents.trajectory import sft_example
    from sim_web.env.rewards import score_answer
    from training.grpo import rollout as R
    from training.wire import encode_chat, tokenize

    tok, rec = oracle_run.tok, oracle_run.rec
    messages = sft_example({**rec, "correct": rec["em"]})["messages"]
    compact = oracle_run.env_config.prompt == "compact"
    assert messages[0]["role"] == "system" and ("<tools>" in messages[0]["content"]) != compact
    assistant_texts = [m["content"] for m in messages if m["role"] == "assistant"]
    assert len(assistant_texts) >= 3

    # (a) SFT: the chat encoded once, with role spans
    enc = encode_chat(tok, messages)
    sft_assistant = enc.span_ids("assistant")
    glue = [s.role for s in enc.spans]
    sft_tool = []  # what sits between two assistant turns: the separator, the tool turn, the next header
    for i, s in enumerate(enc.spans):
        if s.role == "tool":
            sft_tool.append(enc.ids[enc.spans[i - 1].start : enc.spans[i + 1].end])
    assert glue.count("tool") == len(assistant_texts) - 1 == len(sft_tool)

    # (b) GRPO: the rollout, with the oracle's turns as the "generated" ids
    turn = iter(assistant_texts)
    eos = tok.eos_token_id

    def scripted(trainer, contexts, max_new, seed, batch_size=16, **_):
        ids = tokenize(tok, next(turn)) + [eos]
        return [(ids, [0.0] * len(ids), True) for _ in contexts]

    monkeypatch.setattr(R, "generate", scripted)
    trainer = SimpleNamespace(processing_class=tok, max_completion_length=100_000)
    out = R.AgentRollout(oracle_run.env_config, oracle_run.tasks)(
        [[{"role": "user", "content": oracle_run.task.question}]], trainer
    )
    completion, mask = out["completion_ids"][0], out["env_mask"][0]
    assert out["answered"] == [True] and out["no_answer"] == [""]
    rollout_assistant = [completion[a:b] for v, a, b in runs(mask) if v == 1]
    rollout_tool = [completion[a:b] for v, a, b in runs(mask) if v == 0]
    assert out["prompt_ids"][0] == enc.ids[: enc.spans[2].end]  # system, question, first assistant header
    assert out["prompt_ids"][0] + completion == enc.ids[: len(out["prompt_ids"][0]) + len(completion)]

    # (c) eval: what the eval loop prompted the model with, turn by turn
    eval_ids = [tokenize(tok, p) for p in oracle_run.prompts]
    assert len(eval_ids) == len(assistant_texts)
    assert eval_ids[0] == out["prompt_ids"][0]
    eval_assistant, eval_tool = [], []
    for k in range(len(eval_ids) - 1):
        assert eval_ids[k + 1][: len(eval_ids[k])] == eval_ids[k], "the eval prompt is not prefix-preserving"
        new = eval_ids[k + 1][len(eval_ids[k]) :]
        n = len(tokenize(tok, assistant_texts[k])) + 1  # the turn's content and its end-of-turn token
        eval_assistant.append(new[:n])
        eval_tool.append(new[n:])

    assert rollout_assistant == sft_assistant and eval_assistant == sft_assistant[:-1]
    assert rollout_tool == sft_tool == eval_tool
    assert all(ids[-1] == eos for ids in sft_assistant)

    # one reward code: the env's score_answer, in eval (the record) and in the rollout (the reward field)
    task = oracle_run.task
    gold = score_answer(rec["prediction"], task.answer, task.aliases, task.question)["reward"]
    assert R.env_reward([None], env_reward=out["env_reward"]) == [rec["em"]] == [gold] == [1.0]
