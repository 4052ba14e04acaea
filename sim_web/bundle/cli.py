"""The ``sim-web bundle`` subcommand: an offline install of sim-web for an air-gapped machine, in parts.

Examples::

    sim-web bundle --python 3.12 --platform manylinux_2_28_x86_64 --skip-installed target-freeze.txt
    sim-web bundle --extras train,gpu --platform manylinux_2_35_x86_64 --max-part-mib 60 --out /transfer/bundle
    sim-web bundle --resolve-only --python 3.12 --platform manylinux_2_28_x86_64   # does the set install there?
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from simweb_core.cli import print_error
from simweb_core.errors import WikiIndexError

if TYPE_CHECKING:
    from sim_web.bundle.build import BundleConfig


#: Generated flags (simweb_core.cli): flag -> BundleConfig field (help, type, choices and default from the field).
#: ``--extras`` and ``--find-links`` are written by hand: ``--extras ''`` means none (the kernel reads an empty text as
#: null, which a tuple refuses) and ``--find-links`` is repeatable (a generated flag takes one comma-separated value).
FLAGS = {
    "--out": "out",
    "--python": "python",
    "--platform": "platform",
    "--skip-installed": "skip_installed",
    "--index": "index_dir",
    "--model": "model",
    "--max-part-mib": "max_part_mib",
    "--resolver-python": "resolver_python",
}


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``bundle`` on the ``sim-web`` parser: its flags generated from
    :class:`~sim_web.bundle.build.BundleConfig`'s fields, but ``--extras``, ``--find-links`` and ``--resolve-only``."""
    from sim_web.bundle.build import BundleConfig
    from simweb_core.cli import add_config_flags, field_help

    p = subparsers.add_parser(
        "bundle",
        help="write an offline install (wheels, index, model, install.sh) in parts",
        description="Everything a machine without a package index needs to run sim-web: the "
        "wheels it lacks (for its Python and platform), this package, the index and "
        "task sets, SmolLM2 and install.sh, as parts of bounded size with sha256 "
        "checks (join_bundle.py).",
    )
    add_config_flags(p, BundleConfig, FLAGS)
    extras = ",".join(BundleConfig.extras)  # the declared default (an instance would check pyproject.toml)
    p.add_argument(
        "--extras", help=field_help(BundleConfig, "extras") + f" Comma-separated; '' for none (default: {extras})."
    )
    p.add_argument("--find-links", action="append", metavar="DIR", help=field_help(BundleConfig, "find_links"))
    p.add_argument("--resolve-only", action="store_true", help="only resolve the set for the target and list it")
    p.set_defaults(func=run)


def bundle_config(args: argparse.Namespace) -> BundleConfig:
    """The :class:`~sim_web.bundle.build.BundleConfig` of parsed ``bundle`` arguments: the flags given, on its defaults.

    Raises:
        ConfigError: For a value that cannot be read as its field's type, naming the field.
        BundleError: For values the config refuses (its own checks).
    """
    from sim_web.bundle.build import BundleConfig
    from simweb_core.cli import given_flags
    from simweb_core.data import from_data

    given = given_flags(args)
    if args.extras is not None:
        given["extras"] = tuple(e.strip() for e in args.extras.split(",") if e.strip())
    if args.find_links:
        given["find_links"] = tuple(args.find_links)
    return from_data(BundleConfig, given)


def run(args: argparse.Namespace) -> int:
    """Build the bundle (or only resolve it); returns the exit status."""
    from sim_web.bundle.build import build_bundle, resolve_only

    try:
        cfg = bundle_config(args)
        if args.resolve_only:
            resolved = resolve_only(cfg, progress=lambda line: print(line, flush=True))
            for r in resolved:
                print(f"  {r.name}=={r.version}  ({r.source})")
            ship = [r for r in resolved if r.source != "installed"]
            print(
                f"resolves: {len(resolved)} packages for Python {cfg.python} on {cfg.platform or 'this platform'}, "
                f"{len(ship)} to ship"
            )
            return 0
        build_bundle(cfg, progress=lambda line: print(line, flush=True))
    except WikiIndexError as e:
        print_error(e)
        return 2
    return 0


def add_gpukit_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``gpu-kit`` on the ``sim-web`` parser."""
    p = subparsers.add_parser(
        "gpu-kit",
        help="write the GPU kit (.gpukit/tN, < 64 MiB each) and print its transfer plan",
        description="The least `make gpu-check` needs on the lent GPU image (Python 3.12, CUDA torch, transformers; "
        "no TRL, DuckDB, Java or models), as transfers of < 64 MiB that deploy/gpu-kit/tN.sh install and run "
        "(docs/install.md, 'GPU kit').",
    )
    p.add_argument("--index", default=None, help="the sample index folder (default: $SIM_WEB_HOME/indexes/sample)")
    p.add_argument(
        "--out", default=None, help="the kit folder (default: <repo>/.gpukit, which the device tool carries)"
    )
    p.add_argument("--dry-run", action="store_true", help="build nothing: print the plan of the kit already built")
    p.set_defaults(func=run_gpukit)


def run_gpukit(args: argparse.Namespace) -> int:
    """Build the GPU kit (unless ``--dry-run``) and print its transfers; returns the exit status."""
    from pathlib import Path

    from sim_web.bundle.gpukit import KIT, ROOT, build_kit, check_plan, describe, plan, tree_bytes
    from simweb_core.settings import default_index_dir

    out = Path(args.out) if args.out else ROOT / KIT
    try:
        if args.dry_run:
            transfers = plan(out)
        else:
            transfers = build_kit(Path(args.index) if args.index else default_index_dir(), out)
        tree = tree_bytes()
        print(describe(transfers, tree))
        problems = check_plan(transfers, tree)
        for line in problems:
            print_error(line)
        return 2 if problems else 0
    except WikiIndexError as e:
        print_error(e)
        return 2
