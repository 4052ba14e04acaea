"""The error hierarchy of :mod:`sim_web`'s tool layer.

Two families, handled differently by the caller:

* :class:`BackendError` / :class:`ToolUnavailableError`: the *web* failed (a backend is down,
  slow or refused the request). The executor retries and falls back; when every backend has
  failed the tool prints Tongyi's degradation text instead of results.
* :class:`ActionError`: the *agent* made a mistake (bad JSON, unknown tool, missing argument).
  Its message is written for the model: what was wrong and the expected format. The env turns
  it into an observation and counts it by :attr:`ActionError.kind`; it never ends an episode.
"""

from __future__ import annotations

ACTION_ERROR_KINDS = (
    "bad_json",  # the <tool_call> body is not a JSON object with "name" and "arguments"
    "unknown_tool",  # the tool name is not one of the enabled tools
    "missing_argument",  # a required argument (or the <code> block) is absent
    "bad_argument",  # an argument has the wrong type or an empty / out-of-range value
    "no_action",  # neither a complete <tool_call> nor a complete <answer>
    "multiple_calls",  # several <tool_call> blocks where one is allowed
    "oversize",  # the turn is longer than the action limit
)


class SimWebError(Exception):
    """Base class of every error raised by :mod:`sim_web`'s tool layer."""


class BackendError(SimWebError):
    """A backend could not serve a call.

    Args:
        message: What failed, e.g. ``"serper answered 503"``.
        retryable: Whether trying again may succeed (timeouts, 429, 5xx, connection errors).
            Non-retryable errors (bad request, auth) make the executor move straight to the
            next backend.
    """

    def __init__(self, message: str, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


class ToolUnavailableError(SimWebError):
    """Every backend failed for one call (after retries and fallback).

    Args:
        tool: ``"search"``, ``"scholar"`` or ``"visit"``.
        target: The query or URL of the call.
        causes: One ``"backend: reason"`` line per backend tried, in fallback order.
    """

    def __init__(self, tool: str, target: str, causes: list[str]) -> None:
        detail = "; ".join(causes) if causes else "no backend configured"
        super().__init__(f"{tool} is unavailable for {target!r}: every backend failed ({detail})")
        self.tool = tool
        self.target = target
        self.causes = list(causes)


class ActionError(SimWebError):
    """An agent mistake in one assistant turn.

    Args:
        kind: A short machine label, one of :data:`ACTION_ERROR_KINDS`.
        message: Text for the model: what was wrong and what the expected format is.
    """

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message

    def __reduce__(self) -> tuple[type, tuple[str, str]]:  # picklable across worker processes
        return (type(self), (self.kind, self.message))
