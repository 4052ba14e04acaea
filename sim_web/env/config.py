"""``EnvConfig``: everything that defines a ``WebResearchEnv`` (index, tasks, tools, budgets, reward)."""

from __future__ import annotations

from dataclasses import dataclass, field

from sim_web.backends.sim import SimConfig
from sim_web.env.rewards import RewardConfig
from sim_web.executor import ExecutorConfig
from sim_web.protocol.actions import TOOL_NAMES
from wiki_index.errors import ConfigError


@dataclass(frozen=True)
class EnvConfig:
    """Everything that defines a ``WebResearchEnv``.

    Attributes:
        index_dir: The index to browse (default: the sample index under ``$SIM_WEB_HOME``).
        tasks: A task file / saved dataset; ``None`` uses the index's default set: its synthesized
            ``tasks/sailorfog_qa.jsonl`` when present, else tasks derived from its first sentences.
        split: Keep only tasks of this split (``"train"``/``"test"``; ``None`` = all).
        tools: Enabled tools (subset of ``search``, ``visit``, ``google_scholar``, ``PythonInterpreter``).
        sim: Retrieval mode and visit extraction settings.
        executor: Cache, rate limit, timeout and retry settings of the tool executor.
        reward: How the final answer is scored.
        max_turns: Agent turns before truncation (reward 0).
        max_obs_chars: Total characters of tool output per episode (the observation budget).
        max_response_chars: Cap on one tool response (longer ones are cut with a marker).
        max_action_chars: Longer actions are rejected as oversize.
        allow_multiple_calls: Whether one turn may hold several ``<tool_call>`` blocks.
        date: The "current date" in the system prompt (fixed for determinism).
    """

    index_dir: str | None = None
    tasks: str | None = None
    split: str | None = None
    tools: tuple[str, ...] = TOOL_NAMES
    sim: SimConfig = field(default_factory=SimConfig)
    executor: ExecutorConfig = field(default_factory=ExecutorConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)
    max_turns: int = 30
    max_obs_chars: int = 200_000
    max_response_chars: int = 20_000
    max_action_chars: int = 50_000
    allow_multiple_calls: bool = False
    date: str = "2025-01-01"

    def __post_init__(self) -> None:
        bad = [t for t in self.tools if t not in TOOL_NAMES]
        if bad or not self.tools:
            raise ConfigError(f"EnvConfig.tools must be a non-empty subset of {TOOL_NAMES}, got {self.tools}")
        if self.max_turns < 1 or self.max_obs_chars < 1 or self.max_response_chars < 100:
            raise ConfigError("EnvConfig.max_turns and max_obs_chars must be >= 1 and max_response_chars >= 100")
