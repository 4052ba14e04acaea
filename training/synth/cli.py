"""The ``sim-web synth`` subcommand (also ``python -m training.synth``): synthesise a SailorFog-QA-V2 task set.

Examples::

    sim-web synth                                   # 300 questions from the sample index -> its default task set
    sim-web synth --n 1000 --seed 1 --out /tmp/qa.jsonl
    sim-web synth --quiet --if-stale                # write the default set again only if its generator changed
    sim-web synth --tier lookup                     # one-relation questions for small models -> <index>/tasks/lookup.jsonl
    sim-web synth --tier bridge --n 200             # two-hop questions -> <index>/tasks/bridge.jsonl
    sim-web synth --tier intersection               # two or three clues, one answer -> <index>/tasks/intersection.jsonl
    OPENAI_API_KEY=... sim-web synth --generator llm --base-url http://localhost:8000/v1 --model Qwen2.5-7B-Instruct
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from simweb_core.cli import print_error
from simweb_core.errors import WikiIndexError

if TYPE_CHECKING:
    from training.synth.config import SynthConfig

#: SynthConfig fields with a generated flag (simweb_core.cli; help from the class docstring, default from the field);
#: ``--seed`` also seeds the lookup / bridge tiers.
FLAGS = {
    "--seed": "seed",
    "--max-nodes": "max_nodes",
    "--n-seeds": "n_seeds",
    "--oversample": "oversample",
    "--min-hops": ("min_hops", "At most the largest subgraph size - 1."),
    "--shortcut-policy": "shortcut_policy",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The synth options (shared by ``sim-web synth`` and ``python -m training.synth``)."""
    from simweb_core.cli import add_config_flags
    from training.synth.config import SynthConfig
    from training.synth.tiers.generate import TIERS, TierConfig

    d = SynthConfig()
    p.add_argument("--index", default=None, help="index directory (default: the sample index under $SIM_WEB_HOME)")
    p.add_argument(
        "--tier",
        choices=TIERS,
        default="sailorfog",
        help="curriculum tier: lookup (one typed relation, entity named), bridge (two hops), intersection (two or "
        "three clues, one answer) or sailorfog (SailorFog-QA-V2, the default set); the tiers go to "
        "<index>/tasks/<tier>.jsonl",
    )
    p.add_argument(
        "--n",
        type=int,
        default=None,
        help=f"questions wanted (default {d.n}; lookup / bridge: as many as pass, up to {TierConfig().n})",
    )
    p.add_argument(
        "--generator",
        choices=["template", "llm"],
        default="template",
        help="template (deterministic, no model; default) or llm (an OpenAI-compatible endpoint)",
    )
    p.add_argument(
        "--out",
        default=None,
        help="output .jsonl (default: <index>/tasks/sailorfog_qa.jsonl, the env's default task set); "
        "the HF dataset, DuckDB file and dataset card are written next to it",
    )
    p.add_argument(
        "--base-url", default=None, help="LLM endpoint root, e.g. http://localhost:8000/v1 (key: $OPENAI_API_KEY)"
    )
    p.add_argument("--model", default="gpt-4o-mini", help="LLM model name (default gpt-4o-mini)")
    p.add_argument(
        "--seed-query", action="append", default=[], help="add the top results of this search as seeds (repeatable)"
    )
    add_config_flags(p, SynthConfig, FLAGS)
    p.add_argument(
        "--test-fraction",
        type=float,
        default=None,
        help=f"held-out share (default {d.test_fraction}; lookup / bridge {TierConfig().test_fraction})",
    )
    p.add_argument(
        "--compare",
        default=None,
        metavar="JSONL",
        help="an earlier task set: the card puts its question-quality measures beside the new set's",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar and no card on stdout")
    p.add_argument(
        "--if-stale",
        action="store_true",
        help="sailorfog only: skip the run when the output and its card exist and the card's generator_id (a hash of "
        "the synth code, these settings and the index) is the current one; otherwise say why and regenerate. The "
        "one-line verdict is printed even with --quiet",
    )


def run(args: argparse.Namespace) -> int:
    """Run the synthesis, write every output, print the dataset card; returns the exit status."""
    from sim_web.env.tasks import default_task_path
    from simweb_core.cli import given_flags
    from simweb_core.data import from_data
    from training.synth.compose.llm import LLMConfig
    from training.synth.config import SynthConfig
    from training.synth.outputs.write import build_card, render_card, write_outputs
    from training.synth.pipeline import generate_with_report
    from wiki_index.search.index import WikiIndex

    if args.tier != "sailorfog":
        if args.if_stale:
            print_error(f"--if-stale checks the sailorfog set only, got --tier {args.tier}; drop one of the two")
            return 2
        return run_tier(args)
    try:
        llm = LLMConfig(base_url=args.base_url, model=args.model) if args.generator == "llm" else None
        given = {
            **given_flags(args),
            "n": SynthConfig.n if args.n is None else args.n,
            "generator": args.generator,
            "seed_queries": tuple(args.seed_query),
            "test_fraction": SynthConfig.test_fraction if args.test_fraction is None else args.test_fraction,
            "llm": llm,
            "progress": not args.quiet,
        }
        cfg = from_data(SynthConfig, given)
    except ValueError as e:
        print_error(e)
        return 2
    index = WikiIndex.from_dir(args.index)
    out = args.out or default_task_path(index.path)
    if args.if_stale and up_to_date(cfg, index.path, Path(out)):
        return 0
    records, report = generate_with_report(index.path, config=cfg)
    if not records:
        print(
            "error: no question passed the gates; see the log (-v) and raise --max-nodes or --oversample",
            file=sys.stderr,
        )
        return 1
    before = None
    if args.compare:
        import json

        lines = Path(args.compare).read_text(encoding="utf-8").splitlines()
        before = [json.loads(line) for line in lines if line.strip()]
    paths = write_outputs(records, report, out, before)
    if not args.quiet:
        print(render_card(build_card(records, report, before)))
    for kind, path in paths.items():
        print(f"{kind}: {path}")
    return 0


def up_to_date(cfg: SynthConfig, index_dir: Path, out: Path) -> bool:
    """``--if-stale``: whether the set at ``out`` was written with the generator identity this run would record.

    Prints one line either way: the set and its identity when it is up to date, else why it is written again.

    Args:
        cfg: The run's settings (the identity hashes them as the card records them).
        index_dir: The index it reads.
        out: The set's ``.jsonl``.
    """
    from dataclasses import asdict

    from training.synth.outputs.identity import generator_id, stale_reason
    from training.synth.outputs.write import sibling

    current = generator_id(asdict(cfg), index_dir)
    why = stale_reason(out, sibling(out, ".card.json"), current)
    if why:
        print(f"synth: regenerating {out}: {why}")
        return False
    print(f"synth: {out} is up to date (generator_id {current}); not regenerated")
    return True


def run_tier(args: argparse.Namespace) -> int:
    """``sim-web synth --tier lookup|bridge|intersection``: write the tier's task set and card; returns the exit status."""
    import json

    from simweb_core.cli import given_flags
    from training.synth.outputs.write import sibling, write_jsonl
    from training.synth.tiers.generate import TierConfig, generate_tier, render_tier_card, tier_card
    from wiki_index.search.index import WikiIndex

    d = TierConfig()
    try:
        cfg = TierConfig(
            tier=args.tier,
            n=d.n if args.n is None else args.n,
            seed=given_flags(args).get("seed", d.seed),
            progress=not args.quiet,
            test_fraction=d.test_fraction if args.test_fraction is None else args.test_fraction,
        )
    except ValueError as e:
        print_error(e)
        return 2
    index = WikiIndex.from_dir(args.index)
    out = Path(args.out) if args.out else index.path / "tasks" / f"{args.tier}.jsonl"
    records, report = generate_tier(index.path, cfg)
    if not records:
        print(
            f"error: no {args.tier} question passed the gates: the index has no typed relation that does "
            "(see the card's funnel)",
            file=sys.stderr,
        )
        return 1
    out.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl(records, out)
    card = tier_card(records, report)
    sibling(out, ".card.json").write_text(json.dumps(card, indent=1, ensure_ascii=False), encoding="utf-8")
    sibling(out, ".card.md").write_text(render_tier_card(card), encoding="utf-8")
    if not args.quiet:
        print(render_tier_card(card))
    print(f"jsonl: {out}\ncard: {sibling(out, '.card.md')}")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``synth`` on the ``sim-web`` command."""
    p = subparsers.add_parser(
        "synth", help="synthesise a SailorFog-QA-V2 task set from an index", description=__doc__.split("\n")[0]
    )
    add_arguments(p)
    p.set_defaults(func=run)


def main(argv: list[str] | None = None) -> int:
    """``python -m training.synth [options]``."""
    p = argparse.ArgumentParser(prog="python -m training.synth", description=__doc__.split("\n")[0])
    p.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    add_arguments(p)
    args = p.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    try:
        return run(args)
    except WikiIndexError as e:
        print_error(e)
        return 2
