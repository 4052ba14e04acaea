"""What one ``sim-web eval`` run is: :class:`EvalConfig` and the endpoints it talks to, :class:`EndpointConfig`.

:class:`EndpointConfig` is shared with ``sim-web sim-to-real`` (:class:`agents.sim_to_real.run.SimToRealConfig`), which
runs the harness twice with the same endpoints.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from agents.config import AgentConfig
from agents.policies.openai_policy import RequestConfig
from sim_web.backends.sim import SimConfig
from sim_web.env import EnvConfig
from sim_web.protocol import TOOL_NAMES
from sim_web.tools import PROMPT_STYLES
from wiki_index.errors import ConfigError
from wiki_index.secret import Secret, as_secret


@dataclass(frozen=True)
class EndpointConfig:
    """The OpenAI-compatible endpoints of a run: the ``openai:`` policy's, the LLM judge's and the ReSum summariser's."""

    base_url: Secret | None = field(
        default=None,
        metadata={"help": "OpenAI-compatible endpoint of the policy (default $OPENAI_BASE_URL); a Secret."},
    )
    api_key: Secret | None = field(
        default=None,
        metadata={
            "help": "Its key (default $OPENAI_API_KEY); also the judge's and summariser's. A Secret: run.json holds "
            "its fingerprint only."
        },
    )
    judge: str | None = field(
        default=None, metadata={"help": "LLM judge model ('openai:MODEL'); None = EM decides correctness."}
    )
    judge_base_url: Secret | None = field(
        default=None, metadata={"help": "Endpoint of the judge (default: the policy's); a Secret."}
    )
    summariser_model: str | None = field(
        default=None,
        metadata={"help": "Model of the 'openai' ReSum summariser (same endpoint unless summariser_base_url)."},
    )
    summariser_base_url: Secret | None = field(
        default=None, metadata={"help": "Endpoint of the summariser model (default: the policy's); a Secret."}
    )
    requests: RequestConfig = field(
        default_factory=RequestConfig,
        metadata={"help": "Timeout and retries of every endpoint of the run (policy, judge, summariser)."},
    )

    def __post_init__(self) -> None:
        for name in ("base_url", "judge_base_url", "summariser_base_url"):
            object.__setattr__(self, name, as_secret(getattr(self, name)))
        object.__setattr__(self, "api_key", as_secret(self.api_key, env="OPENAI_API_KEY"))


RESPONSE_CHARS = EnvConfig.max_response_chars  # the env's default cap on one tool response
#: The observation settings of the env's defaults; a run's identity names only those that differ.
OBS_DEFAULTS = {
    "max_response_chars": RESPONSE_CHARS,
    "prompt": EnvConfig.prompt,
    "search_results": EnvConfig.search_results,
    "snippet_chars": SimConfig.snippet_chars,
}


