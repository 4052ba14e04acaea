"""KV-cache reuse across the turns of a rollout: the same ids (greedy) and logprobs (sampled) as prefilling every
turn whole, with less prefill."""

import random

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from agents.policies.kv_reuse import PrefixKV, common_prefix, supports  # noqa: E402
from training.grpo import rollout as R  # noqa: E402
from training.grpo.tiny import tiny_model  # noqa: E402


def peaked_tiny(eos_bias=0.05, scale=20.0):
    """A tiny Llama whose output layer is scaled up, so that greedy choices are far from ties (float noise cannot flip
    them) and turns end at different lengths."""
    model, tok = tiny_model(["search the answer <tool_call> visit"], eos_bias=eos_bias)
    with torch.no_grad():
        model.lm_head.weight.mul_(scale)
        model.lm_head.bias.mul_(scale)
    return model.eval(), tok


def make_trainer(model, tok, tmp_path, **generation):
    from training.grpo.tiny import generation_trainer

    return generation_trainer(model, tok, tmp_path, generation_kwargs=generation or None)


def play_turns(trainer, tok, reuse, turns=4, batch_size=16, group=False):
    """Turns of three episodes of different lengths and turn caps, with random 'tool' ids between turns: each turn's
    outputs, the store, the final sequences and where each turn started in them."""
    rng = random.Random(0)
    vocab = [i for i in range(len(tok)) if i not in (tok.eos_token_id, tok.pad_token_id)]
    contexts = [[rng.choice(vocab) for _ in range(n)] for n in (5, 23, 11)]
    if group:  # the first two share their prompt, as the episodes of a GRPO group do
        contexts[0] = list(contexts[1])
    kv = PrefixKV() if reuse else None
    history, starts = [], []
    for turn in range(turns):
        starts.append([len(c) for c in contexts])
        extra = {"kv": kv, "keys": [0, 1, 2]} if reuse else {}
        outs = R.generate(trainer, contexts, [4, 9, 7], seed=turn, batch_size=batch_size, **extra)
        history.append(outs)
        contexts = [
            c + ids + [rng.choice(vocab) for _ in range(rng.randrange(1, 12))] for c, (ids, _, _) in zip(contexts, outs)
        ]
    return history, kv, contexts, starts


def test_common_prefix():
    assert common_prefix([1, 2, 3], [1, 2, 3, 4]) == 3
    assert common_prefix([1, 2, 3], [1, 5, 3]) == 1
    assert common_prefix([], [1]) == 0 and common_prefix([7] * 100 + [1], [7] * 100 + [2]) == 100


def test_greedy_ids_with_reuse_equal_those_without(tmp_path):
    model, tok = peaked_tiny()
    assert supports(model)
    trainer = make_trainer(model, tok, tmp_path, do_sample=False)
    plain, *_ = play_turns(trainer, tok, reuse=False)
    reused, kv, *_ = play_turns(trainer, tok, reuse=True)
    assert [[ids for ids, _, _ in t] for t in reused] == [[ids for ids, _, _ in t] for t in plain]
    assert [[ended for _, _, ended in t] for t in reused] == [[ended for _, _, ended in t] for t in plain]
    assert any(ended for t in plain for _, _, ended in t) and any(not ended for t in plain for _, _, ended in t)
    assert kv.reused_tokens > kv.prefilled_tokens  # later turns prefill only their suffix
    # one context per generate call: the entries are per episode, whatever the batch around them
    single, *_ = play_turns(trainer, tok, reuse=True, batch_size=1)
    assert [[ids for ids, _, _ in t] for t in single] == [[ids for ids, _, _ in t] for t in plain]


def test_a_shared_prompt_is_prefilled_once(tmp_path):
    model, tok = peaked_tiny()
    trainer = make_trainer(model, tok, tmp_path, do_sample=False)
    plain, *_ = play_turns(trainer, tok, reuse=False, turns=2, group=True)
    reused, *_ = play_turns(trainer, tok, reuse=True, turns=2, group=True)
    assert [[ids for ids, _, _ in t] for t in reused] == [[ids for ids, _, _ in t] for t in plain]
    assert (
        plain[0][1][0][: len(plain[0][0][0])] == plain[0][0][0]
    )  # greedy: the same prompt, the same turn (to its cap)
    _, kv, _, _ = play_turns(trainer, tok, reuse=True, turns=1, group=True)
    # the shared 23-token prompt: 22 tokens prefilled once, then its last token in each row; the 11-token one alone
    assert (kv.prefilled_tokens, kv.reused_tokens) == (22 + 2 + 11, 2 * 22)


def test_sampled_logprobs_with_reuse_match_those_without_and_a_full_forward(tmp_path):
    model, tok = peaked_tiny(scale=4.0)
    trainer = make_trainer(model, tok, tmp_path)
    plain, *_ = play_turns(trainer, tok, reuse=False)
    reused, _, contexts, starts = play_turns(trainer, tok, reuse=True)
    assert [[ids for ids, _, _ in t] for t in reused] == [[ids for ids, _, _ in t] for t in plain]
    for a, b in zip(plain, reused):
        for (_, lp_a, _), (_, lp_b, _) in zip(a, b):
            assert lp_b == pytest.approx(lp_a, abs=1e-4)
    # and they are the logprobs of the final sequences under one plain forward pass at the trainer's temperature
    for row, sequence in enumerate(contexts):
        with torch.no_grad():
            logprobs = torch.log_softmax(model(torch.tensor([sequence])).logits[0] / 0.7, -1)
        for turn, start in zip(reused, starts):
            ids, lps, _ = turn[row]
            assert lps == pytest.approx([logprobs[start[row] - 1 + k, t].item() for k, t in enumerate(ids)], abs=1e-4)


