"""The TRL ``environment_factory`` shape: unit checks, then TRL's own GRPOTrainer driving it.

The trainer test uses a tiny randomly initialised Qwen3 (built from a config) whose
``generate`` replays a scripted Tongyi-style turn sequence, so that TRL's real tool-calling
loop (response parsing, tool dispatch, reward collection, one optimisation step) runs end to
end on CPU in seconds, with TRL's Qwen3 template and with ours (``with_tool_template``). Nothing of sim-web is
mocked.
"""

from __future__ import annotations

import inspect
import json
import os

import pytest

from sim_web.env import EnvConfig, WebResearchEnv
from sim_web.env.rewards import RewardConfig
from sim_web.env.tasks import Task
from sim_web.serve.trl import WebResearchToolEnv, answer_reward, task_dataset, tasks_dataset, with_tool_template
from simweb_core.errors import ConfigError


@pytest.fixture(scope="module")
def tool_env(sample_index):
    return WebResearchToolEnv(EnvConfig(index_dir=str(sample_index)))


def test_tools_schemas_and_reward(tool_env):
    from transformers.utils import get_json_schema

    public = sorted(
        n for n, _ in inspect.getmembers(type(tool_env), predicate=inspect.isfunction) if not n.startswith("_")
    )
    assert public == ["PythonInterpreter", "answer", "get_reward", "google_scholar", "reset", "search", "visit"]
    for name in ("search", "visit", "google_scholar", "PythonInterpreter", "answer"):
        schema = get_json_schema(getattr(tool_env, name))  # what TRL does with each tool method
        assert schema["function"]["name"] == name and schema["function"]["description"]
    assert tool_env.reset(question="Capital of France?", answer="Paris", aliases=["Paris, France"]) is None
    assert "## Web Results" in tool_env.search(query=["Paris France capital"])
    assert "Evidence in page" in tool_env.visit(url=["https://en.wikipedia.org/wiki/Paris"], goal="capital")
    assert tool_env.search(query=[]).startswith("Error:") and tool_env.errors == 1  # a mistake is an observation
    assert tool_env.get_reward() == 0.0  # nothing submitted yet
    assert tool_env.answer(answer="paris, france") == "Answer recorded."
    assert tool_env.answer(answer="Lyon").startswith("Error") and tool_env.get_reward() == 1.0
    tool_env.reset(question="q", answer="Paris")
    assert tool_env.errors == 0 and tool_env.get_reward() == 0.0


def test_get_reward_applies_the_call_cost_as_the_gym_env_does(sample_index):
    tool_env = WebResearchToolEnv(EnvConfig(index_dir=str(sample_index), reward=RewardConfig(call_cost=0.1)))
    tool_env.reset(question="Capital of France?", answer="Paris")
    tool_env.search(query=["Paris France capital"])
    tool_env.visit(url=["https://en.wikipedia.org/wiki/Paris"], goal="capital")
    tool_env.answer(answer="Paris")
    assert tool_env.calls == 2 and tool_env.get_reward() == pytest.approx(0.8)
    tool_env.reset(question="q", answer="Paris")
    assert tool_env.calls == 0
    with pytest.raises(ConfigError, match="cannot apply call_cost=0.0 or call_penalty=0.2"):
        answer_reward(["<answer>Paris</answer>"], answer=["Paris"], config=RewardConfig(call_penalty=0.2))
    with pytest.raises(ConfigError, match="cannot apply call_cost=0.1"):
        answer_reward(["<answer>Paris</answer>"], answer=["Paris"], config=RewardConfig(call_cost=0.1))


def test_get_reward_leaves_the_row_s_oracle_searches_free(sample_index):
    reward = RewardConfig(call_cost=0.1, free_calls="oracle")
    tool_env = WebResearchToolEnv(EnvConfig(index_dir=str(sample_index), reward=reward))
    row = task_dataset([Task("t", "Capital of France?", "Paris", (), {"difficulty": {"oracle_searches": 1}})])[0]
    assert row["oracle_searches"] == 1
    tool_env.reset(**row)
    tool_env.search(query=["Paris France capital"])
    tool_env.search(query=["France"])
    tool_env.answer(answer="Paris")
    assert tool_env.calls == 2 and tool_env.get_reward() == pytest.approx(0.9)
    with pytest.raises(ConfigError, match="difficulty.oracle_searches"):
        tool_env.reset(question="q", answer="Paris")


