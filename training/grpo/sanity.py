"""Does the trainer learn? SmolLM2-135M under :class:`AgentGRPOTrainer` on a reward it can learn in minutes on a CPU.

A trainer whose reward does not rise here is broken, whatever its unit tests say. Short prompts (an arithmetic
question and the instruction to reply with only the number), a few tokens, a format reward (the reply starts with
the number: SmolLM2-135M does so about a third of the time before training, so groups have variance; it never
uses ``<answer>`` tags unprompted, so a tag format gives no signal to learn from), the recipe's GRPO switches
(leave-one-out, DAPO token-level loss, truncated negatives dropped through TRL's truncation test since there is
no env here). Writes ``metrics.jsonl`` and ``reward.png`` (reward per step)::

    nice python -m training.grpo.sanity --steps 12 --threads 1 --out $SIM_WEB_HOME/runs/grpo/sanity
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import time
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)
SYSTEM = "Reply with only the number."
_STARTS_WITH_NUMBER = re.compile(r"^\s*-?\d")


def format_reward(completions: list[Any], **kwargs: Any) -> list[float]:
    """1 when the reply starts with a number (the required format: the answer first, no preamble), else 0."""
    out = []
    for c in completions:
        text = c[0]["content"] if isinstance(c, list) else str(c)
        out.append(1.0 if _STARTS_WITH_NUMBER.match(text) else 0.0)
    return out


def questions(n: int, seed: int) -> list[dict[str, Any]]:
    """``n`` arithmetic prompts (deterministic)."""
    import random

    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        a, b = rng.randint(2, 99), rng.randint(2, 99)
        rows.append({"prompt": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": f"{a} + {b} = ?"}]})
    return rows


def plot(rows: list[dict[str, Any]], path: Path) -> Path:
    """Reward per step (mean and the share of exact-format replies) as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [r["step"] for r in rows]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(steps, [r["agent/reward_mean"] for r in rows], marker="o", label="format reward (mean)")
    ax.set_xlabel("GRPO step")
    ax.set_ylabel("reward")
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    ax.set_title("SmolLM2-135M, AgentGRPOTrainer (LOO, DAPO), CPU")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    """Run the sanity training and write the curve; returns the exit status."""
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from training.grpo.config import GRPORecipe
    from training.grpo.grpo_config import AgentGRPOConfig
    from training.grpo.step_log import metrics_callback
    from training.grpo.trainer import AgentGRPOTrainer

    p = argparse.ArgumentParser(prog="python -m training.grpo.sanity", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="smollm2", help="'smollm2' or a model folder")
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--prompts", type=int, default=1, help="prompts per step")
    p.add_argument("--group", type=int, default=8, help="completions per prompt (G)")
    p.add_argument("--max-tokens", type=int, default=6)
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="runs/grpo-sanity")
    a = p.parse_args(argv)
    if a.threads:
        torch.set_num_threads(a.threads)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "metrics.jsonl").unlink(missing_ok=True)
    path = GRPORecipe(model=a.model).model_path()
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    args = AgentGRPOConfig(
        output_dir=str(out),
        per_device_train_batch_size=a.prompts * a.group,
        num_generations=a.group,
        max_completion_length=a.max_tokens,
        max_steps=a.steps,
        learning_rate=a.lr,
        temperature=1.0,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        seed=a.seed,
        data_seed=a.seed,
        lr_scheduler_type="constant",
        warmup_steps=0,
        log_completions=False,
        gradient_checkpointing=False,
    )
    trainer = AgentGRPOTrainer(
        model=model,
        processing_class=tok,
        reward_funcs=[format_reward],
        args=args,
        train_dataset=Dataset.from_list(questions(a.steps * a.prompts, a.seed)),
    )
    trainer.add_callback(metrics_callback(out / "metrics.jsonl", a.steps))
    t0 = time.perf_counter()
    trainer.train()
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if line.strip()]
    plot(rows, out / "reward.png")
    first, last = rows[: max(1, len(rows) // 4)], rows[-max(1, len(rows) // 4) :]
    mean = lambda rs: sum(r["agent/reward_mean"] for r in rs) / len(rs)  # noqa: E731
    print(
        f"reward: first quarter {mean(first):.3f} -> last quarter {mean(last):.3f} over {len(rows)} steps "
        f"({time.perf_counter() - t0:.0f} s); curve: {out / 'reward.png'}"
    )
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    raise SystemExit(main())
