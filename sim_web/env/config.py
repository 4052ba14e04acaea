"""``EnvConfig``: everything that defines a ``WebResearchEnv`` (index, tasks, tools, budgets, reward)."""

from __future__ import annotations

from dataclasses import dataclass, field

from sim_web.backends.jina import JinaConfig
from sim_web.backends.serper import SerperConfig
from sim_web.backends.sim import SimConfig
from sim_web.env.rewards import RewardConfig
from sim_web.executor import BackendPolicy, ExecutorConfig
from sim_web.protocol.actions import DEFAULT_MAX_CALLS, TOOL_NAMES
from sim_web.tools.prompt import PROMPT_STYLES
from simweb_core.errors import ConfigError

BACKENDS = ("sim", "real")
#: Executor policies of the real upstreams unless ``EnvConfig.executor.policies`` names them: Serper
#: (QPS ceilings by plan are unverified, 50-300: stay well under), Jina (500 requests/min with a key),
#: the sim fallback (local: no pacing, no breaker). Backoff 1 / 2 / 4 s as ASearcher; 7-day cache TTL
#: as DeepResearcher.
REAL_POLICIES = {
    "serper": BackendPolicy(
        qps=10.0,
        burst=10,
        timeout_s=30.0,
        max_retries=3,
        backoff_base_s=1.0,
        backoff_max_s=8.0,
        jitter_s=0.5,
        cache_ttl_s=7 * 86400.0,
    ),
    "jina": BackendPolicy(
        qps=8.0,
        burst=8,
        timeout_s=180.0,
        max_retries=2,
        backoff_base_s=1.0,
        backoff_max_s=8.0,
        jitter_s=0.5,
        cache_ttl_s=7 * 86400.0,
    ),
    "sim": BackendPolicy(timeout_s=60.0, max_retries=0, breaker_failures=None),
}


@dataclass(frozen=True)
class EnvConfig:
    """Everything that defines a ``WebResearchEnv``.

    Attributes:
        index_dir: The index to browse (default: the sample index under ``$SIM_WEB_HOME``).
        tasks: A task file / saved dataset, or a name (:func:`sim_web.env.tasks.resolve_tasks`: ``derived``,
            ``sailorfog``, ``<index>/tasks/NAME.jsonl``, a bundled set such as ``handwritten``); ``None`` uses the
            index's default set: its synthesized ``tasks/sailorfog_qa.jsonl`` when present, else tasks derived from
            its first sentences.
        split: Keep only tasks of this split (``"train"``/``"test"``; ``None`` = all).
        tools: Enabled tools (subset of ``search``, ``visit``, ``google_scholar``, ``PythonInterpreter``).
        sim: Retrieval mode and visit extraction settings (``sim.snippet_chars``: characters per search snippet).
        executor: Cache, rate limit, timeout and retry settings of the tool executor.
        reward: How the final answer is scored.
        max_turns: Agent turns before truncation (reward 0).
        search_results: Results per search / scholar query shown to the agent (upstream: Serper's 10).
        max_obs_chars: Total characters of tool output per episode (the observation budget).
        max_response_chars: Cap on one tool response (longer ones are cut with a marker).
        max_action_chars: Longer actions are rejected as oversize.
        allow_multiple_calls: Whether one turn may hold several ``<tool_call>`` blocks.
        max_calls_per_turn: With ``allow_multiple_calls``, a turn with more calls is one ``multiple_calls`` error
            (counted, nothing runs), so one step's work stays bounded.
        date: The "current date" in the system prompt (fixed for determinism).
        prompt: System prompt style: ``"tongyi"`` (upstream's, byte for byte) or ``"compact"`` (short, for small
            models; same tags and tool-call format).
        backend: ``"sim"`` (the index) or ``"real"`` (Serper + Jina, keys from the environment, with
            the index as fallback). Only the tools' source changes; tasks still come from the index.
        serper: Serper endpoint, timeout and locale (``backend="real"``).
        jina: Jina endpoint, timeout, page token budget, summariser sampling (``backend="real"``).
        real_fallback: Whether the index answers when Serper / Jina fail (Wikipedia URLs only for visit).
        record_dir: Record every real request and response into this directory.
        replay_dir: Replay a recorded run from this directory, offline and without keys.
    """

    index_dir: str | None = None
    tasks: str | None = None
    split: str | None = None
    tools: tuple[str, ...] = TOOL_NAMES
    sim: SimConfig = field(default_factory=SimConfig)
    executor: ExecutorConfig = field(default_factory=ExecutorConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)
    max_turns: int = 30
    search_results: int = 10
    max_obs_chars: int = 200_000
    max_response_chars: int = 20_000
    max_action_chars: int = 50_000
    allow_multiple_calls: bool = False
    max_calls_per_turn: int = DEFAULT_MAX_CALLS
    date: str = "2025-01-01"
    prompt: str = "tongyi"
    backend: str = "sim"
    serper: SerperConfig = field(default_factory=SerperConfig)
    jina: JinaConfig = field(default_factory=JinaConfig)
    real_fallback: bool = True
    record_dir: str | None = None
    replay_dir: str | None = None

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ConfigError(f"EnvConfig.backend must be one of {BACKENDS}, got {self.backend!r}")
        if self.record_dir and self.replay_dir:
            raise ConfigError(
                "EnvConfig.record_dir and replay_dir are exclusive: record a run, then replay it in another"
            )
        if (self.record_dir or self.replay_dir) and self.backend != "real":
            raise ConfigError("EnvConfig.record_dir / replay_dir record the real web: set backend='real' too")
        bad = [t for t in self.tools if t not in TOOL_NAMES]
        if bad or not self.tools:
            raise ConfigError(f"EnvConfig.tools must be a non-empty subset of {TOOL_NAMES}, got {self.tools}")
        if self.max_turns < 1 or self.max_obs_chars < 1 or self.max_response_chars < 100:
            raise ConfigError("EnvConfig.max_turns and max_obs_chars must be >= 1 and max_response_chars >= 100")
        if self.prompt not in PROMPT_STYLES:
            raise ConfigError(
                f"EnvConfig.prompt must be one of {PROMPT_STYLES}, got {self.prompt!r} "
                "('compact' is the short prompt for small models)"
            )
        if self.max_calls_per_turn < 1:
            raise ConfigError(f"EnvConfig.max_calls_per_turn must be >= 1, got {self.max_calls_per_turn}")
        if self.search_results < 1:
            raise ConfigError(
                f"EnvConfig.search_results must be >= 1 (results per search query), got {self.search_results}"
            )
