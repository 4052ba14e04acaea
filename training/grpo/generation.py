"""One generated turn per episode for GRPO rollouts: :func:`generate` and its two backends, ``generate`` on the
trainer's model (``_hf``, optionally continuing :class:`~agents.policies.kv_reuse.PrefixKV`'s stored keys and values)
and TRL's vLLM engine (``_vllm``).

Kept apart from :mod:`training.grpo.rollout`, which plays the episodes and only needs the ``(ids, logprobs, ended)``
of each turn, so the sampling and token-budget code reads (and is tested) on its own.
"""

from __future__ import annotations

from typing import Any

from agents.policies import compact_decode
from agents.policies.compact_decode import DecodeStats
from agents.policies.fast_decode import fast_decode, grow_cache
from agents.policies.kv_reuse import PrefixKV, cache_kwarg


def generate(
    trainer: Any,
    contexts: list[list[int]],
    max_new: list[int],
    seed: int,
    batch_size: int = 16,
    kv: PrefixKV | None = None,
    keys: list[int] | None = None,
    engine: Any = None,
    fast: bool = False,
    stats: DecodeStats | None = None,
) -> list[tuple[list[int], list[float], bool]]:
    """One turn for each context: ``(ids, logprobs, ended)`` with ``ids`` up to and including the end-of-turn token.

    Args:
        trainer: The GRPO trainer (its model or vLLM engine, tokenizer, sampling settings, end tokens).
        contexts: Token ids to continue.
        max_new: Most new tokens per context (<= 0: nothing is generated, the turn counts as cut).
        seed: Sampling seed of this call (HF path).
        batch_size: Most contexts per ``generate`` call (HF path).
        kv: Keys and values of earlier turns to continue from (HF path; None: prefill every context whole).
        keys: One key per context naming its episode in ``kv``; entries of other keys are dropped.
        engine: The model to sample with (HF path; None: the trainer's model, under the trainer's autocast), e.g. a
            bfloat16 copy of the trainer's current weights (:func:`training.grpo.engine.bf16_engine`).
        fast: Decode with :mod:`agents.policies.fast_decode` (a cache written in place, one-token attention as
            batched matrix products); the logits are the model's own up to float rounding.
        stats: Filled with the compact decoder's work and its prefill / decode time (the fast path only).

    Returns:
        One triple per context; ``ended`` is False when the turn was cut by ``max_new``.
    """
    if kv is not None:
        kv.retain(keys or [])
    eos = set(trainer.eos_token_ids)
    out: list[tuple[list[int], list[float], bool]] = [([], [], False)] * len(contexts)
    todo = [i for i, m in enumerate(max_new) if m > 0]
    window = getattr(getattr(trainer.model, "config", None), "max_position_embeddings", None)
    if window:
        todo = [i for i in todo if len(contexts[i]) < window]
    for c in range(0, len(todo), batch_size):
        ids = todo[c : c + batch_size]
        cap = max(max_new[i] for i in ids)
        if window:
            cap = min(cap, window - max(len(contexts[i]) for i in ids))
        rows = (
            _vllm(trainer, [contexts[i] for i in ids], cap)
            if trainer.use_vllm
            else _hf(
                trainer,
                [contexts[i] for i in ids],
                cap,
                seed + c,
                kv,
                None if keys is None else [keys[i] for i in ids],
                engine,
                fast,
                stats,
            )
        )
        for i, (toks, lps) in zip(ids, rows):
            n = next((k + 1 for k, x in enumerate(toks) if x in eos), None)
            limit = min(max_new[i], len(toks))
            if n is not None and n <= max_new[i]:
                out[i] = (toks[:n], lps[:n], True)
            else:
                out[i] = (toks[:limit], lps[:limit], False)
    return out


