"""The system prompt: upstream's text around the tool schemas (``tongyi``) and a short one for small models
(``compact``), and the special ``PythonInterpreter`` description.

Split from :mod:`sim_web.tools.toolbox` (which builds the schemas and runs the calls): this module holds the prompt's
fixed text and how the schemas are rendered into it, byte for byte as upstream's ``inference/prompt.py`` and
``inference/react_agent.py`` (``Current date: ``, ``%Y-%m-%d``).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Sequence
from typing import Any

from sim_web.protocol.actions import PYTHON_TOOL
from simweb_core.errors import ConfigError

PYTHON_DESCRIPTION = """Executes Python code in a sandboxed environment. To use this tool, you must follow this format:
1. The 'arguments' JSON object must be empty: {}.
2. The Python code to be executed must be placed immediately after the JSON block, enclosed within <code> and </code> tags.

IMPORTANT: Any output you want to see MUST be printed to standard output using the print() function.

Example of a correct call:
<tool_call>
{"name": "PythonInterpreter", "arguments": {}}
<code>
import numpy as np
# Your code here
print(f"The result is: {np.mean([1,2,3])}")
</code>
</tool_call>"""

PROMPT_HEAD = """You are a deep research assistant. Your core function is to conduct thorough, multi-source investigations into any topic. You must handle both broad, open-domain inquiries and queries within specialized academic fields. For every request, synthesize information from credible, diverse sources to deliver a comprehensive, accurate, and objective response. When you have gathered sufficient information and are ready to provide the definitive response, you must enclose the entire final answer within <answer></answer> tags.

# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
"""

#: The tool-call format line of both prompt styles.
CALL_FORMAT = """<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call>"""

PROMPT_TAIL = (
    """
</tools>

For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:
"""
    + CALL_FORMAT
    + """

Current date: """
)

#: The prompt styles: upstream's (``tongyi``, the default) and a short one for small models (``compact``).
PROMPT_STYLES = ("tongyi", "compact")

COMPACT_HEAD = (
    """You are a research assistant. Answer the question by searching the web and reading pages. Each turn, think in \
<think></think>, then either call one tool:
"""
    + CALL_FORMAT
    + """
or give the final answer as <answer>...</answer> (short: a name, date or number).

Tools:
"""
)

#: One short description per tool for the compact prompt (other tools: the first sentence of their schema's).
COMPACT_DESCRIPTIONS = {
    "search": "web search",
    "visit": "read pages, get what they say about the goal",
    PYTHON_TOOL: "run the Python code in <code></code> after the JSON; print() the results",
    "google_scholar": "search academic publications",
}


def _render_schema(schema: dict[str, Any]) -> str:
    fn = schema.get("function", schema)
    if fn.get("name") == PYTHON_TOOL:  # upstream writes this line by hand: the description is raw text
        return (
            '{"type": "function", "function": {"name": "PythonInterpreter", "description": "'
            + fn.get("description", "")
            + '", "parameters": '
            + json.dumps(fn.get("parameters", {}), ensure_ascii=False)
            + "}}"
        )
    return json.dumps(schema, ensure_ascii=False)


def _compact_line(schema: dict[str, Any]) -> str:
    """``name {"arg": ["..."], ...}: description``: one tool of the compact prompt."""
    fn = schema.get("function", schema)
    props = fn.get("parameters", {}).get("properties", {})
    args = ", ".join(f'"{k}": ' + ('["..."]' if p.get("type") == "array" else '"..."') for k, p in props.items())
    text = COMPACT_DESCRIPTIONS.get(fn["name"]) or fn.get("description", "").split(". ")[0].rstrip(".")
    return f"{fn['name']} {{{args}}}: {text}"


def system_prompt(schemas: Sequence[dict[str, Any]], date: str, style: str = "tongyi") -> str:
    """The system prompt for the given tools and date, in one of :data:`PROMPT_STYLES`.

    Args:
        schemas: Tool schemas in prompt order (e.g. :meth:`~sim_web.tools.toolbox.Toolbox.schemas`).
        date: The "current date", ``YYYY-MM-DD`` (fixed, for determinism).
        style: ``"tongyi"``: upstream's prompt byte for byte. ``"compact"``: a short instruction for small
            models with the same tags and tool-call format, then one line per tool
            (``search {"query": ["..."]}: web search``).

    Returns:
        The prompt: an instruction, the tools, the tool-call format, then ``Current date: {date}``.

    Raises:
        ConfigError: If ``date`` is not ``YYYY-MM-DD`` or ``style`` is unknown.
    """
    if style not in PROMPT_STYLES:
        raise ConfigError(f"system_prompt style must be one of {PROMPT_STYLES}, got {style!r}")
    try:
        ok = datetime.date.fromisoformat(date).strftime("%Y-%m-%d") == date
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ConfigError(f"system_prompt date must be YYYY-MM-DD (e.g. '2025-01-01'), got {date!r}")
    if style == "compact":
        return COMPACT_HEAD + "\n".join(_compact_line(s) for s in schemas) + "\n\nCurrent date: " + date
    return PROMPT_HEAD + "\n".join(_render_schema(s) for s in schemas) + PROMPT_TAIL + date
