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
import dataclasses
import json
import sys
from typing import Any

from simweb_core.cli import print_error, read_secret_file
from simweb_core.errors import ConfigError
from simweb_core.secret import scrub

OUTPUTS = (
    ("trajectories", "trajectories.jsonl"),
    ("metrics", "metrics.json"),
    ("plot", "plot.png"),
    ("sft demos", "sft.jsonl"),
)


#: Generated flags (simweb_core.cli): flag -> EvalConfig field path (help, type and default come from the field).
RUN_FLAGS = {
    "--tasks": "tasks",
    "--index": "index_dir",
    "--n": "n",
    "--skip": "skip",
    "--k": "k",
    "--out": "out",
    "--resume": "resume",
    "--workers": "workers",
    "--batch-size": "batch_size",
    "--progress": "progress",
}
ENV_FLAGS: dict[str, str | tuple[str, str]] = {
    "--retrieval": "env.sim.mode",
    "--tools": ("env.tools", "Evaluate a trained model with its recipe's tools: it sees the prompt it trained on."),
    "--backend": ("env.backend", "Keys: $SERPER_KEY_ID, $JINA_API_KEYS (page summariser: $API_KEY/$API_BASE)."),
    "--real-fallback": "env.real_fallback",
}
AGENT_FLAGS: dict[str, str | tuple[str, str]] = {
    "--max-llm-calls": "agent.max_llm_calls",
    "--max-seconds": "agent.max_seconds",
    "--max-context-tokens": "agent.max_context_tokens",
    "--temperature": "agent.sampling.temperature",
    "--top-p": "agent.sampling.top_p",
    "--presence-penalty": "agent.sampling.presence_penalty",
    "--max-tokens": "agent.sampling.max_tokens",
    "--seed": "agent.sampling.seed",
    "--max-response-chars": ("env.max_response_chars", "Use a GRPO recipe's value."),
    "--max-obs-chars": "env.max_obs_chars",
    "--prompt": ("env.prompt", "Use a checkpoint's training style."),
    "--search-results": "env.search_results",
    "--snippet-chars": "env.sim.snippet_chars",
}
RESUM_FLAGS = {
    "--resum": "agent.resum.enabled",
    "--resum-fraction": "agent.resum.trigger_fraction",
    "--resum-every": "agent.resum.every_n_turns",
}
ENDPOINT_FLAGS: dict[str, str | tuple[str, str]] = {
    "--base-url": "endpoints.base_url",
    "--api-key": (
        "endpoints.api_key",
        "A flag's value is visible to every user of the machine in `ps`: prefer $OPENAI_API_KEY or --api-key-file.",
    ),
    "--timeout": "endpoints.requests.timeout",
    "--max-retries": "endpoints.requests.max_retries",
    "--backoff": "endpoints.requests.backoff",
    "--max-backoff": "endpoints.requests.max_backoff",
    "--judge": "endpoints.judge",
    "--judge-base-url": "endpoints.judge_base_url",
    "--device": "device",
    "--dtype": "dtype",
    "--threads": "threads",
}


def add_api_key_file_flag(group: Any) -> None:
    """Add ``--api-key-file PATH``: the endpoint's key read from a file, so that it stays out of ``ps``."""
    group.add_argument(
        "--api-key-file",
        default=None,
        metavar="PATH",
        help="read the endpoint's key from the first line of this file (kept out of `ps`; make it mode 600)",
    )


def api_key_from_file(args: argparse.Namespace, given: dict[str, Any]) -> None:
    """Set ``endpoints.api_key`` in ``given`` from ``--api-key-file`` when it was given.

    Raises:
        ConfigError: When both ``--api-key`` and ``--api-key-file`` are given, or the file cannot be read or is empty.
    """
    path = getattr(args, "api_key_file", None)
    if path is None:
        return
    if "endpoints.api_key" in given:
        raise ConfigError("give the endpoint's key once: --api-key or --api-key-file, not both")
    given["endpoints.api_key"] = read_secret_file(path, "--api-key-file")