def _hf(
    trainer: Any,
    contexts: list[list[int]],
    max_new: int,
    seed: int,
    kv: PrefixKV | None = None,
    keys: list[int] | None = None,
    engine: Any = None,
    fast: bool = False,
    stats: DecodeStats | None = None,
) -> list[tuple[list[int], list[float]]]:
    """Sample with ``trainer.model.generate`` or ``engine.generate`` (left padding, or continuing ``kv``'s entries of
    ``keys``); logprobs of the sampled tokens at the trainer's temperature."""
    import contextlib
    import copy

    import torch
    from trl.models.utils import unwrap_model_for_generation

    config = copy.deepcopy(trainer.generation_config)
    config.max_new_tokens = max_new
    config.output_logits = config.return_dict_in_generate = True
    device = trainer.accelerator.device
    unwrap = (
        contextlib.nullcontext(engine)
        if engine is not None
        else unwrap_model_for_generation(
            trainer.model_wrapped, trainer.accelerator, gather_deepspeed3_params=trainer.args.ds3_gather_for_generation
        )
    )
    with torch.random.fork_rng(devices=[]), torch.no_grad(), unwrap as model:
        torch.manual_seed(seed)
        inputs, batch = _inputs(model, contexts, trainer.processing_class.pad_token_id, device, kv, keys, fast)
        # the trainer's model samples under its autocast (bf16 mixed precision on a CPU: as the loss computes)
        precision = trainer.accelerator.autocast() if engine is None else contextlib.nullcontext()
        with precision, fast_decode(model, fast) as on:
            if on and compact_decode.supported(config):
                return _compact(trainer, model, inputs, batch, config, seed, kv, keys, stats)
            res = model.generate(**inputs, generation_config=config)
    if batch is not None:
        kv.keep(batch, res.sequences, keys)  # type: ignore[union-attr]
    new = res.sequences[:, inputs["input_ids"].shape[1] :].cpu()
    logits = torch.stack(res.logits, dim=1).float().cpu() / max(trainer.temperature, 1e-6)
    lps = torch.log_softmax(logits, dim=-1).gather(2, new.unsqueeze(2)).squeeze(2)
    return [(row.tolist(), lp.tolist()) for row, lp in zip(new, lps)]


def _compact(
    trainer: Any,
    model: Any,
    inputs: dict[str, Any],
    batch: Any,
    config: Any,
    seed: int,
    kv: PrefixKV | None,
    keys: list[int] | None,
    stats: DecodeStats | None = None,
) -> list[tuple[list[int], list[float]]]:
    """The fast path's decode (:func:`agents.policies.compact_decode.decode`: finished rows leave the batch), each
    row's keys and values stored in ``kv`` as the row finishes."""
    on_done = None
    if batch is not None:
        assert kv is not None
        if keys is None:
            kv.drop_used(batch)

        def on_done(row: int, rkv: list[tuple[Any, Any]], toks: list[int]) -> None:
            kv.keep_row(batch, row, rkv, toks, None if keys is None else keys[row])

    cache = inputs[cache_kwarg(model)]
    rows = compact_decode.decode(
        model,
        inputs["input_ids"],
        inputs["attention_mask"],
        cache,
        config,
        trainer.eos_token_ids,
        trainer.temperature,
        seed,
        on_done,
        stats=stats,
    )
    if kv is not None:
        kv.evict()
    return rows


def _inputs(
    model: Any,
    contexts: list[list[int]],
    pad: int,
    device: Any,
    kv: PrefixKV | None,
    keys: list[int] | None,
    fast: bool = False,
) -> tuple[dict[str, Any], Any]:
    """``generate``'s inputs: the contexts left padded, or with their stored prefixes in a cache (then also the batch);
    with ``fast`` the cache is a :func:`~agents.policies.fast_decode.grow_cache`."""
    import torch

    if kv is None:
        width = max(len(c) for c in contexts)
        ids = torch.tensor([[pad] * (width - len(c)) + c for c in contexts])
        mask = torch.tensor([[0] * (width - len(c)) + [1] * len(c) for c in contexts])
        out = {"input_ids": ids.to(device), "attention_mask": mask.to(device)}
        if fast:
            out[cache_kwarg(model)] = grow_cache(model.config)
        return out, None
    kv.prime(model, contexts, device, keys)
    batch = kv.batch(contexts, pad, model.config, device, keys, grow=fast)
    return {
        "input_ids": batch.input_ids,
        "attention_mask": batch.attention_mask,
        cache_kwarg(model): batch.cache,
    }, batch


def _vllm(trainer: Any, contexts: list[list[int]], max_new: int) -> list[tuple[list[int], list[float]]]:
    """Sample with TRL's vLLM engine (colocate or server); untested without a GPU."""
    gen = trainer.vllm_generation
    old = gen.max_completion_length
    gen.max_completion_length = max_new
    try:
        _, ids, logprobs, _ = gen.generate(prompts=contexts, images=None, num_generations=1)
    finally:
        gen.max_completion_length = old
    return [(list(row), [float("nan") if lp[0] is None else lp[0] for lp in lps]) for row, lps in zip(ids, logprobs)]
