"""SFT cold start: rejection-sampling filters, the loss mask on a real oracle trajectory, a tiny end-to-end run."""

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from sim_web.protocol import TOOL_NAMES  # noqa: E402
from simweb_core.errors import ConfigError  # noqa: E402
from training.sft.collect import CollectConfig, collect, format_stats, select  # noqa: E402
from training.wire import CHATML  # noqa: E402

# ---------------------------------------------------------------- collect filters on hand-made trajectories


def record(
    key,
    answer="<answer>Paris</answer>",
    correct=1.0,
    turns=2,
    kinds=("tool_call", "answer"),
    obs_error=None,
    termination="answer",
    level="easy",
    types=("counting",),
):
    msgs = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "Capital of France?"},
        {
            "role": "assistant",
            "content": '<tool_call>{"name": "search", "arguments": {"query": ["France"]}}</tool_call>',
        },
        {"role": "user", "content": "<tool_response>\nParis is the capital.\n</tool_response>"},
        {"role": "assistant", "content": answer},
    ]
    steps = [{"kind": k, "obs_error": obs_error if i == 0 else None} for i, k in enumerate(kinds)]
    return {
        "key": key,
        "task_id": key.split("#")[0],
        "sample": int(key.split("#")[1]),
        "correct": correct,
        "em": correct,
        "termination": termination,
        "turns": turns,
        "steps": steps,
        "summaries": [],
        "messages": msgs,
        "policy": "oracle",
        "metadata": {"uncertainty_types": list(types), "difficulty": {"level": level}},
    }


def test_collect_rejects_and_counts_each_kind_of_bad_episode():
    records = [
        record("good#0"),
        record("wrong#0", answer="<answer>Lyon</answer>", correct=0.0),
        record("malformed#0", kinds=("invalid", "answer")),
        record("tool#0", obs_error="unreachable"),
        record("long#0", turns=5, level="hard"),
        record("capped#0", termination="max_llm_calls", correct=0.0, level="hard"),
        record("forced#0", termination="forced_answer:context", level="hard"),
        record("good#1"),  # same texts as good#0: a duplicate
        record("other#0", answer="<answer>Paris, France</answer>", types=("counting", "negation"), level="medium"),
    ]
    kept, stats = select(records, CollectConfig(max_turns=4))
    table = stats.table()
    print(format_stats(stats))
    assert [r["key"] for r in kept] == ["good#0", "other#0"]
    assert table["rejected"] == {
        "over_turn_cap": 2,
        "no_answer": 1,
        "malformed": 1,
        "tool_error": 1,
        "summarised": 0,
        "incorrect": 1,
        "duplicate": 1,
    }
    assert table["overall"] == {"seen": 9, "kept": 2, "rate": 0.2222}
    assert table["groups"]["difficulty=hard"] == {"seen": 3, "kept": 0, "rate": 0.0}
    assert table["groups"]["uncertainty_type=negation"] == {"seen": 1, "kept": 1, "rate": 1.0}
    assert table["groups"]["uncertainty_type=counting"]["seen"] == 9


def test_forced_answers_at_the_call_cap_are_kept_only_when_asked_and_as_the_model_saw_them():
    forced = record("forced#0", termination="forced_answer:calls")
    forced["context"] = forced["messages"][:3] + [
        {"role": "user", "content": "You have now reached the maximum..."},
        forced["messages"][4],
    ]
    context_cut = record("ctx#0", termination="forced_answer:context")
    context_cut["context"] = forced["context"]
    kept, stats = select([forced, context_cut], CollectConfig(max_turns=4))
    assert kept == [] and stats.reasons["over_turn_cap"] == 1 and stats.reasons["no_answer"] == 1
    kept, stats = select([forced, context_cut], CollectConfig(max_turns=4, forced_answers=True))
    assert [r["key"] for r in kept] == ["forced#0"] and stats.reasons[
        "no_answer"
    ] == 1  # only the call cap's forced answer
    assert kept[0]["messages"] == forced["context"] and "maximum" in kept[0]["messages"][3]["content"]
    wrong = {**forced, "key": "forced#1", "correct": 0.0, "em": 0.0}
    assert select([wrong], CollectConfig(max_turns=4, forced_answers=True))[1].reasons["incorrect"] == 1


