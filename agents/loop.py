"""The ReAct loop of Tongyi DeepResearch, driving a :class:`~sim_web.env.WebResearchEnv`.

One episode is written top to bottom as a generator (:meth:`ReactAgent.episode`): it yields a
:class:`Request` each time it needs the policy and receives a
:class:`~agents.policies.base.Generation` back. That keeps the loop readable and lets one
driver step many episodes in lockstep (batched generation for local models) while another runs
each in its own thread (remote endpoints); :func:`run_episode` is the one-episode driver.

Like upstream (``inference/react_agent.py``): the model writes ``<think>`` and one
``<tool_call>`` or ``<answer>``; each turn is read, stepped and counted by :mod:`agents.turn`
(the same code the GRPO rollout uses); the tool output comes back as a ``<tool_response>`` user message; the episode has budgets of
LLM calls, wall-clock time and context tokens, and when the context budget is exceeded the last
tool response is replaced by the "give your best answer now" prompt. The same forcing can
also spend the last LLM call and the first call after the time is up (``AgentConfig.force_on``),
and ReSum may condense the context on the way (:mod:`agents.resum`).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Generator, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from agents.config import AgentConfig, SamplingConfig
from agents.episode import Episode
from agents.policies.base import Generation, Messages, Policy, approx_tokens
from agents.prompts import FORCE_ANSWER_PROMPT, LLM_CALLS_EXCEEDED
from agents.resum import ExtractiveSummariser, close_summary, continue_messages, extract_summary, summary_request
from agents.turn import (
    ANSWER,
    MAX_CONTEXT_TOKENS,
    MAX_LLM_CALLS,
    MAX_SECONDS,
    Turn,
    TurnCounts,
    clean_turn,
    describe_action,
    env_truncation,
    forced,
    play_turn,
)
from sim_web.env.step_info import read_action
from sim_web.env.tasks import Task

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Request:
    """What an episode needs from the policy next.

    Attributes:
        messages: The chat to continue.
        purpose: ``"act"`` (a normal turn), ``"force"`` (the forced answer) or ``"summary"`` (ReSum).
        sampling: Sampling parameters for this call.
        seed: Seed of this call (derived from the episode seed and the call index).
    """

    messages: Messages
    purpose: str
    sampling: SamplingConfig
    seed: int | None


def episode_seed(base: int | None, task_id: str, sample: int) -> int:
    """A stable 31-bit seed for one ``(task, sample)`` episode."""
    h = hashlib.sha256(f"{base}|{task_id}|{sample}".encode()).hexdigest()
    return int(h[:8], 16) & 0x7FFFFFFF


class ReactAgent:
    """Plays episodes of a policy in an env, recording trajectories.

    Args:
        policy: The acting policy (its :meth:`~agents.policies.base.Policy.count_tokens` measures the context).
        config: Limits, sampling and ReSum settings.
        summariser: For ``ReSumConfig.summariser`` ``'openai'``: the object with
            ``summarise(question, messages) -> str`` (e.g. :class:`agents.resum.ModelSummariser`).
            ``'extractive'`` needs none; ``'policy'`` sends the request to ``policy``.
    """

    def __init__(self, policy: Policy, config: AgentConfig | None = None, summariser: Any = None) -> None:
        self.policy = policy
        self.config = config or AgentConfig()
        r = self.config.resum
        if r.enabled and r.summariser == "openai" and summariser is None:
            raise ValueError("ReSumConfig.summariser='openai' needs a summariser object (agents.resum.ModelSummariser)")
        self.summariser = summariser if summariser is not None else ExtractiveSummariser()

    def episode(self, env: Any, task: Task, sample: int = 0) -> Generator[Request, Generation, Episode]:
        """One episode as a generator: yields :class:`Request`, receives :class:`Generation`, returns the played :class:`Episode`."""
        return (yield from _EpisodeRun(self, env, task, sample).run())

    def _resum_trigger(self, tokens: int, turns_since: int, done: int, calls_left: int) -> str | None:
        r = self.config.resum
        if not r.enabled or done >= r.max_summaries or (r.summariser == "policy" and calls_left <= 2):
            return None  # a policy summary needs a call, and the budget's last calls go to acting / the forced answer
        if r.trigger_fraction is not None and tokens >= r.trigger_fraction * self.config.max_context_tokens:
            return "tokens"
        if r.every_n_turns is not None and turns_since >= r.every_n_turns:
            return "every_n_turns"
        return None

    def _summarise(
        self,
        question: str,
        system: str,
        context: Messages,
        trigger: str,
        tokens: int,
        turn: int,
        summaries: list[dict[str, Any]],
        call: Any,
    ) -> Generator[Request, Generation, Messages]:
        r = self.config.resum
        t = time.perf_counter()
        fallback = False
        if r.summariser == "policy":
            sampling = replace(self.config.sampling, max_tokens=r.summary_max_tokens, stop=("</summary>",))
            gen, _ = yield from call(summary_request(question, context, r), "summary", sampling)
            summary = extract_summary(close_summary(gen.text))
            if summary is None:
                fallback, summary = True, ExtractiveSummariser().summarise(question, context)
            name = f"policy:{self.policy.name}"
        else:
            summary = self.summariser.summarise(question, context)
            name = getattr(self.summariser, "name", type(self.summariser).__name__)
        new = continue_messages(system, question, summary)
        after = self.policy.count_tokens(new)
        summaries.append(
            {
                "turn": turn,
                "trigger": trigger,
                "summariser": name,
                "fallback": fallback,
                "tokens_before": tokens,
                "tokens_after": after,
                "seconds": round(time.perf_counter() - t, 6),
                "summary": summary,
                "context_after": new[1]["content"],
            }
        )
        log.debug("ReSum at turn %d (%s): %d -> %d tokens", turn, trigger, tokens, after)
        return new

    def _record(self, run: _EpisodeRun, termination: str, final: dict[str, Any] | None) -> Episode:
        task, steps, info = run.task, run.steps, run.info  # the env's last info: its chat and running counts
        messages = [dict(m) for m in info["messages"]]
        return Episode(
            task_id=task.id,
            sample=run.sample,
            seed=run.seed,
            question=task.question,
            gold=task.answer,
            aliases=list(task.aliases),
            metadata={
                k: task.metadata[k]
                for k in (
                    "source",
                    "uncertainty_types",
                    "difficulty",
                    "structure",
                    "split",
                    "tier",
                    "form",
                    "form_seen",
                )
                if k in task.metadata
            },
            policy=self.policy.name,
            prediction=final.get("answer") if final else None,
            reward=run.reward,
            em=float(final.get("em", 0.0)) if final else 0.0,
            f1=float(final.get("f1", 0.0)) if final else 0.0,
            termination=termination,
            counts=run.counts,
            llm_calls=run.calls,
            tool_calls=dict(info["tool_calls"]),
            env_errors=dict(info["errors"]),
            tool_stats=info.get("tool_stats"),
            tokens={
                "prompt": sum(s["prompt_tokens"] for s in steps),
                "completion": sum(s["completion_tokens"] for s in steps),
                "peak_context": run.peak,
            },
            timings={
                "total_seconds": round(time.perf_counter() - run.t0, 6),
                "llm_seconds": round(sum(s["llm_seconds"] for s in steps), 6),
                "env_seconds": round(sum(s["env_seconds"] for s in steps), 6),
                **((final or {}).get("timings") or {}),
            },
            steps=steps,
            summaries=run.summaries,
            messages=messages,
            context=run.context if run.summaries or termination.startswith("forced") else None,
            policy_info=self.policy.episode_info(messages),
            config={"agent": asdict(self.config)},
        )


#: How an episode ended: the termination string and the env's final info (None without an accepted answer).
Ending = tuple[str, dict[str, Any] | None]


class _EpisodeRun:
    """The state of one episode of :meth:`ReactAgent.episode` while it runs, and the steps of its loop.

    Each turn first checks the budgets (time, LLM calls), then acts (one policy call and one env step), then
    looks at the context (ReSum, the context budget); any of the three may end the episode.
    """

    def __init__(self, agent: ReactAgent, env: Any, task: Task, sample: int) -> None:
        self.agent, self.env, self.task, self.sample = agent, env, task, sample
        self.cfg, self.policy = agent.config, agent.policy
        self.seed = episode_seed(self.cfg.sampling.seed, task.id, sample)
        self.t0 = time.perf_counter()
        self.question, info = env.reset(seed=self.seed, options={"task": task})
        #: The env's latest info (reset's, then each step's): what the episode's record reads of the env.
        self.info: dict[str, Any] = info
        self.system = info["messages"][0]["content"]
        self.context: Messages = [
            {"role": "system", "content": self.system},
            {"role": "user", "content": self.question},
        ]
        self.steps: list[dict[str, Any]] = []
        self.summaries: list[dict[str, Any]] = []
        self.calls = 0
        self.counts = TurnCounts()
        self.reward: float | None = 0.0
        self.last_summary_turn = 0
        self.peak = self.policy.count_tokens(self.context)

    def run(self) -> Generator[Request, Generation, Episode]:
        """Turns until one ends the episode; returns the played :class:`Episode`."""
        while True:
            ending = yield from self._check_budgets()
            if ending is None:
                ending = yield from self._act()
            if ending is not None:
                return self.agent._record(self, *ending)

    def _check_budgets(self) -> Generator[Request, Generation, Ending | None]:
        cfg = self.cfg
        if time.perf_counter() - self.t0 > cfg.max_seconds:
            return (yield from self.force("time")) if "time" in cfg.force_on else (MAX_SECONDS, None)
        if self.calls >= cfg.max_llm_calls:
            self.context[-1] = {"role": self.context[-1]["role"], "content": LLM_CALLS_EXCEEDED}
            return MAX_LLM_CALLS, None
        if self.calls == cfg.max_llm_calls - 1 and "calls" in cfg.force_on and self.steps:
            return (yield from self.force("calls"))
        return None

    def _act(self) -> Generator[Request, Generation, Ending | None]:
        tokens = self.policy.count_tokens(self.context)
        gen, llm_s = yield from self.call(self.context, "act", self.cfg.sampling)
        text = clean_turn(gen.text)
        self.context.append({"role": "assistant", "content": text})
        turn = self.step_env(text, "act", gen, llm_s, tokens)
        if turn.terminated:
            return ANSWER, turn.info
        if turn.truncated:
            return env_truncation(turn.info), None
        self.context.append({"role": "user", "content": turn.observation})
        return (yield from self._after_observation())

    def _after_observation(self) -> Generator[Request, Generation, Ending | None]:
        agent, cfg = self.agent, self.cfg
        tokens = self.policy.count_tokens(self.context)
        self.peak = max(self.peak, tokens)
        trigger = agent._resum_trigger(
            tokens, len(self.steps) - self.last_summary_turn, len(self.summaries), cfg.max_llm_calls - self.calls
        )
        if trigger:
            self.context = yield from agent._summarise(
                self.question, self.system, self.context, trigger, tokens, len(self.steps), self.summaries, self.call
            )
            self.last_summary_turn = len(self.steps)
            tokens = self.policy.count_tokens(self.context)
        if tokens > cfg.max_context_tokens:
            return (yield from self.force("context")) if "context" in cfg.force_on else (MAX_CONTEXT_TOKENS, None)
        return None

    def call(
        self, messages: Messages, purpose: str, sampling: SamplingConfig
    ) -> Generator[Request, Generation, tuple[Generation, float]]:
        """Ask the policy (one LLM call); returns its generation and the seconds it took."""
        self.calls += 1
        t = time.perf_counter()
        gen = yield Request([dict(m) for m in messages], purpose, sampling, self.seed + self.calls)
        return gen, time.perf_counter() - t

    def record(
        self,
        text: str,
        purpose: str,
        gen: Generation,
        llm_s: float,
        ctx_tokens: int,
        turn: Turn | None = None,
        action: Mapping[str, Any] | None = None,
    ) -> None:
        """Append one step to the trajectory and count the turn.

        ``turn`` is its env step; a turn not stepped gives ``action``, how the env would read it (``read_action``,
        with the env's default settings when not given: the loop does not know the env's).
        """
        read = turn.info["action"] if turn is not None else action if action is not None else read_action(text)
        self.counts.add(turn, read)
        self.steps.append(
            {
                "turn": len(self.steps) + 1,
                "purpose": purpose,
                "action": text,
                **describe_action(read),
                "observation_chars": len(turn.observation) if turn else 0,
                "obs_error": turn.error if turn else None,
                "llm_seconds": round(llm_s, 6),
                "env_seconds": round(turn.seconds if turn else 0.0, 6),
                "context_tokens": ctx_tokens,
                "prompt_tokens": gen.prompt_tokens if gen.prompt_tokens is not None else ctx_tokens,
                "completion_tokens": gen.completion_tokens
                if gen.completion_tokens is not None
                else approx_tokens(gen.text),
                "finish_reason": gen.finish_reason,
            }
        )

    def step_env(self, text: str, purpose: str, gen: Generation, llm_s: float, ctx_tokens: int) -> Turn:
        """Step the env with the model's turn (:func:`~agents.turn.play_turn`) and record the step."""
        turn = play_turn(self.env, text)
        self.info = turn.info
        if turn.terminated:
            self.reward = turn.reward
        self.record(turn.action, purpose, gen, llm_s, ctx_tokens, turn)
        return turn

    def force(self, reason: str) -> Generator[Request, Generation, Ending]:
        """Ask for the answer now (Tongyi's prompt), replacing the last observation or appended after it."""
        msgs = [dict(m) for m in self.context]
        if self.cfg.force_replaces_observation and len(msgs) > 2 and msgs[-1]["role"] == "user":
            msgs[-1]["content"] = FORCE_ANSWER_PROMPT
        else:
            msgs.append({"role": "user", "content": FORCE_ANSWER_PROMPT})
        tokens = self.policy.count_tokens(msgs)
        gen, llm_s = yield from self.call(msgs, "force", self.cfg.sampling)
        text = clean_turn(gen.text)
        self.context = msgs + [{"role": "assistant", "content": text}]
        action = read_action(text)  # only an answer is stepped: the env must not run a tool the prompt did not ask for
        if action["kind"] == "answer":
            turn = self.step_env(text, "force", gen, llm_s, tokens)
            return forced(reason, True), turn.info if turn.terminated else None
        self.record(text, "force", gen, llm_s, tokens, action=action)
        return forced(reason, False), None


