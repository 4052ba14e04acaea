"""Parse one assistant turn in the Tongyi DeepResearch format into an :class:`Action`.

The format (``inference/react_agent.py`` and ``inference/prompt.py`` of
github.com/Alibaba-NLP/DeepResearch)::

    <think>...</think>
    <tool_call>
    {"name": "search", "arguments": {"query": ["..."]}}
    </tool_call>

or, for the Python tool, the code after the JSON inside the same block::

    <tool_call>
    {"name": "PythonInterpreter", "arguments": {}}
    <code>
    print(1 + 1)
    </code>
    </tool_call>

and the episode ends with ``<answer>...</answer>``. Like upstream, anything from a
hallucinated ``<tool_response>`` on is ignored and the JSON is read leniently (upstream uses
``json5``; we try strict JSON, then ``json5`` when installed, then a small repair of single
quotes and trailing commas). Unlike upstream, a search for "python" is not routed to the
interpreter: the tool is chosen by the parsed name. Every agent mistake raises
:class:`~sim_web.protocol.errors.ActionError` with a message for the model; nothing else escapes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from sim_web.protocol.arguments import BAD_JSON_TEXT, valid_unicode, valid_unicode_value, validate_arguments
from sim_web.protocol.errors import ActionError

PYTHON_TOOL = "PythonInterpreter"
#: The one list of tool names, in the order upstream's system prompt shows them.
TOOL_NAMES = ("search", "visit", PYTHON_TOOL, "google_scholar")
#: The tools that run anywhere: all but PythonInterpreter, which needs the bubblewrap sandbox.
NO_PYTHON_TOOLS = tuple(t for t in TOOL_NAMES if t != PYTHON_TOOL)
DEFAULT_MAX_ACTION_CHARS = 50_000
#: json5 is a pure-Python parser (~1 s for 40k characters); longer bodies get the quick repair only.
JSON5_MAX_CHARS = 10_000
CALL_EXAMPLE = '<tool_call>\n{"name": "search", "arguments": {"query": ["your query"]}}\n</tool_call>'
PYTHON_EXAMPLE = (
    '<tool_call>\n{"name": "PythonInterpreter", "arguments": {}}\n<code>\nprint(1 + 1)\n</code>\n</tool_call>'
)
#: The opening of a Markdown code fence: backticks, an info string (```json), blanks, one newline. Only ever
#: matched at a fence's start, so parsing stays linear in the turn's length.
_FENCE_OPEN = re.compile(r"```[\w-]*[ \t]*\n?")
#: Most tool calls one turn may hold when several are allowed (``EnvConfig.allow_multiple_calls``).
DEFAULT_MAX_CALLS = 8
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


@dataclass(frozen=True)
class Action:
    """One parsed assistant turn.

    Attributes:
        kind: ``"tool_call"`` or ``"answer"``.
        think: The ``<think>`` text, if any.
        tool: The tool name (canonical spelling) for a tool call.
        arguments: The tool's JSON arguments (validated and normalised when schemas were given).
        code: The Python code of a ``PythonInterpreter`` call.
        answer: The final answer text (stripped).
        calls: Every tool call of the turn, in order, when several were allowed and present
            (then ``tool`` / ``arguments`` / ``code`` are those of the first); else empty.
    """

    kind: str
    think: str | None = None
    tool: str | None = None
    arguments: dict[str, Any] = field(default_factory=dict, hash=False)
    code: str | None = None
    answer: str | None = None
    calls: tuple[Action, ...] = ()


def _between(text: str, start: str, end: str) -> str | None:
    """The text between the first ``start`` and the next ``end``, or ``None``."""
    i = text.find(start)
    if i < 0:
        return None
    j = text.find(end, i + len(start))
    return None if j < 0 else text[i + len(start) : j]


def _split_think(text: str) -> tuple[str | None, str]:
    """Return ``(think, rest)``; ``rest`` is where tool calls and the answer are looked for.

    A lone ``</think>`` (chat templates that put ``<think>`` in the prompt) closes a thought
    that started at the beginning. An unclosed ``<think>`` keeps the whole text searchable.
    """
    end = text.find("</think>")
    if end < 0:
        return None, text
    start = text.find("<think>")
    think = text[start + len("<think>") : end] if 0 <= start < end else text[:end]
    return think.strip(), text[end + len("</think>") :]


def _tool_call_blocks(text: str) -> list[tuple[str, str | None]]:
    """The ``(json_body, code)`` of every complete ``<tool_call>`` block, in order.

    A ``<code>`` block inside a call may itself contain ``</tool_call>``: the call ends at the
    first ``</tool_call>`` after ``</code>``.
    """
    blocks: list[tuple[str, str | None]] = []
    pos = 0
    while (start := text.find("<tool_call>", pos)) >= 0:
        body_start = start + len("<tool_call>")
        end = text.find("</tool_call>", body_start)
        if end < 0:
            raise ActionError(
                "no_action",
                "Your <tool_call> is not closed: end every tool call with </tool_call>, e.g.\n" + CALL_EXAMPLE,
            )
        code = None
        c0 = text.find("<code>", body_start, end)
        if c0 >= 0:
            c1 = text.find("</code>", c0)
            if c1 < 0:
                raise ActionError(
                    "missing_argument",
                    "Your <code> block is not closed: end the code with </code> "
                    "before </tool_call>, e.g.\n" + PYTHON_EXAMPLE,
                )
            code = _unfence(text[c0 + len("<code>") : c1].strip())
            end = text.find("</tool_call>", c1)
            if end < 0:
                raise ActionError(
                    "no_action",
                    "Your <tool_call> is not closed: put </tool_call> after </code>, e.g.\n" + PYTHON_EXAMPLE,
                )
            body = text[body_start:c0] + text[c1 + len("</code>") : end]
        else:
            body = text[body_start:end]
        blocks.append((body.strip(), code))
        pos = end + len("</tool_call>")
    return blocks


def _unfence(s: str) -> str:
    """Remove one surrounding Markdown code fence (```json ... ```), if any.

    String operations and an anchored match of the opening only: a fence followed by a long run of word
    characters costs one pass, where a whole-body regex backtracked quadratically.
    """
    if len(s) < 6 or not (s.startswith("```") and s.endswith("```")):
        return s
    inner = s[:-3]
    body = inner[cast(re.Match[str], _FENCE_OPEN.match(inner)).end() :]  # it starts with ```: always a match
    return (body[:-1] if body.endswith("\n") else body).strip()


def _repair(s: str) -> str:
    """Best-effort JSON repair when json5 is unavailable: single quotes, trailing commas, Python literals."""
    if '"' not in s:
        s = s.replace("'", '"')
    s = _TRAILING_COMMA.sub(r"\1", s)
    return re.sub(r"\b(True|False|None)\b", lambda m: {"True": "true", "False": "false", "None": "null"}[m.group(1)], s)


def loads_lenient(s: str) -> Any:
    """Parse JSON the lenient way upstream does (its ``json5.loads``), without ever raising anything but ``ValueError``.

    Tries, in order: strict JSON; the first JSON value starting at the first ``{`` (trailing
    text ignored); ``json5`` when installed and the text is at most :data:`JSON5_MAX_CHARS`
    long (single quotes, trailing commas, comments, unquoted keys); a small repair.

    Args:
        s: The text.

    Returns:
        The parsed value.

    Raises:
        ValueError: If no strategy parses it (the message of the strict parser).
    """
    s = _unfence(s.strip())
    try:
        return json.loads(s)
    except (ValueError, RecursionError) as e:
        first_error = e
    brace = s.find("{")
    if brace >= 0:
        try:
            return json.JSONDecoder().raw_decode(s, brace)[0]
        except (ValueError, RecursionError):
            pass
    try:
        import json5
    except ImportError:
        json5 = None  # type: ignore[assignment]
    if json5 is not None and len(s) <= JSON5_MAX_CHARS:
        for candidate in (s, s[brace : s.rfind("}") + 1] if brace >= 0 else ""):
            if not candidate:
                continue
            try:
                return json5.loads(candidate)
            except (ValueError, RecursionError, TypeError, OverflowError, IndexError):
                continue
    try:
        return json.loads(_repair(s))
    except (ValueError, RecursionError):
        raise ValueError(str(first_error)) from None


def _canonical_tool(name: str, tools: Collection[str]) -> str:
    """Map the model's tool name to an enabled tool, tolerating case and ``python`` variants."""
    if name in tools:
        return name
    folded = {t.lower(): t for t in tools}
    if name.lower() in folded:
        return folded[name.lower()]
    if "python" in name.lower() and PYTHON_TOOL in tools:  # upstream routes any "python" call here
        return PYTHON_TOOL
    raise unknown_tool(name, tools)


def unknown_tool(name: str, tools: Collection[str]) -> ActionError:
    """The one ``unknown_tool`` error: names exactly the tools that are available.

    Args:
        name: The tool name the model wrote.
        tools: The enabled tools.

    Returns:
        The error to raise (kind ``unknown_tool``).
    """
    shown = name if len(name) <= 80 else name[:80] + "..."
    return ActionError("unknown_tool", f"Tool {shown} not found. Available tools: {', '.join(tools)}.")


def _parse_call(
    body: str, code: str | None, tools: Collection[str], schemas: Sequence[Mapping[str, Any]] | Mapping[str, Any] | None
) -> Action:
    """Turn one ``<tool_call>`` body (+ code) into a tool-call :class:`Action`."""
    if not body and code is None:
        raise ActionError("bad_json", f"{BAD_JSON_TEXT} (the tool call is empty) Expected:\n{CALL_EXAMPLE}")
    try:
        obj = loads_lenient(body) if body else {"name": PYTHON_TOOL}  # a bare <code> block
    except ValueError as e:
        if code is None or "python" not in body.lower():
            raise ActionError("bad_json", f"{BAD_JSON_TEXT} ({str(e)[:200]}) Expected:\n{CALL_EXAMPLE}") from None
        obj = {"name": PYTHON_TOOL}  # e.g. <tool_call>python<code>..</code></tool_call>
    obj = valid_unicode_value(obj)  # the name and arguments too: a \udc80 escape parses to a lone surrogate
    if isinstance(obj, dict) and isinstance(obj.get("function"), dict):  # OpenAI-style {"function": {...}}
        obj = obj["function"]
    if not isinstance(obj, dict):
        raise ActionError(
            "bad_json",
            f"{BAD_JSON_TEXT} (found a JSON {type(obj).__name__}, expected an object) Expected:\n{CALL_EXAMPLE}",
        )
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ActionError(
            "bad_json", f'{BAD_JSON_TEXT} (the "name" field is missing or not a string) Expected:\n{CALL_EXAMPLE}'
        )
    tool = _canonical_tool(name.strip(), tools)
    args = obj.get("arguments", obj.get("parameters", {}))
    if args is None:
        args = {}
    if isinstance(args, str):  # some models send "arguments" as a JSON string
        try:
            args = loads_lenient(args) if args.strip() else {}
        except ValueError as e:
            raise ActionError(
                "bad_json",
                f'{BAD_JSON_TEXT} ("arguments" is a string that is not JSON: {str(e)[:200]}) Expected:\n{CALL_EXAMPLE}',
            ) from None
    if not isinstance(args, dict):
        raise ActionError(
            "bad_json",
            f'{BAD_JSON_TEXT} ("arguments" must be a JSON object, found a {type(args).__name__}) '
            f"Expected:\n{CALL_EXAMPLE}",
        )
    if tool == PYTHON_TOOL:
        if code is None and isinstance(args.get("code"), str):
            code = args["code"]
        if code is None or not code.strip():
            raise ActionError(
                "missing_argument",
                "[Python Interpreter Error]: Formatting error. Put the code after the JSON, "
                "inside <code></code>, and print() what you want to see:\n" + PYTHON_EXAMPLE,
            )
        args = {}
    elif schemas is not None:
        args = validate_arguments(tool, args, schemas)
    return Action(kind="tool_call", tool=tool, arguments=args, code=code)


def parse_action(
    text: str,
    *,
    allow_multiple: bool = False,
    max_chars: int = DEFAULT_MAX_ACTION_CHARS,
    max_calls: int = DEFAULT_MAX_CALLS,
    tools: Collection[str] = TOOL_NAMES,
    schemas: Sequence[Mapping[str, Any]] | Mapping[str, Any] | None = None,
) -> Action:
    """Parse one assistant turn.

    Args:
        text: The assistant message.
        allow_multiple: Accept several ``<tool_call>`` blocks (returned in ``Action.calls``).
        max_calls: With ``allow_multiple``, more blocks than this are one ``multiple_calls`` error (nothing runs):
            a turn's work stays bounded however many calls fit in ``max_chars``.
        max_chars: Longer turns are rejected as ``oversize`` before any parsing.
        tools: Tool names that exist (a call to another name is ``unknown_tool``).
        schemas: Tool schemas (OpenAI function format, as :meth:`sim_web.tools.Toolbox.schemas`
            returns); when given, arguments are validated and normalised here
            (a single string becomes a one-item list), else they are returned as parsed.

    Returns:
        The action: an answer when a complete ``<answer>...</answer>`` is present (it wins over
        tool calls: upstream ends the episode on it), else the tool call(s).

    Raises:
        ActionError: For every agent mistake; ``kind`` says which
            (see :data:`sim_web.protocol.errors.ACTION_ERROR_KINDS`).
    """
    if not isinstance(text, str):
        raise ActionError("no_action", f"Expected the assistant turn as text, got a {type(text).__name__}.")
    if len(text) > max_chars:
        raise ActionError(
            "oversize",
            f"Your turn is {len(text)} characters long; the limit is {max_chars}. "
            "Think briefly, then make one tool call or give the final <answer>.",
        )
    text = valid_unicode(text)  # JSON escapes of lone surrogates are caught after parsing, in _parse_call
    cut = text.find("<tool_response>")  # upstream drops a hallucinated tool response and what follows
    if cut >= 0:
        text = text[:cut]
    think, rest = _split_think(text)
    answer = _between(rest, "<answer>", "</answer>")
    blocks = _tool_call_blocks(rest) if answer is None else []
    if answer is None and not blocks and think is not None:  # upstream also finds them inside <think>
        answer = _between(text, "<answer>", "</answer>")
        blocks = _tool_call_blocks(text) if answer is None else []
    if answer is not None:
        return Action(kind="answer", think=think, answer=answer.strip())
    if not blocks:
        hint = " Your <answer> is not closed: end it with </answer>." if "<answer>" in rest else ""
        raise ActionError(
            "no_action",
            "No tool call or answer found."
            + hint
            + " Either call a tool:\n"
            + CALL_EXAMPLE
            + "\nor finish with <answer>your final answer</answer>.",
        )
    if len(blocks) > 1 and not allow_multiple:
        raise ActionError(
            "multiple_calls",
            f"You made {len(blocks)} tool calls in one turn; make exactly one "
            "<tool_call> per turn (several queries can go in one call's list).",
        )
    if len(blocks) > max_calls:
        raise ActionError(
            "multiple_calls",
            f"You made {len(blocks)} tool calls in one turn; the limit is {max_calls}. "
            "Make fewer calls per turn (several queries can go in one call's list).",
        )
    calls = tuple(_parse_call(body, code, tools, schemas) for body, code in blocks)
    first = calls[0]
    return Action(
        kind="tool_call",
        think=think,
        tool=first.tool,
        arguments=first.arguments,
        code=first.code,
        calls=calls if len(calls) > 1 else (),
    )