def test_get_reward_credits_the_row_s_subgoals_as_the_gym_env_does(sample_index):
    cfg = EnvConfig(index_dir=str(sample_index), reward=RewardConfig(subgoal_credit=0.25))
    task = Task(
        "t", "Which city is the capital of the country of French?", "Paris", (), {"clues": [{"entity": "France"}]}
    )
    row = task_dataset([task])[0]
    assert row["subgoals"] == ["France"]
    tool_env, env = WebResearchToolEnv(cfg), WebResearchEnv(cfg, tasks=[task])
    tool_env.reset(**row)
    env.reset(options={"task": task})
    for q in (["French language"], ["capital of France"]):
        tool_env.search(query=q)
        env.step(f"<tool_call>\n{json.dumps({'name': 'search', 'arguments': {'query': q}})}\n</tool_call>")
    tool_env.answer(answer="Lyon")
    assert tool_env.get_reward() == env.step("<answer>Lyon</answer>")[1] == pytest.approx(0.25)
    env.close()
    with pytest.raises(ConfigError, match="cannot see which subgoals"):
        answer_reward(["<answer>Paris</answer>"], answer=["Paris"], config=RewardConfig(subgoal_credit=0.2))


def test_echo_penalty_scores_alike_in_the_gym_env_the_tool_env_and_answer_reward(sample_index):
    cfg = EnvConfig(index_dir=str(sample_index), reward=RewardConfig(echo_penalty=0.2))
    task = Task("t", "Which city is the capital of the country whose language is French?", "Paris", ())
    row = task_dataset([task])[0]
    tool_env, env = WebResearchToolEnv(cfg), WebResearchEnv(cfg, tasks=[task])
    for said, want in (("French", -0.2), ("Lyon", 0.0), ("Paris", 1.0)):
        tool_env.reset(**row)
        env.reset(options={"task": task})
        tool_env.search(query=["French language"])
        env.step(
            f"<tool_call>\n{json.dumps({'name': 'search', 'arguments': {'query': ['French language']}})}\n</tool_call>"
        )
        tool_env.answer(answer=said)
        from_env = env.step(f"<answer>{said}</answer>")[1]
        pure = answer_reward(
            [f"<answer>{said}</answer>"], answer=["Paris"], config=cfg.reward, question=[row["question"]]
        )
        assert tool_env.get_reward() == from_env == pure[0] == pytest.approx(want)
    env.close()
    with pytest.raises(ConfigError, match="needs each row's question"):
        answer_reward(["<answer>French</answer>"], answer=["Paris"], config=cfg.reward)


def test_answer_reward_reads_the_answer_the_env_scores(sample_index):
    task = Task("capital", "What is the capital of France?", "Paris")
    env = WebResearchEnv(EnvConfig(index_dir=str(sample_index)), tasks=[task])
    turns = [
        "<answer>Paris</answer> on second thought <answer>Lyon</answer>",
        "<think><answer>Lyon</answer></think><answer>Paris</answer>",
        "<answer>Paris</answer><tool_response><answer>Lyon</answer>",
        "<answer>Paris",
    ]
    for turn in turns:
        env.reset(options={"task": task})
        _, env_reward, *_ = env.step(turn)
        assert answer_reward([turn], answer=["Paris"]) == [env_reward]
    assert answer_reward(turns, answer=["Paris"] * 4) == [1.0, 1.0, 1.0, 0.0]
    env.close()


def test_answer_reward_is_pure_and_reads_the_last_assistant_message():
    completions = [
        "<think>a</think><answer>The Paris</answer>",
        "no tag",
        [
            {"role": "assistant", "content": "<answer>x</answer>"},
            {"role": "tool", "content": "..."},
            {"role": "assistant", "content": "<answer>Lyon</answer>"},
        ],
    ]
    assert answer_reward(completions, answer=["Paris", "Paris", "Lyon"]) == [1.0, 0.0, 1.0]
    assert answer_reward(["<answer>Paris France</answer>"], answer=["Paris"], config=RewardConfig(kind="f1")) == [
        pytest.approx(2 / 3)
    ]
    assert answer_reward(["<answer>PRC</answer>"], answer=["China"], aliases=[["PRC"]]) == [1.0]


