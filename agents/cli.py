"""``sim-web eval``: evaluate a policy on a task set of the simulated web.

Examples::

    sim-web eval --policy oracle                                  # the env's ceiling on the held-out tasks
    sim-web eval --policy hf:smollm2 --n 5 --temperature 0        # the bundled SmolLM2-135M-Instruct
    sim-web eval --policy hf:smollm2 --prompt compact --search-results 3 --snippet-chars 160   # short prompt and observations
    sim-web eval --policy openai:Qwen/Qwen3-8B --base-url http://localhost:8000/v1 --k 4 --resum
    sim-web eval --policy oracle --backend real --record runs/rec   # the real web (Serper + Jina), recorded
    sim-web eval --policy oracle --backend real --replay runs/rec   # ... replayed offline, byte for byte
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from sim_web.protocol import TOOL_NAMES
from sim_web.tools import PROMPT_STYLES
from simweb_core.errors import ConfigError

OUTPUTS = (
    ("trajectories", "trajectories.jsonl"),
    ("metrics", "metrics.json"),
    ("plot", "plot.png"),
    ("sft demos", "sft.jsonl"),
)


def add_parser(subparsers: Any) -> None:
    """Register the ``eval`` subcommand on ``sim-web``'s subparsers."""
    p = subparsers.add_parser(
        "eval",
        help="evaluate a policy (oracle, local HF model, OpenAI-compatible endpoint)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--policy",
        required=True,
        help="oracle | hf:PATH (hf:smollm2 = the bundled SmolLM2-135M-Instruct) | openai:MODEL",
    )
    p.add_argument(
        "--tasks", default=None, help="task file, or default | derived | sailorfog | NAME (<index>/tasks/NAME.jsonl)"
    )
    p.add_argument("--index", default=None, help="index directory (default: the sample index under $SIM_WEB_HOME)")
    p.add_argument(
        "--split", default="test", help="task split; 'all' for every task (default: test, the held-out split)"
    )
    p.add_argument("--n", type=int, default=None, help="evaluate the first N tasks (after --skip)")
    p.add_argument("--skip", type=int, default=0, help="skip the first S tasks of the split (default 0)")
    p.add_argument("--k", type=int, default=1, help="samples per task; pass@k is reported (default 1)")
    p.add_argument("--out", default=None, help="output folder (default: $SIM_WEB_HOME/runs/eval/<run name>)")
    p.add_argument("--no-resume", action="store_true", help="start over instead of skipping finished episodes")
    p.add_argument(
        "--retrieval", default="bm25", choices=["bm25", "dense", "hybrid"], help="search mode of the sim backend"
    )
    p.add_argument(
        "--tools",
        default=",".join(TOOL_NAMES),
        type=_tools,
        help="comma-separated enabled tools (default: all four); evaluate a trained model with the tools of its "
        "recipe (e.g. --tools search,visit,google_scholar), so it sees the system prompt it was trained on",
    )
    p.add_argument(
        "--backend",
        default="sim",
        choices=["sim", "real"],
        help="sim: the index; real: Serper + Jina (keys $SERPER_KEY_ID, $JINA_API_KEYS; page summariser "
        "$API_KEY/$API_BASE/$SUMMARY_MODEL_NAME, optional)",
    )
    p.add_argument(
        "--real-fallback",
        action="store_true",
        help="--backend real: let the index answer when Serper / Jina fail (off: a failure shows as the tool's "
        "unavailability text, so the measurement is the real web's; fallbacks are counted either way)",
    )
    rec = p.add_mutually_exclusive_group()
    rec.add_argument(
        "--record", default=None, metavar="DIR", help="--backend real: record every request and response into DIR"
    )
    rec.add_argument(
        "--replay",
        default=None,
        metavar="DIR",
        help="--backend real: replay a recorded run from DIR (offline, no keys)",
    )
    p.add_argument("--workers", type=int, default=4, help="concurrent episodes for remote / oracle policies")
    p.add_argument("--batch-size", type=int, default=8, help="episodes generated together for a local model")
    g = p.add_argument_group("agent limits and sampling (defaults: Tongyi DeepResearch's)")
    g.add_argument("--max-llm-calls", type=int, default=100)
    g.add_argument("--max-seconds", type=float, default=150 * 60.0)
    g.add_argument("--max-context-tokens", type=int, default=108 * 1024)
    g.add_argument("--temperature", type=float, default=0.6)
    g.add_argument("--top-p", type=float, default=0.95)
    g.add_argument("--presence-penalty", type=float, default=1.1)
    g.add_argument("--max-tokens", type=int, default=8192, help="new tokens per turn")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument(
        "--max-response-chars",
        type=int,
        default=None,
        help="cap on one tool response in characters (default: the env's 20000); use a GRPO recipe's value",
    )
    g.add_argument("--max-obs-chars", type=int, default=None, help="tool-output budget per episode (default 2000000)")
    g.add_argument(
        "--prompt",
        default=None,
        choices=PROMPT_STYLES,
        help="system prompt style: tongyi (upstream's, default) or compact (short, for small models); use a "
        "checkpoint's training style",
    )
    g.add_argument("--search-results", type=int, default=None, help="results per search query (default 10)")
    g.add_argument(
        "--snippet-chars", type=int, default=None, help="most characters of one search snippet (default 240)"
    )
    r = p.add_argument_group("ReSum")
    r.add_argument("--resum", action="store_true", help="summarise the history into <summary> and continue from it")
    r.add_argument(
        "--resum-fraction", type=float, default=0.6, help="summarise at this fraction of --max-context-tokens"
    )
    r.add_argument("--resum-every", type=int, default=None, help="also summarise every N turns")
    r.add_argument("--summariser", default="policy", help="policy | extractive | openai:MODEL")
    e = p.add_argument_group("endpoints, judge, local model")
    e.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint (default $OPENAI_BASE_URL)")
    e.add_argument("--api-key", default=None, help="its key (default $OPENAI_API_KEY)")
    e.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds per request to the endpoints (policy, judge, summariser; default 600)",
    )
    e.add_argument(
        "--max-retries",
        type=int,
        default=None,
        help="retries of a transient endpoint failure: HTTP 408/409/429/5xx, connection errors, unreadable replies (default 6)",
    )
    e.add_argument(
        "--backoff",
        type=float,
        default=None,
        help="first retry delay in seconds, doubling (default 1); a server's Retry-After wins",
    )
    e.add_argument(
        "--max-backoff",
        type=float,
        default=None,
        help="longest retry delay in seconds, Retry-After included (default 60)",
    )
    e.add_argument("--judge", default=None, help="LLM judge openai:MODEL (prompt: agents.prompts.JUDGE_PROMPT)")
    e.add_argument("--judge-base-url", default=None)
    e.add_argument("--device", default="cpu")
    e.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    e.add_argument("--threads", type=int, default=None, help="torch CPU threads for a local model")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def _tools(text: str) -> tuple[str, ...]:
    tools = tuple(t.strip() for t in text.split(",") if t.strip())
    bad = [t for t in tools if t not in TOOL_NAMES]
    if bad or not tools:
        raise argparse.ArgumentTypeError(
            f"--tools takes a comma-separated subset of {', '.join(TOOL_NAMES)}; got {text!r}"
        )
    return tools


