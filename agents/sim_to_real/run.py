"""Sim-to-real: the same policies on the same held-out tasks in the simulated web and on the real web, side by side.

For each policy (``oracle``, ``hf:PATH``, ``openai:MODEL``, as ``sim-web eval``; a checkpoint trained in
sim and its base model give the 2x2 table), the evaluation harness runs twice, with ``backend="sim"``
and ``backend="real"`` (Serper + Jina; the index answers failed calls only with ``env.real_fallback``), into ``<out>/<policy>/{sim,real}``.
The report (``report.json``, ``report.md``, ``report.png`` in ``<out>``) sets them side by side:
pass@1 / pass@k, turns, tool calls by tool, tool errors, retries, fallbacks, cache hits, p50 / p95
tool latency, upstream requests and estimated cost (:class:`~agents.sim_to_real.report.ApiPrices`),
and a format check (every observation of both parses with the Tongyi grammar,
:mod:`agents.sim_to_real.format`).

The real web needs ``SERPER_KEY_ID`` and ``JINA_API_KEYS`` (optionally ``API_KEY`` / ``API_BASE`` /
``SUMMARY_MODEL_NAME`` for the page summariser); without them the run stops before anything starts.
``SIM_TO_REAL_MOCK=1`` (or ``mock=True``) runs the real side against local Serper / Jina stand-ins
(:mod:`sim_web.backends.mocks`) with injected faults, end to end, offline and without keys.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from agents.config import AgentConfig
from agents.eval_config import EndpointConfig, EvalConfig, eval_env
from agents.harness import EvalResult, run_eval
from agents.sim_to_real.format import check_records
from agents.sim_to_real.report import ApiPrices, markdown, plot, run_summary
from sim_web.env import EnvConfig
from simweb_core.errors import ConfigError
from simweb_core.fields import help_field
from simweb_core.settings import env, flag, scoped_env, sim_web_home

log = logging.getLogger(__name__)
MOCK_VAR = "SIM_TO_REAL_MOCK"
REAL_VARS = ("SERPER_KEY_ID", "JINA_API_KEYS")
SUMMARISER_VARS = ("API_KEY", "API_BASE", "SUMMARY_MODEL_NAME")


@dataclass(frozen=True)
class SimToRealConfig:
    """One sim-to-real comparison."""

    policies: tuple[str, ...] = help_field(
        ("oracle",),
        "Policies as in `sim-web eval --policy`: 'oracle', 'hf:PATH', 'openai:MODEL' (e.g. a sim-trained checkpoint and its base).",
    )
    index_dir: str | None = help_field(None, "The index (tasks; with env.real_fallback, the fallback of the real web).")
    tasks: str | None = help_field(None, "Task file or name (as `sim-web eval --tasks`).")
    split: str | None = help_field("test", "Task split ('test' = held out; None = all).")
    n: int | None = help_field(20, "The first n tasks (None = all): every real episode costs API calls.")
    k: int = help_field(1, "Samples per task (pass@k).")
    out: str | None = help_field(None, "Output folder (default $SIM_WEB_HOME/runs/sim-to-real/<mode>).")
    workers: int = help_field(4, "Concurrent episodes for remote / oracle policies.")
    batch_size: int = help_field(8, "Episodes generated together for a local model.")
    agent: AgentConfig = help_field(
        help="Loop limits, sampling, ReSum (the same in sim and real).", default_factory=AgentConfig
    )
    endpoints: EndpointConfig = help_field(
        help="Endpoints of openai: policies, the judge and the summariser (the same in sim and real).",
        default_factory=EndpointConfig,
    )
    env: EnvConfig = help_field(
        help=(
            "The env of both sides (sim_web.env.EnvConfig, as EvalConfig.env): tools, prompt, budgets, sim, "
            "reward, ...; the runner sets backend per side, and real_fallback (default off: the comparison is sim vs "
            "the real web alone; every fallback is counted in the report either way) applies to the real side only."
        ),
        default_factory=eval_env,
    )
    device: str = help_field("cpu", "torch device of hf: policies.")
    dtype: str = help_field("float32", "dtype of hf: policies.")
    record_dir: str | None = help_field(
        None, "Record the real side's requests and responses here (one subfolder per policy)."
    )
    replay_dir: str | None = help_field(
        None, "Replay the real side from a recording made with record_dir (offline, no keys)."
    )
    mock: bool | None = help_field(
        None, f"Run the real side against local mocks with injected faults (None: ${MOCK_VAR})."
    )
    mock_faults: bool = help_field(
        True, "Inject faults into the mocks (429, 503, malformed JSON, 402, a failed page, 500)."
    )
    prices: ApiPrices = help_field(help="Assumed per-call prices of the cost estimate.", default_factory=ApiPrices)
    resume: bool = help_field(True, "Skip finished episodes of an earlier run in the same folder (never with mocks).")
    progress: bool = help_field(True, "Show progress bars.")

    def __post_init__(self) -> None:
        if not self.policies:
            raise ConfigError("SimToRealConfig.policies is empty: name at least one policy (e.g. --policy oracle)")
        if len(set(self.policies)) != len(self.policies):
            raise ConfigError(f"SimToRealConfig.policies names a policy twice: {list(self.policies)}")
        if self.record_dir and self.replay_dir:
            raise ConfigError("record_dir and replay_dir are exclusive: record a run, then replay it in another")
        if self.env.backend != "sim":
            raise ConfigError(
                f"SimToRealConfig.env.backend is {self.env.backend!r}: leave it 'sim', the runner plays each policy on "
                "both backends (record_dir / replay_dir are this config's own fields)"
            )
        given = [p for p in ("index_dir", "tasks", "split") if getattr(self.env, p) is not None]
        if given:
            raise ConfigError(
                f"SimToRealConfig.env sets {given}: set them on the SimToRealConfig (index_dir, tasks, split)"
            )

    @property
    def use_mock(self) -> bool:
        """Whether the real side runs against the local mocks."""
        return flag(MOCK_VAR) if self.mock is None else self.mock


@dataclass
class SimToRealResult:
    """What :func:`run_sim_to_real` produced."""

    report: dict[str, Any]
    out: Path
    files: dict[str, Path]
    failures: list[tuple[str, str]]


def check_keys(cfg: SimToRealConfig) -> None:
    """Refuse to start the real web without its keys (before the sim side spends any time).

    Raises:
        ConfigError: Naming every variable to set, and how to run without keys.
    """
    if cfg.use_mock or cfg.replay_dir:
        return
    missing = [n for n in REAL_VARS if not (env(n) or (n == "JINA_API_KEYS" and env("JINA_API_KEY")) or "").strip()]
    if missing:
        raise ConfigError(
            f"sim-to-real needs the real web's keys: set {' and '.join(missing)} (Serper for search and "
            f"google_scholar, Jina Reader for visit; JINA_API_KEYS may hold several keys, comma-separated), and "
            f"optionally {', '.join(SUMMARISER_VARS)} for an LLM page summariser; or run against local mocks "
            f"with {MOCK_VAR}=1, or replay a recording with --replay DIR"
        )


def slug(policy: str) -> str:
    """A folder name for a policy spec (``openai:Qwen/Qwen3-8B`` -> ``openai_Qwen_Qwen3-8B``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", policy).strip("_") or "policy"


#: The faults injected into the mocks (in request order) and what each exercises.
SERPER_FAULTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("429 Retry-After 0", {"status": 429, "retry_after": "0"}),
    ("503", {"status": 503}),
    ("truncated JSON", {"body": b'{"organic": [{"title": "cut'}),
)
JINA_FAULTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("402 on the first key (rotation)", {"status": 402}),
    ("200 with a failed target page (the index answers only with --real-fallback)", {"kind": "warning"}),
    ("500", {"status": 500}),
)