def test_prefix_store_without_keys_matches_the_longest_prefix_and_evicts_the_oldest():
    model, tok = peaked_tiny()
    store = PrefixKV()

    def step(contexts, new_tokens):
        batch = store.batch(contexts, tok.pad_token_id, model.config)
        with torch.no_grad():
            out = model.generate(
                input_ids=batch.input_ids,
                attention_mask=batch.attention_mask,
                cache=batch.cache,
                max_new_tokens=new_tokens,
                do_sample=False,
                pad_token_id=tok.pad_token_id,
                eos_token_id=None,
            )
        store.keep(batch, out.sequences if hasattr(out, "sequences") else out)
        return batch

    a, b = [5, 6, 7, 8, 9], [5, 6, 10, 11]
    step([a, b], 3)
    assert sorted(len(e.tokens) for e in store.entries.values()) == [
        len(b) + 2,
        len(a) + 2,
    ]  # the last id has no keys yet
    again = step([a + [12], [5, 6, 13]], 1)
    assert again.reused == [len(a), 2] and again.past == len(a)
    assert [len(e.tokens) for e in store.entries.values()] == [len(b) + 2, 6, 3]  # the used entry was replaced
    store.max_bytes = min(e.nbytes for e in store.entries.values())
    store.evict()
    assert [len(e.tokens) for e in store.entries.values()] == [3]  # the oldest (first row) went first


@pytest.fixture(scope="module")
def task_setup(sample_index):
    from sim_web.env import EnvConfig
    from sim_web.env.tasks import derive_tasks
    from wiki_index.search.index import WikiIndex

    tasks = derive_tasks(WikiIndex.from_dir(sample_index).store)[:2]
    return EnvConfig(index_dir=str(sample_index), tools=("search", "visit", "google_scholar"), max_turns=3), tasks


def test_agent_rollout_with_reuse_plays_the_same_greedy_episodes(tmp_path, task_setup):
    env, tasks = task_setup
    model, tok = peaked_tiny(eos_bias=0.3)
    trainer = make_trainer(model, tok, tmp_path, do_sample=False)
    trainer.max_completion_length = 400
    prompts = [[{"role": "user", "content": t.question}] for t in tasks for _ in range(2)]
    out = {}
    for reuse in (False, True):
        rollout = R.AgentRollout(env, tasks, R.RolloutConfig(max_turn_tokens=24, batch_size=4, reuse_kv=reuse))
        out[reuse] = rollout(prompts, trainer)
    for key in ("completion_ids", "env_mask", "turns", "no_answer"):
        assert out[True][key] == out[False][key], key
    for a, b in zip(out[False]["logprobs"], out[True]["logprobs"]):
        assert b == pytest.approx(a, abs=1e-4)
    assert max(out[True]["turns"]) > 1 and out[True]["rollout_timing"]["reused_tokens"] > 0
    assert "reused_tokens" not in out[False]["rollout_timing"]
    for timing in (out[True]["rollout_timing"], out[False]["rollout_timing"]):  # the compact decoder's split
        assert 0 < timing["prefill_new_tokens"] <= timing["prefill_columns"] and timing["decode_row_steps"] > 0
    # reuse prefills only each turn's new tokens
    assert out[True]["rollout_timing"]["prefill_new_tokens"] < out[False]["rollout_timing"]["prefill_new_tokens"]


def test_hf_policy_with_reuse_answers_multi_turn_chats_as_without(tmp_path):
    from agents.config import SamplingConfig
    from agents.policies.hf_policy import HFConfig, HFPolicy

    model, tok = peaked_tiny()
    greedy = SamplingConfig(temperature=0.0, max_tokens=8)
    policies = {
        reuse: HFPolicy(HFConfig("tiny", batch_size=2, reuse_kv=reuse), greedy, model=model, tokenizer=tok)
        for reuse in (False, True)
    }
    assert policies[True].kv is not None and policies[False].kv is None
    chats = {
        reuse: [[{"role": "user", "content": q}] for q in ("search the answer", "visit", "the answer to search")]
        for reuse in (False, True)
    }
    prompt_tokens = []
    for turn in range(3):
        texts = {}
        for reuse, policy in policies.items():
            gens = policy.generate(chats[reuse], seeds=[turn] * 3)
            texts[reuse] = [g.text for g in gens]
            for chat, g in zip(chats[reuse], gens):
                chat += [
                    {"role": "assistant", "content": g.text},
                    {"role": "user", "content": "<tool_response>visit " * (turn + 1)},
                ]
        assert texts[True] == texts[False], turn
        prompt_tokens.append(sum(g.prompt_tokens for g in gens))
    kv = policies[True].kv
    assert kv.reused_tokens + kv.prefilled_tokens == sum(prompt_tokens)
    # each turn reuses about the previous prompt (re-encoding the decoded turn may tokenize its boundary differently)
    assert kv.reused_tokens >= 0.9 * (prompt_tokens[0] + prompt_tokens[1])
