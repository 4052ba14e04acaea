"""``sim-web learn``: base model -> SFT -> GRPO on the lookup + bridge tiers, each evaluated on the same held-out tasks.

Examples::

    sim-web learn                                          # the whole cpu-learn recipe; rerun to resume
    sim-web learn --stages tasks,base                      # only the task set and the base model's eval
    sim-web learn --set eval_n=40 --grpo-set trainer.max_steps=8   # a shorter run
"""

from __future__ import annotations

import argparse
from typing import Any

from simweb_core.cli import print_error
from simweb_core.errors import ConfigError

#: LearnConfig fields with a flag of their own (generated from the field: simweb_core.cli); ``--set`` sets the others.
FLAGS = {"--recipe": "recipe", "--index": "index_dir", "--out": "out", "--stages": "stages"}


def config_from_args(args: argparse.Namespace) -> Any:
    """The :class:`~training.learn.config.LearnConfig` of parsed arguments: ``--set`` values are read as their fields'
    types (``tiers=lookup,bridge``, ``grpo.seeds=0,1,2``, ``eval_n=null``), ``--grpo-set`` keys are checked against
    the GRPO recipe's and become ``grpo.overrides``.

    Raises:
        ConfigError: For a key either flag's config does not have (naming the closest valid keys and the fix), a
            ``--set`` of a field that has its own flag, or a value that cannot be read as its field's type.
    """
    from simweb_core.cli import given_flags
    from simweb_core.data import from_data
    from simweb_core.overrides import apply_overrides, parse_overrides
    from training.grpo.config import GRPORecipe
    from training.learn.config import LearnConfig

    values = parse_overrides(args.set, target=LearnConfig)
    own = {path: flag for flag, path in FLAGS.items()}
    taken = [k for k in values if k in own]
    if taken:
        raise ConfigError(f"--set {taken[0]}: LearnConfig.{taken[0]} has its own flag, use {own[taken[0]]}")
    grpo = parse_overrides(args.grpo_set, "--grpo-set", target=GRPORecipe)
    values = apply_overrides({"grpo": {"overrides": grpo}}, values)
    return from_data(LearnConfig, {**given_flags(args), **values})


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``learn`` on the ``sim-web`` command."""
    from simweb_core.cli import add_config_flags
    from training.learn.config import LearnConfig

    p = subparsers.add_parser(
        "learn",
        help="base -> SFT -> GRPO on the curriculum tiers, with held-out evals and a report",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_config_flags(p, LearnConfig, FLAGS)
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
        print_error(e)
        return 2
    report = out / "report.md"
    if report.is_file():
        print(report.read_text(encoding="utf-8"))
        print(f"report: {report}\nplot:   {out / 'learning.png'}")
    return 0
