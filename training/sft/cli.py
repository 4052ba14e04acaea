"""``sim-web sft``: rejection-sampling SFT cold start (collect a dataset from eval runs, then train on it).

The episodes come from the evaluation harness, any policy, on the train split, k samples per task, with the tools
the policy will be trained with (all four by default; PythonInterpreter runs in the bubblewrap sandbox).

Examples::

    sim-web sft collect RUN [RUN ...] --tokenizer smollm2 --max-turns 12 --out /tmp/sft-data
    sim-web sft train --dataset /tmp/sft-data --model smollm2 --out /tmp/smol-sft      # LoRA, merged at the end
    sim-web eval --policy hf:/tmp/smol-sft --n 20
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any

from simweb_core.errors import WikiIndexError

log = logging.getLogger(__name__)


def add_parser(subparsers: Any) -> None:
    """Register ``sim-web sft`` with its ``collect`` and ``train`` subcommands."""
    from training.sft.collect import CollectConfig
    from training.sft.train import SFTRunConfig

    p = subparsers.add_parser(
        "sft",
        help="SFT cold start: rejection-sample eval runs into a dataset, train on it",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="sft_cmd", required=True)
    c = sub.add_parser(
        "collect", help="keep correct, well-formed, short, unique episodes of eval runs; build the dataset"
    )
    d = CollectConfig()
    c.add_argument("runs", nargs="+", help="eval run folders (trajectories.jsonl + run.json) on the train split")
    c.add_argument(
        "--out", required=True, help="dataset folder (save_to_disk, README.md card, acceptance.json, kept.jsonl)"
    )
    c.add_argument(
        "--tokenizer",
        default="smollm2",
        help="model folder (or smollm2) whose tokenizer and chat template render the chats",
    )
    c.add_argument("--max-turns", type=int, default=d.max_turns, help=f"turn cap (default {d.max_turns})")
    c.add_argument("--min-score", type=float, default=d.min_score, help="least correctness score to keep (default 1.0)")
    c.add_argument(
        "--max-tokens", type=int, default=None, help="drop episodes longer than this many tokens (default: keep all)"
    )
    c.add_argument(
        "--forced-answers",
        action="store_true",
        help=CollectConfig.__dataclass_fields__["forced_answers"].metadata["help"],
    )
    c.add_argument("--any-split", action="store_true", help="accept runs on splits other than train")
    c.set_defaults(func=run_collect)
    t = sub.add_parser("train", help="SFTTrainer on a collected dataset (assistant-only loss; LoRA or full)")
    f = SFTRunConfig.__dataclass_fields__
    t.add_argument("--dataset", required=True, help=f["dataset"].metadata["help"])
    t.add_argument("--out", required=True, help=f["out"].metadata["help"])
    t.add_argument("--model", default="smollm2", help=f["model"].metadata["help"])
    t.add_argument("--full", action="store_true", help="full fine-tune instead of LoRA")
    for name in (
        "lora_r",
        "lora_alpha",
        "learning_rate",
        "epochs",
        "max_steps",
        "batch_size",
        "grad_accum",
        "warmup_ratio",
        "max_length",
        "save_steps",
        "seed",
        "threads",
    ):
        fld = f[name]
        kind = float if name in ("learning_rate", "epochs", "warmup_ratio") else int
        t.add_argument(
            "--" + name.replace("_", "-"),
            type=kind,
            default=fld.default,
            help=f"{fld.metadata['help']} (default {fld.default})",
        )
    t.add_argument("--gradient-checkpointing", action="store_true", help=f["gradient_checkpointing"].metadata["help"])
    t.add_argument("--no-resume", action="store_true", help="start over even when OUT/checkpoints holds a checkpoint")
    t.add_argument("--no-progress", action="store_true", help="no progress bars")
    t.set_defaults(func=run_train)


def run_collect(args: argparse.Namespace) -> int:
    """``sim-web sft collect``: filter the runs, tokenise, save the dataset and its card; print the acceptance table."""
    from pathlib import Path

    from transformers import AutoTokenizer

    from sim_web.protocol import TOOL_NAMES
    from training.sft.collect import CollectConfig, collect, format_stats
    from training.sft.dataset import build_dataset, dataset_card, save
    from training.sft.train import resolve_model

    try:
        cfg = CollectConfig(
            runs=tuple(args.runs),
            max_turns=args.max_turns,
            min_score=args.min_score,
            forced_answers=args.forced_answers,
            require_split=None if args.any_split else "train",
        )
        result = collect(cfg)
        print(format_stats(result.stats))
        model = resolve_model(args.tokenizer)
        tokenizer = AutoTokenizer.from_pretrained(str(model))
        tools = list(
            dict.fromkeys(t for s in result.sources for t in s["tools"] or TOOL_NAMES)
        )  # the system prompt's order
        ds = build_dataset(result.kept, tokenizer, tools, max_tokens=args.max_tokens)
        out = save(ds, args.out, dataset_card(ds, result, model.name, args.max_tokens), result.stats.table())
    except WikiIndexError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    with (Path(out) / "kept.jsonl").open("w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in result.kept)
    print(
        f"\ndataset: {out} ({len(ds)} examples, {sum(ds['num_tokens'])} tokens, {sum(ds['num_trained_tokens'])} trained)\n"
        f"card:    {Path(out) / 'README.md'}"
    )
    return 0


def run_train(args: argparse.Namespace) -> int:
    """``sim-web sft train``: run SFT and print where the model went."""
    from training.sft.train import SFTRunConfig, train

    try:
        cfg = SFTRunConfig(
            dataset=args.dataset,
            model=args.model,
            out=args.out,
            lora=not args.full,
            lora_r=args.lora_r,
            lora_alpha=args.lora_alpha,
            learning_rate=args.learning_rate,
            epochs=args.epochs,
            max_steps=args.max_steps,
            batch_size=args.batch_size,
            grad_accum=args.grad_accum,
            warmup_ratio=args.warmup_ratio,
            max_length=args.max_length,
            save_steps=args.save_steps,
            seed=args.seed,
            threads=args.threads,
            gradient_checkpointing=args.gradient_checkpointing,
            resume=not args.no_resume,
            progress=not args.no_progress,
        )
        out = train(cfg)
    except WikiIndexError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    summary = json.loads((out / "sft_run.json").read_text(encoding="utf-8"))
    print(
        f"model:  {out}  (loss {summary['loss_first']} -> {summary['loss_last']})\nevaluate: sim-web eval --policy hf:{out}"
    )
    return 0
