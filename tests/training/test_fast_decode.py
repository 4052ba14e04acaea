"""The fast decode path (agents.policies.fast_decode): the same logits, ids and logprobs as transformers' own decode,
with a cache that is written in place instead of copied on every token."""

import random

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from agents.policies import fast_decode as F  # noqa: E402
from agents.policies.kv_reuse import PrefixKV  # noqa: E402
from training.grpo import rollout as R  # noqa: E402
from training.grpo.tiny import tiny_model  # noqa: E402


def gqa_llama(seed=0):
    """A tiny random Llama with grouped-query attention (4 query heads share 2 key/value heads), as SmolLM2 has."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=97,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        attn_implementation="sdpa",
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return LlamaForCausalLM(config).eval()


def left_padded(rows, width, seed=0):
    rng = random.Random(seed)
    ids = torch.zeros((rows, width), dtype=torch.long)
    mask = torch.zeros_like(ids)
    for r in range(rows):
        n = rng.randrange(2, width + 1)
        ids[r, width - n :] = torch.tensor([rng.randrange(1, 97) for _ in range(n)])
        mask[r, width - n :] = 1
    return ids, mask


def test_fast_decode_gives_the_models_own_greedy_ids_and_logits():
    model = gqa_llama()
    ids, mask = left_padded(5, 13)
    kw = {"max_new_tokens": 70, "do_sample": False, "output_logits": True, "return_dict_in_generate": True}
    with torch.no_grad():
        plain = model.generate(input_ids=ids, attention_mask=mask, **kw)
        with F.fast_decode(model) as on:
            fast = model.generate(input_ids=ids, attention_mask=mask, cache=F.grow_cache(model.config), **kw)
    assert on and model.config._attn_implementation == "sdpa"  # switched for the block only
    assert torch.equal(plain.sequences, fast.sequences)
    assert max((a - b).abs().max().item() for a, b in zip(plain.logits, fast.logits)) < 1e-4
    # 83 one-token updates: the buffer is allocated once and grown once (by CHUNK columns), never once per token
    layer = F.grow_cache(model.config).layers[0]
    grows = 0
    for _ in range(83):
        before = layer._kbuf
        layer.update(torch.zeros(5, 2, 1, 16), torch.zeros(5, 2, 1, 16))
        grows += layer._kbuf is not before
    assert grows == 2 and layer.get_seq_length() == 83


def _attention_module() -> torch.nn.Module:
    module = torch.nn.Module()
    module.num_key_value_groups, module.is_causal = 3, True
    return module


def _grown(gen, rows: int, length: int, capacity: int, dtype=torch.float32):
    """A ``[rows, 2, capacity, 8]`` buffer zeroed past ``length`` and its first ``length`` columns (as GrowLayer hands
    out: a view of a larger buffer)."""
    buf = torch.zeros(rows, 2, capacity, 8, dtype=dtype)
    buf[:, :, :length] = torch.randn(rows, 2, length, 8, generator=gen).to(dtype)
    return buf, buf[:, :, :length]


def test_decode_attention_matches_sdpa_with_holes_in_the_mask():
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    gen, module = torch.Generator().manual_seed(0), _attention_module()
    q = torch.randn(4, 6, 1, 8, generator=gen)
    buf, k = _grown(gen, 4, 29, 40)
    v = torch.randn(4, 2, 29, 8, generator=gen)
    mask = torch.rand(4, 1, 1, 29, generator=gen) > 0.3
    mask[..., -1] = True
    want, _ = sdpa_attention_forward(module, q, k.contiguous(), v, mask)
    with torch.no_grad():
        got, _ = F.decode_attention(module, q, k, v, mask)
        whole, _ = F.decode_attention(module, q, buf[:, :, :29], buf[:, :, :29], mask)
        ref, _ = sdpa_attention_forward(module, q, k.contiguous(), k.contiguous(), mask)
    assert got.shape == want.shape and torch.allclose(got, want, atol=1e-5)
    assert torch.allclose(whole, ref, atol=1e-5)  # the spare buffer columns are masked out


def test_decode_attention_takes_float32_keys_beside_bfloat16_values():
    # under bf16 autocast with float32 weights (make learn's GRPO prefilter), rotary leaves the keys float32 and the
    # value projection gives bfloat16: the two products must run in one dtype
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    gen, module = torch.Generator().manual_seed(1), _attention_module()
    q = torch.randn(2, 6, 1, 8, generator=gen)
    (_, k), (_, v) = _grown(gen, 2, 11, 16), _grown(gen, 2, 11, 16, torch.bfloat16)
    with torch.no_grad():
        got, _ = F.decode_attention(module, q, k, v, None)
        want, _ = sdpa_attention_forward(module, q, k.contiguous(), v.float().contiguous(), None)
    assert got.dtype == q.dtype and torch.allclose(got, want, atol=1e-5)


def play_turns(trainer, tok, fast, turns=4):
    """Four multi-turn rounds of three episodes with KV reuse; returns each round's ``generate`` output."""
    rng = random.Random(0)
    vocab = [i for i in range(len(tok)) if i not in (tok.eos_token_id, tok.pad_token_id)]
    contexts = [[rng.choice(vocab) for _ in range(n)] for n in (5, 23, 11)]
    tools = [[rng.choice(vocab) for _ in range(rng.randrange(1, 12))] for _ in range(3 * turns)]
    kv, history = PrefixKV(), []
    for turn in range(turns):
        outs = R.generate(trainer, contexts, [4, 9, 7], seed=turn, kv=kv, keys=[0, 1, 2], fast=fast)
        history.append(outs)
        contexts = [c + ids + tools[3 * turn + i] for i, (c, (ids, _, _)) in enumerate(zip(contexts, outs))]
    return history


