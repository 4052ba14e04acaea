"""The evaluation harness: run a policy on a task set, k samples per task, and score it.

Episodes run concurrently (:mod:`agents.schedule`): a thread pool (one env per thread) for remote and deterministic
policies, lockstep batches for local models (:attr:`Policy.batched`), with a progress bar.
Each finished episode is appended to ``trajectories.jsonl`` at once, so an interrupted run
resumes where it stopped (finished episodes are not rerun). At the end the harness writes
``metrics.json`` (:func:`agents.metrics.aggregate`), ``plot.png`` and, for the oracle,
``sft.jsonl`` (successful trajectories as chat-format demonstrations). What a run is
(:class:`~agents.eval_config.EvalConfig`) lives in :mod:`agents.eval_config`.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from agents.config import AgentConfig
from agents.episode import Episode
from agents.eval_config import EndpointConfig, EvalConfig
from agents.loop import ReactAgent
from agents.metrics import aggregate
from agents.plot import plot_run
from agents.policies.base import FatalPolicyError, Policy
from agents.schedule import run_lockstep, run_threaded
from agents.trajectory import TrajectoryWriter, finished_keys, load_records, sft_example
from sim_web.env import WebResearchEnv
from sim_web.env.tasks import Task, resolve_tasks
from simweb_core.errors import ConfigError
from simweb_core.same import same_setting
from simweb_core.settings import sim_web_home

log = logging.getLogger(__name__)
RUN_FILE = "run.json"
LOCK_FILE = ".lock"
TRAJECTORIES = "trajectories.jsonl"


@dataclass
class EvalResult:
    """What :func:`run_eval` produced.

    Attributes:
        metrics: :func:`agents.metrics.aggregate` of the run, with its ``run`` facts.
        records: Every episode of the run (resumed ones included) as its trajectory-file line
            (:meth:`agents.episode.Episode.to_dict`), in task order.
        out: The output folder.
        failures: ``(key, error)`` of the episodes that failed (rerun on the next resume).
    """

    metrics: dict[str, Any]
    records: list[dict[str, Any]]
    out: Path
    failures: list[tuple[str, str]]


def build_policy(cfg: EvalConfig, tasks: Sequence[Task], index: Any) -> Policy:
    """The policy named by ``cfg.policy``."""
    if cfg.policy in ("oracle", "oracle:search", "oracle:plan", "oracle:quote", "oracle:joint"):
        from agents.policies.oracle import OraclePolicy

        read, quote, joint = cfg.policy == "oracle", cfg.policy == "oracle:quote", cfg.policy == "oracle:joint"
        plan = quote or joint or cfg.policy == "oracle:plan"
        return OraclePolicy(
            tasks, index.store, read_pages=read, plan_thought=plan, quote_thought=quote, joint_search=joint
        )
    if cfg.policy == "rule:first-title":
        from agents.policies.baselines import FirstTitlePolicy

        return FirstTitlePolicy()
    if cfg.policy == "rule:script":
        from agents.policies.scripts import ScriptPolicy

        return ScriptPolicy()
    if cfg.policy == "prior":
        from agents.policies.baselines import AnswerPriorPolicy

        return AnswerPriorPolicy(resolve_tasks(index, cfg.tasks, "train"))
    kind, _, name = cfg.policy.partition(":")
    if kind == "hf":
        from agents.models import resolve_hf_path
        from agents.policies.hf_policy import HFConfig, HFPolicy

        return HFPolicy(
            HFConfig(
                resolve_hf_path(name),
                device=cfg.device,
                dtype=cfg.dtype,
                batch_size=cfg.batch_size,
                num_threads=cfg.threads,
            ),
            cfg.agent.sampling,
        )
    from agents.policies.openai_policy import OpenAIConfig, OpenAIPolicy

    ep = cfg.endpoints
    return OpenAIPolicy(
        OpenAIConfig(name, base_url=ep.base_url, api_key=ep.api_key, concurrency=cfg.workers, **asdict(ep.requests)),
        cfg.agent.sampling,
    )


def _remote(ep: EndpointConfig, spec: str, base_url: str | None) -> Policy:
    """A judge or summariser model on an OpenAI-compatible endpoint (``base_url``, else the policy's)."""
    from agents.policies.openai_policy import OpenAIConfig, OpenAIPolicy

    return OpenAIPolicy(
        OpenAIConfig(
            spec.removeprefix("openai:"), base_url=base_url or ep.base_url, api_key=ep.api_key, **asdict(ep.requests)
        )
    )


def fit_to_window(agent: AgentConfig, window: int | None) -> AgentConfig:
    """Shrink the turn length and the context budget to a model's hard context window."""
    if not window:
        return agent
    s = agent.sampling
    if s.max_tokens > window // 4:
        s = replace(s, max_tokens=window // 4)
    budget = min(agent.max_context_tokens, window - s.max_tokens)
    if (s, budget) != (agent.sampling, agent.max_context_tokens):
        log.info(
            "fitting the agent to a %d-token window: max_tokens %d, max_context_tokens %d", window, s.max_tokens, budget
        )
    return replace(agent, sampling=s, max_context_tokens=budget)


def default_out(cfg: EvalConfig) -> Path:
    """``$SIM_WEB_HOME/runs/eval/<policy>-<tasks>-<split>-n<N>-k<K>[-resum]``."""
    name = "-".join(
        [
            cfg.policy,
            Path(cfg.tasks).stem if cfg.tasks else "default",
            cfg.split or "all",
            *([f"skip{cfg.skip}"] if cfg.skip else []),
            f"n{cfg.n or 'all'}",
            f"k{cfg.k}",
        ]
        + (["resum"] if cfg.agent.resum.enabled else [])
    )
    return sim_web_home() / "runs" / "eval" / re.sub(r"[^A-Za-z0-9._-]+", "_", name)


def _prepare_out(out: Path, cfg: EvalConfig) -> None:
    out.mkdir(parents=True, exist_ok=True)
    run_file = out / RUN_FILE
    identity = json.loads(json.dumps(cfg.identity()))
    if run_file.is_file() and cfg.resume:
        old = json.loads(run_file.read_text(encoding="utf-8")).get("identity") or {}
        diff = sorted(k for k in {*identity, *old} if not same_setting(old.get(k), identity.get(k)))
        if diff:
            raise ConfigError(
                f"{out} holds a run with different settings ({', '.join(diff)}); resuming would mix them. "
                "Use another --out, or --no-resume to start over"
            )
    elif not cfg.resume:
        (out / TRAJECTORIES).unlink(missing_ok=True)
    run_file.write_text(
        json.dumps({"identity": identity, "config": json.loads(json.dumps(asdict(cfg)))}, indent=2), encoding="utf-8"
    )


@contextmanager
def exclusive_out(out: Path) -> Iterator[None]:
    """Hold ``out/.lock`` for the whole run, so two evals on one folder never run (or record) an episode twice.

    The lock is an ``flock``: the kernel drops it when the holder exits, killed or not, so no stale lock remains.

    Raises:
        ConfigError: When another process holds it.
    """
    out.mkdir(parents=True, exist_ok=True)
    with (out / LOCK_FILE).open("a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "another process"
            raise ConfigError(
                f"{out} is in use by another `sim-web eval` ({holder}); wait for it to finish (rerunning "
                "then resumes), or pass another --out"
            ) from None
        f.seek(0)
        f.truncate()
        f.write(f"pid {os.getpid()}")
        f.flush()
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


__all__ = ["EndpointConfig", "EvalConfig", "EvalResult", "build_policy", "exclusive_out", "fit_to_window", "run_eval"]


def run_eval(cfg: EvalConfig, policy: Policy | None = None) -> EvalResult:
    """Run (or resume) an evaluation and write its outputs.

    Args:
        cfg: What to run.
        policy: A ready policy (users' own); ``None`` builds the one ``cfg.policy`` names.

    Returns:
        The metrics, all records of the run (resumed ones included), the output folder and the
        episodes that failed (policy or infrastructure errors; they are rerun on the next resume).

    Raises:
        ConfigError: For an empty task set, a folder holding another run's settings, or a folder in use.
        FatalPolicyError: When a model refused every request (a rejected API key): the run stops at the first such
            error, keeps the episodes finished before it and writes no metrics.
    """
    from wiki_index.search.index import WikiIndex

    t_start = time.perf_counter()
    index = WikiIndex.from_dir(cfg.index_dir)
    tasks = resolve_tasks(index, cfg.tasks, cfg.split)[cfg.skip :][: cfg.n]
    if not tasks:
        raise ConfigError(
            f"the task set {cfg.tasks or 'default'!r} (split {cfg.split!r}, skip {cfg.skip}) of {index.path} is empty"
        )
    out = Path(cfg.out) if cfg.out else default_out(cfg)
    with exclusive_out(out):
        _prepare_out(out, cfg)
        keys = [f"{t.id}#{s}" for t in tasks for s in range(cfg.k)]
        done = finished_keys(out / TRAJECTORIES) if cfg.resume else set()
        todo = [(t, s) for t in tasks for s in range(cfg.k) if f"{t.id}#{s}" not in done]
        owned = policy is None
        if policy is None and not todo:  # everything is already done: no need to load a model
            from agents.policies.base import FunctionPolicy

            policy = FunctionPolicy(lambda m: "", name=cfg.policy)
        policy = policy or build_policy(cfg, tasks, index)
        t_run = time.perf_counter()
        try:
            failures = _run_episodes(cfg, policy, index, tasks, todo, out, initial=len(keys) - len(todo))
        except FatalPolicyError:
            if owned:
                policy.close()
            raise
        run_seconds = time.perf_counter() - t_run
        ran = len(todo) - len(failures)
        run_info = {
            "policy": policy.name,
            "tasks": cfg.tasks or "default",
            "split": cfg.split,
            "episodes_run": ran,
            "episodes_resumed": len(keys) - len(todo),
            "failed": len(failures),
            "wall_seconds": round(time.perf_counter() - t_start, 3),
            "episodes_per_second": round(ran / run_seconds, 4) if run_seconds > 0 and ran else None,
            "concurrency": cfg.batch_size if policy.batched else cfg.workers,
            "judge": cfg.endpoints.judge,
            "prompt": cfg.env.prompt,
        }
        if getattr(policy, "generate_seconds", 0):
            run_info["generated_tokens_per_second"] = round(policy.generated_tokens / policy.generate_seconds, 3)  # type: ignore[attr-defined]
        metrics, records = _write_outputs(cfg, out, keys, run_info)
    if owned:
        policy.close()
    return EvalResult(metrics, records, out, failures)


def _run_episodes(
    cfg: EvalConfig,
    policy: Policy,
    index: Any,
    tasks: Sequence[Task],
    todo: list[tuple[Task, int]],
    out: Path,
    initial: int,
) -> list[tuple[str, str]]:
    """Play the episodes still to do, appending each finished one to the trajectory file; returns the failures.

    The first :class:`FatalPolicyError` is raised once the episodes in flight end; no episode starts after it.
    """
    from tqdm import tqdm

    agent_cfg, ep = fit_to_window(cfg.agent, policy.context_window), cfg.endpoints
    summariser = None
    if agent_cfg.resum.enabled and agent_cfg.resum.summariser == "openai":
        from agents.resum import ModelSummariser

        summariser = ModelSummariser(_remote(ep, ep.summariser_model or "", ep.summariser_base_url), agent_cfg.resum)
    judge = None
    if ep.judge:
        from agents.judge import LLMJudge

        judge = LLMJudge(_remote(ep, ep.judge, ep.judge_base_url))
    agent = ReactAgent(policy, agent_cfg, summariser)
    env_cfg = cfg.env_config(str(index.path))
    make_env = lambda: WebResearchEnv(env_cfg, tasks=list(tasks))  # noqa: E731
    writer = TrajectoryWriter(out / TRAJECTORIES)
    bar = tqdm(
        total=initial + len(todo), initial=initial, disable=not cfg.progress, desc=f"eval {policy.name}", unit="ep"
    )
    lock = threading.Lock()
    failures: list[tuple[str, str]] = []
    fatal: list[FatalPolicyError] = []

    def finish(ep: Episode) -> None:
        if judge is not None:
            ep.judge = judge(ep.question, ep.prediction or "", [ep.gold, *ep.aliases])
        ep.correct = float(ep.judge if ep.judge is not None else ep.em)
        writer.write(ep.to_dict())
        with lock:
            bar.update(1)

    def fail(key: str, exc: BaseException) -> None:
        if isinstance(exc, FatalPolicyError):  # no per-episode traceback: the caller reports the first one
            with lock:
                fatal.append(exc)
            return
        log.error("episode %s failed: %s", key, exc, exc_info=not isinstance(exc, RuntimeError))
        with lock:
            failures.append((key, f"{type(exc).__name__}: {exc}"))

    try:
        if policy.batched:
            run_lockstep(agent, make_env, todo, cfg.batch_size, finish, fail, halted=lambda: bool(fatal))
        else:
            run_threaded(agent, make_env, todo, cfg.workers, finish, fail, halted=lambda: bool(fatal))
    finally:
        bar.close()
    if fatal:
        raise fatal[0]
    return failures


def _write_outputs(
    cfg: EvalConfig, out: Path, keys: list[str], run_info: dict[str, Any]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``metrics.json``, ``plot.png`` and (for the oracle) ``sft.jsonl`` from every record of the run."""
    order = {k: i for i, k in enumerate(keys)}
    records = sorted((r for r in load_records(out / TRAJECTORIES) if r["key"] in order), key=lambda r: order[r["key"]])
    ks = sorted({1, cfg.k} | {2**i for i in range(1, 8) if 2**i < cfg.k})
    metrics = aggregate(records, ks)
    metrics["run"] = run_info
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2), encoding="utf-8")
    if records:
        plot_run(
            records,
            metrics,
            out / "plot.png",
            f"{run_info['policy']} on {cfg.tasks or 'default'} ({cfg.split or 'all'}): "
            f"pass@1 {metrics['pass@1']}, {len(records)} episodes",
        )
    else:  # no stale plot of an earlier run (--no-resume) next to this one's metrics
        (out / "plot.png").unlink(missing_ok=True)
    if cfg.sft if cfg.sft is not None else cfg.policy.startswith("oracle"):
        demos = [d for d in (sft_example(r) for r in records) if d]
        with (out / "sft.jsonl").open("w", encoding="utf-8") as f:
            f.writelines(json.dumps(d, ensure_ascii=False) + "\n" for d in demos)
    return metrics, records
