"""The ``sim-web grpo`` subcommand: run a GRPO recipe (also ``python -m training.grpo.train``).

Examples::

    sim-web grpo                                          # the cpu-smoke recipe: a few steps with a tiny model
    sim-web grpo --recipe cpu-smoke --set trainer.max_steps=6     # `make train-smoke`
    sim-web grpo --recipe single-gpu --set model=/ckpt/sft --out /runs/grpo-sft
"""

from __future__ import annotations

import argparse
import logging
import sys

from simweb_core.cli import print_error
from simweb_core.errors import WikiIndexError


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``grpo`` on the ``sim-web`` parser."""
    from training.grpo.train import add_arguments

    p = subparsers.add_parser(
        "grpo",
        help="train the agent with GRPO on the simulated web (recipes in training/configs)",
        description="GRPO with leave-one-out advantages and truncated negatives out of the loss; "
        "rollouts through the env's ReAct loop. PythonInterpreter runs in the "
        "bubblewrap sandbox (refused where it cannot run).",
    )
    add_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the recipe, print the per-step metrics table; returns the exit status."""
    from training.grpo.step_log import format_table
    from training.grpo.train import main, recipe_from_namespace

    try:
        recipe = recipe_from_namespace(args)
    except (WikiIndexError, TypeError) as e:
        print_error(e)
        return 2
    print(f"note: tools: {', '.join(recipe.tools)}", file=sys.stderr)
    summary = main(recipe)
    print(format_table(summary["metrics"]))
    print(f"{summary['steps']} steps in {summary['wall_seconds']} s; final model: {summary['final_model']}")
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    parser = argparse.ArgumentParser(prog="python -m training.grpo.cli")
    parser.set_defaults(func=run)
    from training.grpo.train import add_arguments

    add_arguments(parser)
    sys.exit(parser.parse_args().func(parser.parse_args()))
