"""How the env read one turn, as each step reports it in ``info``: the parsed action and this step's counts.

:class:`~sim_web.env.WebResearchEnv` parses a turn once, with its own settings (several calls per turn or one, the
size limit, the enabled tools), and says in ``info["action"]`` what it found, beside the calls it ran and the
mistakes it counted in this step (``info["step_tool_calls"]``, ``info["step_errors"]``). An agent loop counts
format errors and tool calls from that verdict: parsing the turn again with other settings would disagree with the
env (a two-call turn the env accepted would look malformed), and reading the env's attributes would stop working
as soon as a Gymnasium wrapper sits in between.
"""

from __future__ import annotations

from typing import Any

from sim_web.env.config import EnvConfig
from sim_web.protocol.actions import Action, parse_action
from sim_web.protocol.arguments import valid_unicode
from sim_web.protocol.errors import ActionError

#: The kinds of ``info["action"]["kind"]``: a tool call (one or several), an answer, or a turn that parses as neither.
ACTION_KINDS = ("tool_call", "answer", "invalid")


def parse_turn(text: str, config: EnvConfig, tools: tuple[str, ...] | None = None) -> Action:
    """Parse one assistant turn with the settings of an env with ``config``.

    Args:
        text: The turn (valid Unicode).
        config: The env's configuration (multiple calls, their limit, the size limit, the enabled tools).
        tools: The enabled tools when known already (the env's toolbox); else ``config.tools``.

    Returns:
        The parsed :class:`~sim_web.protocol.actions.Action`.

    Raises:
        ActionError: The agent mistake that makes the turn invalid.
    """
    return parse_action(
        text,
        allow_multiple=config.allow_multiple_calls,
        max_chars=config.max_action_chars,
        max_calls=config.max_calls_per_turn,
        tools=config.tools if tools is None else tools,
    )


def action_info(act: Action | None = None, error: str | None = None) -> dict[str, Any]:
    """``info["action"]`` of one step.

    Args:
        act: The parsed action, or ``None`` when the turn did not parse.
        error: The :class:`~sim_web.protocol.errors.ActionError` kind the step raised (parsing the turn, or running
            its tool call), or ``None``.

    Returns:
        ``kind`` (one of :data:`ACTION_KINDS`), ``tools`` (each call's tool, in order), ``calls`` (how many),
        ``error``; then what the action says: a tool call's first ``tool``, its ``arguments`` and ``code`` (when
        it has code), an answer's ``answer``.
    """
    if act is None:
        return {"kind": "invalid", "tools": [], "calls": 0, "error": error}
    if act.kind == "answer":
        return {"kind": "answer", "tools": [], "calls": 0, "error": error, "answer": act.answer}
    calls = act.calls or (act,)
    return {
        "kind": "tool_call",
        "tools": [c.tool for c in calls],
        "calls": len(calls),
        "error": error,
        "tool": act.tool,
        "arguments": dict(act.arguments),
        **({"code": act.code} if act.code else {}),
    }


def read_action(text: str, config: EnvConfig | None = None) -> dict[str, Any]:
    """The ``info["action"]`` an env with ``config`` would report for ``text``, without stepping it.

    For a turn no env step reads (one cut by a token budget, a forced turn without an answer), so that it is
    recorded and counted like a stepped one. Only a parse: a tool call's own mistakes (bad arguments) are found
    when it runs, so they are not here.

    Args:
        text: The turn, as the env would be given it.
        config: The env's configuration; ``None`` reads it with the default settings.

    Returns:
        The :func:`action_info` of the turn.
    """
    try:
        return action_info(parse_turn(valid_unicode(text), config or EnvConfig()))
    except ActionError as e:
        return action_info(error=e.kind)
