"""``sim-web sim-to-real``: the same policies on the same held-out tasks in sim and on the real web, side by side.

Examples::

    SIM_TO_REAL_MOCK=1 sim-web sim-to-real --policy oracle --n 5     # local Serper / Jina mocks, injected faults, no keys
    sim-web sim-to-real --policy oracle --n 20 --record runs/s2r-rec  # the real web (SERPER_KEY_ID, JINA_API_KEYS), recorded
    sim-web sim-to-real --policy oracle --n 20 --replay runs/s2r-rec  # ... replayed offline
    sim-web sim-to-real --policy openai:base --policy openai:sim-trained --base-url http://localhost:8000/v1   # the 2x2 table
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields
from typing import Any

from agents.cli import AGENT_FLAGS as EVAL_AGENT_FLAGS
from agents.cli import ENDPOINT_FLAGS as EVAL_ENDPOINT_FLAGS
from agents.cli import add_api_key_file_flag, add_split_flag, api_key_from_file
from simweb_core.cli import print_error
from simweb_core.errors import ConfigError
from simweb_core.secret import scrub

#: Generated flags (simweb_core.cli): flag -> SimToRealConfig field path (help, type and default from the field).
FLAGS = {
    "--tasks": "tasks",
    "--index": "index_dir",
    "--n": "n",
    "--k": "k",
    "--out": "out",
    "--tools": "env.tools",
    "--real-fallback": "env.real_fallback",
    "--mock": "mock",
    "--faults": "mock_faults",
    "--workers": "workers",
    "--batch-size": "batch_size",
    "--resume": "resume",
    "--progress": "progress",
}
#: The agent and endpoint flags it shares with ``sim-web eval`` (the same field paths; the maps are eval's).
AGENT_FLAGS = {f: EVAL_AGENT_FLAGS[f] for f in ("--max-llm-calls", "--temperature", "--max-tokens", "--seed")}
ENDPOINT_FLAGS = {
    f: EVAL_ENDPOINT_FLAGS[f] for f in ("--base-url", "--api-key", "--judge", "--judge-base-url", "--device", "--dtype")
}


def add_parser(subparsers: Any) -> None:
    """Register the ``sim-to-real`` subcommand on ``sim-web``'s subparsers: ``--policy`` and ``--split`` (eval's
    :func:`~agents.cli.add_split_flag`) by hand,
    every other flag generated from its :class:`~agents.sim_to_real.run.SimToRealConfig` field."""
    from agents.sim_to_real.report import ApiPrices
    from agents.sim_to_real.run import SimToRealConfig
    from simweb_core.cli import add_config_flags

    p = subparsers.add_parser(
        "sim-to-real",
        help="run policies in sim and on the real web; write a side-by-side report",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--policy",
        action="append",
        default=None,
        help="oracle | hf:PATH | openai:MODEL; repeat for several (default: oracle)",
    )
    add_split_flag(p, SimToRealConfig)
    shown = SimToRealConfig()
    add_config_flags(p, SimToRealConfig, FLAGS, defaults=shown)
    rec = p.add_mutually_exclusive_group()
    add_config_flags(rec, SimToRealConfig, {"--record": "record_dir", "--replay": "replay_dir"}, defaults=shown)
    g = p.add_argument_group("agent (the same in sim and real)")
    add_config_flags(g, SimToRealConfig, AGENT_FLAGS, defaults=shown)
    e = p.add_argument_group("endpoints, judge, local model")
    add_config_flags(e, SimToRealConfig, ENDPOINT_FLAGS, defaults=shown)
    add_api_key_file_flag(e)
    c = p.add_argument_group("assumed prices of the cost estimate (USD)")
    prices = {f"--{f.name.replace('_', '-')}": f"prices.{f.name}" for f in fields(ApiPrices)}
    add_config_flags(c, SimToRealConfig, prices, defaults=shown)
    p.set_defaults(func=run)


def config_from_args(args: argparse.Namespace) -> Any:
    """The :class:`~agents.sim_to_real.run.SimToRealConfig` of parsed arguments: the generated flags given, on its
    defaults."""
    from agents.sim_to_real.run import SimToRealConfig
    from simweb_core.cli import given_flags
    from simweb_core.data import from_data
    from simweb_core.overrides import apply_overrides

    given = {**given_flags(args), "split": args.split}
    given["policies"] = tuple(args.policy or ("oracle",))
    api_key_from_file(args, given)
    return from_data(SimToRealConfig, apply_overrides({}, given), base=SimToRealConfig())


def run(args: argparse.Namespace) -> int:
    """Run ``sim-web sim-to-real``; 0 on success, 1 when episodes failed or the format check failed, 2 on a config error."""
    from agents.sim_to_real.run import run_sim_to_real

    try:
        result = run_sim_to_real(config_from_args(args))
    except ConfigError as e:
        print_error(e)
        return 2
    print(result.files["markdown"].read_text(encoding="utf-8"))
    print("\n".join(f"{kind + ':':9} {path}" for kind, path in result.files.items()))
    if result.failures:
        print(
            f"\n{len(result.failures)} episodes failed (rerun the same command to retry them): {scrub(str(result.failures[:3]))}",
            file=sys.stderr,
        )
    if not result.report["format_check"]["passed"]:
        print(
            "\nformat check FAILED: some observations do not parse with the Tongyi grammar (see report.md)",
            file=sys.stderr,
        )
    return 1 if result.failures or not result.report["format_check"]["passed"] else 0