def add_split_flag(parser: argparse.ArgumentParser, cls: type) -> None:
    """Add ``--split`` for the ``split`` field of ``cls`` (``EvalConfig``, ``SimToRealConfig``): a split's name, or
    ``all`` for every task, which the flag stores as the field's ``None``.

    Written by hand rather than generated, since a generated flag reads null text, not ``all``, as ``None``; its default
    is still the field's.

    Args:
        parser: The subcommand's parser.
        cls: The config class with a ``split: str | None`` field.
    """
    default = next(f.default for f in dataclasses.fields(cls) if f.name == "split")
    parser.add_argument(
        "--split",
        type=_split,
        default=default,
        help=f"Task split; 'all' for every task (default: {default}, the held-out one).",
    )


def _split(text: str) -> str | None:
    """``--split``'s text as the field's value: ``None`` (every task) for ``all``."""
    return None if text == "all" else text


def add_parser(subparsers: Any) -> None:
    """Register the ``eval`` subcommand on ``sim-web``'s subparsers: ``--policy``, ``--split`` (:func:`add_split_flag`)
    and ``--summariser`` by hand (they read their text), every other flag generated from its
    :class:`~agents.eval_config.EvalConfig` field."""
    from agents.eval_config import EvalConfig
    from simweb_core.cli import add_config_flags, field_help

    p = subparsers.add_parser(
        "eval",
        help="evaluate a policy (oracle, local HF model, OpenAI-compatible endpoint)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--policy", required=True, help=field_help(EvalConfig, "policy") + " hf:smollm2: the bundled model.")
    add_split_flag(p, EvalConfig)
    shown = EvalConfig()
    add_config_flags(p, EvalConfig, RUN_FLAGS, defaults=shown)
    add_config_flags(p, EvalConfig, ENV_FLAGS, defaults=shown)
    rec = p.add_mutually_exclusive_group()
    add_config_flags(rec, EvalConfig, {"--record": "env.record_dir", "--replay": "env.replay_dir"}, defaults=shown)
    g = p.add_argument_group("agent limits, sampling and observations (defaults: Tongyi DeepResearch's)")
    add_config_flags(g, EvalConfig, AGENT_FLAGS, defaults=shown)
    r = p.add_argument_group("ReSum")
    add_config_flags(r, EvalConfig, RESUM_FLAGS, defaults=shown)
    r.add_argument("--summariser", default="policy", help="policy | extractive | openai:MODEL (default: policy)")
    e = p.add_argument_group("endpoints, judge, local model")
    add_config_flags(e, EvalConfig, ENDPOINT_FLAGS, defaults=shown)
    add_api_key_file_flag(e)
    p.set_defaults(func=run)


def config_from_args(args: argparse.Namespace) -> Any:
    """The :class:`~agents.eval_config.EvalConfig` of parsed arguments: the generated flags given, on the
    defaults of :class:`EvalConfig` (its env is :func:`~agents.eval_config.eval_env`).

    Raises:
        ConfigError: For values the configs refuse (each config's own checks), naming the field.
    """
    from agents.eval_config import EvalConfig
    from simweb_core.cli import given_flags
    from simweb_core.data import from_data
    from simweb_core.overrides import apply_overrides

    given = given_flags(args)
    summariser = args.summariser
    if summariser.startswith("openai:"):
        given["endpoints.summariser_model"] = summariser.removeprefix("openai:")
        summariser = "openai"
    given["agent.resum.summariser"] = summariser
    given["split"] = args.split
    api_key_from_file(args, given)
    base = EvalConfig(policy=args.policy)
    return from_data(EvalConfig, apply_overrides({}, given), base=base)


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
        print_error(f"the run stopped: {e}\n(episodes finished before are kept: rerun the same command to resume)")
        return 2
    except ConfigError as e:
        print_error(e)
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
            + scrub(json.dumps(result.failures[:3])),
            file=sys.stderr,
        )
        return 1
    return 0
