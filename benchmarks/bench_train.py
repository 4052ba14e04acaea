"""GRPO step time on a CPU, and where it goes: generation, the env's tool calls, training.

Run: ``python -m benchmarks.bench_train [--model smollm2|PATH|tiny] [--steps 3] [--group 4] [--kv both|on|off]
[--kv-repeats 2] [--rollout-speed]``.
A few real GRPO steps (:mod:`training.grpo.train`: the real env, real TRL, the AgentGRPOTrainer) on the index's
SailorFog-QA train split; the target is that the env's tool calls stay under 5% of the step time (the simulator
must never be what a trainer waits for). Pass an SFT checkpoint as ``--model`` to time the model the issue names;
the default is the bundled SmolLM2-135M-Instruct (converted once under ``$SIM_WEB_HOME/models``).

``--kv`` picks the rollout's KV-cache reuse between turns (``RolloutConfig.reuse_kv``); ``both`` plays every step's
rollout without and with reuse (``--kv-repeats`` times each, the order alternating, the same seeds, so both sides
sample the same episodes up to float noise) and prints the generation tokens/s of each play and each side's
median. The step table then shows one rollout with reuse (the extra plays are left out of every column).
"""

from __future__ import annotations

import argparse
import platform
import tempfile
from statistics import median
from typing import Any

from benchmarks.common import ensure_sample_index, table

KV_SIDES = {"on": (True,), "off": (False,), "both": (False, True)}


