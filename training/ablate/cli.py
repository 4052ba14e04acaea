"""The ``sim-web ablate`` subcommand (also ``python -m training.ablate.cli``).

Examples::

    sim-web ablate --quick                                   # the whole grid on CPU, tiny model, 2 steps each (`make ablate`)
    sim-web ablate --quick --configs base,dupo               # a sub-grid
    sim-web ablate --set model=/ckpt/sft --set trainer.max_steps=50  # the single-gpu recipe (GPU, vLLM)
"""

from __future__ import annotations

import argparse
import logging
import sys

from simweb_core.cli import print_error
from simweb_core.errors import WikiIndexError

#: Generated flags (simweb_core.cli): flag -> AblateConfig field (help, type and default come from the field).
FLAGS = {
    "--recipe": "recipe",
    "--quick": "quick",
    "--configs": "configs",
    "--eval-n": "eval_n",
    "--out": "out",
    "--resume": "resume",
    "--isolate": "isolate",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``sim-web ablate``: the generated flags and ``--set``."""
    from simweb_core.cli import add_config_flags
    from training.ablate.grid import NAMES
    from training.ablate.runner import AblateConfig

    add_config_flags(p, AblateConfig, FLAGS)
    p.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="recipe field for every run (repeatable)"
    )
    p.epilog = f"configurations: {', '.join(NAMES)}"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``ablate`` on the ``sim-web`` parser."""
    p = subparsers.add_parser(
        "ablate",
        help="GRPO ablation grid: one switch at a time (advantage, truncation, DUPO, loop)",
        description="Short GRPO runs that differ in one switch each, same seed, tasks and rollouts; "
        "a table (terminal, markdown, JSON) and a reward-vs-step plot. Resumable.",
    )
    add_arguments(p)
    p.set_defaults(func=run)


def config_from_args(args: argparse.Namespace) -> object:
    """The :class:`~training.ablate.runner.AblateConfig` of parsed options."""
    from simweb_core.cli import given_flags
    from simweb_core.data import from_data
    from simweb_core.overrides import parse_overrides
    from training.ablate.runner import AblateConfig
    from training.grpo.config import GRPORecipe

    overrides = parse_overrides(args.set, target=GRPORecipe)
    return from_data(AblateConfig, {**given_flags(args), "overrides": overrides})


def run(args: argparse.Namespace) -> int:
    """Run the grid, print the table, write the report; returns the exit status."""
    from training.ablate.report import QUICK_NOTE, format_table, write_report
    from training.ablate.runner import run_grid

    try:
        cfg = config_from_args(args)
    except (WikiIndexError, TypeError) as e:
        print_error(e)
        return 2
    results = run_grid(cfg)  # type: ignore[arg-type]
    note = QUICK_NOTE if cfg.quick else ""  # type: ignore[attr-defined]
    paths = write_report(results, cfg.out_dir(), note)  # type: ignore[attr-defined]
    print(format_table(results))
    if note:
        print(f"\nnote: {note}")
    skipped = [r["name"] for r in results if r.get("skipped")]
    if skipped:
        print(f"resumed: {', '.join(skipped)} already finished (--no-resume reruns them)")
    print(f"report: {paths['markdown']}, {paths['json']}, {paths['plot']}")
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    parser = argparse.ArgumentParser(prog="python -m training.ablate.cli")
    add_arguments(parser)
    parser.set_defaults(func=run)
    sys.exit(run(parser.parse_args()))