def write_run(folder, records, tools=TOOL_NAMES, split="train", prompt=None):
    folder.mkdir(parents=True, exist_ok=True)
    identity = {"policy": "oracle", "split": split, "tools": list(tools), **({"prompt": prompt} if prompt else {})}
    (folder / "run.json").write_text(json.dumps({"identity": identity}))
    (folder / "trajectories.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records) + '{"key": "cut')
    return folder


def test_collect_refuses_unknown_tools_and_held_out_splits(tmp_path):
    ok = write_run(tmp_path / "ok", [record("a#0"), record("a#1", answer="<answer>paris</answer>")])
    res = collect(CollectConfig(runs=(str(ok),)))
    assert (
        res.stats.kept == 2 and res.sources[0]["k"] == 2 and res.sources[0]["tasks"] == 1
    )  # the cut-off line is skipped
    py = write_run(tmp_path / "py", [record("a#0")], tools=("search", "PythonInterpreter"))
    assert collect(CollectConfig(runs=(str(py),))).stats.kept == 1  # the sandboxed interpreter is a recipe tool
    bogus = write_run(tmp_path / "bogus", [record("a#0")], tools=("search", "browser"))
    with pytest.raises(ConfigError, match="\\['browser'\\], which are not tools of the env"):
        collect(CollectConfig(runs=(str(bogus),)))
    test = write_run(tmp_path / "test", [record("a#0")], split="test")
    with pytest.raises(ConfigError, match="train split"):
        collect(CollectConfig(runs=(str(test),)))
    with pytest.raises(ConfigError, match="tuple"):
        CollectConfig(runs=str(ok))


def test_collect_records_the_prompt_style_and_refuses_a_mix(tmp_path):
    tongyi = write_run(tmp_path / "tongyi", [record("a#0")])  # the harness names only a non-default style
    compact = write_run(tmp_path / "compact", [record("b#0")], prompt="compact")
    compact2 = write_run(tmp_path / "compact2", [record("c#0")], prompt="compact")
    assert collect(CollectConfig(runs=(str(tongyi),))).prompt == "tongyi"
    res = collect(CollectConfig(runs=(str(compact), str(compact2))))
    assert res.prompt == "compact" and [s["prompt"] for s in res.sources] == ["compact", "compact"]
    with pytest.raises(ConfigError, match=f"different system prompt styles \\(compact: {compact}; tongyi: {tongyi}\\)"):
        collect(CollectConfig(runs=(str(tongyi), str(compact))))


# ---------------------------------------------------------------- a real oracle trajectory and a tiny model


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    """A 2-layer random Llama + a byte-level BPE with ChatML tokens, saved as a model folder (no downloads)."""
    from sim_web.tools import system_prompt, tool_schema
    from training.grpo.tiny import tiny_model

    model, tok = tiny_model(
        [system_prompt([tool_schema(t) for t in TOOL_NAMES], "2025-01-01"), "https://en.wikipedia.org/wiki/"]
    )
    path = tmp_path_factory.mktemp("tiny") / "tiny-llama"
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def oracle_run(sample_index, tmp_path_factory):
    """Two oracle episodes on the sample's train split through the eval harness, recipe tools (no PythonInterpreter)."""
    from agents.config import AgentConfig
    from agents.harness import EvalConfig, run_eval

    out = tmp_path_factory.mktemp("oracle")
    run_eval(
        EvalConfig(
            policy="oracle",
            index_dir=str(sample_index),
            split="train",
            n=2,
            out=str(out),
            agent=AgentConfig(max_llm_calls=8),
            progress=False,
        )
    )
    return out


@pytest.fixture(scope="module")
def sft_data(oracle_run, tiny_dir, tmp_path_factory):
    """``(dataset folder, kept records, tokenizer)`` built by ``sim-web sft collect``."""
    from transformers import AutoTokenizer

    from sim_web.cli import main

    out = tmp_path_factory.mktemp("data") / "sft"
    assert (
        main(["sft", "collect", str(oracle_run), "--tokenizer", str(tiny_dir), "--max-turns", "8", "--out", str(out)])
        == 0
    )
    kept = [json.loads(line) for line in (out / "kept.jsonl").read_text().splitlines()]
    return out, kept, AutoTokenizer.from_pretrained(str(tiny_dir))


def test_loss_mask_on_a_real_oracle_trajectory(sft_data, tmp_path):
    """TRL's own preparation of the pre-tokenised example: assistant tokens labelled, nothing else."""
    from trl import SFTConfig, SFTTrainer

    from training.sft.dataset import load
    from training.wire import encode_chat

    folder, kept, tok = sft_data
    ds = load(folder)
    assert len(ds) == len(kept) == 2 and json.loads(ds[0]["tools"])[0]["function"]["name"] == "search"
    args = SFTConfig(output_dir=str(tmp_path), max_length=None, report_to="none", use_cpu=True, disable_tqdm=True)
    trainer = SFTTrainer(
        model=_model(tok),
        args=args,
        train_dataset=ds.select_columns(["input_ids", "assistant_masks"]),
        processing_class=tok,
    )
    messages = ds[0]["messages"]
    enc = encode_chat(tok, messages)
    prepared = trainer.train_dataset[0]
    labels = prepared["labels"]
    assert prepared["input_ids"] == enc.ids and len(labels) == len(enc.ids)
    batch = trainer.data_collator([trainer.train_dataset[i] for i in range(len(ds))])
    assert batch["labels"][0, : len(labels)].tolist() == labels  # the collator keeps them
    print(f"\n{len(enc.ids)} tokens, {sum(enc.assistant_mask)} trained")
    for s in enc.spans:
        trained = [lab != -100 for lab in labels[s.start : s.end]]
        print(
            f"{s.role:>9} msg {s.message:>2} tokens {s.start:>5}-{s.end:<5} trained {sum(trained):>4}  "
            f"{tok.decode(enc.ids[s.start : s.end])[:60]!r}"
        )
        if s.role == "assistant":
            assert all(trained) and labels[s.start : s.end] == enc.ids[s.start : s.end]
        else:
            assert not any(trained), f"{s.role} span of message {s.message} is labelled"
    roles = {s.role for s in enc.spans}
    assert {"system", "user", "tool", "assistant", "header"} <= roles
    trained_text = tok.decode([i for i, lab in zip(enc.ids, labels) if lab != -100])
    assistants = [m["content"] for m in messages if m["role"] == "assistant"]
    assert trained_text == "".join(a + "<|im_end|>" for a in assistants)
    assert "<tool_response>" not in trained_text and messages[1]["content"] not in trained_text
    # TRL's own conversational path (messages + the tools JSON string) renders the same ids
    conv = SFTTrainer(
        model=_model(tok), args=args, train_dataset=ds.select_columns(["messages", "tools"]), processing_class=tok
    )
    assert conv.train_dataset[0]["input_ids"] == enc.ids


def _model(tok):
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=8192,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return LlamaForCausalLM(cfg)


def test_collect_card_and_wire_check(sft_data, tiny_dir):
    from transformers import AutoTokenizer

    from training.sft.dataset import load
    from training.sft.train import check_wire

    folder, _, tok = sft_data
    card = (folder / "README.md").read_text()
    assert (
        "examples: 2" in card
        and "| oracle | train | search, visit, PythonInterpreter, google_scholar | tongyi |" in card
    )
    assert "tiny-llama" in card and "system prompt: `tongyi`" in card
    assert json.loads((folder / "acceptance.json").read_text())["overall"]["kept"] == 2
    other = AutoTokenizer.from_pretrained(str(tiny_dir))
    other.chat_template = CHATML.replace("{{ m['role'] }}\n", "{{ m['role'] }}:\n").replace(
        "assistant\n", "assistant:\n"
    )
    with pytest.raises(ConfigError, match="another tokenizer or chat template"):
        check_wire(other, load(folder))
    check_wire(tok, load(folder))


def test_tiny_sft_run_saves_a_model_hf_policy_loads(sft_data, tiny_dir, tmp_path):
    from safetensors.torch import load_file

    from agents.config import SamplingConfig
    from agents.policies.hf_policy import HFConfig, HFPolicy
    from training.sft.train import SFTRunConfig, train

    folder, kept, _ = sft_data
    out = train(
        SFTRunConfig(
            dataset=str(folder),
            model=str(tiny_dir),
            out=str(tmp_path / "sft"),
            lora=True,
            lora_r=4,
            learning_rate=1e-2,
            max_steps=3,
            threads=1,
            progress=False,
        )
    )
    summary = json.loads((out / "sft_run.json").read_text())
    assert summary["train_metrics"]["train_loss"] > 0 and len([h for h in summary["log_history"] if "loss" in h]) == 3
    assert not (out / "adapter_config.json").exists()  # merged: a plain model folder
    before, after = load_file(tiny_dir / "model.safetensors"), load_file(out / "model.safetensors")
    assert before.keys() == after.keys() and any(not torch.equal(before[k], after[k]) for k in before)
    policy = HFPolicy(HFConfig(str(out)), SamplingConfig(temperature=0.0, max_tokens=4))
    gen = policy.generate([kept[0]["messages"][:2]])[0]
    assert gen.completion_tokens is not None and 1 <= gen.completion_tokens <= 4
    assert policy.tokenizer.chat_template == CHATML


def test_bf16_sft_trains_under_autocast_and_saves_float32_weights(sft_data, tiny_dir, tmp_path, autocasts):
    from safetensors.torch import load_file

    from training.sft.train import SFTRunConfig, train

    folder, _, _ = sft_data
    out = train(
        SFTRunConfig(
            dataset=str(folder),
            model=str(tiny_dir),
            out=str(tmp_path / "sft"),
            lora=False,
            max_steps=2,
            bf16=True,
            threads=1,
            progress=False,
            save_steps=0,
        )
    )
    summary = json.loads((out / "sft_run.json").read_text())
    assert summary["config"]["bf16"] is True and torch.bfloat16 in autocasts
    assert all(0 < h["loss"] < 100 for h in summary["log_history"] if "loss" in h)
    before, after = load_file(tiny_dir / "model.safetensors"), load_file(out / "model.safetensors")
    assert all(t.dtype == torch.float32 for t in after.values())  # mixed precision: the weights stay float32
    assert any(not torch.equal(before[k], after[k]) for k in before)


def test_sft_train_flags_reach_the_run_config():
    from sim_web.cli import make_parser
    from training.sft.cli import train_config
    from training.sft.train import SFTRunConfig

    argv = ["sft", "train", "--dataset", "d", "--out", "o", "--full", "--learning-rate", "1e-5", "--max-steps", "3"]
    cfg = train_config(
        make_parser().parse_args([*argv, "--no-resume", "--gradient-checkpointing", "--threads", "2", "--bf16"])
    )
    assert cfg == SFTRunConfig(
        dataset="d",
        out="o",
        lora=False,
        learning_rate=1e-5,
        max_steps=3,
        resume=False,
        gradient_checkpointing=True,
        threads=2,
        bf16=True,
    )
    assert train_config(make_parser().parse_args(["sft", "train", "--dataset", "d", "--out", "o"])) == SFTRunConfig(
        dataset="d", out="o"
    )
