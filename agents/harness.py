"""The evaluation harness: run a policy on a task set, k samples per task, and score it.

Episodes run concurrently: a thread pool (one env per thread) for remote and deterministic
policies, lockstep batches for local models (:attr:`Policy.batched`), with a progress bar.
Each finished episode is appended to ``trajectories.jsonl`` at once, so an interrupted run
resumes where it stopped (finished episodes are not rerun). At the end the harness writes
``metrics.json`` (:func:`agents.metrics.aggregate`), ``plot.png`` and, for the oracle,
``sft.jsonl`` (successful trajectories as chat-format demonstrations).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from agents.config import AgentConfig, SamplingConfig
from agents.loop import ReactAgent, Request, run_episode
from agents.metrics import aggregate, correct
from agents.plot import plot_run
from agents.policies.base import FatalPolicyError, Generation, Policy
from agents.policies.openai_policy import RequestConfig
from agents.trajectory import TrajectoryWriter, finished_keys, load_records, sft_example
from sim_web.env import ALL_TOOLS, EnvConfig, WebResearchEnv
from sim_web.backends.sim import SimConfig
from sim_web.env.tasks import Task, resolve_tasks
from sim_web.tools import PROMPT_STYLES
from wiki_index.errors import ConfigError
from wiki_index.settings import sim_web_home

log = logging.getLogger(__name__)
RUN_FILE = "run.json"
RESPONSE_CHARS = EnvConfig.max_response_chars  # the env's default cap on one tool response
#: The observation settings of the env's defaults; a run's identity names only those that differ.
OBS_DEFAULTS = {"max_response_chars": RESPONSE_CHARS, "prompt": EnvConfig.prompt, "search_results": EnvConfig.search_results,
                "snippet_chars": SimConfig.snippet_chars}
LOCK_FILE = ".lock"
TRAJECTORIES = "trajectories.jsonl"


@dataclass(frozen=True)
class EvalConfig:
    """One evaluation run."""

    policy: str = field(default="oracle", metadata={"help": "'oracle', 'oracle:search' (answers from search results, no visit), 'hf:PATH' (or hf:smollm2), 'openai:MODEL'."})
    index_dir: str | None = field(default=None, metadata={"help": "The index (default: the sample under $SIM_WEB_HOME)."})
    tasks: str | None = field(default=None, metadata={"help": "Task file path or name: default, derived, sailorfog, or <index>/tasks/NAME.jsonl."})
    split: str | None = field(default="test", metadata={"help": "Task split ('test' = held out; None = all)."})
    n: int | None = field(default=None, metadata={"help": "Use the first n tasks (None = all)."})
    k: int = field(default=1, metadata={"help": "Samples per task (pass@k is reported for k and powers of two below)."})
    out: str | None = field(default=None, metadata={"help": "Output folder (default $SIM_WEB_HOME/runs/eval/<run name>)."})
    workers: int = field(default=4, metadata={"help": "Episode threads for remote / deterministic policies."})
    batch_size: int = field(default=8, metadata={"help": "Episodes stepped together for local (batched) policies."})
    agent: AgentConfig = field(default_factory=AgentConfig, metadata={"help": "Loop limits, sampling, ReSum."})
    retrieval: str = field(default="bm25", metadata={"help": "Search mode of the sim backend: bm25, dense, hybrid."})
    backend: str = field(default="sim", metadata={
        "help": "'sim' (the index) or 'real' (Serper + Jina, keys $SERPER_KEY_ID / $JINA_API_KEYS)."})
    real_fallback: bool = field(default=False, metadata={
        "help": "backend='real': let the index answer when Serper / Jina fail. Off, so that a measurement of the real web "
                "is not silently mixed with Wikipedia; each fallback is counted in the metrics either way."})
    record_dir: str | None = field(default=None, metadata={"help": "backend='real': record every request and response here."})
    replay_dir: str | None = field(default=None, metadata={"help": "backend='real': replay a recorded run from here (offline, no keys)."})
    tools: tuple[str, ...] = field(default=ALL_TOOLS, metadata={"help": "Enabled tools."})
    max_obs_chars: int = field(default=2_000_000, metadata={"help": "The env's tool-output budget per episode (the agent's own limits come first)."})
    max_response_chars: int = field(default=RESPONSE_CHARS, metadata={
        "help": "Cap on one tool response in characters (longer ones are cut with a marker); evaluate a GRPO checkpoint with "
                "its recipe's max_response_chars so it sees observations as long as in training."})
    prompt: str = field(default=EnvConfig.prompt, metadata={
        "help": "System prompt style: 'tongyi' (upstream's) or 'compact' (short, for small models); evaluate a checkpoint with "
                "the style it was trained on."})
    search_results: int = field(default=EnvConfig.search_results, metadata={"help": "Results per search query shown to the agent."})
    snippet_chars: int = field(default=SimConfig.snippet_chars, metadata={
        "help": "Most characters of one search result's snippet (the sim backend's; Serper's snippets are its own)."})
    base_url: str | None = field(default=None, metadata={"help": "OpenAI-compatible endpoint of the policy (default $OPENAI_BASE_URL)."})
    api_key: str | None = field(default=None, metadata={"help": "Its key (default $OPENAI_API_KEY)."})
    requests: RequestConfig = field(default_factory=RequestConfig, metadata={
        "help": "Timeout and retries of every OpenAI-compatible endpoint of the run (policy, judge, summariser)."})
    summariser_model: str | None = field(default=None, metadata={"help": "Model of the 'openai' ReSum summariser (same endpoint unless summariser_base_url)."})
    summariser_base_url: str | None = field(default=None, metadata={"help": "Endpoint of the summariser model."})
    judge: str | None = field(default=None, metadata={"help": "LLM judge model ('openai:MODEL'); None = EM decides correctness."})
    judge_base_url: str | None = field(default=None, metadata={"help": "Endpoint of the judge (default: the policy's)."})
    device: str = field(default="cpu", metadata={"help": "torch device of a local model."})
    dtype: str = field(default="float32", metadata={"help": "dtype of a local model."})
    threads: int | None = field(default=None, metadata={"help": "torch CPU threads of a local model."})
    resume: bool = field(default=True, metadata={"help": "Skip episodes already in the output folder; False starts over."})
    progress: bool = field(default=True, metadata={"help": "Show a progress bar."})
    sft: bool | None = field(default=None, metadata={"help": "Write sft.jsonl of successful episodes (default: for the oracle)."})

    def __post_init__(self) -> None:
        if not re.match(r"^(oracle|oracle:search|hf:.+|openai:.+)$", self.policy):
            raise ConfigError(f"EvalConfig.policy must be 'oracle', 'oracle:search', 'hf:PATH' or 'openai:MODEL', got {self.policy!r}")
        if self.k < 1 or (self.n is not None and self.n < 1) or self.workers < 1 or self.batch_size < 1:
            raise ConfigError(f"EvalConfig needs k >= 1, n >= 1 (or None), workers >= 1, batch_size >= 1; got k={self.k}, "
                              f"n={self.n}, workers={self.workers}, batch_size={self.batch_size}")
        if self.max_response_chars < 100 or self.max_obs_chars < 1:
            raise ConfigError(f"EvalConfig needs max_response_chars >= 100 and max_obs_chars >= 1, got {self.max_response_chars}, "
                              f"{self.max_obs_chars}")
        if self.prompt not in PROMPT_STYLES:
            raise ConfigError(f"EvalConfig.prompt must be one of {PROMPT_STYLES}, got {self.prompt!r} (--prompt compact for small models)")
        if self.search_results < 1 or self.snippet_chars < 1:
            raise ConfigError(f"EvalConfig needs search_results >= 1 and snippet_chars >= 1, got {self.search_results}, "
                              f"{self.snippet_chars}")
        if self.backend not in ("sim", "real"):
            raise ConfigError(f"EvalConfig.backend must be 'sim' or 'real', got {self.backend!r}")
        if (self.record_dir or self.replay_dir) and self.backend != "real":
            raise ConfigError("EvalConfig.record_dir / replay_dir record the real web: set backend='real' (--backend real) too")
        if self.agent.resum.enabled and self.agent.resum.summariser == "openai" and not self.summariser_model:
            raise ConfigError("ReSum with summariser='openai' needs EvalConfig.summariser_model (e.g. --summariser openai:MODEL)")

    def identity(self) -> dict[str, Any]:
        """The fields that decide what an episode is; resuming with different ones is refused."""
        return {"policy": self.policy, "index_dir": self.index_dir, "tasks": self.tasks, "split": self.split,
                "agent": asdict(self.agent), "retrieval": self.retrieval, "tools": list(self.tools), "judge": self.judge,
                **({"backend": self.backend} if self.backend != "sim" else {}),
                **({"real_fallback": True} if self.backend == "real" and self.real_fallback else {}),
                **{k: getattr(self, k) for k, default in OBS_DEFAULTS.items() if getattr(self, k) != default}}


@dataclass
class EvalResult:
    """What :func:`run_eval` produced."""

    metrics: dict[str, Any]
    records: list[dict[str, Any]]
    out: Path
    failures: list[tuple[str, str]]


def build_policy(cfg: EvalConfig, tasks: Sequence[Task], index: Any) -> Policy:
    """The policy named by ``cfg.policy``."""
    if cfg.policy in ("oracle", "oracle:search"):
        from agents.policies.oracle import OraclePolicy

        return OraclePolicy(tasks, index.store, read_pages=cfg.policy == "oracle")
    kind, _, name = cfg.policy.partition(":")
    if kind == "hf":
        from agents.models import resolve_hf_path
        from agents.policies.hf_policy import HFConfig, HFPolicy

        return HFPolicy(HFConfig(resolve_hf_path(name), device=cfg.device, dtype=cfg.dtype, batch_size=cfg.batch_size,
                                 num_threads=cfg.threads), cfg.agent.sampling)
    from agents.policies.openai_policy import OpenAIConfig, OpenAIPolicy

    return OpenAIPolicy(OpenAIConfig(name, base_url=cfg.base_url, api_key=cfg.api_key, concurrency=cfg.workers, **asdict(cfg.requests)),
                        cfg.agent.sampling)


def _remote(cfg: EvalConfig, spec: str, base_url: str | None) -> Policy:
    from agents.policies.openai_policy import OpenAIConfig, OpenAIPolicy

    return OpenAIPolicy(OpenAIConfig(spec.removeprefix("openai:"), base_url=base_url, api_key=cfg.api_key, **asdict(cfg.requests)))


def fit_to_window(agent: AgentConfig, window: int | None) -> AgentConfig:
    """Shrink the turn length and the context budget to a model's hard context window."""
    if not window:
        return agent
    s = agent.sampling
    if s.max_tokens > window // 4:
        s = replace(s, max_tokens=window // 4)
    budget = min(agent.max_context_tokens, window - s.max_tokens)
    if (s, budget) != (agent.sampling, agent.max_context_tokens):
        log.info("fitting the agent to a %d-token window: max_tokens %d, max_context_tokens %d", window, s.max_tokens, budget)
    return replace(agent, sampling=s, max_context_tokens=budget)


def default_out(cfg: EvalConfig) -> Path:
    """``$SIM_WEB_HOME/runs/eval/<policy>-<tasks>-<split>-n<N>-k<K>[-resum]``."""
    name = "-".join([cfg.policy, Path(cfg.tasks).stem if cfg.tasks else "default", cfg.split or "all", f"n{cfg.n or 'all'}",
                     f"k{cfg.k}"] + (["resum"] if cfg.agent.resum.enabled else []))
    return sim_web_home() / "runs" / "eval" / re.sub(r"[^A-Za-z0-9._-]+", "_", name)


def _prepare_out(out: Path, cfg: EvalConfig) -> None:
    out.mkdir(parents=True, exist_ok=True)
    run_file = out / RUN_FILE
    identity = json.loads(json.dumps(cfg.identity()))
    if run_file.is_file() and cfg.resume:
        old = json.loads(run_file.read_text(encoding="utf-8")).get("identity")
        if old != identity:
            old = old or {}
            diff = sorted(k for k in {*identity, *old} if old.get(k) != identity.get(k))
            raise ConfigError(f"{out} holds a run with different settings ({', '.join(diff)}); resuming would mix them. "
                              "Use another --out, or --no-resume to start over")
    elif not cfg.resume:
        (out / TRAJECTORIES).unlink(missing_ok=True)
    run_file.write_text(json.dumps({"identity": identity, "config": json.loads(json.dumps(asdict(cfg)))}, indent=2), encoding="utf-8")


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
            raise ConfigError(f"{out} is in use by another `sim-web eval` ({holder}); wait for it to finish (rerunning "
                              "then resumes), or pass another --out") from None
        f.seek(0)
        f.truncate()
        f.write(f"pid {os.getpid()}")
        f.flush()
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


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
    tasks = resolve_tasks(index, cfg.tasks, cfg.split)[: cfg.n]
    if not tasks:
        raise ConfigError(f"the task set {cfg.tasks or 'default'!r} (split {cfg.split!r}) of {index.path} is empty")
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
        run_info = {"policy": policy.name, "tasks": cfg.tasks or "default", "split": cfg.split, "episodes_run": ran,
                    "episodes_resumed": len(keys) - len(todo), "failed": len(failures),
                    "wall_seconds": round(time.perf_counter() - t_start, 3),
                    "episodes_per_second": round(ran / run_seconds, 4) if run_seconds > 0 and ran else None,
                    "concurrency": cfg.batch_size if policy.batched else cfg.workers, "judge": cfg.judge, "prompt": cfg.prompt}
        if getattr(policy, "generate_seconds", 0):
            run_info["generated_tokens_per_second"] = round(policy.generated_tokens / policy.generate_seconds, 3)  # type: ignore[attr-defined]
        metrics, records = _write_outputs(cfg, out, keys, run_info)
    if owned:
        policy.close()
    return EvalResult(metrics, records, out, failures)


def _run_episodes(cfg: EvalConfig, policy: Policy, index: Any, tasks: Sequence[Task], todo: list[tuple[Task, int]],
                  out: Path, initial: int) -> list[tuple[str, str]]:
    """Play the episodes still to do, appending each finished one to the trajectory file; returns the failures.

    The first :class:`FatalPolicyError` is raised once the episodes in flight end; no episode starts after it.
    """
    from tqdm import tqdm

    agent_cfg = fit_to_window(cfg.agent, policy.context_window)
    summariser = None
    if agent_cfg.resum.enabled and agent_cfg.resum.summariser == "openai":
        from agents.resum import ModelSummariser

        summariser = ModelSummariser(_remote(cfg, cfg.summariser_model or "", cfg.summariser_base_url or cfg.base_url), agent_cfg.resum)
    judge = None
    if cfg.judge:
        from agents.judge import LLMJudge

        judge = LLMJudge(_remote(cfg, cfg.judge, cfg.judge_base_url or cfg.base_url))
    agent = ReactAgent(policy, agent_cfg, summariser)
    env_cfg = EnvConfig(index_dir=str(index.path), tools=tuple(cfg.tools),
                        sim=SimConfig(mode=cfg.retrieval, snippet_chars=cfg.snippet_chars),
                        max_turns=agent_cfg.max_llm_calls + 2, max_obs_chars=cfg.max_obs_chars, backend=cfg.backend,
                        max_response_chars=cfg.max_response_chars, prompt=cfg.prompt, search_results=cfg.search_results,
                        record_dir=cfg.record_dir, replay_dir=cfg.replay_dir, real_fallback=cfg.real_fallback)
    make_env = lambda: WebResearchEnv(env_cfg, tasks=list(tasks))  # noqa: E731
    writer = TrajectoryWriter(out / TRAJECTORIES)
    bar = tqdm(total=initial + len(todo), initial=initial, disable=not cfg.progress, desc=f"eval {policy.name}", unit="ep")
    lock = threading.Lock()
    failures: list[tuple[str, str]] = []
    fatal: list[FatalPolicyError] = []

    def finish(rec: dict[str, Any]) -> None:
        if judge is not None:
            rec["judge"] = judge(rec["question"], rec["prediction"] or "", [rec["gold"], *rec["aliases"]])
        rec["correct"] = correct(rec)
        writer.write(rec)
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
            _lockstep(agent, make_env, todo, cfg.batch_size, finish, fail, halted=lambda: bool(fatal))
        else:
            _threaded(agent, make_env, todo, cfg.workers, finish, fail, halted=lambda: bool(fatal))
    finally:
        bar.close()
    if fatal:
        raise fatal[0]
    return failures


def _write_outputs(cfg: EvalConfig, out: Path, keys: list[str], run_info: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``metrics.json``, ``plot.png`` and (for the oracle) ``sft.jsonl`` from every record of the run."""
    order = {k: i for i, k in enumerate(keys)}
    records = sorted((r for r in load_records(out / TRAJECTORIES) if r["key"] in order), key=lambda r: order[r["key"]])
    ks = sorted({1, cfg.k} | {2 ** i for i in range(1, 8) if 2 ** i < cfg.k})
    metrics = aggregate(records, ks)
    metrics["run"] = run_info
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2), encoding="utf-8")
    if records:
        plot_run(records, metrics, out / "plot.png", f"{run_info['policy']} on {cfg.tasks or 'default'} ({cfg.split or 'all'}): "
                 f"pass@1 {metrics['pass@1']}, {len(records)} episodes")
    else:  # no stale plot of an earlier run (--no-resume) next to this one's metrics
        (out / "plot.png").unlink(missing_ok=True)
    if cfg.sft if cfg.sft is not None else cfg.policy.startswith("oracle"):
        demos = [d for d in (sft_example(r) for r in records) if d]
        with (out / "sft.jsonl").open("w", encoding="utf-8") as f:
            f.writelines(json.dumps(d, ensure_ascii=False) + "\n" for d in demos)
    return metrics, records


def _threaded(agent: ReactAgent, make_env: Callable[[], Any], todo: list[tuple[Task, int]], workers: int,
              finish: Callable[[dict[str, Any]], None], fail: Callable[[str, BaseException], None], halted: Callable[[], bool]) -> None:
    local = threading.local()

    def one(job: tuple[Task, int]) -> None:
        task, sample = job
        if halted():
            return
        try:
            if not hasattr(local, "env"):
                local.env = make_env()  # the searchers serialise their JVM calls themselves
            finish(run_episode(agent, local.env, task, sample))
        except Exception as e:  # one failed episode must not stop the others; it is rerun on resume
            fail(f"{task.id}#{sample}", e)

    if workers == 1:
        for job in todo:
            one(job)
        return
    with ThreadPoolExecutor(workers, thread_name_prefix="episode") as pool:
        list(pool.map(one, todo))


def _lockstep(agent: ReactAgent, make_env: Callable[[], Any], todo: list[tuple[Task, int]], width: int,
              finish: Callable[[dict[str, Any]], None], fail: Callable[[str, BaseException], None], halted: Callable[[], bool]) -> None:
    """Keep up to ``width`` episodes in flight (no new one once ``halted()``); every round, all waiting requests go to the policy in batches."""
    envs = [make_env() for _ in range(min(width, len(todo)))]
    free = list(range(len(envs)))[::-1]
    queue = list(todo)[::-1]
    active: dict[int, tuple[Any, Request, str]] = {}
    while (queue and not halted()) or active:
        while free and queue and not halted():
            slot, (task, sample) = free.pop(), queue.pop()
            key = f"{task.id}#{sample}"
            ep = agent.episode(envs[slot], task, sample)
            try:
                active[slot] = (ep, next(ep), key)
            except StopIteration as stop:
                finish(stop.value)
                free.append(slot)
            except Exception as e:
                fail(key, e)
                free.append(slot)
        groups: dict[SamplingConfig, list[int]] = {}
        for slot, (_, req, _) in active.items():
            groups.setdefault(req.sampling, []).append(slot)
        for sampling, slots in groups.items():
            try:
                gens: list[Generation] = agent.policy.generate([active[s][1].messages for s in slots], sampling, [active[s][1].seed for s in slots])
            except Exception as e:
                for s in slots:
                    fail(active.pop(s)[2], e)
                    free.append(s)
                continue
            for s, gen in zip(slots, gens):
                ep, _, key = active[s]
                try:
                    active[s] = (ep, ep.send(gen), key)
                except StopIteration as stop:
                    del active[s]
                    free.append(s)
                    finish(stop.value)
                except Exception as e:
                    del active[s]
                    free.append(s)
                    fail(key, e)
