"""The rollout path against the machine's bound: ``python -m benchmarks.bench_train --rollout-speed``.

The bound is the matrix-product throughput of a batched decode step's shapes on this CPU (batch x hidden x each
linear layer of the model, float32 and bfloat16, 1 and 2 threads), turned into the tokens/s a step made only of
those products would reach; a second figure adds the one-token attention products at the rollouts' mean context.
Both time one weight matrix per shape, again and again, so it stays in the CPU's caches; a third times a distinct
matrix per layer, one pass through all of them, as a decode step reads its weights (from memory: a small batch's
step is bound by reading the weights, not by the products).
Then one GRPO rollout (G x prompts episodes, multi-turn, KV reuse on) is played by each rollout setting, the order
rotating between repeats, and each play's generation tokens/s and its ratio to the bound are printed, with the
per-token logprob gap between each play and the trainer's own forward pass over the same sequences.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from statistics import median
from typing import Any

SETTINGS = {  # name: (fast_decode, engine, one generate call for the whole batch, finished rows dropped)
    "before (recipe: generate, DynamicCache, sdpa, 16 a call)": (False, "trainer", False, False),
    "fast decode, trainer fp32, 32 a call": (True, "trainer", True, False),
    "fast decode, bf16 engine, 32 a call (generate)": (True, "bf16", True, False),
    "compact decode, bf16 engine, 32 a call": (True, "bf16", True, True),
}
"""The settings; the last two are the previous fast path (``generate``: every row decodes until the longest ends)
and :mod:`agents.policies.compact_decode` (finished rows leave the batch, cheaper per-step sampling)."""


@contextmanager
def compaction(on: bool) -> Iterator[None]:
    """Within the block the fast path uses :func:`agents.policies.compact_decode.decode` (on) or ``generate`` (off)."""
    from agents.policies import compact_decode

    old = compact_decode.supported
    if not on:
        compact_decode.supported = lambda config: False  # type: ignore[assignment]
    try:
        yield
    finally:
        compact_decode.supported = old  # type: ignore[assignment]


def _flat_sample(scores: Any, uniform: Any) -> Any:
    """The compact decoder's draw before its two-level inverse CDF: one float64 softmax and cumulative sum over the
    whole vocabulary of every row (the same token up to rounding at a boundary)."""
    import torch

    cdf = torch.softmax(scores, dim=-1, dtype=torch.float64).cumsum_(-1)
    x = (uniform.double() * cdf[:, -1]).unsqueeze(1)
    return torch.searchsorted(cdf, x, right=True).squeeze(1).clamp_(max=scores.shape[-1] - 1)


@contextmanager
def flat_sampler() -> Iterator[None]:
    """Within the block the compact decoder draws with :func:`_flat_sample`."""
    from agents.policies import compact_decode

    old = compact_decode._sample
    compact_decode._sample = _flat_sample  # type: ignore[assignment]
    try:
        yield
    finally:
        compact_decode._sample = old  # type: ignore[assignment]


def sampler_line(batch: int, vocab: int, threads: int = 1) -> str:
    """Medians of one draw of ``batch`` rows over ``vocab`` scores by :func:`_flat_sample` and by the compact
    decoder's two-level draw, on ``threads`` threads (the per-step sampling cost a decode step pays)."""
    import torch

    from agents.policies.compact_decode import _sample

    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        gen = torch.Generator().manual_seed(0)
        scores, uniform = torch.randn(batch, vocab, generator=gen) * 3, torch.rand(batch, generator=gen)
        flat = _time(lambda: _flat_sample(scores, uniform), reps=21)
        two = _time(lambda: _sample(scores, uniform), reps=21)
    finally:
        torch.set_num_threads(old)
    return (
        f"sampling draw, {batch} rows x {vocab} scores, {threads} thread(s), medians of 21: one-level float64 "
        f"{flat * 1e3:.1f} ms, two-level {two * 1e3:.1f} ms ({flat / two:.2f}x)"
    )


BEFORE = {
    "generate": ("generate, fast decode, bf16 engine", lambda: compaction(False)),
    "flat-sampler": ("compact decode, float64 one-level draw, bf16 engine", flat_sampler),
}
"""``--paired-before`` sides: what each paired call is run through before the compact decoder (its label and the
context manager that switches the fast path to it)."""