def config_from_args(args: argparse.Namespace) -> Any:
    """The :class:`~agents.eval_config.EvalConfig` of parsed arguments."""
    from agents.config import AgentConfig, ReSumConfig, SamplingConfig
    from agents.eval_config import EndpointConfig, EvalConfig

    summariser, summariser_model = args.summariser, None
    if summariser.startswith("openai:"):
        summariser, summariser_model = "openai", summariser.removeprefix("openai:")
    resum = ReSumConfig(
        enabled=args.resum, trigger_fraction=args.resum_fraction, every_n_turns=args.resum_every, summariser=summariser
    )
    sampling = SamplingConfig(
        temperature=args.temperature,
        top_p=args.top_p,
        presence_penalty=args.presence_penalty,
        max_tokens=args.max_tokens,
        seed=args.seed,
    )
    agent = AgentConfig(
        max_llm_calls=args.max_llm_calls,
        max_seconds=args.max_seconds,
        max_context_tokens=args.max_context_tokens,
        sampling=sampling,
        resum=resum,
    )
    return EvalConfig(
        policy=args.policy,
        index_dir=args.index,
        tasks=args.tasks,
        split=None if args.split == "all" else args.split,
        n=args.n,
        skip=args.skip,
        k=args.k,
        out=args.out,
        workers=args.workers,
        batch_size=args.batch_size,
        agent=agent,
        env=_env(args),
        endpoints=EndpointConfig(
            base_url=args.base_url,
            api_key=args.api_key,
            judge=args.judge,
            judge_base_url=args.judge_base_url,
            summariser_model=summariser_model,
            requests=_requests(args),
        ),
        device=args.device,
        dtype=args.dtype,
        threads=args.threads,
        resume=not args.no_resume,
        progress=not args.no_progress,
    )


def _env(args: argparse.Namespace) -> Any:
    """The env of the run: :func:`~agents.eval_config.eval_env` with the env settings given on the command line."""
    from dataclasses import replace

    from agents.eval_config import eval_env

    env = eval_env()
    keys = ("max_response_chars", "max_obs_chars", "prompt", "search_results")
    given = {k: v for k in keys if (v := getattr(args, k, None)) is not None}
    sim = {"mode": args.retrieval, **({"snippet_chars": args.snippet_chars} if args.snippet_chars is not None else {})}
    return replace(
        env,
        tools=args.tools,
        sim=replace(env.sim, **sim),
        backend=args.backend,
        record_dir=args.record,
        replay_dir=args.replay,
        real_fallback=args.real_fallback,
        **given,
    )


def _requests(args: argparse.Namespace) -> Any:
    """The endpoints' timeout and retries (the flags given; RequestConfig's defaults for the others)."""
    from agents.policies.openai_policy import RequestConfig

    given = {
        "timeout": args.timeout,
        "max_retries": args.max_retries,
        "backoff": args.backoff,
        "max_backoff": args.max_backoff,
    }
    return RequestConfig(**{k: v for k, v in given.items() if v is not None})


def run(args: argparse.Namespace) -> int:
    """Run ``sim-web eval``.

    Returns:
        0 on success, 1 when some episodes failed (rerun to resume them), 2 on a config error or a rejected API key
        (the run stops at the first one).
    """
    from agents.harness import run_eval
    from agents.metrics import format_table
    from agents.policies.base import FatalPolicyError

    try:
        cfg = config_from_args(args)
        result = run_eval(cfg)
    except FatalPolicyError as e:
        print(
            f"error: the run stopped: {e}\n(episodes finished before are kept: rerun the same command to resume)",
            file=sys.stderr,
        )
        return 2
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    m = result.metrics
    print(format_table(m, f"== {m['run']['policy']} on {m['run']['tasks']} ({cfg.split or 'all'}) =="))
    print()
    for label, name in OUTPUTS:  # only what was written: a run whose episodes all failed has no trajectories or plot
        if (result.out / name).is_file():
            print(f"{label + ':':<14}{result.out / name}")
    if result.failures:
        print(
            f"\n{len(result.failures)} episodes failed (rerun the same command to retry them): "
            + json.dumps(result.failures[:3]),
            file=sys.stderr,
        )
        return 1
    return 0
