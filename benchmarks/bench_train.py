"""GRPO step time on a CPU, and where it goes: generation, the env's tool calls, training.

Run: ``python -m benchmarks.bench_train [--model smollm2|PATH|tiny] [--steps 3] [--group 4]``.
A few real GRPO steps (:mod:`training.grpo.train`: the real env, real TRL, the AgentGRPOTrainer) on the index's
SailorFog-QA train split; the target is that the env's tool calls stay under 5% of the step time (the simulator
must never be what a trainer waits for). Pass an SFT checkpoint as ``--model`` to time the model the issue names;
the default is the bundled SmolLM2-135M-Instruct (converted once under ``$SIM_WEB_HOME/models``).
"""

from __future__ import annotations

import argparse
import platform
import tempfile

from benchmarks.common import ensure_sample_index, table


def main(argv: list[str] | None = None) -> int:
    """Run the steps and print the per-step split and the totals."""
    import torch

    from training.grpo.config import load_recipe
    from training.grpo.train import main as train

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
    args = ap.parse_args(argv)
    index = str(ensure_sample_index(args.index))
    recipe = load_recipe("cpu-smoke", model=args.model, index_dir=index, n_tasks=None, max_steps=args.steps,
                         num_generations=args.group, prompts_per_step=args.prompts, max_turns=args.turns,
                         max_turn_tokens=args.turn_tokens, max_completion_length=args.budget, max_response_chars=1500,
                         max_obs_chars=20_000, learning_rate=1e-6, threads=args.threads,
                         output_dir=tempfile.mkdtemp(prefix="bench-train-"), resume=False, save_steps=10_000)
    summary = train(recipe)
    rows, tot = [], {"gen": 0.0, "tool": 0.0, "train": 0.0}
    for r in summary["metrics"]:
        gen, tool, tr = r.get("time/generation", 0.0), r.get("time/tool", 0.0), r.get("time/training", 0.0)
        step = r.get("step_time", gen + tool + tr)
        tot["gen"] += gen
        tot["tool"] += tool
        tot["train"] += tr
        rows.append([r["step"], f"{step:.1f}", f"{gen:.1f}", f"{tool:.2f}", f"{tr:.1f}", f"{100 * tool / step:.2f}%",
                     f"{r.get('agent/generated_tokens', 0):.0f}", f"{r.get('agent/tool_calls_per_episode', 0):.2f}",
                     f"{r.get('agent/reward_mean', 0):.3f}"])
    print(f"GRPO on {args.model}, G={args.group}, {args.prompts} task(s)/step, {platform.processor() or platform.machine()}, "
          f"{torch.get_num_threads()} torch threads, bf16 on CPU: no (float32)")
    print(table(["step", "step s", "generation s", "tool s", "training s", "tools share", "gen tokens", "calls/ep", "reward"], rows))
    total = sum(tot.values()) or 1.0
    print(f"totals: generation {100 * tot['gen'] / total:.1f}%, tool calls {100 * tot['tool'] / total:.2f}%, training "
          f"{100 * tot['train'] / total:.1f}% (target: tool calls < 5%: {'met' if tot['tool'] / total < 0.05 else 'NOT met'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