def test_tasks_dataset_has_prompts(sample_index):
    ds = tasks_dataset(EnvConfig(index_dir=str(sample_index)), split="test")
    assert len(ds) > 10 and set(ds.column_names) >= {"prompt", "question", "answer", "aliases", "task_id"}
    assert ds[0]["prompt"] == [{"role": "user", "content": ds[0]["question"]}]


SCRIPT = [
    '<tool_call>\n{"name": "search", "arguments": {"query": ["capital city of France"]}}\n</tool_call><|im_end|>',
    '<tool_call>\n{"name": "answer", "arguments": {"answer": "Paris"}}\n</tool_call><|im_end|>',
    "Done.<|im_end|>",
]


def _tiny_qwen3_and_tokenizer(template: str = "qwen3"):
    import torch
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM
    from trl.chat_template_utils import qwen3_chat_template

    specials = [
        "<|endoftext|>",
        "<|im_start|>",
        "<|im_end|>",
        "<tool_call>",
        "</tool_call>",
        "<think>",
        "</think>",
        "<tool_response>",
        "</tool_response>",
    ]
    chars = sorted({chr(c) for c in range(32, 127)} | {"\n"})
    tk = Tokenizer(models.WordLevel({w: i for i, w in enumerate(specials + chars + ["<unk>"])}, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Split("", "isolated")  # one token per character
    tk.add_special_tokens([AddedToken(s, special=True) for s in specials])
    tk.decoder = decoders.Fuse()  # decode by concatenation, no spaces between characters
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    if template == "qwen3":
        tok.chat_template = qwen3_chat_template  # TRL knows how to parse this template's tool calls
    else:
        with_tool_template(tok)  # ours: the template and parser shipped for the offline ChatML models

    class ScriptedQwen3(Qwen3ForCausalLM):
        """A real (tiny, random) Qwen3 whose sampling is replaced by a fixed Tongyi-style script."""

        def generate(self, input_ids=None, attention_mask=None, **kwargs):
            rows = []
            for ids in input_ids:
                prompt = tok.decode(ids, skip_special_tokens=False)
                turn = min(prompt.count("<tool_response>"), len(SCRIPT) - 1)
                rows.append(tok.encode(SCRIPT[turn], add_special_tokens=False))
            width = max(map(len, rows))
            out = torch.full((len(rows), width), tok.pad_token_id, dtype=input_ids.dtype)
            for i, r in enumerate(rows):
                out[i, : len(r)] = torch.tensor(r)
            return torch.cat([input_ids, out], dim=1)

    cfg = Qwen3Config(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        max_position_embeddings=8192,
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    return ScriptedQwen3(cfg), tok


@pytest.mark.parametrize("template", ["qwen3", "with_tool_template"])
def test_grpo_trainer_runs_multi_turn_rollouts_on_the_env(sample_index, tmp_path, monkeypatch, template):
    import datasets
    from trl import GRPOConfig, GRPOTrainer

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model, tok = _tiny_qwen3_and_tokenizer(template)
    row = {
        "prompt": [{"role": "user", "content": "What is the capital of France?"}],
        "question": "What is the capital of France?",
        "answer": "Paris",
        "aliases": ["Paris, France"],
    }
    made = []

    def factory() -> WebResearchToolEnv:
        made.append(WebResearchToolEnv(EnvConfig(index_dir=str(sample_index), max_response_chars=400)))
        return made[-1]

    args = GRPOConfig(
        output_dir=str(tmp_path),
        max_steps=1,
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=1500,
        report_to="none",
        use_cpu=True,
        save_strategy="no",
        logging_steps=1,
        loss_type="dapo",
        mask_truncated_completions=True,
        beta=0.0,
        seed=0,
    )
    trainer = GRPOTrainer(
        model=model,
        processing_class=tok,
        args=args,
        train_dataset=datasets.Dataset.from_list([row] * 4),
        environment_factory=factory,
    )
    assert sorted(t.__name__ for t in trainer.tools) == [
        "PythonInterpreter",
        "answer",
        "google_scholar",
        "search",
        "visit",
    ]
    trainer.train()
    logs = trainer.state.log_history[0]
    assert logs["tools/call_frequency"] > 0 and logs["tools/failure_frequency"] == 0
    assert logs["rewards/WebResearchToolEnv/mean"] == 1.0  # every rollout searched, then answered "Paris"
    assert any(e._toolbox.executor.stats.counts()["tools"].get("search", {}).get("calls") for e in made)
    assert os.environ["TRL_EXPERIMENTAL_SILENCE"] == "1"
