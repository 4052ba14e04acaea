"""What one ``sim-web eval`` run is: :class:`EvalConfig`, the env it plays in (a nested :class:`~sim_web.env.EnvConfig`,
never a copy of some of its fields) and the endpoints it talks to, :class:`EndpointConfig`.

:class:`EndpointConfig` is shared with ``sim-web sim-to-real`` (:class:`agents.sim_to_real.run.SimToRealConfig`), which
runs the harness twice with the same endpoints.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, fields, is_dataclass, replace
from typing import Any

from agents.config import AgentConfig
from agents.policies.openai_policy import RequestConfig
from sim_web.backends.sim import SimConfig
from sim_web.env import EnvConfig
from simweb_core.errors import ConfigError
from simweb_core.fields import help_field
from simweb_core.secret import Secret, as_secret


@dataclass(frozen=True)
class EndpointConfig:
    """The OpenAI-compatible endpoints of a run: the ``openai:`` policy's, the LLM judge's and the ReSum summariser's."""

    base_url: Secret | None = help_field(
        None, "OpenAI-compatible endpoint of the policy (default $OPENAI_BASE_URL); a Secret."
    )
    api_key: Secret | None = help_field(
        None,
        (
            "Its key (default $OPENAI_API_KEY); also the judge's and summariser's. A Secret: run.json holds "
            "its fingerprint only."
        ),
    )
    judge: str | None = help_field(None, "LLM judge model ('openai:MODEL'); None = EM decides correctness.")
    judge_base_url: Secret | None = help_field(None, "Endpoint of the judge (default: the policy's); a Secret.")
    summariser_model: str | None = help_field(
        None, "Model of the 'openai' ReSum summariser (same endpoint unless summariser_base_url)."
    )
    summariser_base_url: Secret | None = help_field(
        None, "Endpoint of the summariser model (default: the policy's); a Secret."
    )
    requests: RequestConfig = help_field(
        help="Timeout and retries of every endpoint of the run (policy, judge, summariser).",
        default_factory=RequestConfig,
    )

    def __post_init__(self) -> None:
        for name in ("base_url", "judge_base_url", "summariser_base_url"):
            object.__setattr__(self, name, as_secret(getattr(self, name)))
        object.__setattr__(self, "api_key", as_secret(self.api_key, env="OPENAI_API_KEY"))


def eval_env() -> EnvConfig:
    """The env of ``sim-web eval`` when nothing is set: the env's defaults with a large observation budget (the agent's
    own limits come first) and no fallback from the real web to the index (a measurement of the real web stays one)."""
    return EnvConfig(max_obs_chars=2_000_000, real_fallback=False)


#: The env's defaults of the observation settings that a run's identity names (by the flat keys of earlier versions)
#: where they differ; ``snippet_chars`` is ``EnvConfig.sim.snippet_chars``.
OBS_DEFAULTS = {
    "max_response_chars": EnvConfig.max_response_chars,
    "prompt": EnvConfig.prompt,
    "search_results": EnvConfig.search_results,
    "snippet_chars": SimConfig.snippet_chars,
}
#: Env fields outside a run's identity: set at the top level (index_dir, tasks, split), by the harness (max_turns),
#: named by the identity's older keys (tools, retrieval, backend, real_fallback and OBS_DEFAULTS), how calls are carried
#: out rather than what they return (executor, record_dir, replay_dir), or left out of it before (max_obs_chars).
_ENV_OUTSIDE_IDENTITY = frozenset(
    {"index_dir", "tasks", "split", "max_turns", "tools", "backend", "real_fallback", "executor", "record_dir"}
    | {"replay_dir", "max_obs_chars", *OBS_DEFAULTS}
)
_SIM_OUTSIDE_IDENTITY = frozenset({"mode", "snippet_chars"})  # the identity's retrieval and snippet_chars


