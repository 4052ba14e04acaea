"""The ReAct loop of Tongyi DeepResearch, driving a :class:`~sim_web.env.WebResearchEnv`.

One episode is written top to bottom as a generator (:meth:`ReactAgent.episode`): it yields a
:class:`Request` each time it needs the policy and receives a
:class:`~agents.policies.base.Generation` back. That keeps the loop readable and lets one
driver step many episodes in lockstep (batched generation for local models) while another runs
each in its own thread (remote endpoints); :func:`run_episode` is the one-episode driver.

Like upstream (``inference/react_agent.py``): the model writes ``<think>`` and one
``<tool_call>`` or ``<answer>``; anything from a hallucinated ``<tool_response>`` on is cut;
the tool output comes back as a ``<tool_response>`` user message; the episode has budgets of
LLM calls, wall-clock time and context tokens, and when the context budget is exceeded the last
tool response is replaced by the "give your best answer now" prompt. Here the same forcing can
also spend the last LLM call and the first call after the time is up (``AgentConfig.force_on``),
and ReSum may condense the context on the way (:mod:`agents.resum`).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Generator, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from agents.config import AgentConfig, SamplingConfig
from agents.policies.base import Generation, Messages, Policy, approx_tokens
from agents.prompts import FORCE_ANSWER_PROMPT, LLM_CALLS_EXCEEDED
from agents.resum import ExtractiveSummariser, close_summary, continue_messages, extract_summary, summary_request
from sim_web.protocol.actions import parse_action
from sim_web.protocol.errors import ActionError
from sim_web.protocol.formatting import INACCESSIBLE_EVIDENCE, SCHOLAR_UNAVAILABLE, SEARCH_UNAVAILABLE
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


def clean_turn(text: str) -> str:
    """Cut a hallucinated tool response (upstream: everything from ``<tool_response>``) and strip."""
    i = text.find("<tool_response>")
    return (text[:i] if i >= 0 else text).strip()


def describe_action(text: str) -> dict[str, Any]:
    """How the env will read an action: ``kind`` (``tool_call``/``answer``/``invalid``), tool, arguments, error."""
    try:
        a = parse_action(text)
    except ActionError as e:
        return {"kind": "invalid", "error": e.kind}
    if a.kind == "answer":
        return {"kind": "answer", "answer": a.answer}
    return {"kind": "tool_call", "tool": a.tool, "arguments": dict(a.arguments), **({"code": a.code} if a.code else {})}


def observation_error(obs: str, new_env_errors: Sequence[str] = ()) -> str | None:
    """What went wrong in a tool response: the env's mistake kind, ``unreachable`` page, ``unavailable`` tool, or ``None``."""
    if new_env_errors:
        return new_env_errors[0]
    body = obs.removeprefix("<tool_response>\n")
    if body.startswith("[Python Interpreter Error]"):
        return "python_error"
    if INACCESSIBLE_EVIDENCE in body:
        return "unreachable"
    if SEARCH_UNAVAILABLE in body or SCHOLAR_UNAVAILABLE in body:
        return "unavailable"
    return None


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

    def episode(self, env: Any, task: Task, sample: int = 0) -> Generator[Request, Generation, dict[str, Any]]:
        """One episode as a generator: yields :class:`Request`, receives :class:`Generation`, returns the trajectory record."""
        return (yield from _Episode(self, env, task, sample).run())

    def _resum_trigger(self, tokens: int, turns_since: int, done: int, calls_left: int) -> str | None:
        r = self.config.resum
        if not r.enabled or done >= r.max_summaries or (r.summariser == "policy" and calls_left <= 2):
            return None  # a policy summary needs a call, and the budget's last calls go to acting / the forced answer
        if r.trigger_fraction is not None and tokens >= r.trigger_fraction * self.config.max_context_tokens:
            return "tokens"
        if r.every_n_turns is not None and turns_since >= r.every_n_turns:
            return "every_n_turns"
        return None

    def _summarise(self, question: str, system: str, context: Messages, trigger: str, tokens: int, turn: int,
                   summaries: list[dict[str, Any]], call: Any) -> Generator[Request, Generation, Messages]:
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
        summaries.append({"turn": turn, "trigger": trigger, "summariser": name, "fallback": fallback, "tokens_before": tokens,
                          "tokens_after": after, "seconds": round(time.perf_counter() - t, 6), "summary": summary,
                          "context_after": new[1]["content"]})
        log.debug("ReSum at turn %d (%s): %d -> %d tokens", turn, trigger, tokens, after)
        return new

    def _record(self, env: Any, task: Task, sample: int, seed: int, t0: float, termination: str, final: dict[str, Any] | None,
                steps: list[dict[str, Any]], summaries: list[dict[str, Any]], context: Messages, calls: int, peak: int) -> dict[str, Any]:
        u = getattr(env, "unwrapped", env)
        messages = [dict(m) for m in u.messages]
        actions = [s for s in steps if s["purpose"] in ("act", "force")]
        rec = {
            "key": f"{task.id}#{sample}", "task_id": task.id, "sample": sample, "seed": seed,
            "question": task.question, "gold": task.answer, "aliases": list(task.aliases),
            "metadata": {k: task.metadata[k] for k in ("source", "uncertainty_types", "difficulty", "structure", "split") if k in task.metadata},
            "policy": self.policy.name,
            "prediction": final.get("answer") if final else None,
            "em": float(final.get("em", 0.0)) if final else 0.0, "f1": float(final.get("f1", 0.0)) if final else 0.0,
            "termination": termination, "turns": len(actions), "llm_calls": calls,
            "valid_actions": sum(s["kind"] != "invalid" for s in actions),
            "tool_calls": dict(u.tool_calls), "tool_errors": dict(u.errors),
            # the executor's counters of this episode (calls, successes, fallbacks, failures, cache hits, retries, events)
            **({"tool_stats": ex.stats.counts()} if (ex := getattr(u, "executor", None)) is not None else {}),
            "tokens": {"prompt": sum(s["prompt_tokens"] for s in steps), "completion": sum(s["completion_tokens"] for s in steps),
                       "peak_context": peak},
            "timings": {"total_seconds": round(time.perf_counter() - t0, 6), "llm_seconds": round(sum(s["llm_seconds"] for s in steps), 6),
                        "env_seconds": round(sum(s["env_seconds"] for s in steps), 6), **((final or {}).get("timings") or {})},
            "steps": steps, "summaries": summaries, "messages": messages,
            "context": context if summaries or termination.startswith("forced") else None,
            "policy_info": self.policy.episode_info(messages),
            "config": {"agent": asdict(self.config)},
        }
        return rec


