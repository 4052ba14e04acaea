"""Tool-call arguments: validation against the tool schemas, query limits, and valid Unicode at the boundary.

Split from :mod:`sim_web.protocol.actions` (which parses a turn and calls these): every agent mistake
here raises :class:`~sim_web.protocol.errors.ActionError` with a message for the model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from sim_web.protocol.errors import ActionError

#: Upstream's own error text (react_agent.py), reused as the first sentence of ours.
BAD_JSON_TEXT = 'Tool call is not a valid JSON. Tool call must contain a valid "name" and "arguments" field.'
#: Longest search / scholar query accepted (characters). It also bounds the distinct terms of a query
#: (under 1,024, Lucene's clause limit, whose overflow the backends would report as a failed search).
MAX_QUERY_CHARS = 1024
#: Longest ``visit`` goal accepted (characters). The extractor's work grows with goal terms x page tokens, so an
#: unbounded goal would make one step cost seconds; a real goal is a sentence or two.
MAX_GOAL_CHARS = 1000
_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_unicode(text: str) -> str:
    """``text`` with every lone surrogate (e.g. from a JSON ``\\udc80`` escape) replaced by U+FFFD.

    Such a character cannot be encoded as UTF-8, so it would break every observation, trajectory
    line, tokenizer call and HTTP response it reached; valid text is returned unchanged (the same object).

    Args:
        text: Any string.

    Returns:
        A string that ``text.encode("utf-8")`` accepts.
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)


def valid_unicode_value(value: Any) -> Any:
    """:func:`valid_unicode` applied to every string inside a JSON value (dict keys included).

    Args:
        value: A parsed JSON value.

    Returns:
        A copy of the containers with every string made valid (other values unchanged).
    """
    if isinstance(value, str):
        return valid_unicode(value)
    if isinstance(value, list):
        return [valid_unicode_value(v) for v in value]
    if isinstance(value, dict):
        return {valid_unicode(k) if isinstance(k, str) else k: valid_unicode_value(v) for k, v in value.items()}
    return value


def check_queries(tool: str, queries: Sequence[str], max_chars: int = MAX_QUERY_CHARS) -> None:
    """Reject a search / scholar query longer than ``max_chars`` as an agent mistake.

    Args:
        tool: The tool name, for the message.
        queries: The validated query list.
        max_chars: The limit (default :data:`MAX_QUERY_CHARS`).

    Raises:
        ActionError: ``bad_argument``, naming the length found, the limit and what to do.
    """
    for q in queries:
        if len(q) > max_chars:
            raise ActionError(
                "bad_argument",
                f"{tool}: a query is {len(q)} characters long; the limit is {max_chars}. "
                "Search with a few keywords (split long questions into several short queries).",
            )


def check_goal(goal: str, max_chars: int = MAX_GOAL_CHARS) -> None:
    """Reject a ``visit`` goal longer than ``max_chars`` as an agent mistake.

    Args:
        goal: The validated goal.
        max_chars: The limit (default :data:`MAX_GOAL_CHARS`).

    Raises:
        ActionError: ``bad_argument``, naming the length found, the limit and what to do.
    """
    if len(goal) > max_chars:
        raise ActionError(
            "bad_argument",
            f"visit: the goal is {len(goal)} characters long; the limit is {max_chars}. "
            "State what you want from the page in a sentence or two.",
        )


def _tool_parameters(tool: str, schemas: Sequence[Mapping[str, Any]] | Mapping[str, Any]) -> Mapping[str, Any]:
    """The JSON-schema ``parameters`` of ``tool`` in a list of function tools or a name -> tool mapping."""
    entries = schemas.values() if isinstance(schemas, Mapping) else schemas
    for entry in entries:
        fn = entry.get("function", entry) if isinstance(entry, Mapping) else {}
        if fn.get("name") == tool:
            return fn.get("parameters") or {}
    names = [str((e.get("function", e) if isinstance(e, Mapping) else {}).get("name")) for e in entries]
    raise ActionError("unknown_tool", f"Tool {tool} not found. Available tools: {', '.join(names)}.")


def _example(tool: str, props: Mapping[str, Any]) -> str:
    """A one-line correct call of ``tool`` built from its schema, for error messages."""
    args = {n: ["..."] if "array" in _types(s) else "..." for n, s in props.items()}
    return json.dumps({"name": tool, "arguments": args}, ensure_ascii=False)