def paired_calls(records: list[dict[str, Any]], before: str = "generate") -> Any:
    """A stand-in for :func:`training.grpo.generation._hf` that runs every generation call twice on the same inputs,
    through the :data:`BEFORE` side ``before`` and through :mod:`agents.policies.compact_decode` (the order
    alternating between calls, the key/value store reset in between so both start from the same entries), appends
    each side's seconds and useful tokens (up to the end token) to ``records`` and continues the episodes with the
    compact side's turn. Paired calls seconds apart see the same machine load, which plays minutes apart on a shared
    machine do not."""
    from training.grpo import generation

    original = generation._hf

    def both(trainer: Any, contexts: Any, max_new: int, seed: int, kv: Any = None, *rest: Any) -> Any:
        eos = set(trainer.eos_token_ids)
        saved = None if kv is None else (dict(kv.entries), kv.reused_tokens, kv.prefilled_tokens)
        order = (False, True) if len(records) % 4 == 0 else (True, False)
        outs = {}
        for compact in order:
            if kv is not None:
                kv.entries, kv.reused_tokens, kv.prefilled_tokens = dict(saved[0]), saved[1], saved[2]
            t = time.perf_counter()
            with compaction(True) if compact else BEFORE[before][1]():
                rows = original(trainer, contexts, max_new, seed, kv, *rest)
            seconds = time.perf_counter() - t
            useful = sum(
                next((k + 1 for k, x in enumerate(ids[:max_new]) if x in eos), min(len(ids), max_new))
                for ids, _ in rows
            )
            outs[compact] = (rows, None if kv is None else (dict(kv.entries), kv.reused_tokens, kv.prefilled_tokens))
            records.append(
                {
                    "compact": compact,
                    "seconds": seconds,
                    "tokens": useful,
                    "rows": len(rows),
                    "load": __import__("os").getloadavg()[0],
                }
            )
        rows, state = outs[True]
        if kv is not None:
            kv.entries, kv.reused_tokens, kv.prefilled_tokens = state
        return rows

    return original, both


def paired_report(records: list[dict[str, Any]], bound: float, streamed: float, before: str = "generate") -> str:
    """Both sides' tokens/s over all paired calls, the per-call speed-up's median and each side's share of the bound
    (weights in cache) and of the streamed bound (weights read from memory, as a step reads them)."""
    side = {c: [r for r in records if r["compact"] is c] for c in (False, True)}
    rate = {c: sum(r["tokens"] for r in rs) / sum(r["seconds"] for r in rs) for c, rs in side.items()}
    per_call = [a["seconds"] / b["seconds"] for a, b in zip(side[False], side[True])]
    loads = [r["load"] for r in records]
    return "\n".join(
        [
            f"paired generation calls ({len(per_call)}, each run by both decoders on the same inputs, order alternating; "
            f"load 1m median {median(loads):.2f}, range {min(loads):.2f}-{max(loads):.2f}):",
            f"  before ({BEFORE[before][0]}): {rate[False]:.1f} tokens/s = {rate[False] / bound:.2f} of "
            f"the bound {bound:.0f}, {rate[False] / streamed:.2f} of the streamed bound {streamed:.0f}",
            f"  after (compact decode, bf16 engine): {rate[True]:.1f} tokens/s = {rate[True] / bound:.2f} of the bound, "
            f"{rate[True] / streamed:.2f} of the streamed bound",
            f"  speed-up: {rate[True] / rate[False]:.2f}x on the totals, median per call {median(per_call):.2f}x",
        ]
    )