@dataclass(frozen=True)
class EvalConfig:
    """One evaluation run."""

    policy: str = help_field(
        "oracle",
        (
            "'oracle', 'oracle:search' (answers from search results, no visit), 'oracle:plan' (oracle:search whose "
            "first thought says how many facts the question chains), 'oracle:quote' (oracle:plan whose later thoughts "
            "count the facts done and quote the results' words that state them), 'oracle:joint' (oracle:plan that "
            "searches an intersection question's clues together, then two of them one by one), 'rule:first-title' "
            "(search the question, answer the first result title it does not name), 'rule:script' (the strongest "
            "per-tier script: two searches for bridge; the clues together, then one per clue for intersection), "
            "'prior' (the most frequent train answer of the question's form), 'hf:PATH' (or hf:smollm2), "
            "'openai:MODEL'."
        ),
    )
    index_dir: str | None = help_field(None, "The index (default: the sample under $SIM_WEB_HOME).")
    tasks: str | None = help_field(
        None,
        "Task file path or name: default, derived, sailorfog, <index>/tasks/NAME.jsonl, or a bundled set (handwritten).",
    )
    split: str | None = help_field("test", "Task split ('test' = held out; None = all).")
    n: int | None = help_field(None, "Use the first n tasks (None = all), after skip.")
    skip: int = help_field(0, "Skip the first tasks of the split (a later slice: tasks skip+1 to skip+n).")
    k: int = help_field(1, "Samples per task (pass@k is reported for k and powers of two below).")
    out: str | None = help_field(None, "Output folder (default $SIM_WEB_HOME/runs/eval/<run name>).")
    workers: int = help_field(4, "Episode threads for remote / deterministic policies.")
    batch_size: int = help_field(8, "Episodes stepped together for local (batched) policies.")
    agent: AgentConfig = help_field(help="Loop limits, sampling, ReSum.", default_factory=AgentConfig)
    endpoints: EndpointConfig = help_field(
        help="The OpenAI-compatible endpoints of the run: the policy's, the judge's, the ReSum summariser's.",
        default_factory=EndpointConfig,
    )
    env: EnvConfig = help_field(
        help=(
            "The env every episode plays in (sim_web.env.EnvConfig): tools, prompt, search_results, budgets, "
            "sim (retrieval mode, snippet_chars), reward, backend ('real': Serper + Jina) and the rest; evaluate a "
            "checkpoint in the env it was trained in (GRPORecipe.eval_config passes the recipe's). Its index_dir, tasks "
            "and split are this config's; max_turns is set by the harness to agent.max_llm_calls + 2, so that the "
            "agent's own limits come first."
        ),
        default_factory=eval_env,
    )
    device: str = help_field("cpu", "torch device of a local model.")
    dtype: str = help_field("float32", "dtype of a local model.")
    threads: int | None = help_field(None, "torch CPU threads of a local model.")
    resume: bool = help_field(True, "Skip episodes already in the output folder; False starts over.")
    progress: bool = help_field(True, "Show a progress bar.")
    sft: bool | None = help_field(None, "Write sft.jsonl of successful episodes (default: for the oracle).")

    def __post_init__(self) -> None:
        if not re.match(
            r"^(oracle|oracle:search|oracle:plan|oracle:quote|oracle:joint|rule:first-title|rule:script|prior|hf:.+|"
            r"openai:.+)$",
            self.policy,
        ):
            raise ConfigError(
                "EvalConfig.policy must be 'rule:script', 'oracle', 'oracle:search', 'oracle:plan', 'oracle:quote', "
                "'oracle:joint', "
                "'rule:first-title', "
                f"'prior', 'hf:PATH' or 'openai:MODEL', got {self.policy!r}"
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
        given = [p for p in ("index_dir", "tasks", "split") if getattr(self.env, p) is not None]
        if given:
            raise ConfigError(
                f"EvalConfig.env sets {given}: set them on the EvalConfig itself (index_dir, tasks, split)"
            )
        if self.env.sim.snippet_chars < 1:  # SimConfig does not check it
            raise ConfigError(f"EvalConfig.env.sim.snippet_chars must be >= 1, got {self.env.sim.snippet_chars}")
        if self.env.reward.kind == "judge":
            raise ConfigError(
                "EvalConfig.env.reward.kind 'judge' needs a judge inside the env, which the harness does not pass: set "
                "env.reward.kind to 'em' or 'f1', and judge correctness with endpoints.judge (--judge openai:MODEL)"
            )
        if self.agent.resum.enabled and self.agent.resum.summariser == "openai" and not self.endpoints.summariser_model:
            raise ConfigError(
                "ReSum with summariser='openai' needs EvalConfig.summariser_model (e.g. --summariser openai:MODEL)"
            )

    def env_config(self, index_dir: str) -> EnvConfig:
        """The :class:`~sim_web.env.EnvConfig` every episode of the run plays in: ``env`` on ``index_dir``, with
        ``max_turns = agent.max_llm_calls + 2`` (the agent's own limits end an episode before the env truncates it).

        Args:
            index_dir: The opened index's folder.
        """
        return replace(self.env, index_dir=index_dir, max_turns=self.agent.max_llm_calls + 2)

    def identity(self) -> dict[str, Any]:
        """The fields that decide what an episode is; resuming with different ones is refused.

        The env's settings appear under the keys of the flat config this one replaced (``retrieval``, ``tools``,
        ``max_response_chars``, ...), so that earlier run folders still resume; any other env setting is named only
        where it differs from :func:`eval_env`'s (a dataclass by its differing fields), as ``reward: {"kind": "f1"}``.
        """
        env = self.env
        obs = {k: env.sim.snippet_chars if k == "snippet_chars" else getattr(env, k) for k in OBS_DEFAULTS}
        return {
            "policy": self.policy,
            "index_dir": self.index_dir,
            "tasks": self.tasks,
            "split": self.split,
            "agent": asdict(self.agent),
            "retrieval": env.sim.mode,
            "tools": list(env.tools),
            "judge": self.endpoints.judge,
            **({"backend": env.backend} if env.backend != "sim" else {}),
            **({"real_fallback": True} if env.backend == "real" and env.real_fallback else {}),
            **{k: v for k, v in obs.items() if v != OBS_DEFAULTS[k]},
            **_env_changes(env),
        }


def _env_changes(env: EnvConfig) -> dict[str, Any]:
    """The env settings outside the identity's older keys that differ from :func:`eval_env`'s, as plain data."""
    default = eval_env()
    out = {}
    for f in fields(EnvConfig):
        if f.name in _ENV_OUTSIDE_IDENTITY:
            continue
        skip = _SIM_OUTSIDE_IDENTITY if f.name == "sim" else frozenset()
        change = _changes(getattr(env, f.name), getattr(default, f.name), skip)
        if change is not None:
            out[f.name] = change
    return out


def _changes(value: Any, default: Any, skip: frozenset[str] = frozenset()) -> Any:
    """``value`` where it differs from ``default``: for a dataclass, a dict of its differing fields; else ``None``."""
    if is_dataclass(value) and type(value) is type(default):
        diff = {
            f.name: asdict(v) if is_dataclass(v := getattr(value, f.name)) else v
            for f in fields(value)
            if f.name not in skip and getattr(value, f.name) != getattr(default, f.name)
        }
        return diff or None
    return None if value == default else value
