"""The training half of a GRPO step on a CPU: DUPO's copies computed again against counted as weights, with compacted
micro-batches, and TRL's fused LM head against the trainer's head on the trained positions.

Run: ``python -m benchmarks.bench_grpo_loss [--run DIR] [--reps 3] [--seed 0] [--precision auto]
[--sides copies,weights,head] [--micro N] [--profile N]``. It plays one real generation batch of ``sim-web learn``'s
GRPO stage (the ``cpu-learn`` recipe, the run's SFT model, its task set and pre-filter verdict: 4 tasks x 8
rollouts), then runs the forward and backward passes of that same batch, split into the recipe's micro-batches after
TRL's shuffle, up to three ways, alternating ``--reps`` times (``--profile N`` adds one more pass of the last side
under ``torch.profiler`` and prints its N costliest ops):

- ``copies``: the batch DUPO fills with copies of informative groups, through TRL's own loss (how the trainer
  worked before: every copy computed again, every micro-batch at the generation batch's full width);
- ``weights``: the trainer's batch (copies as weights, rows with advantage 0 and padding columns left out), its
  logprobs from TRL's fused head over every position (``trained_positions_only=False``);
- ``head``: the same, its logprobs from :mod:`training.grpo.head` on the trained positions only (the default).

It prints each pass's seconds, the medians and their ratios against the first side, the rows and tokens each side
computed, and the largest difference between each gradient and the first side's relative to its largest entry (float
summation order in float32; under bf16 autocast also the heads' rounding). Without ``--run`` it uses
``$SIM_WEB_HOME/runs/learn/cpu-learn`` (``make learn``'s run).
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any

from benchmarks.common import ensure_sample_index, table
from benchmarks.rollout_speed import _time, linear_shapes


def capture_batch(recipe: Any) -> tuple[Any, dict[str, Any]]:
    """Run one step of :func:`training.grpo.train.main` whose loss is skipped; return the trainer and the generation
    batch it built (the trainer's own, weighted and masked)."""
    import torch

    from training.grpo.train import main as train
    from training.grpo.trainer import AgentGRPOTrainer

    seen: list[tuple[Any, dict[str, Any]]] = []
    generate, loss = AgentGRPOTrainer._generate_and_score_completions, AgentGRPOTrainer._compute_loss

    def keep(self: Any, inputs: Any) -> dict[str, Any]:
        out = generate(self, inputs)
        seen.append((self, out))
        return out

    AgentGRPOTrainer._generate_and_score_completions = keep  # type: ignore[method-assign]
    AgentGRPOTrainer._compute_loss = lambda self, m, i: torch.zeros((), requires_grad=True)  # type: ignore[method-assign]
    try:
        train(recipe)
    finally:
        AgentGRPOTrainer._generate_and_score_completions = generate  # type: ignore[method-assign]
        AgentGRPOTrainer._compute_loss = loss  # type: ignore[method-assign]
    return seen[0]


def copied_batch(trainer: Any, weighted: dict[str, Any]) -> dict[str, Any]:
    """The batch with DUPO's real copies (TRL's rows at full width) that the weighted batch stands for."""
    import torch

    from training.grpo.dupo import dupo_fill_index

    rewards = trainer.batch_rewards()  # the batch's step was 0 when DUPO chose its copies
    index, _ = dupo_fill_index(rewards.cpu(), trainer.num_generations, seed=trainer.dupo_seed(0))
    weight = torch.bincount(index, minlength=rewards.numel()).to(weighted["advantages"].dtype)
    plain = {**weighted, "advantages": weighted["advantages"] / weight.clamp(min=1)}
    return {k: (v.index_select(0, index) if torch.is_tensor(v) and v.dim() else v) for k, v in plain.items()}


@dataclass(frozen=True)
class Part:
    """The shape one micro-batch's forward and backward pass computes: rows, columns (prompt and completion) and the
    positions the output layer scores (the trained ones with ``trained_positions_only``, else every completion
    column)."""

    rows: int
    columns: int
    scored: int


def timed_pass(
    trainer: Any, loss_of: Any, batch: dict[str, Any], micro: int, seed: int, compacts: bool
) -> tuple[float, Any, list[Part]]:
    """Seconds of the forward and backward passes over ``batch`` (shuffled as TRL does, then split into micro-batches
    of ``micro``), the gradient, and the shape of each pass (``compacts``: the loss compacts each micro-batch; a
    micro-batch with no live row computes nothing)."""
    import torch
    from trl.trainer.utils import shuffle_sequence_dict

    from training.grpo.compact import compact_batch, live_rows

    torch.manual_seed(seed)
    batch = shuffle_sequence_dict(batch)
    parts = [
        {k: (v[start : start + micro] if torch.is_tensor(v) and v.dim() else v) for k, v in batch.items()}
        for start in range(0, batch["completion_ids"].shape[0], micro)
    ]
    shapes = []
    for part in parts:
        live = live_rows(part)
        if compacts and not live.any():
            continue
        cut = compact_batch(part, live) if compacts else part
        rows, cols = cut["completion_ids"].shape
        trained = int((cut["completion_mask"] * cut.get("tool_mask", 1)).sum())
        scored = trained if trainer.args.trained_positions_only else rows * cols
        shapes.append(Part(rows, cols + cut["prompt_ids"].shape[1], scored))
    model = trainer.model
    model.train()
    model.zero_grad()
    t = time.perf_counter()
    for part in parts:
        loss_of(trainer, model, part).backward()
    seconds = time.perf_counter() - t
    return seconds, torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None]), shapes