def drive(episodes: Sequence[Generator[Request, Generation, Episode]], policy: Policy) -> list[Episode]:
    """Run episodes in lockstep: each round, every waiting request goes to the policy in one batch per sampling setup.

    Args:
        episodes: Episode generators from :meth:`ReactAgent.episode`.
        policy: The policy answering the requests.

    Returns:
        The played episodes, in the order of ``episodes``.
    """
    results: list[Episode | None] = [None] * len(episodes)
    pending: dict[int, Request] = {}
    for i, ep in enumerate(episodes):
        try:
            pending[i] = next(ep)
        except StopIteration as stop:
            results[i] = stop.value
    while pending:
        groups: dict[SamplingConfig, list[int]] = {}
        for i, req in pending.items():
            groups.setdefault(req.sampling, []).append(i)
        for sampling, ids in groups.items():
            t = time.perf_counter()
            gens = policy.generate([pending[i].messages for i in ids], sampling, [pending[i].seed for i in ids])
            dt = time.perf_counter() - t
            for i, gen in zip(ids, gens):
                gen.seconds = gen.seconds or dt
                try:
                    pending[i] = episodes[i].send(gen)
                except StopIteration as stop:
                    results[i] = stop.value
                    del pending[i]
    return [r for r in results if r is not None]


def run_episode(agent: ReactAgent, env: Any, task: Task, sample: int = 0) -> Episode:
    """Play one episode to the end and return it."""
    return drive([agent.episode(env, task, sample)], agent.policy)[0]
