"""A batched decode loop that drops finished rows: :func:`decode`, for :mod:`agents.policies.fast_decode`'s cache.

``generate`` decodes a batch until its longest row ends: a row that sampled its end token keeps costing a full row of
every matrix product, on every later step. With turns of very different lengths (an agent's short tool call beside a
long answer) most of a batch's steps run mostly finished rows. :func:`decode` runs the model's own forward pass one
token at a time on the live rows only: when enough rows have finished, the last live rows move into the finished rows'
slots of the key/value buffers (a copy of the moved rows only, never of the whole cache) and every later step runs on
the smaller batch. Its other per-step savings over ``generate``: a sampled token's logprob is taken on the step (no
``[batch, tokens, vocab]`` stack of logits at the end), and sampling draws one uniform number per row from the call's
seed (inverse CDF of the processed distribution) instead of ``multinomial``'s exponential draw over the whole
vocabulary of every row, which costs about as much as the output layer on a CPU (the inverse CDF itself is two-level,
:func:`_sample`, so no full-vocabulary pass runs in float64). A row's draws depend only on its
own index, so dropping rows changes no row's sample: greedy and sampled tokens are the same with and without
compaction. Greedy tokens equal ``generate``'s; sampled ones follow the same distribution (the same logits
processors, built by transformers from the generation config) with other draws.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

OnDone = Callable[[int, list[tuple[Any, Any]], list[int]], None]
"""``on_done(row, kv, tokens)``: a row's per-layer keys and values ``[kv_heads, length, head_dim]`` (views, valid for
the call only: copy what is kept) and its sampled tokens, called once per row before its slot is reused."""


@dataclass
class DecodeStats:
    """Work of :func:`decode` calls (rows x steps actually run, and what ``generate`` would have run), and where their
    time went: the first forward pass of a call (its prefill of every row's new tokens, padding included) and the
    one-token steps after it (forward, sampling and compaction)."""

    row_steps: int = 0
    full_row_steps: int = 0
    compactions: int = 0
    moved_rows: int = 0
    steps: list[int] = field(default_factory=list)
    prefill_seconds: float = 0.0
    prefill_columns: int = 0
    prefill_tokens: int = 0
    decode_seconds: float = 0.0


def supported(config: Any) -> bool:
    """Whether :func:`decode` covers ``config``'s generation settings (plain or sampled decoding with logits
    processors; not beam search, stop strings or assisted decoding)."""
    return (
        getattr(config, "num_beams", 1) in (1, None)
        and getattr(config, "num_return_sequences", 1) in (1, None)
        and not getattr(config, "stop_strings", None)
        and getattr(config, "assistant_model", None) is None
        and not getattr(config, "prompt_lookup_num_tokens", None)
    )


def _processors(model: Any, config: Any, input_ids: Any) -> tuple[Any, Any]:
    """transformers' own logits processors for ``config`` (as ``generate`` builds them) and the merged config."""
    from transformers import LogitsProcessorList

    merged, _ = model._prepare_generation_config(config)
    model._prepare_special_tokens(merged, True, device=input_ids.device, batch_size=input_ids.shape[0])
    procs = model._get_logits_processor(
        generation_config=merged,
        input_ids_seq_length=input_ids.shape[1],
        encoder_input_ids=input_ids,
        logits_processor=LogitsProcessorList(),
        device=input_ids.device,
        model_kwargs={},
    )
    return procs, merged


_BLOCK = 256  # tokens per block of the two-level inverse CDF


