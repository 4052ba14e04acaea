"""agents: the Tongyi DeepResearch ReAct agent, its policies, ReSum and the evaluation harness.

Map:

* :mod:`agents.loop`: :class:`~agents.loop.ReactAgent` (one episode as a generator of policy
  requests), :func:`~agents.loop.run_episode`, :func:`~agents.loop.drive` (lockstep batches);
* :mod:`agents.turn`: one turn read, stepped, classified and counted (shared with the GRPO rollout);
  :mod:`agents.episode`: :class:`~agents.episode.Episode`, the record of a played episode;
* :mod:`agents.config`: :class:`~agents.config.AgentConfig` (limits, forcing),
  :class:`~agents.config.SamplingConfig`, :class:`~agents.config.ReSumConfig`;
* :mod:`agents.policies`: the :class:`~agents.policies.base.Policy` interface (``act``,
  ``act_batch``, ``generate``), ``openai_policy``, ``hf_policy``, ``oracle``;
* :mod:`agents.resum`: summarisation requests, the extractive and model summarisers;
* :mod:`agents.harness` / :mod:`agents.cli`: ``sim-web eval`` (configured by :mod:`agents.eval_config`); :mod:`agents.metrics` (pass@k),
  :mod:`agents.judge`, :mod:`agents.trajectory` (JSONL, resume, SFT), :mod:`agents.plot`;
* :mod:`agents.prompts`: every fixed prompt (Tongyi's forcing texts, ReSum, the judge).

Heavy dependencies (torch, transformers, openai) load only when a policy that needs them is built.
"""

from agents.config import AgentConfig, ReSumConfig, SamplingConfig
from agents.episode import Episode
from agents.loop import ReactAgent, drive, run_episode
from agents.policies.base import FunctionPolicy, Generation, Policy, as_policy

__all__ = [
    "AgentConfig",
    "Episode",
    "FunctionPolicy",
    "Generation",
    "Policy",
    "ReSumConfig",
    "ReactAgent",
    "SamplingConfig",
    "as_policy",
    "drive",
    "run_episode",
]
