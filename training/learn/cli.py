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


def config_from_args(args: argparse.Namespace) -> Any:
    """The :class:`~training.learn.config.LearnConfig` of parsed arguments."""
    from training.grpo.recipes import parse_overrides
    from training.learn.config import STAGES, LearnConfig

    values = parse_overrides(args.set)
    unknown = sorted(set(values) - set(LearnConfig.__dataclass_fields__))
    if unknown:
        raise ConfigError(f"unknown LearnConfig fields {unknown}; known: {sorted(LearnConfig.__dataclass_fields__)}")
    for key in ("tiers", "stages"):
        if isinstance(values.get(key), str):
            values[key] = tuple(v.strip() for v in values[key].split(",") if v.strip())
    if "grpo_seeds" in values:  # "0,1,2", a single 0, or a YAML list
        seeds = values["grpo_seeds"]
        seeds = str(seeds).split(",") if isinstance(seeds, (str, int)) else seeds
        values["grpo_seeds"] = tuple(int(str(s).strip()) for s in seeds if str(s).strip())
    stages = tuple(s.strip() for s in args.stages.split(",") if s.strip()) if args.stages else STAGES
    return LearnConfig(
        recipe=args.recipe,
        out=args.out,
        index_dir=args.index,
        stages=stages,
        grpo_overrides=parse_overrides(args.grpo_set, "--grpo-set"),
        **values,
    )


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