def _sample(scores: Any, uniform: Any) -> Any:
    """Inverse-CDF draw per row of ``softmax(scores)`` with one uniform number in ``[0, 1)`` per row.

    Two levels, so that no pass over the whole vocabulary runs in float64: the softmax and its sums per block of
    :data:`_BLOCK` tokens in float32, the cumulative sum of the block sums in float64 to find the block, then the
    cumulative sum of that block's weights to find the token. The same token as one float64 cumulative sum over the
    vocabulary, up to rounding at a boundary; a token of zero probability is never drawn.
    """
    import torch
    import torch.nn.functional as F

    rows, vocab = scores.shape
    weights = torch.softmax(scores.float(), dim=-1)
    pad = -vocab % _BLOCK
    blocks = (F.pad(weights, (0, pad)) if pad else weights).view(rows, -1, _BLOCK)
    cum = blocks.sum(-1).double().cumsum_(-1)  # summed in float32: a float64 sum would first copy every weight
    x = uniform.double() * cum[:, -1]
    b = torch.searchsorted(cum, x.unsqueeze(1), right=True).squeeze(1).clamp_(max=cum.shape[1] - 1)
    before = torch.where(b > 0, cum.gather(1, (b - 1).clamp(min=0).unsqueeze(1)).squeeze(1), 0.0)
    inner = blocks[torch.arange(rows), b].double().cumsum_(-1)
    # rounding between the two sums must not move the draw onto a zero-weight token at either end of the block
    v = torch.minimum((x - before).clamp_(min=0.0), inner[:, -1] * (1 - 1e-12))
    t = torch.searchsorted(inner, v.unsqueeze(1), right=True).squeeze(1).clamp_(max=_BLOCK - 1)
    return (b * _BLOCK + t).clamp_(max=vocab - 1)


def _move_rows(cache: Any, holes: list[int], movers: list[int], live: int) -> None:
    """Copy rows ``movers`` of every layer's key/value buffer into rows ``holes`` and keep the first ``live`` rows."""
    import torch

    src, dst = torch.tensor(movers), torch.tensor(holes)
    for layer in cache.layers:
        n = layer.keys.shape[-2]
        for name in ("_kbuf", "_vbuf"):
            buf = getattr(layer, name)
            if holes:
                buf.index_copy_(0, dst, buf.index_select(0, src))
            setattr(layer, name, buf[:live])
        layer.keys, layer.values = layer._kbuf[:, :, :n], layer._vbuf[:, :, :n]


