"""The record of one played episode, shared by ``sim-web eval`` and the GRPO rollout.

An :class:`Episode` says what a policy did on one task and how it ended: the turn counts of
:class:`~agents.turn.TurnCounts`, the env's tool-call and mistake counters, the answer and its score. The eval loop
fills every field (steps, messages, timings, tokens) and writes :meth:`Episode.to_dict` as one line of
``trajectories.jsonl``; the GRPO rollout fills the outcome fields and keeps its token ids beside it. Reading a
trajectory file back gives the same dicts (:func:`agents.trajectory.load_records`); :meth:`Episode.from_dict` turns
one into an :class:`Episode` again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agents.turn import ANSWER, TurnCounts  # ANSWER and the other terminations: agents.turn.TERMINATIONS
from simweb_core.fields import help_field


@dataclass
class Episode:
    """One played episode of a policy on a task."""

    task_id: str = help_field("", "The task's id.")
    sample: int = help_field(0, "Which of the task's samples (pass@k draws several).")
    seed: int | None = help_field(None, "The episode's seed (sampling and env reset).")
    question: str = help_field("", "The task's question.")
    gold: str = help_field("", "The task's gold answer.")
    aliases: list[str] = help_field(help="Other accepted answers.", default_factory=list)
    metadata: dict[str, Any] = help_field(
        help="The task's source, uncertainty types, difficulty, structure and split.", default_factory=dict
    )
    policy: str = help_field("", "The acting policy's name.")
    prediction: str | None = help_field(None, "The submitted answer (None without one).")
    reward: float | None = help_field(
        0.0,
        "The env's reward of the answer (None: it could not be scored); the training signal of "
        "GRPO, not written to trajectory files (em, f1, judge and correct say it there).",
    )
    em: float = help_field(0.0, "Exact match of the prediction.")
    f1: float = help_field(0.0, "Token F1 of the prediction.")
    termination: str = help_field(
        "",
        "How it ended, in the words of agents.turn.TERMINATIONS: 'answer', 'forced_answer:<why>', an env budget "
        "('env_truncated:max_turns', 'env_truncated:max_obs_chars'), an eval budget ('max_llm_calls', ...) or a "
        "rollout stop ('length', 'rollback', 'error').",
    )
    counts: TurnCounts = help_field(
        help="Turns, tool calls, failed tool calls and unreadable turns.", default_factory=TurnCounts
    )
    llm_calls: int = help_field(0, "Policy calls (summaries by the policy included).")
    tool_calls: dict[str, int] = help_field(help="Tool calls by tool, as the env counted them.", default_factory=dict)
    env_errors: dict[str, int] = help_field(
        help="The env's mistake counters by kind (written as 'tool_errors').", default_factory=dict
    )
    tool_stats: dict[str, int] | None = help_field(
        None, "The tool executor's counters of this episode (None: no executor)."
    )
    tokens: dict[str, int] = help_field(help="Prompt and completion tokens, peak context.", default_factory=dict)
    timings: dict[str, float] = help_field(
        help="Seconds: total, policy, env, and the env's own timings.", default_factory=dict
    )
    steps: list[dict[str, Any]] = help_field(
        help="One entry per policy call that acted (see ReactAgent).", default_factory=list
    )
    summaries: list[dict[str, Any]] = help_field(help="ReSum summaries made on the way.", default_factory=list)
    messages: list[dict[str, str]] = help_field(help="The env's chat.", default_factory=list)
    context: list[dict[str, str]] | None = help_field(
        None, "The policy's final context when it differs from the chat (ReSum, forcing)."
    )
    policy_info: dict[str, Any] = help_field(help="What the policy reports about the episode.", default_factory=dict)
    config: dict[str, Any] = help_field(help="The agent settings it ran with.", default_factory=dict)
    judge: float | None = help_field(None, "The LLM judge's verdict (None: no judge).")
    correct: float | None = help_field(None, "The judge's verdict when there is one, else em (set by the harness).")

    @property
    def key(self) -> str:
        """``"{task_id}#{sample}"``, the episode's key in a trajectory file."""
        return f"{self.task_id}#{self.sample}"

    @property
    def answered(self) -> bool:
        """The episode ended with an answer the env scored."""
        return self.termination == ANSWER or self.termination.startswith("forced_answer")

    def to_dict(self) -> dict[str, Any]:
        """The trajectory-file line of the episode (JSON-ready; the key order is the file's)."""
        c = self.counts
        out: dict[str, Any] = {
            "key": self.key,
            "task_id": self.task_id,
            "sample": self.sample,
            "seed": self.seed,
            "question": self.question,
            "gold": self.gold,
            "aliases": list(self.aliases),
            "metadata": self.metadata,
            "policy": self.policy,
            "prediction": self.prediction,
            "em": self.em,
            "f1": self.f1,
            "termination": self.termination,
            "turns": c.turns,
            "llm_calls": self.llm_calls,
            "valid_actions": c.turns - c.format_errors,
            "tool_calls": self.tool_calls,
            "tool_errors": self.env_errors,
            **({"tool_stats": self.tool_stats} if self.tool_stats is not None else {}),
            "tokens": self.tokens,
            "timings": self.timings,
            "steps": self.steps,
            "summaries": self.summaries,
            "messages": self.messages,
            "context": self.context,
            "policy_info": self.policy_info,
            "config": self.config,
        }
        if self.judge is not None:
            out["judge"] = self.judge
        if self.correct is not None:
            out["correct"] = self.correct
        return out

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> Episode:
        """The episode of a trajectory-file line (failed tool calls are recounted from its steps)."""
        steps = list(row.get("steps") or [])
        turns = int(row.get("turns", 0))
        counts = TurnCounts(
            turns=turns,
            tool_calls=sum((row.get("tool_calls") or {}).values()),
            tool_errors=sum(1 for s in steps if s.get("kind") == "tool_call" and s.get("obs_error")),
            format_errors=turns - int(row.get("valid_actions", turns)),
        )
        return cls(
            task_id=row["task_id"],
            sample=int(row.get("sample", 0)),
            seed=row.get("seed"),
            question=row.get("question", ""),
            gold=row.get("gold", ""),
            aliases=list(row.get("aliases") or []),
            metadata=dict(row.get("metadata") or {}),
            policy=row.get("policy", ""),
            prediction=row.get("prediction"),
            reward=None,
            em=float(row.get("em", 0.0)),
            f1=float(row.get("f1", 0.0)),
            termination=row.get("termination", ""),
            counts=counts,
            llm_calls=int(row.get("llm_calls", 0)),
            tool_calls=dict(row.get("tool_calls") or {}),
            env_errors=dict(row.get("tool_errors") or {}),
            tool_stats=row.get("tool_stats"),
            tokens=dict(row.get("tokens") or {}),
            timings=dict(row.get("timings") or {}),
            steps=steps,
            summaries=list(row.get("summaries") or []),
            messages=list(row.get("messages") or []),
            context=row.get("context"),
            policy_info=dict(row.get("policy_info") or {}),
            config=dict(row.get("config") or {}),
            judge=row.get("judge"),
            correct=row.get("correct"),
        )