@pytest.fixture(scope="module")
def short_turns(tmp_path_factory):
    from training.grpo.tiny import generation_trainer

    model, tok = tiny_model(["search the answer <tool_call> visit"], eos_bias=0.05)
    with torch.no_grad():
        model.lm_head.weight.mul_(4.0)
    return generation_trainer(model.eval(), tok, tmp_path_factory.mktemp("fast")), tok


def test_rollout_turns_with_fast_decode_and_kv_reuse_equal_the_plain_path(short_turns):
    trainer, tok = short_turns
    assert F.supported(trainer.model)  # sdpa: the fast path really runs
    trainer.generation_config.do_sample = False  # greedy: the compacting decode's tokens are generate's own
    try:
        turns = {fast: play_turns(trainer, tok, fast) for fast in (False, True)}
    finally:
        trainer.generation_config.do_sample = True
    assert [[ids for ids, _, _ in t] for t in turns[True]] == [[ids for ids, _, _ in t] for t in turns[False]]
    assert {len(ids) for t in turns[True] for ids, _, _ in t} != {4, 9, 7}  # some turns end early (rows dropped)
    for a, b in zip(turns[False], turns[True]):
        for (_, lp_a, _), (_, lp_b, _) in zip(a, b):
            assert lp_b == pytest.approx(lp_a, abs=1e-4)


def test_sampled_rollout_turns_are_the_same_with_and_without_dropping_finished_rows(short_turns, monkeypatch):
    import functools

    from agents.policies import compact_decode as C

    trainer, tok = short_turns
    dropped = play_turns(trainer, tok, True)
    monkeypatch.setattr(C, "decode", functools.partial(C.decode, compact=False))
    kept = play_turns(trainer, tok, True)
    assert [[ids for ids, _, _ in t] for t in dropped] == [[ids for ids, _, _ in t] for t in kept]
    for a, b in zip(dropped, kept):
        for (_, lp_a, _), (_, lp_b, _) in zip(a, b):
            assert lp_b == pytest.approx(lp_a, abs=1e-5)
