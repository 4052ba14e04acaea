"""The compacting decode loop (agents.policies.compact_decode): finished rows leave the batch, and no row's tokens
change for it; greedy tokens are generate's own, sampled ones follow the processed distribution."""

import collections

import pytest

torch = pytest.importorskip("torch")

from agents.policies import compact_decode as C  # noqa: E402
from agents.policies import fast_decode as F  # noqa: E402
from tests.training.test_fast_decode import gqa_llama, left_padded  # noqa: E402


@pytest.fixture(scope="module")
def setup():
    """The tiny Llama, six left-padded rows, and an end token that ends rows at different steps."""
    model = gqa_llama()
    ids, mask = left_padded(6, 13)
    with torch.no_grad():
        free = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=40, do_sample=False, pad_token_id=0)
    eos = collections.Counter(free[:, 13:].flatten().tolist()).most_common(3)[2][0]
    return model, ids, mask, eos


def run(model, ids, mask, eos, compact, do_sample=False, seed=0):
    from transformers import GenerationConfig

    config = GenerationConfig(max_new_tokens=40, do_sample=do_sample, temperature=0.8, eos_token_id=eos, pad_token_id=0)
    stats, done = C.DecodeStats(), {}
    with torch.no_grad(), F.fast_decode(model):
        rows = C.decode(
            model,
            ids,
            mask,
            F.grow_cache(model.config),
            config,
            [eos],
            0.8,
            seed,
            on_done=lambda r, kv, toks: done.setdefault(r, (kv[0][0].clone(), list(toks))),
            compact=compact,
            stats=stats,
        )
    return rows, stats, done


def test_greedy_tokens_equal_generate_with_and_without_compaction(setup):
    model, ids, mask, eos = setup
    kw = {"max_new_tokens": 40, "do_sample": False, "output_logits": True, "return_dict_in_generate": True}
    with torch.no_grad():
        plain = model.generate(input_ids=ids, attention_mask=mask, eos_token_id=eos, pad_token_id=0, **kw)
    logprobs = torch.log_softmax(torch.stack(plain.logits, 1) / 0.8, -1)
    want = []
    for row in plain.sequences[:, 13:].tolist():
        want.append(row[: row.index(eos) + 1] if eos in row else row)
    (dropped, stats, done), (kept, full, done_kept) = (run(model, ids, mask, eos, c) for c in (True, False))
    assert [t for t, _ in dropped] == want == [t for t, _ in kept]
    assert len({len(t) for t in want}) > 2  # rows end at different steps
    assert stats.compactions > 0 and stats.row_steps < full.row_steps == full.full_row_steps
    for r, (toks, lps) in enumerate(dropped):
        assert lps == pytest.approx([logprobs[r, k, t].item() for k, t in enumerate(toks)], abs=1e-5)
    for r, (keys, toks) in done.items():  # each row's keys: the width plus every token but the last
        assert keys.shape[1] == 13 + len(toks) - 1 and toks == want[r]
        assert torch.allclose(keys, done_kept[r][0], atol=1e-6)


def test_stats_split_the_prefill_from_the_one_token_steps(setup):
    model, ids, mask, eos = setup
    rows, stats, _ = run(model, ids, mask, eos, True)
    assert stats.prefill_columns == ids.numel() and stats.prefill_tokens == int(mask.sum()) < ids.numel()
    assert stats.prefill_seconds > 0 and stats.decode_seconds > 0  # both parts of the call are timed
    assert stats.steps == [max(len(t) for t, _ in rows)]


def test_sampled_tokens_do_not_depend_on_compaction(setup):
    model, ids, mask, eos = setup
    dropped, stats, _ = run(model, ids, mask, eos, True, do_sample=True, seed=3)
    kept, _, _ = run(model, ids, mask, eos, False, do_sample=True, seed=3)
    other, _, _ = run(model, ids, mask, eos, True, do_sample=True, seed=4)
    assert [t for t, _ in dropped] == [t for t, _ in kept] != [t for t, _ in other]
    assert stats.compactions > 0


def test_inverse_cdf_draws_follow_the_distribution():
    gen = torch.Generator().manual_seed(0)
    probs = torch.tensor([0.5, 0.0, 0.3, 0.2, 0.0])
    scores = probs.log().expand(20_000, 5)
    drawn = C._sample(scores, torch.rand(20_000, generator=gen))
    freq = torch.bincount(drawn, minlength=5).float() / 20_000
    assert freq[1] == 0 and freq[4] == 0  # never a token of zero probability (top-k / top-p masked)
    assert torch.allclose(freq, probs, atol=0.02)


def test_two_level_draw_is_the_one_level_inverse_cdf():
    """The blocked draw picks the token a single float64 cumulative sum over the vocabulary picks, across block
    edges and a vocabulary that is no multiple of the block (1,000 tokens, blocks of 256)."""
    gen = torch.Generator().manual_seed(1)
    scores = torch.randn(3_000, 1_000, generator=gen) * 4
    scores[:, 700:] = float("-inf")  # the last block and a half masked, as top-k would
    uniform = torch.rand(3_000, generator=gen)
    cdf = torch.softmax(scores, dim=-1, dtype=torch.float64).cumsum(-1)
    want = torch.searchsorted(cdf, (uniform.double() * cdf[:, -1]).unsqueeze(1), right=True).squeeze(1)
    drawn = C._sample(scores, uniform)
    assert (drawn < 700).all()
    assert (drawn == want).float().mean() > 0.999  # a mismatch only where rounding sits on a boundary
