"""One ReAct turn against a :class:`~sim_web.env.WebResearchEnv`: the part ``sim-web eval`` and GRPO share.

Both loops read an assistant turn the same way (everything from a hallucinated ``<tool_response>`` on is cut, as
upstream's ``inference/react_agent.py`` does, then the text is stripped), step the env with it, classify what the
observation says went wrong, and count the turn in a :class:`TurnCounts`. Keeping these in one place is what makes
the eval's ``tool_error_rate`` and GRPO's ``agent/tool_error_rate`` measure the same thing on the same episode.
Token bookkeeping (ids, masks, logprobs) is the rollout's own business and stays out of here.

What a step did is read from the env's ``info`` only (``action``, ``step_tool_calls``, ``step_errors``: see
:mod:`sim_web.env.step_info`): the env parsed the turn with its own settings, and a Gymnasium wrapper may sit between
the loop and the env. Both loops also name the way an episode ended with the same words (:data:`TERMINATIONS`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sim_web.protocol.formatting import INACCESSIBLE_EVIDENCE, SCHOLAR_UNAVAILABLE, SEARCH_UNAVAILABLE
from simweb_core.fields import help_field

#: How the PythonInterpreter tool's output starts when the sandbox could not run the code (or the call had none).
PYTHON_ERROR = "[Python Interpreter Error]"
#: The line the PythonInterpreter tool appends when the run hit its time limit (upstream's spelling).
PYTHON_TIMEOUT = "[PythonInterpreter Error] TimeoutError"

# How an episode ended (``Episode.termination``), in ``sim-web eval``'s trajectory files and GRPO's rollouts alike.
#: The env scored an answer.
ANSWER = "answer"
#: The env's own budgets truncated it (its ``info["truncated_by"]``, see :func:`env_truncation`): turns, tool output.
TURN_CAP = "env_truncated:max_turns"
OBS_BUDGET = "env_truncated:max_obs_chars"
#: The eval loop's budgets (a forced turn ends as ``forced_answer:<why>`` or ``forced_no_answer:<why>`` instead).
MAX_LLM_CALLS, MAX_SECONDS, MAX_CONTEXT_TOKENS = "max_llm_calls", "max_seconds", "max_context_tokens"
#: GRPO's stops: a turn hit the token budget before its end-of-turn token; the next tool output would not fit the
#: completion budget; the env step raised (a judge or backend failure, the episode is unscorable).
LENGTH, ROLLBACK, ERROR = "length", "rollback", "error"
#: Every fixed termination (the forced ones carry their reason: ``forced_answer:context``).
TERMINATIONS = (ANSWER, TURN_CAP, OBS_BUDGET, MAX_LLM_CALLS, MAX_SECONDS, MAX_CONTEXT_TOKENS, LENGTH, ROLLBACK, ERROR)
#: GRPO's endings without an answer by the short name its metrics log them under (``agent/no_answer/<name>``).
NO_ANSWER_METRICS = {"length": LENGTH, "turn_cap": TURN_CAP, "rollback": ROLLBACK, "obs_budget": OBS_BUDGET}


def env_truncation(info: Mapping[str, Any]) -> str:
    """The termination of an episode the env truncated: ``env_truncated:`` and its ``info["truncated_by"]``."""
    return f"env_truncated:{info.get('truncated_by')}"


def forced(reason: str, answered: bool) -> str:
    """The termination of an episode a forced turn ended: ``forced_answer:<reason>`` or ``forced_no_answer:<reason>``."""
    return f"{'forced_answer' if answered else 'forced_no_answer'}:{reason}"


def clean_turn(text: str) -> str:
    """What the env reads of a generated turn: cut at a hallucinated ``<tool_response>``, stripped."""
    i = text.find("<tool_response>")
    return (text[:i] if i >= 0 else text).strip()


def describe_action(action: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a trajectory step that say how the env read its turn.

    Args:
        action: The env's ``info["action"]`` of the step (or :func:`sim_web.env.read_action` of a turn no step read).

    Returns:
        ``kind`` (``tool_call``/``answer``/``invalid``), then a tool call's first ``tool``, its ``arguments`` and
        ``code`` (when it has code), an answer's ``answer``, or an invalid turn's ``error``.
    """
    kind = action["kind"]
    if kind == "invalid":
        return {"kind": kind, "error": action["error"]}
    if kind == "answer":
        return {"kind": kind, "answer": action["answer"]}
    code = {"code": action["code"]} if action.get("code") else {}
    return {"kind": kind, "tool": action["tool"], "arguments": dict(action["arguments"]), **code}


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
        info: The env's info dict of this step (``info["action"]``: how the env read the turn).
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
    def format_error(self) -> bool:
        """The env read the turn as neither a tool call nor an answer (its ``info["action"]["kind"]`` is invalid)."""
        return bool(self.info["action"]["kind"] == "invalid")

    @property
    def tool_error(self) -> bool:
        """A tool call was made and failed (bad arguments, an unreachable page, a tool unavailable, a Python error)."""
        return self.calls > 0 and self.error is not None