@dataclass(frozen=True)
class EvalConfig:
    """One evaluation run."""

    policy: str = field(
        default="oracle",
        metadata={
            "help": "'oracle', 'oracle:search' (answers from search results, no visit), 'rule:first-title' (search the "
            "question, answer the first result title it does not name), 'prior' (the most frequent train answer of the "
            "question's form), 'hf:PATH' (or hf:smollm2), 'openai:MODEL'."
        },
    )
    index_dir: str | None = field(
        default=None, metadata={"help": "The index (default: the sample under $SIM_WEB_HOME)."}
    )
    tasks: str | None = field(
        default=None,
        metadata={"help": "Task file path or name: default, derived, sailorfog, or <index>/tasks/NAME.jsonl."},
    )
    split: str | None = field(default="test", metadata={"help": "Task split ('test' = held out; None = all)."})
    n: int | None = field(default=None, metadata={"help": "Use the first n tasks (None = all), after skip."})
    skip: int = field(
        default=0, metadata={"help": "Skip the first tasks of the split (a later slice: tasks skip+1 to skip+n)."}
    )
    k: int = field(default=1, metadata={"help": "Samples per task (pass@k is reported for k and powers of two below)."})
    out: str | None = field(
        default=None, metadata={"help": "Output folder (default $SIM_WEB_HOME/runs/eval/<run name>)."}
    )
    workers: int = field(default=4, metadata={"help": "Episode threads for remote / deterministic policies."})
    batch_size: int = field(default=8, metadata={"help": "Episodes stepped together for local (batched) policies."})
    agent: AgentConfig = field(default_factory=AgentConfig, metadata={"help": "Loop limits, sampling, ReSum."})
    endpoints: EndpointConfig = field(
        default_factory=EndpointConfig,
        metadata={
            "help": "The OpenAI-compatible endpoints of the run: the policy's, the judge's, the ReSum summariser's."
        },
    )
    retrieval: str = field(default="bm25", metadata={"help": "Search mode of the sim backend: bm25, dense, hybrid."})
    backend: str = field(
        default="sim",
        metadata={"help": "'sim' (the index) or 'real' (Serper + Jina, keys $SERPER_KEY_ID / $JINA_API_KEYS)."},
    )
    real_fallback: bool = field(
        default=False,
        metadata={
            "help": "backend='real': let the index answer when Serper / Jina fail. Off, so that a measurement of the real web "
            "is not silently mixed with Wikipedia; each fallback is counted in the metrics either way."
        },
    )
    record_dir: str | None = field(
        default=None, metadata={"help": "backend='real': record every request and response here."}
    )
    replay_dir: str | None = field(
        default=None, metadata={"help": "backend='real': replay a recorded run from here (offline, no keys)."}
    )
    tools: tuple[str, ...] = field(default=TOOL_NAMES, metadata={"help": "Enabled tools."})
    max_obs_chars: int = field(
        default=2_000_000,
        metadata={"help": "The env's tool-output budget per episode (the agent's own limits come first)."},
    )
    max_response_chars: int = field(
        default=RESPONSE_CHARS,
        metadata={
            "help": "Cap on one tool response in characters (longer ones are cut with a marker); evaluate a GRPO checkpoint with "
            "its recipe's max_response_chars so it sees observations as long as in training."
        },
    )
    prompt: str = field(
        default=EnvConfig.prompt,
        metadata={
            "help": "System prompt style: 'tongyi' (upstream's) or 'compact' (short, for small models); evaluate a checkpoint with "
            "the style it was trained on."
        },
    )
    search_results: int = field(
        default=EnvConfig.search_results, metadata={"help": "Results per search query shown to the agent."}
    )
    snippet_chars: int = field(
        default=SimConfig.snippet_chars,
        metadata={
            "help": "Most characters of one search result's snippet (the sim backend's; Serper's snippets are its own)."
        },
    )
    device: str = field(default="cpu", metadata={"help": "torch device of a local model."})
    dtype: str = field(default="float32", metadata={"help": "dtype of a local model."})
    threads: int | None = field(default=None, metadata={"help": "torch CPU threads of a local model."})
    resume: bool = field(
        default=True, metadata={"help": "Skip episodes already in the output folder; False starts over."}
    )
    progress: bool = field(default=True, metadata={"help": "Show a progress bar."})
    sft: bool | None = field(
        default=None, metadata={"help": "Write sft.jsonl of successful episodes (default: for the oracle)."}
    )

    def __post_init__(self) -> None:
        if not re.match(r"^(oracle|oracle:search|rule:first-title|prior|hf:.+|openai:.+)$", self.policy):
            raise ConfigError(
                "EvalConfig.policy must be 'oracle', 'oracle:search', 'rule:first-title', 'prior', 'hf:PATH' or "
                f"'openai:MODEL', got {self.policy!r}"
            )
        if (
            self.k < 1
            or (self.n is not None and self.n < 1)
            or self.skip < 0
            or self.workers < 1
            or self.batch_size < 1
        ):
            raise ConfigError(
                f"EvalConfig needs k >= 1, n >= 1 (or None), skip >= 0, workers >= 1, batch_size >= 1; got k={self.k}, "
                f"n={self.n}, skip={self.skip}, workers={self.workers}, batch_size={self.batch_size}"
            )
        if self.max_response_chars < 100 or self.max_obs_chars < 1:
            raise ConfigError(
                f"EvalConfig needs max_response_chars >= 100 and max_obs_chars >= 1, got {self.max_response_chars}, "
                f"{self.max_obs_chars}"
            )
        if self.prompt not in PROMPT_STYLES:
            raise ConfigError(
                f"EvalConfig.prompt must be one of {PROMPT_STYLES}, got {self.prompt!r} (--prompt compact for small models)"
            )
        if self.search_results < 1 or self.snippet_chars < 1:
            raise ConfigError(
                f"EvalConfig needs search_results >= 1 and snippet_chars >= 1, got {self.search_results}, "
                f"{self.snippet_chars}"
            )
        if self.backend not in ("sim", "real"):
            raise ConfigError(f"EvalConfig.backend must be 'sim' or 'real', got {self.backend!r}")
        if (self.record_dir or self.replay_dir) and self.backend != "real":
            raise ConfigError(
                "EvalConfig.record_dir / replay_dir record the real web: set backend='real' (--backend real) too"
            )
        if self.agent.resum.enabled and self.agent.resum.summariser == "openai" and not self.endpoints.summariser_model:
            raise ConfigError(
                "ReSum with summariser='openai' needs EvalConfig.summariser_model (e.g. --summariser openai:MODEL)"
            )

    def identity(self) -> dict[str, Any]:
        """The fields that decide what an episode is; resuming with different ones is refused."""
        return {
            "policy": self.policy,
            "index_dir": self.index_dir,
            "tasks": self.tasks,
            "split": self.split,
            "agent": asdict(self.agent),
            "retrieval": self.retrieval,
            "tools": list(self.tools),
            "judge": self.endpoints.judge,
            **({"backend": self.backend} if self.backend != "sim" else {}),
            **({"real_fallback": True} if self.backend == "real" and self.real_fallback else {}),
            **{k: getattr(self, k) for k, default in OBS_DEFAULTS.items() if getattr(self, k) != default},
        }
