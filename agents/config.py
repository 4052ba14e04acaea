"""Configuration of the agent: sampling parameters, loop limits and ReSum.

Dataclasses with a help text per field (``metadata["help"]``) and a ``__post_init__`` whose
errors say what was expected, what was found and how to fix it. Defaults follow Tongyi
DeepResearch's inference settings where they exist (temperature 0.6, top_p 0.95, presence
penalty 1.1, stop at ``<tool_response>``, 100 LLM calls, 150 minutes).
"""

from __future__ import annotations

from dataclasses import dataclass

from simweb_core.errors import ConfigError
from simweb_core.fields import help_field

#: Tongyi's stop sequences: the model must not write the tool's answer itself.
TOOL_RESPONSE_STOPS = ("\n<tool_response>", "<tool_response>")
FORCE_TRIGGERS = ("context", "calls", "time")
SUMMARISERS = ("policy", "extractive", "openai")


@dataclass(frozen=True)
class SamplingConfig:
    """How a policy samples one turn (passed to the endpoint or to ``generate``)."""

    temperature: float = help_field(0.6, "Sampling temperature; 0 means greedy decoding.")
    top_p: float = help_field(0.95, "Nucleus sampling mass.")
    presence_penalty: float = help_field(1.1, "Penalty on tokens already generated in this turn (OpenAI semantics).")
    max_tokens: int = help_field(8192, "Most new tokens per turn.")
    stop: tuple[str, ...] = help_field(
        TOOL_RESPONSE_STOPS, "Stop sequences (Tongyi stops before a hallucinated tool response)."
    )
    seed: int | None = help_field(0, "Base seed for sampling; each episode derives its own from it.")

    def __post_init__(self) -> None:
        if self.temperature < 0 or not 0 < self.top_p <= 1:
            raise ConfigError(
                f"SamplingConfig needs temperature >= 0 and 0 < top_p <= 1; got temperature={self.temperature}, "
                f"top_p={self.top_p} (use temperature=0 for greedy decoding)"
            )
        if self.max_tokens < 1:
            raise ConfigError(f"SamplingConfig.max_tokens must be >= 1, got {self.max_tokens}")
        if isinstance(self.stop, str) or not all(isinstance(s, str) and s for s in self.stop):
            raise ConfigError(
                f"SamplingConfig.stop must be a tuple of non-empty strings, got {self.stop!r} "
                "(write stop=('\\n<tool_response>',) rather than a bare string)"
            )


@dataclass(frozen=True)
class ReSumConfig:
    """When and how the history is summarised (ReSum / WebResummer)."""

    enabled: bool = help_field(False, "Summarise the history during the episode.")
    trigger_fraction: float | None = help_field(
        0.6,
        "Summarise when the context reaches this fraction of AgentConfig.max_context_tokens (None = never by size).",
    )
    every_n_turns: int | None = help_field(
        None, "Also summarise every N agent turns since the last summary (None = never by count)."
    )
    summariser: str = help_field(
        "policy",
        "'policy' (the acting model), 'openai' (a separate OpenAI-compatible model) or 'extractive' "
        "(deterministic, no model).",
    )
    max_summaries: int = help_field(8, "Most summarisations per episode.")
    max_history_chars: int = help_field(60_000, "History text shown to the summariser (the middle is cut beyond this).")
    summary_max_tokens: int = help_field(1024, "Most new tokens of a summary.")

    def __post_init__(self) -> None:
        if self.summariser not in SUMMARISERS:
            raise ConfigError(f"ReSumConfig.summariser must be one of {SUMMARISERS}, got {self.summariser!r}")
        if self.trigger_fraction is not None and not 0 < self.trigger_fraction < 1:
            raise ConfigError(
                f"ReSumConfig.trigger_fraction must be in (0, 1) or None, got {self.trigger_fraction} "
                "(it is a fraction of AgentConfig.max_context_tokens, e.g. 0.6)"
            )
        if self.every_n_turns is not None and self.every_n_turns < 1:
            raise ConfigError(f"ReSumConfig.every_n_turns must be >= 1 or None, got {self.every_n_turns}")
        if self.enabled and self.trigger_fraction is None and self.every_n_turns is None:
            raise ConfigError(
                "ReSumConfig is enabled but has no trigger: set trigger_fraction (e.g. 0.6) and/or every_n_turns"
            )
        if self.max_summaries < 1 or self.max_history_chars < 1000 or self.summary_max_tokens < 16:
            raise ConfigError(
                f"ReSumConfig needs max_summaries >= 1, max_history_chars >= 1000, summary_max_tokens >= 16; got "
                f"{self.max_summaries}, {self.max_history_chars}, {self.summary_max_tokens}"
            )


@dataclass(frozen=True)
class AgentConfig:
    """Limits of one episode of the ReAct loop."""

    max_llm_calls: int = help_field(
        100, "Most policy calls per episode, summaries by the policy included (Tongyi: 100)."
    )
    max_seconds: float = help_field(150 * 60.0, "Wall-clock limit of an episode in seconds (Tongyi: 150 minutes).")
    max_context_tokens: int = help_field(
        108 * 1024, "Context size at which the answer is forced (Tongyi: 108K of a 128K window)."
    )
    force_on: tuple[str, ...] = help_field(
        FORCE_TRIGGERS,
        "Limits that trigger Tongyi's forced-answer prompt instead of a silent stop: 'context' (as Tongyi), 'calls' "
        "(the last LLM call is spent on a forced answer), 'time' (one forced call once the time is up).",
    )
    force_replaces_observation: bool = help_field(
        True,
        "Tongyi overwrites the last tool response with the forcing prompt; False appends it as a new user message.",
    )
    sampling: SamplingConfig = help_field(help="Sampling of every agent turn.", default_factory=SamplingConfig)
    resum: ReSumConfig = help_field(help="History summarisation.", default_factory=ReSumConfig)

    def __post_init__(self) -> None:
        if self.max_llm_calls < 1 or self.max_seconds <= 0 or self.max_context_tokens < 256:
            raise ConfigError(
                f"AgentConfig needs max_llm_calls >= 1, max_seconds > 0, max_context_tokens >= 256; got "
                f"{self.max_llm_calls}, {self.max_seconds}, {self.max_context_tokens}"
            )
        bad = [f for f in self.force_on if f not in FORCE_TRIGGERS]
        if bad:
            raise ConfigError(f"AgentConfig.force_on must be a subset of {FORCE_TRIGGERS}, got {self.force_on!r}")
