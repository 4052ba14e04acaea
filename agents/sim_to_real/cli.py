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
from dataclasses import fields, replace
from typing import Any

from simweb_core.errors import ConfigError


def add_parser(subparsers: Any) -> None:
    """Register the ``sim-to-real`` subcommand on ``sim-web``'s subparsers."""
    from agents.cli import _tools
    from agents.sim_to_real.report import ApiPrices
    from sim_web.protocol import TOOL_NAMES

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
    p.add_argument("--tasks", default=None, help="task file, or default | derived | sailorfog | NAME")
    p.add_argument("--index", default=None, help="index directory (default: the sample index under $SIM_WEB_HOME)")
    p.add_argument(
        "--split", default="test", help="task split; 'all' for every task (default: test, the held-out split)"
    )
    p.add_argument(
        "--n", type=int, default=20, help="the first N tasks (default 20; every real episode costs API calls)"
    )
    p.add_argument("--k", type=int, default=1, help="samples per task; pass@k is reported")
    p.add_argument("--out", default=None, help="output folder (default $SIM_WEB_HOME/runs/sim-to-real/{mock,real})")
    p.add_argument(
        "--tools", default=",".join(TOOL_NAMES), type=_tools, help="comma-separated enabled tools (default: all four)"
    )
    rec = p.add_mutually_exclusive_group()
    rec.add_argument(
        "--record", default=None, metavar="DIR", help="record the real side's requests and responses into DIR"
    )
    rec.add_argument("--replay", default=None, metavar="DIR", help="replay the real side from DIR (offline, no keys)")
    p.add_argument(
        "--real-fallback",
        action="store_true",
        help="let the index answer when Serper / Jina fail on the real side (off by default: the real side "
        "measures the real web alone; fallbacks are counted in the report either way)",
    )
    p.add_argument(
        "--mock",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="real side against local mocks with injected faults (default: $SIM_TO_REAL_MOCK)",
    )
    p.add_argument("--no-faults", action="store_true", help="with --mock: inject no faults")
    p.add_argument("--workers", type=int, default=4, help="concurrent episodes for remote / oracle policies")
    p.add_argument("--batch-size", type=int, default=8, help="episodes generated together for a local model")
    g = p.add_argument_group("agent (the same in sim and real)")
    g.add_argument("--max-llm-calls", type=int, default=100)
    g.add_argument("--temperature", type=float, default=0.6)
    g.add_argument("--max-tokens", type=int, default=8192, help="new tokens per turn")
    g.add_argument("--seed", type=int, default=0)
    e = p.add_argument_group("endpoints, judge, local model")
    e.add_argument(
        "--base-url", default=None, help="OpenAI-compatible endpoint of openai: policies (default $OPENAI_BASE_URL)"
    )
    e.add_argument("--api-key", default=None, help="its key (default $OPENAI_API_KEY)")
    e.add_argument("--judge", default=None, help="LLM judge openai:MODEL (default: exact match)")
    e.add_argument("--judge-base-url", default=None)
    e.add_argument("--device", default="cpu")
    e.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    c = p.add_argument_group("assumed prices of the cost estimate (USD)")
    for f in fields(ApiPrices):
        c.add_argument(
            f"--{f.name.replace('_', '-')}", type=type(f.default), default=f.default, help=f.metadata["help"]
        )
    p.add_argument("--no-resume", action="store_true", help="start over instead of skipping finished episodes")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=run)


def config_from_args(args: argparse.Namespace) -> Any:
    """The :class:`~agents.sim_to_real.run.SimToRealConfig` of parsed arguments."""
    from agents.config import AgentConfig, SamplingConfig
    from agents.eval_config import EndpointConfig, eval_env
    from agents.sim_to_real.report import ApiPrices
    from agents.sim_to_real.run import SimToRealConfig

    sampling = SamplingConfig(temperature=args.temperature, max_tokens=args.max_tokens, seed=args.seed)
    prices = ApiPrices(**{f.name: getattr(args, f.name) for f in fields(ApiPrices)})
    return SimToRealConfig(
        policies=tuple(args.policy or ("oracle",)),
        index_dir=args.index,
        tasks=args.tasks,
        split=None if args.split == "all" else args.split,
        n=args.n,
        k=args.k,
        out=args.out,
        workers=args.workers,
        batch_size=args.batch_size,
        agent=AgentConfig(max_llm_calls=args.max_llm_calls, sampling=sampling),
        env=replace(eval_env(), tools=args.tools, real_fallback=args.real_fallback),
        endpoints=EndpointConfig(
            base_url=args.base_url, api_key=args.api_key, judge=args.judge, judge_base_url=args.judge_base_url
        ),
        device=args.device,
        dtype=args.dtype,
        record_dir=args.record,
        replay_dir=args.replay,
        mock=args.mock,
        mock_faults=not args.no_faults,
        prices=prices,
        resume=not args.no_resume,
        progress=not args.no_progress,
    )


def run(args: argparse.Namespace) -> int:
    """Run ``sim-web sim-to-real``; 0 on success, 1 when episodes failed or the format check failed, 2 on a config error."""
    from agents.sim_to_real.run import run_sim_to_real

    try:
        result = run_sim_to_real(config_from_args(args))
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(result.files["markdown"].read_text(encoding="utf-8"))
    print("\n".join(f"{kind + ':':9} {path}" for kind, path in result.files.items()))
    if result.failures:
        print(
            f"\n{len(result.failures)} episodes failed (rerun the same command to retry them): {result.failures[:3]}",
            file=sys.stderr,
        )
    if not result.report["format_check"]["passed"]:
        print(
            "\nformat check FAILED: some observations do not parse with the Tongyi grammar (see report.md)",
            file=sys.stderr,
        )
    return 1 if result.failures or not result.report["format_check"]["passed"] else 0
