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
from typing import Any

from simweb_core.cli import print_error
from simweb_core.errors import WikiIndexError

log = logging.getLogger(__name__)


#: Generated flags (simweb_core.cli): flag -> CollectConfig / SFTRunConfig field (help, type, default from the field).
COLLECT_FLAGS = {"--max-turns": "max_turns", "--min-score": "min_score", "--forced-answers": "forced_answers"}
TRAIN_FIELDS = (
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
    "gradient_checkpointing",
    "bf16",
    "resume",
    "progress",
)
TRAIN_FLAGS = {"--" + name.replace("_", "-"): name for name in TRAIN_FIELDS}


def add_parser(subparsers: Any) -> None:
    """Register ``sim-web sft`` with its ``collect`` and ``train`` subcommands."""
    from simweb_core.cli import add_config_flags
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
    c.add_argument("runs", nargs="+", help="eval run folders (trajectories.jsonl + run.json) on the train split")
    c.add_argument(
        "--out", required=True, help="dataset folder (save_to_disk, README.md card, acceptance.json, kept.jsonl)"
    )
    c.add_argument(
        "--tokenizer",
        default="smollm2",
        help="model folder (or smollm2) whose tokenizer and chat template render the chats",
    )
    add_config_flags(c, CollectConfig, COLLECT_FLAGS)
    c.add_argument(
        "--max-tokens", type=int, default=None, help="drop episodes longer than this many tokens (default: keep all)"
    )
    c.add_argument("--any-split", action="store_true", help="accept runs on splits other than train")
    c.set_defaults(func=run_collect)
    t = sub.add_parser("train", help="SFTTrainer on a collected dataset (assistant-only loss; LoRA or full)")
    f = SFTRunConfig.__dataclass_fields__
    t.add_argument("--dataset", required=True, help=f["dataset"].metadata["help"])
    t.add_argument("--out", required=True, help=f["out"].metadata["help"])
    t.add_argument("--model", default="smollm2", help=f["model"].metadata["help"])
    t.add_argument("--full", action="store_true", help="full fine-tune instead of LoRA")
    add_config_flags(t, SFTRunConfig, TRAIN_FLAGS)
    t.set_defaults(func=run_train)


def run_collect(args: argparse.Namespace) -> int:
    """``sim-web sft collect``: filter the runs, tokenise, save the dataset and its card; print the acceptance table."""
    from pathlib import Path

    from transformers import AutoTokenizer

    from sim_web.protocol import TOOL_NAMES
    from simweb_core.cli import given_flags
    from simweb_core.data import from_data
    from training.sft.collect import CollectConfig, collect, format_stats
    from training.sft.dataset import build_dataset, dataset_card, save
    from training.sft.train import resolve_model

    try:
        given = {**given_flags(args), "runs": tuple(args.runs), "require_split": None if args.any_split else "train"}
        cfg = from_data(CollectConfig, given)
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
        print_error(e)
        return 2
    with (Path(out) / "kept.jsonl").open("w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in result.kept)
    print(
        f"\ndataset: {out} ({len(ds)} examples, {sum(ds['num_tokens'])} tokens, {sum(ds['num_trained_tokens'])} trained)\n"
        f"card:    {Path(out) / 'README.md'}"
    )
    return 0


def train_config(args: argparse.Namespace) -> Any:
    """The :class:`~training.sft.train.SFTRunConfig` of parsed ``sft train`` arguments.

    Raises:
        ConfigError: For values the config refuses, naming the field.
    """
    from simweb_core.cli import given_flags
    from simweb_core.data import from_data
    from training.sft.train import SFTRunConfig

    given = {"dataset": args.dataset, "model": args.model, "out": args.out, "lora": not args.full}
    return from_data(SFTRunConfig, {**given, **given_flags(args)})


def run_train(args: argparse.Namespace) -> int:
    """``sim-web sft train``: run SFT and print where the model went."""
    from training.sft.train import train

    try:
        cfg = train_config(args)
        out = train(cfg)
    except WikiIndexError as e:
        print_error(e)
        return 2
    summary = json.loads((out / "sft_run.json").read_text(encoding="utf-8"))
    print(
        f"model:  {out}  (loss {summary['loss_first']} -> {summary['loss_last']})\nevaluate: sim-web eval --policy hf:{out}"
    )
    return 0