#: What :func:`play_turn` reads of a step's info besides the observation.
STEP_INFO_KEYS = ("action", "step_tool_calls", "step_errors")


def play_turn(env: Any, text: str) -> Turn:
    """Clean one generated turn, step the env with it and classify the observation.

    Only ``env.step``'s return is read, so any Gymnasium wrapper that passes ``info`` through may sit in between.

    Args:
        env: A :class:`~sim_web.env.WebResearchEnv`, or a wrapper of one, after ``reset``.
        text: The policy's raw generation of this turn.

    Returns:
        The :class:`Turn`; exceptions of ``env.step`` (a judge or backend failure) propagate.

    Raises:
        KeyError: The step's info lacks :data:`STEP_INFO_KEYS` (a wrapper that drops or rebuilds ``info``).
    """
    action = clean_turn(text)
    t = time.perf_counter()
    obs, reward, term, trunc, info = env.step(action)
    seconds = time.perf_counter() - t
    missing = [k for k in STEP_INFO_KEYS if k not in info]
    if missing:
        raise KeyError(
            f"the env's step info has no {missing}: play_turn needs a WebResearchEnv's info as it returns it "
            "(a wrapper in between must pass info through)"
        )
    return Turn(
        action,
        obs,
        float(reward),
        bool(term),
        bool(trunc),
        info,
        sum(info["step_tool_calls"].values()),
        observation_error(obs, list(info["step_errors"])),
        seconds,
    )


@dataclass
class TurnCounts:
    """What the turns of one episode did, counted the same way in evaluation and in GRPO rollouts."""

    turns: int = help_field(0, "Assistant turns, stepped or not (a cut or a forced turn counts).")
    tool_calls: int = help_field(0, "Tool calls the env ran (each call of a multi-call turn).")
    tool_errors: int = help_field(0, "Turns whose tool call failed (Turn.tool_error).")
    format_errors: int = help_field(0, "Turns that parse as neither a tool call nor an answer.")

    def add(self, turn: Turn | None, action: Mapping[str, Any] | None = None) -> None:
        """Count one assistant turn.

        Args:
            turn: Its env step, or ``None`` when the turn was not stepped (cut by a token budget, a forced turn
                without an answer, a step that raised).
            action: For a turn that was not stepped, how the env would read it (:func:`sim_web.env.read_action`);
                a stepped turn's is the env's own verdict, ``turn.info["action"]``.

        Raises:
            ValueError: Neither ``turn`` nor ``action`` was given.
        """
        if turn is None and action is None:
            raise ValueError("TurnCounts.add needs the turn's env step, or read_action(text) of a turn not stepped")
        self.turns += 1
        if turn is None:
            self.format_errors += action is not None and action["kind"] == "invalid"
            return
        self.format_errors += turn.format_error
        self.tool_calls += turn.calls
        self.tool_errors += turn.tool_error