def kv_rollout(sides: tuple[bool, ...], records: list[dict[str, Any]], repeats: int = 1) -> type:
    """An :class:`~training.grpo.rollout.AgentRollout` that plays each call ``repeats`` times per reuse setting in
    ``sides`` (the order of the sides reversed on every other play, so that neither always goes first) and appends
    each play's generated tokens and generation seconds to ``records``; the trainer gets a play with reuse when there
    is one."""
    from dataclasses import replace

    from training.grpo.rollout import AgentRollout

    class KVRollout(AgentRollout):
        plays = 0

        def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
            outs, call = {}, KVRollout.plays // (repeats * len(sides)) + 1
            for _ in range(repeats):
                for reuse in sides if (KVRollout.plays // len(sides)) % 2 == 0 else sides[::-1]:
                    KVRollout.plays += 1
                    self.config = replace(self.config, reuse_kv=reuse)
                    outs[reuse] = out = super().__call__(prompts, trainer)
                    timing = out["rollout_timing"]
                    records.append(
                        {
                            "call": call,
                            "reuse": reuse,
                            "tokens": sum(out["generated_tokens"]),
                            "seconds": timing["generation_seconds"],
                            "turns": max(out["turns"]),
                            "reused": timing.get("reused_tokens", 0),
                            "prefilled": timing.get("prefilled_tokens", 0),
                        }
                    )
            return outs[max(outs)]

    return KVRollout


def kv_report(records: list[dict[str, Any]]) -> str:
    """Per rollout, tokens/s of each side; then the medians and their ratio."""
    rows, rates = [], {False: [], True: []}
    for r in records:
        rate = r["tokens"] / r["seconds"] if r["seconds"] else 0.0
        rates[r["reuse"]].append(rate)
        rows.append(
            [
                r["call"],
                "on" if r["reuse"] else "off",
                r["tokens"],
                r["turns"],
                f"{r['seconds']:.1f}",
                f"{rate:.2f}",
                r["reused"] or "-",
                r["prefilled"] or "-",
            ]
        )
    lines = [
        table(["step", "kv reuse", "gen tokens", "most turns", "generation s", "tokens/s", "reused", "prefilled"], rows)
    ]
    med = {k: median(v) for k, v in rates.items() if v}
    lines.append(
        "median generation tokens/s: "
        + ", ".join(f"reuse {'on' if k else 'off'} {v:.2f}" for k, v in sorted(med.items()))
    )
    if len(med) == 2 and med[False]:
        lines.append(f"speed-up with KV reuse: {med[True] / med[False]:.2f}x")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the steps and print the per-step split and the totals."""
    import torch

    from training.grpo.recipes import load_recipe

    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_train")
    ap.add_argument("--index", default=None)
    ap.add_argument("--model", default="smollm2", help="'smollm2', 'tiny' or a model folder (e.g. an SFT checkpoint)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--group", type=int, default=4, help="G")
    ap.add_argument("--prompts", type=int, default=1, help="tasks per step")
    ap.add_argument("--turns", type=int, default=4, help="env turn cap")
    ap.add_argument("--turn-tokens", type=int, default=96)
    ap.add_argument("--budget", type=int, default=2048, help="max_completion_length (tool output included)")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument(
        "--kv",
        choices=sorted(KV_SIDES),
        default="on",
        help="KV-cache reuse between turns: on, off, or both (each step's rollout played once per side)",
    )
    ap.add_argument(
        "--kv-repeats",
        type=int,
        default=1,
        help="with --kv both: plays per side and step (more samples, without more training steps)",
    )
    ap.add_argument(
        "--rollout-speed",
        action="store_true",
        help="only the rollout path: the decode bound, and one rollout of --prompts x --group per rollout setting "
        "(before / fast decode / bf16 engine), --kv-repeats times in rotating order (benchmarks.rollout_speed)",
    )
    ap.add_argument(
        "--rollout-settings",
        default=None,
        help="with --rollout-speed: comma-separated indices of benchmarks.rollout_speed.SETTINGS to play (default all)",
    )
    ap.add_argument(
        "--rollout-paired",
        action="store_true",
        help="with --rollout-speed: every generation call of --kv-repeats bf16-engine rollouts run by both decoders "
        "(generate, then compact decode, order alternating): before/after under the same load",
    )
    ap.add_argument(
        "--paired-before",
        choices=["generate", "flat-sampler"],
        default="generate",
        help="with --rollout-paired: the side before the compact decoder: generate, or the compact decoder with its "
        "earlier float64 one-level draw (benchmarks.rollout_speed.BEFORE)",
    )
    args = ap.parse_args(argv)
    index = str(ensure_sample_index(args.index))
    if args.rollout_speed:
        from benchmarks.rollout_speed import run

        chosen = None if args.rollout_settings is None else [int(i) for i in args.rollout_settings.split(",")]
        print(
            run(
                index,
                args.prompts,
                args.group,
                args.kv_repeats,
                args.threads,
                settings=chosen,
                paired=args.rollout_paired,
                model=args.model,
                before=args.paired_before,
            )
        )
        return 0
    recipe = load_recipe(
        "cpu-smoke",
        {
            "model": args.model,
            "index_dir": index,
            "n_tasks": None,
            "trainer.max_steps": args.steps,
            "trainer.num_generations": args.group,
            "trainer.prompts_per_step": args.prompts,
            "env.max_turns": args.turns,
            "rollout.max_turn_tokens": args.turn_tokens,
            "trainer.max_completion_length": args.budget,
            "env.max_response_chars": 1500,
            "env.max_obs_chars": 20_000,
            "trainer.learning_rate": 1e-6,
            "threads": args.threads,
            "output_dir": tempfile.mkdtemp(prefix="bench-train-"),
            "resume": False,
            "trainer.save_steps": 10_000,
        },
    )
    records: list[dict[str, Any]] = []
    summary = train_with(recipe, kv_rollout(KV_SIDES[args.kv], records, args.kv_repeats))
    rows, tot = [], {"gen": 0.0, "tool": 0.0, "train": 0.0}
    for r in summary["metrics"]:
        gen, tool, tr = r.get("time/generation", 0.0), r.get("time/tool", 0.0), r.get("time/training", 0.0)
        step = gen + tool + tr if args.kv == "both" else r.get("step_time", gen + tool + tr)
        tot["gen"] += gen
        tot["tool"] += tool
        tot["train"] += tr
        rows.append(
            [
                r["step"],
                f"{step:.1f}",
                f"{gen:.1f}",
                f"{tool:.2f}",
                f"{tr:.1f}",
                f"{100 * tool / step:.2f}%",
                f"{r.get('agent/generated_tokens', 0):.0f}",
                f"{r.get('agent/tool_calls_per_episode', 0):.2f}",
                f"{r.get('agent/reward_mean', 0):.3f}",
            ]
        )
    print(
        f"GRPO on {args.model}, G={args.group}, {args.prompts} task(s)/step, {platform.processor() or platform.machine()}, "
        f"{torch.get_num_threads()} torch threads, bf16 on CPU: no (float32)"
    )
    print(
        table(
            [
                "step",
                "step s",
                "generation s",
                "tool s",
                "training s",
                "tools share",
                "gen tokens",
                "calls/ep",
                "reward",
            ],
            rows,
        )
    )
    total = sum(tot.values()) or 1.0
    print(
        f"totals: generation {100 * tot['gen'] / total:.1f}%, tool calls {100 * tot['tool'] / total:.2f}%, training "
        f"{100 * tot['train'] / total:.1f}% (target: tool calls < 5%: {'met' if tot['tool'] / total < 0.05 else 'NOT met'})"
    )
    print(kv_report(records))
    return 0


def train_with(recipe: Any, rollout_class: type) -> dict[str, Any]:
    """Run :func:`training.grpo.train.main` with ``rollout_class`` in place of the rollout it builds."""
    from training.grpo import rollout
    from training.grpo.train import main as train

    original = rollout.AgentRollout
    rollout.AgentRollout = rollout_class  # type: ignore[misc]
    try:
        return train(recipe)
    finally:
        rollout.AgentRollout = original  # type: ignore[misc]


if __name__ == "__main__":
    raise SystemExit(main())