def pass_flops(config: Any, parts: list[Part]) -> float:
    """Matrix-product FLOPs of the forward and backward passes of ``parts``: every linear layer of the backbone on every
    column, the attention products over the causal half of each row's square, and the output layer on the positions
    it scores (the backward pass is twice the forward: the input's gradient and the weight's)."""
    lin = sum(out * inp * count for out, inp, count in linear_shapes(config)[:-1])
    d = config.hidden_size // config.num_attention_heads
    # QK^T and PV: 2 FLOPs a multiply-add each
    attention = 4 * config.num_hidden_layers * config.num_attention_heads * d
    head = config.vocab_size * config.hidden_size
    return sum(
        3 * (2 * lin * p.rows * p.columns + attention * p.rows * p.columns**2 / 2 + 2 * head * p.scored) for p in parts
    )


def linear_rate(config: Any, tokens: int, dtype: Any) -> float:
    """FLOP/s of one forward and backward pass of the backbone's linear layers on ``tokens`` rows (the three products
    per layer: output, input gradient, weight gradient), at the current torch threads."""
    import torch

    total, flops = 0.0, 0
    for out, inp, count in linear_shapes(config)[:-1]:
        w, x, g = (torch.randn(*shape, dtype=dtype) for shape in ((out, inp), (tokens, inp), (tokens, out)))
        total += count * _time(lambda w=w, x=x, g=g: (x @ w.T, g @ w, g.T @ x), reps=3)
        flops += count * 6 * out * inp * tokens
    return flops / total


def side_table(
    trainer: Any,
    sides: dict[str, Any],
    seconds: dict[str, list[float]],
    grads: dict[str, Any],
    parts: dict[str, list[Part]],
) -> str:
    """Each side's rows, tokens computed, median seconds, speed-up and gradient gap against the first side."""
    first = next(iter(sides))
    scale = grads[first].abs().max()
    rows = [
        [
            side,
            batch["completion_ids"].shape[0],
            sum(p.rows * p.columns for p in parts[side]),
            f"{median(seconds[side]):.1f}",
            f"{median(seconds[first]) / median(seconds[side]):.2f}x",
            f"{float((grads[side] - grads[first]).abs().max() / scale):.1e}",
        ]
        for side, (_, batch, _, _) in sides.items()
    ]
    head = ["side", "rows in batch", "tokens computed (rows x columns, last rep)", "median s", f"speed-up over {first}"]
    return table([*head, f"gradient gap to {first}"], rows)