def _types(spec: Mapping[str, Any]) -> list[str]:
    t = spec.get("type", [])
    return [t] if isinstance(t, str) else list(t) if isinstance(t, list) else []


def describe_value(value: Any) -> str:
    """``a <type> (<repr, cut at 60 characters>)``: how an agent-error message shows a value it refuses."""
    try:
        text = repr(value)
    except ValueError:  # e.g. an int beyond Python's 4300-digit str() limit
        text = "too large to show"
    return f"a {type(value).__name__} ({text[:60] + '...' if len(text) > 60 else text})"


_SCALARS: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
}


def _check_value(tool: str, name: str, value: Any, spec: Mapping[str, Any], example: str, max_items: int | None) -> Any:
    """Validate one argument against its schema; a bare string becomes a one-item list where a list is expected."""
    types = _types(spec)
    if "array" in types:
        item_types = _types(spec.get("items") or {}) or ["string"]
        if isinstance(value, str) and "string" in item_types:
            value = [value]
        what = f"{tool}: '{name}' must be a non-empty list of strings"
        if not isinstance(value, list) or not value:
            raise ActionError("bad_argument", f"{what}, got {describe_value(value)}. Expected: {example}")
        if max_items is not None and len(value) > max_items:
            raise ActionError(
                "bad_argument",
                f"{what} of at most {max_items} items, got {len(value)}. "
                f"Split them over several calls. Expected: {example}",
            )
        if "string" in item_types:
            bad = [v for v in value if not isinstance(v, str) or not v.strip()]
            if bad:
                raise ActionError(
                    "bad_argument",
                    f"{what}; item {describe_value(bad[0])} is not a non-empty string. Expected: {example}",
                )
        return list(value)
    for t in types:
        if (
            t in _SCALARS
            and isinstance(value, _SCALARS[t])
            and not (t in ("integer", "number") and isinstance(value, bool))
        ):
            return value
    if not types or not any(t in _SCALARS for t in types):
        return value  # a type this validator does not know: pass it through unchanged
    raise ActionError(
        "bad_argument",
        f"{tool}: '{name}' must be a {' or '.join(types)}, got {describe_value(value)}. Expected: {example}",
    )


#: Upstream's messages for a call without its required fields (tool_search/visit/scholar.py).
_INVALID_REQUEST = {
    "search": "[Search] Invalid request format: Input must be a JSON object containing 'query' field",
    "visit": "[Visit] Invalid request format: Input must be a JSON object containing 'url' and 'goal' fields",
    "google_scholar": "[google_scholar] Invalid request format: Input must be a JSON object containing 'query' field",
}


def validate_arguments(
    tool: str,
    arguments: Mapping[str, Any],
    schemas: Sequence[Mapping[str, Any]] | Mapping[str, Any],
    *,
    max_items: int | None = None,
) -> dict[str, Any]:
    """Check a call's arguments against the tool's JSON schema and normalise them.

    Required arguments must be present and typed as declared (``query``: non-empty list of
    non-empty strings, ``url``: likewise, ``goal``: string). A bare string is accepted where a
    list is expected and becomes a one-item list. Arguments the schema does not declare are
    dropped (upstream ignores them too).

    Args:
        tool: The tool name.
        arguments: The parsed ``arguments`` object.
        schemas: Function-tool schemas (a list in OpenAI format, or a name -> schema mapping).
        max_items: Upper bound on list lengths (``None``: unbounded).

    Returns:
        The normalised arguments, in schema order.

    Raises:
        ActionError: ``unknown_tool``, ``missing_argument`` or ``bad_argument``.
    """
    params = _tool_parameters(tool, schemas)
    props: Mapping[str, Any] = params.get("properties") or {}
    example = _example(tool, props)
    if not isinstance(arguments, Mapping):
        raise ActionError(
            "bad_json",
            f'{BAD_JSON_TEXT} ("arguments" must be a JSON object, found {describe_value(arguments)}) '
            f"Expected: {example}",
        )
    missing = [r for r in params.get("required") or [] if arguments.get(r) is None]
    if missing:
        lead = _INVALID_REQUEST.get(tool, f"[{tool}] Invalid request format")
        raise ActionError(
            "missing_argument", f"{lead}. Missing: {', '.join(repr(m) for m in missing)}. Expected: {example}"
        )
    return {
        n: _check_value(tool, n, arguments[n], s, example, max_items)
        for n, s in props.items()
        if n in arguments and arguments[n] is not None
    }
