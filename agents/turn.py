"""One ReAct turn against a :class:`~sim_web.env.WebResearchEnv`: the part ``sim-web eval`` and GRPO share.

Both loops read an assistant turn the same way (everything from a hallucinated ``<tool_response>`` on is cut, as
upstream's ``inference/react_agent.py`` does, then the text is stripped), step the env with it, classify what the
observation says went wrong, and count the turn in a :class:`TurnCounts`. Keeping these in one place is what makes
the eval's ``tool_error_rate`` and GRPO's ``agent/tool_error_rate`` measure the same thing on the same episode.
Token bookkeeping (ids, masks, logprobs) is the rollout's own business and stays out of here.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sim_web.protocol.actions import parse_action
from sim_web.protocol.errors import ActionError
from sim_web.protocol.formatting import INACCESSIBLE_EVIDENCE, SCHOLAR_UNAVAILABLE, SEARCH_UNAVAILABLE

#: How the PythonInterpreter tool's output starts when the sandbox could not run the code (or the call had none).
PYTHON_ERROR = "[Python Interpreter Error]"
#: The line the PythonInterpreter tool appends when the run hit its time limit (upstream's spelling).
PYTHON_TIMEOUT = "[PythonInterpreter Error] TimeoutError"


def clean_turn(text: str) -> str:
    """What the env reads of a generated turn: cut at a hallucinated ``<tool_response>``, stripped."""
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
    """What went wrong in a tool response.

    Args:
        obs: The observation (``<tool_response>`` wrapped or not).
        new_env_errors: The env's mistake kinds whose counters this turn raised.

    Returns:
        The env's first new mistake kind (``bad_argument``, ``no_action``, ...), ``python_error`` for a
        PythonInterpreter run the sandbox could not finish (refused or timed out; a program that raised is a
        successful call whose output shows the traceback), ``unreachable`` for a page that could not be read, ``unavailable`` for a search or
        scholar backend that did not answer, or ``None``.
    """
    if new_env_errors:
        return new_env_errors[0]
    body = obs.removeprefix("<tool_response>\n")
    if body.startswith(PYTHON_ERROR) or PYTHON_TIMEOUT in body:
        return "python_error"
    if INACCESSIBLE_EVIDENCE in body:
        return "unreachable"
    if SEARCH_UNAVAILABLE in body or SCHOLAR_UNAVAILABLE in body:
        return "unavailable"
    return None


@dataclass(frozen=True)
class Turn:
    """One stepped assistant turn.

    Attributes:
        action: The text the env read (:func:`clean_turn` of the generation).
        observation: The env's tool response (empty after an answer).
        reward: The env's reward (non-zero only once an answer is scored).
        terminated: An answer ended the episode.
        truncated: The env's own budget (turns, observation characters) ended it.
        info: The env's info dict of this step.
        calls: Tool calls the env counted in this turn (a multi-call turn counts each).
        error: :func:`observation_error` of the observation.
        seconds: Wall-clock seconds of the env step.
    """

    action: str
    observation: str
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]
    calls: int
    error: str | None
    seconds: float

    @property
    def tool_error(self) -> bool:
        """A tool call was made and failed (bad arguments, an unreachable page, a tool unavailable, a Python error)."""
        return self.calls > 0 and self.error is not None


def play_turn(env: Any, text: str) -> Turn:
    """Clean one generated turn, step the env with it and classify the observation.

    Args:
        env: A :class:`~sim_web.env.WebResearchEnv` (or a wrapper with ``unwrapped``) after ``reset``.
        text: The policy's raw generation of this turn.

    Returns:
        The :class:`Turn`; exceptions of ``env.step`` (a judge or backend failure) propagate.
    """
    u = getattr(env, "unwrapped", env)
    action = clean_turn(text)
    errors_before, calls_before = dict(u.errors), sum(u.tool_calls.values())
    t = time.perf_counter()
    obs, reward, term, trunc, info = env.step(action)
    seconds = time.perf_counter() - t
    new_errors = [k for k, v in info.get("errors", {}).items() if v > errors_before.get(k, 0)]
    return Turn(
        action,
        obs,
        float(reward),
        bool(term),
        bool(trunc),
        info,
        sum(u.tool_calls.values()) - calls_before,
        observation_error(obs, new_errors),
        seconds,
    )


@dataclass
class TurnCounts:
    """What the turns of one episode did, counted the same way in evaluation and in GRPO rollouts."""

    turns: int = field(default=0, metadata={"help": "Assistant turns, stepped or not (a cut or a forced turn counts)."})
    tool_calls: int = field(default=0, metadata={"help": "Tool calls the env ran (each call of a multi-call turn)."})
    tool_errors: int = field(default=0, metadata={"help": "Turns whose tool call failed (Turn.tool_error)."})
    format_errors: int = field(default=0, metadata={"help": "Turns that parse as neither a tool call nor an answer."})

    def add(self, action: str, turn: Turn | None = None) -> None:
        """Count one assistant turn.

        Args:
            action: The cleaned text of the turn.
            turn: Its env step, or ``None`` when the turn was not stepped (cut by a token budget, a forced turn
                without an answer).
        """
        self.turns += 1
        self.format_errors += describe_action(action)["kind"] == "invalid"
        if turn is not None:
            self.tool_calls += turn.calls
            self.tool_errors += turn.tool_error