def bound_lines(config: Any, parts: dict[str, list[Part]], seconds: dict[str, list[float]], dtype: Any) -> str:
    """What bounds the passes: each side's matrix-product FLOPs (:func:`pass_flops`), the rate it ran at, and the
    seconds those FLOPs take at the rate the backbone's linear layers reach on a micro-batch of the median size."""
    sizes = sorted(p.rows * p.columns for ps in parts.values() for p in ps)
    rate = linear_rate(config, sizes[len(sizes) // 2], dtype)
    lines = [f"linear layers, forward and backward, {sizes[len(sizes) // 2]} tokens: {rate / 1e9:.0f} GFLOP/s"]
    for side, ps in parts.items():
        flops, took = pass_flops(config, ps), median(seconds[side])
        lines.append(
            f"{side}: {flops / 1e12:.2f} TFLOP in {took:.1f} s = {flops / took / 1e9:.0f} GFLOP/s; at the linear "
            f"layers' rate {flops / rate:.1f} s ({flops / rate / took:.0%} of the time taken)"
        )
    return "\n".join(lines)


def profile_table(trainer: Any, side: tuple[Any, dict[str, Any], bool, bool], micro: int, top: int) -> str:
    """The ops of one more forward and backward pass of ``side`` under ``torch.profiler``, by their own CPU time: what
    the passes spend outside the matrix products (attention kernels, casts, element-wise ops)."""
    from torch.profiler import ProfilerActivity, profile

    loss_of, batch, compacts, own_head = side
    trainer.args.trained_positions_only = own_head
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        seconds, _, _ = timed_pass(trainer, loss_of, batch, micro, 0, compacts)
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=top)
    return f"profiled pass: {seconds:.1f} s (the profiler's own cost included)\n{table}"


def main(argv: list[str] | None = None) -> int:
    """Capture a batch, time both sides, print the table."""
    import torch
    from trl import GRPOTrainer

    from simweb_core.settings import sim_web_home
    from training.grpo.recipes import load_recipe
    from training.learn.config import PRECISIONS, LearnConfig

    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_grpo_loss")
    ap.add_argument("--run", default=None, help="a `sim-web learn` run folder (default: make learn's)")
    ap.add_argument("--reps", type=int, default=3, help="passes per side, alternating")
    ap.add_argument("--seed", type=int, default=0, help="seed of the rollouts (which tasks and samples)")
    ap.add_argument(
        "--precision", choices=PRECISIONS, default="auto", help="as sim-web learn (auto: bf16 where native)"
    )
    ap.add_argument(
        "--micro", type=int, default=None, help="rollouts per forward/backward pass (default: the recipe's)"
    )
    ap.add_argument("--sides", default="copies,weights,head", help="which of copies, weights, head to time, in order")
    ap.add_argument(
        "--profile", type=int, default=0, help="after the timing, profile one more pass of the last side: top N ops"
    )
    args = ap.parse_args(argv)
    run = Path(args.run) if args.run else sim_web_home() / "runs" / "learn" / "cpu-learn"
    index = ensure_sample_index(None)
    verdict = run / "grpo" / "prefilter.json"
    over = {
        "model": str(run / "sft"),
        "tasks": str(index / "tasks" / "cpu-learn.jsonl"),
        "index_dir": str(index),
        "output_dir": tempfile.mkdtemp(prefix="bench-grpo-loss-"),
        "seed": args.seed,
        "resume": False,
        "trainer.max_steps": 1,
        "trainer.save_steps": 10_000,
        "trainer.bf16": LearnConfig(precision=args.precision).bf16(),
        **({"prefilter.verdict": str(verdict)} if verdict.is_file() else {"prefilter.k": 0}),
    }
    recipe = load_recipe("cpu-learn", over)
    trainer, weighted = capture_batch(recipe)
    copies = copied_batch(trainer, weighted)
    micro = args.micro or recipe.trainer.micro_batch or recipe.per_device_batch
    loss = type(trainer)._compute_loss
    every = {
        "copies": (GRPOTrainer._compute_loss, copies, False, False),
        "weights": (loss, weighted, True, False),
        "head": (loss, weighted, True, True),
    }
    unknown = sorted(set(args.sides.split(",")) - set(every))
    if unknown:
        ap.error(f"--sides takes a comma-separated list of {', '.join(every)}; got {', '.join(unknown)}")
    sides = {name: every[name] for name in args.sides.split(",")}
    seconds: dict[str, list[float]] = {s: [] for s in sides}
    grads: dict[str, Any] = {}
    parts: dict[str, list[Part]] = {}
    for rep in range(args.reps):
        for side in list(sides) if rep % 2 == 0 else list(sides)[::-1]:
            loss_of, batch, compacts, own_head = sides[side]
            trainer.args.trained_positions_only = own_head
            s, grads[side], parts[side] = timed_pass(trainer, loss_of, batch, micro, rep, compacts)
            seconds[side].append(s)
            print(f"rep {rep + 1} {side}: {s:.1f} s", flush=True)
    print(
        f"one cpu-learn generation batch ({weighted['completion_ids'].shape[0]} rollouts, "
        f"{int((weighted['advantages'] == 0).sum())} with advantage 0), micro-batches of {micro}, "
        f"{torch.get_num_threads()} torch threads, bf16 {recipe.trainer.bf16}, model {over['model']}"
    )
    print(side_table(trainer, sides, seconds, grads, parts))
    print(bound_lines(trainer.model.config, parts, seconds, torch.bfloat16 if recipe.trainer.bf16 else torch.float32))
    if args.profile:
        print(profile_table(trainer, sides[list(sides)[-1]], micro, args.profile))
    first = next(iter(sides))
    ratios = {side: round(median(seconds[first]) / median(seconds[side]), 3) for side in sides}
    tokens = {side: sum(p.rows * p.columns for p in ps) for side, ps in parts.items()}
    print(json.dumps({"seconds": seconds, "ratios": ratios, "tokens": tokens}))
    shutil.rmtree(over["output_dir"], ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