def decode(
    model: Any,
    input_ids: Any,
    attention_mask: Any,
    cache: Any,
    config: Any,
    eos: Sequence[int],
    temperature: float,
    seed: int = 0,
    on_done: OnDone | None = None,
    compact: bool = True,
    stats: DecodeStats | None = None,
) -> list[tuple[list[int], list[float]]]:
    """Decode every row until it samples an end token or ``config.max_new_tokens``; finished rows leave the batch.

    Args:
        model: The causal LM (its attention switched by :func:`agents.policies.fast_decode.fast_decode`).
        input_ids: ``[batch, width]``; the first ``cache.get_seq_length()`` columns are already in ``cache``.
        attention_mask: ``[batch, width]``, 0 on pads.
        cache: A :func:`~agents.policies.fast_decode.grow_cache` (its rows are reordered in place).
        config: The generation config (``max_new_tokens``, ``do_sample`` and the sampling settings).
        eos: End-of-turn token ids.
        temperature: The logprobs' temperature (the trainer's).
        seed: Seed of the sampling draws.
        on_done: Called once per row with its keys, values and tokens before the row leaves the batch.
        compact: False: finished rows stay in the batch to the end (the same tokens; for tests and benchmarks).
        stats: Filled with the call's work when given.

    Returns:
        Per row, its tokens (up to and including the end token) and their logprobs at ``temperature``.
    """
    import time

    import torch

    from agents.policies.kv_reuse import cache_kwarg

    start = time.perf_counter()
    procs, merged = _processors(model, config, input_ids)
    name = cache_kwarg(model)
    rows0, max_new = input_ids.shape[0], int(merged.max_new_tokens)
    gen = torch.Generator().manual_seed(seed)
    eos_t = torch.tensor(sorted(set(eos)), device=input_ids.device)
    position = (attention_mask.long().cumsum(-1) - 1).masked_fill(attention_mask == 0, 0)
    past = cache.get_seq_length()
    step_in, step_pos, ids, mask = input_ids[:, past:], position[:, past:], input_ids, attention_mask
    slots = list(range(rows0))  # slot -> original row
    tokens: list[list[int]] = [[] for _ in range(rows0)]
    lps: list[list[float]] = [[] for _ in range(rows0)]
    finished: dict[int, int] = {}  # slot -> its row's kv length (finished, not yet dropped)
    stats = stats if stats is not None else DecodeStats()
    stats.prefill_columns += step_in.numel()
    stats.prefill_tokens += int(mask[:, past:].sum())
    for step in range(max_new):
        out = model(
            input_ids=step_in,
            attention_mask=mask,
            position_ids=step_pos,
            use_cache=True,
            logits_to_keep=1,
            **{name: cache},
        )
        if step == 0:
            prefilled = time.perf_counter()
            stats.prefill_seconds += prefilled - start
        logits = out.logits[:, -1].float()
        stats.row_steps += len(slots)
        stats.full_row_steps += rows0
        scores = procs(ids, logits)
        uniform = torch.rand(rows0, generator=gen)[torch.tensor(slots)]
        nxt = _sample(scores, uniform) if merged.do_sample else scores.argmax(-1)
        lp = torch.log_softmax(logits / max(temperature, 1e-6), dim=-1).gather(1, nxt.unsqueeze(1)).squeeze(1)
        ends = torch.isin(nxt, eos_t).tolist()
        kv_len = cache.get_seq_length()
        for s, (t, p, e) in enumerate(zip(nxt.tolist(), lp.tolist(), ends)):
            if s not in finished:
                tokens[slots[s]].append(t)
                lps[slots[s]].append(p)
                if e or step == max_new - 1:
                    finished[s] = kv_len
        if len(finished) == len(slots):
            break
        ids = torch.cat([ids, nxt.unsqueeze(1)], dim=1)
        mask = torch.cat([mask, mask.new_ones((len(slots), 1))], dim=1)
        step_in, step_pos = nxt.unsqueeze(1), step_pos[:, -1:] + 1
        if compact and 4 * len(finished) >= len(slots):  # a quarter of the batch done: worth a copy of the movers
            keep = _compact(cache, slots, finished, tokens, on_done, stats)
            ids, mask, step_in, step_pos = (x.index_select(0, keep) for x in (ids, mask, step_in, step_pos))
    _finish(cache, slots, finished, tokens, on_done)
    stats.steps.append(step + 1)
    stats.decode_seconds += time.perf_counter() - prefilled
    return list(zip(tokens, lps))


def _compact(
    cache: Any,
    slots: list[int],
    finished: dict[int, int],
    tokens: list[list[int]],
    on_done: OnDone | None,
    stats: DecodeStats,
) -> Any:
    """Hand the finished rows to ``on_done``, move the last live rows into their slots and shrink ``slots`` (in
    place); returns the kept slots' old indices (for the step's small tensors)."""
    import torch

    _finish(cache, slots, finished, tokens, on_done)
    live = len(slots) - len(finished)
    holes = sorted(s for s in finished if s < live)
    movers = [s for s in range(live, len(slots)) if s not in finished]
    order = list(range(live))
    for h, m in zip(holes, movers):
        order[h] = m
    _move_rows(cache, holes, movers, live)
    slots[:] = [slots[s] for s in order]
    finished.clear()
    stats.compactions += 1
    stats.moved_rows += len(movers)
    return torch.tensor(order)


def _finish(
    cache: Any, slots: list[int], finished: dict[int, int], tokens: list[list[int]], on_done: OnDone | None
) -> None:
    """Call ``on_done`` for every finished slot with its keys and values up to its length."""
    if on_done is None:
        return
    for s, n in sorted(finished.items()):
        on_done(slots[s], [(layer.keys[s, :, :n], layer.values[s, :, :n]) for layer in cache.layers], tokens[slots[s]])