@contextmanager
def mock_web(index_dir: str | None, faults: bool = True) -> Iterator[dict[str, Any]]:
    """Local Serper and Jina stand-ins over the index, with the real side's variables pointing at them.

    Sets ``SERPER_KEY_ID``, ``JINA_API_KEYS`` (two keys), ``SERPER_BASE_URL`` and ``JINA_BASE_URL`` and unsets
    the summariser's variables for the ``with`` block (restored after).

    Yields:
        ``{"serper": MockSerper, "jina": MockJina, "faults": [names]}``.
    """
    from sim_web.backends.mocks import Fault, MockJina, MockSerper
    from sim_web.backends.sim import SimBackend
    from wiki_index.search.index import WikiIndex

    content = SimBackend(WikiIndex.from_dir(index_dir))
    serper, jina = MockSerper(content, "mock-serper-key"), MockJina(content, ["mock-jina-key-1", "mock-jina-key-2"])
    names: list[str] = []
    if faults:
        serper.inject(*(Fault(**f) for _, f in SERPER_FAULTS))
        jina.inject(*(Fault(**f) for _, f in JINA_FAULTS))
        names = [f"Serper {n}" for n, _ in SERPER_FAULTS] + [f"Jina {n}" for n, _ in JINA_FAULTS]
    values: dict[str, str | None] = {
        "SERPER_KEY_ID": "mock-serper-key",
        "JINA_API_KEYS": "mock-jina-key-1,mock-jina-key-2",
        "SERPER_BASE_URL": serper.base_url,
        "JINA_BASE_URL": jina.base_url,
        "JINA_API_KEY": None,
        **dict.fromkeys(SUMMARISER_VARS),
    }
    try:
        with scoped_env(values):
            yield {"serper": serper, "jina": jina, "faults": names}
    finally:
        serper.close()
        jina.close()


