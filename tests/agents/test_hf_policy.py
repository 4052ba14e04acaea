"""The local transformers policy with a tiny randomly initialised model (no downloads)."""

import pytest

torch = pytest.importorskip("torch")

from agents.config import AgentConfig, SamplingConfig  # noqa: E402
from agents.harness import EvalConfig, fit_to_window, run_eval  # noqa: E402
from agents.policies.hf_policy import HFConfig, HFPolicy  # noqa: E402
from simweb_core.errors import ConfigError  # noqa: E402

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@pytest.fixture(scope="module")
def tiny():
    """A 2-layer Llama with a 400-token byte-level BPE trained on the Tongyi prompt."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    from sim_web.protocol import TOOL_NAMES
    from sim_web.tools import system_prompt, tool_schema

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<|im_start|>", "<|im_end|>", "<|pad|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    bpe.train_from_iterator(
        [system_prompt([tool_schema(t) for t in TOOL_NAMES], "2025-01-01"), "<tool_call> <answer> search visit"],
        trainer,
    )
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|pad|>")
    tok.chat_template = CHATML
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = LlamaForCausalLM(cfg)
    return model, tok


def make(tiny, **kw):
    model, tok = tiny
    return HFPolicy(
        HFConfig("tiny-llama", **kw), SamplingConfig(temperature=0.0, max_tokens=6), model=model, tokenizer=tok
    )


def test_batched_greedy_generation(tiny):
    p = make(tiny, batch_size=2)
    chats = [
        [{"role": "user", "content": "search for rowing"}],
        [{"role": "system", "content": "You are brief."}, {"role": "user", "content": "visit a page about boats"}],
        [{"role": "user", "content": "x"}],
    ]
    gens = p.generate(chats)
    assert len(gens) == 3 and all(g.completion_tokens is not None and 1 <= g.completion_tokens <= 6 for g in gens)
    assert [g.prompt_tokens for g in gens] == [p.count_tokens(c) for c in chats]
    assert [g.text for g in p.generate(chats)] == [g.text for g in gens]  # greedy is deterministic
    assert p.generated_tokens == 2 * sum(g.completion_tokens for g in gens)
    sampled = p.generate(chats, SamplingConfig(temperature=1.0, presence_penalty=1.0, max_tokens=6), seeds=[7, 7, 7])
    again = p.generate(chats, SamplingConfig(temperature=1.0, presence_penalty=1.0, max_tokens=6), seeds=[7, 7, 7])
    assert [g.text for g in sampled] == [g.text for g in again]  # seeded sampling, global RNG untouched


def test_context_window_fitting(tiny):
    p = make(tiny)
    assert p.context_window == 4096 and p.batched
    fitted = fit_to_window(AgentConfig(), p.context_window)
    assert fitted.sampling.max_tokens == 1024 and fitted.max_context_tokens == 3072
    with pytest.raises(ConfigError, match="hf:smollm2"):
        HFPolicy(HFConfig("/no/such/model"))


def test_eval_with_a_local_model_runs_episodes_in_lockstep(tiny, sample_index, tmp_path):
    p = make(tiny, batch_size=4)
    agent = AgentConfig(max_llm_calls=2, sampling=SamplingConfig(temperature=0.0, max_tokens=6))
    res = run_eval(
        EvalConfig(
            policy="hf:tiny-llama",
            index_dir=str(sample_index),
            n=3,
            batch_size=4,
            agent=agent,
            out=str(tmp_path),
            progress=False,
        ),
        policy=p,
    )
    assert res.metrics["episodes"] == 3 and not res.failures
    for r in res.records:
        assert r["llm_calls"] == 2 and r["termination"].startswith(("answer", "forced", "max_", "env_"))
        assert all(s["completion_tokens"] <= 6 for s in r["steps"])
    assert res.metrics["run"]["generated_tokens_per_second"] > 0