def linear_shapes(config: Any) -> list[tuple[int, int, int]]:
    """``(out, in, count)`` of every matrix product of one decode token (the tied output layer once)."""
    h, i, n = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    kv = config.num_key_value_heads * (h // config.num_attention_heads)
    return [(h, h, 2 * n), (kv, h, 2 * n), (i, h, 2 * n), (h, i, n), (config.vocab_size, h, 1)]


def _time(f: Any, reps: int = 7) -> float:
    for _ in range(2):
        f()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return median(ts)


def decode_bound(config: Any, batch: int, dtype: Any, threads: int, context: int = 0, streamed: bool = False) -> float:
    """Seconds of one batched decode step's matrix products (plus the attention products at ``context``); with
    ``streamed``, a distinct weight matrix per layer read once, as a step reads them (the linear products only)."""
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        if streamed:
            pairs = [
                (torch.randn(out, inp, dtype=dtype), torch.randn(batch, inp, dtype=dtype))
                for out, inp, count in linear_shapes(config)
                for _ in range(count)
            ]
            return _time(lambda: [torch.nn.functional.linear(x, w) for w, x in pairs], reps=5)
        total = 0.0
        for out, inp, count in linear_shapes(config):
            w, x = torch.randn(out, inp, dtype=dtype), torch.randn(batch, inp, dtype=dtype)
            total += count * _time(lambda w=w, x=x: torch.nn.functional.linear(x, w))
        if context:
            hk, d = config.num_key_value_heads, config.hidden_size // config.num_attention_heads
            g = config.num_attention_heads // hk
            k = torch.randn(batch * hk, context, d, dtype=dtype)
            q, p = torch.randn(batch * hk, g, d, dtype=dtype), torch.randn(batch * hk, g, context, dtype=dtype)
            total += config.num_hidden_layers * _time(lambda: (torch.bmm(q, k.transpose(1, 2)), torch.bmm(p, k)))
        return total
    finally:
        torch.set_num_threads(old)


def bounds(config: Any, batch: int, context: int) -> dict[tuple[str, int], tuple[float, float, float]]:
    """Per (dtype, threads): the bound in tokens/s from the linear products alone, with attention, and with the
    weights streamed (:func:`decode_bound`)."""
    import torch

    out = {}
    for name, dtype in (("float32", torch.float32), ("bfloat16", torch.bfloat16)):
        for threads in (1, 2):
            lin = decode_bound(config, batch, dtype, threads)
            att = decode_bound(config, batch, dtype, threads, context)
            streamed = decode_bound(config, batch, dtype, threads, streamed=True)
            out[(name, threads)] = (batch / lin, batch / att, batch / streamed)
    return out


def rollout_bound(timing: dict[str, Any], prefill_rate: float, step_seconds: float) -> float | None:
    """Seconds a rollout's generation would take at the machine's bound: its prefill columns (padding included) at
    ``prefill_rate`` tokens/s (the linear products of a wide batch) plus its one-token passes at ``step_seconds``
    each (a batch-32 step with its weights streamed, which a smaller batch does not beat: the reads bound it); None
    when the rollout's timing has no split (not the compact decoder).

    >>> rollout_bound({"prefill_columns": 6000, "decode_steps": 100}, prefill_rate=3000.0, step_seconds=0.05)
    7.0
    """
    if "prefill_columns" not in timing:
        return None
    return timing["prefill_columns"] / prefill_rate + timing["decode_steps"] * step_seconds


def bound_table(bound: dict[tuple[str, int], tuple[float, float, float]]) -> str:
    """:func:`bounds` as a table."""
    from benchmarks.common import table

    rows = [[d, t, *(f"{v:.0f}" for v in vs)] for (d, t), vs in bound.items()]
    return table(["dtype", "threads", "linear only", "with attention", "weights streamed"], rows)


def logprob_gap(model: Any, out: dict[str, Any], temperature: float, rows: int = 8) -> dict[str, float]:
    """The trainer's float32 forward pass over ``rows`` of a rollout's sequences against the rollout's logprobs."""
    import torch

    from training.grpo.correction import gap_stats

    gaps = []
    for p, c, lp, m in list(zip(out["prompt_ids"], out["completion_ids"], out["logprobs"], out["env_mask"]))[:rows]:
        with torch.no_grad():
            logits = model(torch.tensor([p + c])).logits[0, len(p) - 1 : -1].float() / temperature
        mine = torch.log_softmax(logits, -1).gather(1, torch.tensor(c).unsqueeze(1)).squeeze(1)
        gaps.append(gap_stats(mine.unsqueeze(0), torch.tensor([lp]), torch.tensor([m])))
    toks = sum(g["tokens"] for g in gaps) or 1.0
    return {
        "abs_mean": sum(g["abs_mean"] * g["tokens"] for g in gaps) / toks,
        "abs_max": max(g["abs_max"] for g in gaps),
    }


def run(
    index: str,
    prompts: int,
    group: int,
    repeats: int,
    threads: int | None,
    seed: int = 0,
    settings: list[int] | None = None,
    paired: bool = False,
    model: str = "smollm2",
    before: str = "generate",
) -> str:
    """Bound, then each :data:`SETTINGS` (or those at the indices ``settings``) playing the same rollout (``prompts`` x
    ``group`` episodes) ``repeats`` times in rotating order; returns the report (speed-ups over the first setting).
    With ``paired``, instead: the bf16 engine's rollout played ``repeats`` times with every generation call run by
    both decoders (:func:`paired_calls`: ``before``, a :data:`BEFORE` side, and the compact decoder), then the bound.
    ``model`` is the policy played (``smollm2`` or a model folder, e.g. an SFT checkpoint)."""
    import os
    import tempfile
    from dataclasses import replace

    import torch

    from benchmarks.common import table
    from sim_web.serve.trl import task_dataset
    from training.grpo.recipes import load_recipe
    from training.grpo.rollout import AgentRollout
    from training.grpo.tiny import generation_trainer
    from training.grpo.train import load_model, train_tasks
    from wiki_index.search.index import WikiIndex

    recipe = load_recipe("cpu-learn", {"model": model, "index_dir": index, "tasks": None, "n_tasks": prompts})
    wiki = WikiIndex.from_dir(index)
    tasks = train_tasks(recipe, wiki)[:prompts]
    env = recipe.env_config(str(wiki.path))
    model, tok = load_model(recipe, [t.question for t in tasks])
    model.eval()
    trainer = generation_trainer(
        model,
        tok,
        tempfile.mkdtemp(prefix="bench-rollout-"),
        per_device_train_batch_size=group,
        num_generations=group,
        max_completion_length=recipe.trainer.max_completion_length,
        temperature=recipe.trainer.temperature,
    )
    trainer.model.eval()
    chosen = threads or 1
    torch.set_num_threads(chosen)
    rows = task_dataset(tasks)
    batch = [rows[i]["prompt"] for i in range(len(tasks)) for _ in range(group)]
    base = recipe.rollout_config()
    if paired:
        return _paired(model.config, env, tasks, base, batch, trainer, repeats, seed, before)
    names = [n for i, n in enumerate(SETTINGS) if settings is None or i in settings]
    plays: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    contexts = []
    for r in range(repeats):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            fast, engine, whole, compact = SETTINGS[name]
            size = len(batch) if whole else base.batch_size
            rollout = AgentRollout(
                env, tasks, replace(base, fast_decode=fast, engine=engine, seed=seed, batch_size=size)
            )
            t = time.perf_counter()
            with compaction(compact):
                out = rollout(batch, trainer)
            wall = time.perf_counter() - t
            timing = out["rollout_timing"]
            tokens = sum(out["generated_tokens"])
            lengths = [len(p) + len(c) for p, c in zip(out["prompt_ids"], out["completion_ids"])]
            contexts.append(sum(lengths) / len(lengths) / 2)  # mean context over a sequence's decode steps
            gap = logprob_gap(trainer.model, out, recipe.trainer.temperature)
            print(
                f"play {r}: {name}: {tokens} tokens in {timing['generation_seconds']:.1f} s",
                file=sys.stderr,
                flush=True,
            )
            plays[name].append(
                {
                    "tokens": tokens,
                    "gen_s": timing["generation_seconds"],
                    "tool_s": timing["tool_seconds"],
                    "wall_s": wall,
                    "sync_s": timing.get("engine_sync_seconds", 0.0),
                    "prefilled": timing.get("prefilled_tokens", 0),
                    "prefill_s": timing.get("prefill_seconds", float("nan")),
                    "decode_s": timing.get("decode_seconds", float("nan")),
                    "timing": timing,
                    "gap_mean": gap["abs_mean"],
                    "gap_max": gap["abs_max"],
                    "load": os.getloadavg()[0],
                }
            )
    context = int(median(contexts))
    bound = bounds(model.config, len(batch), context)
    wide = 512  # a prefill pass's columns: its linear products run at a wide batch's rate
    prefill_rate = wide / decode_bound(model.config, wide, torch.bfloat16, 2)
    step_seconds = len(batch) / bound[("bfloat16", 2)][2]
    for ps in plays.values():
        for p in ps:
            at_bound = rollout_bound(p.pop("timing"), prefill_rate, step_seconds)
            p["bound_s"] = float("nan") if at_bound is None else at_bound
    lines = [
        f"decode bound, batch {len(batch)}, SmolLM2-135M linear shapes (tokens/s; 'with attention' adds the one-token "
        f"attention products at the rollouts' median mean context, {context} tokens; 'weights streamed' reads a "
        "distinct matrix per layer, as a step does):",
        bound_table(bound),
    ]
    best = max(bound.values(), key=lambda ab: ab[0])
    rows_out = []
    for name, ps in plays.items():
        rate = median(p["tokens"] / p["gen_s"] for p in ps)
        rows_out.append(
            [
                name,
                len(ps),
                f"{median(p['tokens'] for p in ps):.0f}",
                f"{median(p['prefilled'] for p in ps):.0f}",
                f"{median(p['gen_s'] for p in ps):.1f}",
                f"{median(p['tool_s'] for p in ps):.2f}",
                f"{median(p['sync_s'] for p in ps):.2f}",
                f"{rate:.1f}",
                f"{rate / best[0]:.2f}",
                f"{rate / best[1]:.2f}",
                f"{rate / best[2]:.2f}",
                f"{median(p['prefill_s'] for p in ps):.1f}",
                f"{median(p['decode_s'] for p in ps):.1f}",
                f"{median(p['bound_s'] / p['gen_s'] for p in ps):.2f}",
                f"{median(p['gap_mean'] for p in ps):.2e}",
                f"{max(p['gap_max'] for p in ps):.2e}",
                f"{median(p['load'] for p in ps):.2f}",
            ]
        )
    lines += [
        f"rollouts: {len(tasks)} prompts x G={group}, cpu-learn env and turn budget, KV reuse on, {chosen} torch "
        f"thread(s); medians over {repeats} play(s) per setting, order rotating; bound = best row above; 'rollout at "
        f"bound / actual': the play's prefill columns at {prefill_rate:.0f} tokens/s (bf16, 2 threads, {wide} "
        f"columns) plus its one-token passes at {step_seconds * 1e3:.0f} ms (the streamed bound's step) over its "
        "generation seconds (the compact decoder only)",
        table(
            [
                "setting",
                "plays",
                "gen tokens",
                "prefilled",
                "generation s",
                "tool s",
                "weight copy s",
                "tokens/s",
                "/ linear bound",
                "/ bound with attention",
                "/ streamed bound",
                "prefill s",
                "decode s",
                "rollout at bound / actual",
                "logprob gap mean",
                "gap max",
                "load 1m",
            ],
            rows_out,
        ),
    ]
    before = median(p["tokens"] / p["gen_s"] for p in plays[names[0]])
    for name in names[1:]:
        after = median(p["tokens"] / p["gen_s"] for p in plays[name])
        lines.append(f"speed-up of '{name}' over '{names[0]}': {after / before:.2f}x")
    return "\n".join(lines)


def _paired(
    config: Any,
    env: Any,
    tasks: Any,
    base: Any,
    batch: list[Any],
    trainer: Any,
    repeats: int,
    seed: int,
    before: str = "generate",
) -> str:
    """:func:`run`'s paired mode: rollouts whose every generation call both decoders run, then the bound."""
    from dataclasses import replace

    from training.grpo import generation
    from training.grpo.rollout import AgentRollout

    records: list[dict[str, Any]] = []
    original, both = paired_calls(records, before)
    contexts = []
    generation._hf = both
    try:
        for r in range(repeats):
            rollout = AgentRollout(
                env, tasks, replace(base, fast_decode=True, engine="bf16", seed=seed + r, batch_size=len(batch))
            )
            out = rollout(batch, trainer)
            lengths = [len(p) + len(c) for p, c in zip(out["prompt_ids"], out["completion_ids"])]
            contexts.append(sum(lengths) / len(lengths) / 2)
            print(f"paired play {r}: {len(records) // 2} calls so far", file=sys.stderr, flush=True)
    finally:
        generation._hf = original
    bound = bounds(config, len(batch), int(median(contexts)))
    best = max(bound.values(), key=lambda vs: vs[0])
    return "\n".join(
        [
            f"decode bound, batch {len(batch)} (tokens/s of the linear products; 'with attention' at the rollouts' "
            f"median mean context {int(median(contexts))}; 'weights streamed' reads a distinct matrix per layer):",
            bound_table(bound),
            paired_report(records, best[0], best[2], before),
            sampler_line(len(batch), config.vocab_size),
        ]
    )
