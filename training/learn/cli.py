"""``sim-web learn``: base model -> SFT -> GRPO on the lookup + bridge tiers, each evaluated on the same held-out tasks.

Examples::

    sim-web learn                                          # the whole cpu-learn recipe; rerun to resume
    sim-web learn --stages tasks,base                      # only the task set and the base model's eval
    sim-web learn --set eval_n=40 --grpo-set trainer.max_steps=8   # a shorter run
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from simweb_core.errors import ConfigError

#: LearnConfig fields that have a flag of their own: ``--set`` does not set them.
FLAGS = {
    "recipe": "--recipe",
    "out": "--out",
    "index_dir": "--index",
    "stages": "--stages",
    "grpo_overrides": "--grpo-set",
}


def config_from_args(args: argparse.Namespace) -> Any:
    """The :class:`~training.learn.config.LearnConfig` of parsed arguments: ``--set`` values are read as their fields'
    types (``tiers=lookup,bridge``, ``grpo_seeds=0,1,2``, ``eval_n=null``), ``--grpo-set`` keys are checked against
    the GRPO recipe's.

    Raises:
        ConfigError: For a key either flag's config does not have (naming the closest valid keys and the fix), a
            ``--set`` of a field that has its own flag, or a value that cannot be read as its field's type.
    """
    from simweb_core.data import from_data
    from simweb_core.overrides import parse_overrides
    from training.grpo.config import GRPORecipe
    from training.learn.config import STAGES, LearnConfig

    values = parse_overrides(args.set, target=LearnConfig)
    own = [k for k in values if k in FLAGS]
    if own:
        raise ConfigError(f"--set {own[0]}: LearnConfig.{own[0]} has its own flag, use {FLAGS[own[0]]}")
    stages = tuple(s.strip() for s in args.stages.split(",") if s.strip()) if args.stages else STAGES
    given = {
        "recipe": args.recipe,
        "out": args.out,
        "index_dir": args.index,
        "stages": stages,
        "grpo_overrides": parse_overrides(args.grpo_set, "--grpo-set", target=GRPORecipe),
        **values,
    }
    return from_data(LearnConfig, given)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``learn`` on the ``sim-web`` command."""
    from training.learn.config import STAGES

    p = subparsers.add_parser(
        "learn",
        help="base -> SFT -> GRPO on the curriculum tiers, with held-out evals and a report",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--recipe", default="cpu-learn", help="GRPO recipe of the RL stage (default cpu-learn)")
    p.add_argument("--index", default=None, help="index directory (default: the sample index)")
    p.add_argument("--out", default=None, help="run folder (default $SIM_WEB_HOME/runs/learn/<recipe>)")
    p.add_argument("--stages", default=None, help=f"comma-separated stages to run (default all: {','.join(STAGES)})")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a LearnConfig field (repeatable)")
    p.add_argument(
        "--grpo-set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a GRPO recipe field by dotted path, e.g. trainer.max_steps=8 (repeatable)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the recipe and print the report; 2 on a configuration error."""
    from training.learn.run import main

    try:
        out = main(config_from_args(args))
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    report = out / "report.md"
    if report.is_file():
        print(report.read_text(encoding="utf-8"))
        print(f"report: {report}\nplot:   {out / 'learning.png'}")
    return 0