def _eval_config(cfg: SimToRealConfig, policy: str, backend: str, out: Path) -> EvalConfig:
    real = backend == "real"
    return EvalConfig(
        policy=policy,
        index_dir=cfg.index_dir,
        tasks=cfg.tasks,
        split=cfg.split,
        n=cfg.n,
        k=cfg.k,
        out=str(out / slug(policy) / backend),
        workers=cfg.workers,
        batch_size=cfg.batch_size,
        agent=cfg.agent,
        env=replace(
            cfg.env,
            backend=backend,
            real_fallback=real and cfg.env.real_fallback,
            record_dir=str(Path(cfg.record_dir) / slug(policy)) if real and cfg.record_dir else None,
            replay_dir=str(Path(cfg.replay_dir) / slug(policy)) if real and cfg.replay_dir else None,
        ),
        endpoints=cfg.endpoints,
        device=cfg.device,
        dtype=cfg.dtype,
        resume=cfg.resume and not cfg.use_mock,
        progress=cfg.progress,
        sft=False,
    )


def _run_pair(cfg: SimToRealConfig, policy: str, out: Path) -> dict[str, EvalResult]:
    """The policy in sim, then on the real web (each a full ``sim-web eval`` run in its own folder)."""
    results = {}
    for backend in ("sim", "real"):
        log.info("sim-to-real: %s on %s", policy, backend)
        results[backend] = run_eval(_eval_config(cfg, policy, backend, out))
    return results


def build_report(
    cfg: SimToRealConfig, runs: dict[str, dict[str, EvalResult]], mock: dict[str, Any] | None
) -> dict[str, Any]:
    """The JSON-ready report of finished runs (``runs[policy][backend]``)."""
    policies = {
        p: {b: run_summary(r.records, r.metrics, cfg.prices) for b, r in pair.items()} for p, pair in runs.items()
    }
    checks = {b: check_records(rec for pair in runs.values() for rec in pair[b].records) for b in ("sim", "real")}
    first = next(iter(policies.values()))
    report: dict[str, Any] = {
        "mode": "mock" if cfg.use_mock else ("replay" if cfg.replay_dir else "real web"),
        "tasks": cfg.tasks or "default",
        "split": cfg.split,
        "n_tasks": first["sim"]["tasks"],
        "k": cfg.k,
        "judge": cfg.endpoints.judge,
        "policies": policies,
        "format_check": {**checks, "passed": checks["sim"]["passed"] and checks["real"]["passed"]},
        "prices": asdict(cfg.prices),
        "runs": {p: {b: str(r.out) for b, r in pair.items()} for p, pair in runs.items()},
    }
    if mock is not None:
        report["mock"] = {
            "faults": mock["faults"],
            "received": {"serper": mock["serper"].count(), "jina": mock["jina"].count()},
        }
    return report


def write_report(report: dict[str, Any], out: Path) -> dict[str, Path]:
    """``report.json``, ``report.md`` and (with matplotlib) ``report.png`` in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    files = {"json": out / "report.json", "markdown": out / "report.md"}
    files["json"].write_text(json.dumps(report, indent=2), encoding="utf-8")
    files["markdown"].write_text(markdown(report), encoding="utf-8")
    png = plot(report, out / "report.png")
    if png is not None:
        files["png"] = png
    return files


def run_sim_to_real(cfg: SimToRealConfig) -> SimToRealResult:
    """Run every policy in sim and on the real web (or the mocks) and write the side-by-side report.

    Raises:
        ConfigError: Without the real web's keys (naming them), or for a bad policy / task set.
    """
    check_keys(cfg)
    out = Path(cfg.out) if cfg.out else sim_web_home() / "runs" / "sim-to-real" / ("mock" if cfg.use_mock else "real")
    cfg = replace(cfg, out=str(out))
    _warm_up(cfg.index_dir)
    with _maybe_mock(cfg) as mock:
        runs = {p: _run_pair(cfg, p, out) for p in cfg.policies}
        report = build_report(cfg, runs, mock)
    files = write_report(report, out)
    failures = [(f"{p}/{b}/{key}", why) for p, pair in runs.items() for b, r in pair.items() for key, why in r.failures]
    return SimToRealResult(report, out, files, failures)


def _warm_up(index_dir: str | None) -> None:
    """Start the search engine (the JVM: seconds) before anything is timed, so the sim side's latency is not its start-up."""
    from sim_web.backends.sim import SimBackend
    from wiki_index.search.index import WikiIndex

    SimBackend(WikiIndex.from_dir(index_dir)).search("warm up", 1)


@contextmanager
def _maybe_mock(cfg: SimToRealConfig) -> Iterator[dict[str, Any] | None]:
    if not cfg.use_mock:
        yield None
        return
    with mock_web(cfg.index_dir, cfg.mock_faults) as mock:
        yield mock