#: How an episode ended: the termination string and the env's final info (None without an accepted answer).
Ending = tuple[str, dict[str, Any] | None]


class _Episode:
    """The state of one episode of :meth:`ReactAgent.episode` and the steps of its loop.

    Each turn first checks the budgets (time, LLM calls), then acts (one policy call and one env step), then
    looks at the context (ReSum, the context budget); any of the three may end the episode.
    """

    def __init__(self, agent: ReactAgent, env: Any, task: Task, sample: int) -> None:
        self.agent, self.env, self.task, self.sample = agent, env, task, sample
        self.cfg, self.policy = agent.config, agent.policy
        self.seed = episode_seed(self.cfg.sampling.seed, task.id, sample)
        self.t0 = time.perf_counter()
        self.question, info = env.reset(seed=self.seed, options={"task": task})
        self.system = info["messages"][0]["content"]
        self.context: Messages = [{"role": "system", "content": self.system}, {"role": "user", "content": self.question}]
        self.steps: list[dict[str, Any]] = []
        self.summaries: list[dict[str, Any]] = []
        self.calls = 0
        self.last_summary_turn = 0
        self.peak = self.policy.count_tokens(self.context)

    def run(self) -> Generator[Request, Generation, dict[str, Any]]:
        """Turns until one ends the episode; returns the trajectory record."""
        while True:
            ending = yield from self._check_budgets()
            if ending is None:
                ending = yield from self._act()
            if ending is not None:
                termination, final = ending
                return self.agent._record(self.env, self.task, self.sample, self.seed, self.t0, termination, final, self.steps,
                                          self.summaries, self.context, self.calls, self.peak)

    def _check_budgets(self) -> Generator[Request, Generation, Ending | None]:
        cfg = self.cfg
        if time.perf_counter() - self.t0 > cfg.max_seconds:
            return (yield from self.force("time")) if "time" in cfg.force_on else ("max_seconds", None)
        if self.calls >= cfg.max_llm_calls:
            self.context[-1] = {"role": self.context[-1]["role"], "content": LLM_CALLS_EXCEEDED}
            return "max_llm_calls", None
        if self.calls == cfg.max_llm_calls - 1 and "calls" in cfg.force_on and self.steps:
            return (yield from self.force("calls"))
        return None

    def _act(self) -> Generator[Request, Generation, Ending | None]:
        tokens = self.policy.count_tokens(self.context)
        gen, llm_s = yield from self.call(self.context, "act", self.cfg.sampling)
        text = clean_turn(gen.text)
        self.context.append({"role": "assistant", "content": text})
        obs, term, trunc, inf = self.step_env(text, "act", gen, llm_s, tokens)
        if term:
            return "answer", inf
        if trunc:
            return f"env_truncated:{inf.get('truncated_by')}", None
        self.context.append({"role": "user", "content": obs})
        return (yield from self._after_observation())

    def _after_observation(self) -> Generator[Request, Generation, Ending | None]:
        agent, cfg = self.agent, self.cfg
        tokens = self.policy.count_tokens(self.context)
        self.peak = max(self.peak, tokens)
        trigger = agent._resum_trigger(tokens, len(self.steps) - self.last_summary_turn, len(self.summaries), cfg.max_llm_calls - self.calls)
        if trigger:
            self.context = yield from agent._summarise(self.question, self.system, self.context, trigger, tokens, len(self.steps),
                                                       self.summaries, self.call)
            self.last_summary_turn = len(self.steps)
            tokens = self.policy.count_tokens(self.context)
        if tokens > cfg.max_context_tokens:
            return (yield from self.force("context")) if "context" in cfg.force_on else ("max_context_tokens", None)
        return None

    def call(self, messages: Messages, purpose: str, sampling: SamplingConfig) -> Generator[Request, Generation, tuple[Generation, float]]:
        """Ask the policy (one LLM call); returns its generation and the seconds it took."""
        self.calls += 1
        t = time.perf_counter()
        gen = yield Request([dict(m) for m in messages], purpose, sampling, self.seed + self.calls)
        return gen, time.perf_counter() - t

    def record(self, text: str, purpose: str, gen: Generation, llm_s: float, ctx_tokens: int, env_s: float = 0.0,
               obs: str = "", obs_error: str | None = None) -> None:
        """Append one step to the trajectory."""
        self.steps.append({"turn": len(self.steps) + 1, "purpose": purpose, "action": text, **describe_action(text),
                           "observation_chars": len(obs), "obs_error": obs_error,
                           "llm_seconds": round(llm_s, 6), "env_seconds": round(env_s, 6), "context_tokens": ctx_tokens,
                           "prompt_tokens": gen.prompt_tokens if gen.prompt_tokens is not None else ctx_tokens,
                           "completion_tokens": gen.completion_tokens if gen.completion_tokens is not None else approx_tokens(gen.text),
                           "finish_reason": gen.finish_reason})

    def step_env(self, text: str, purpose: str, gen: Generation, llm_s: float, ctx_tokens: int) -> tuple[str, bool, bool, dict[str, Any]]:
        """Step the env with the model's turn and record the step."""
        t = time.perf_counter()
        before = dict(getattr(self.env, "unwrapped", self.env).errors)
        obs, _, term, trunc, inf = self.env.step(text)
        new_errors = [k for k, v in inf.get("errors", {}).items() if v > before.get(k, 0)]
        self.record(text, purpose, gen, llm_s, ctx_tokens, time.perf_counter() - t, obs, observation_error(obs, new_errors))
        return obs, term, trunc, inf

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
        if describe_action(text)["kind"] == "answer":
            _, term, _, inf = self.step_env(text, "force", gen, llm_s, tokens)
            return f"forced_answer:{reason}", inf if term else None
        self.record(text, "force", gen, llm_s, tokens)
        return f"forced_no_answer:{reason}", None


def drive(episodes: Sequence[Generator[Request, Generation, dict[str, Any]]], policy: Policy) -> list[dict[str, Any]]:
    """Run episodes in lockstep: each round, every waiting request goes to the policy in one batch per sampling setup.

    Args:
        episodes: Episode generators from :meth:`ReactAgent.episode`.
        policy: The policy answering the requests.

    Returns:
        The trajectory records, in the order of ``episodes``.
    """
    results: list[dict[str, Any] | None] = [None] * len(episodes)
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


def run_episode(agent: ReactAgent, env: Any, task: Task, sample: int = 0) -> dict[str, Any]:
    """Play one episode to the end and return its trajectory record."""
    return drive([agent.episode(env, task, sample)], agent.policy)[0]
