"""The four Tongyi DeepResearch tools and their schemas (the system prompt around them: :mod:`~sim_web.tools.prompt`).

One definition serves everything: :class:`ToolMethods` holds the tools as typed methods with
Google-style docstrings. ``transformers.utils.get_json_schema`` reads them into JSON schemas
(TRL's ``environment_factory`` reads the same methods), :meth:`Toolbox.schemas` adds the two
details a docstring cannot say (``minItems`` and the item descriptions) so that
:func:`~sim_web.tools.prompt.system_prompt` reproduces upstream's prompt byte for byte (its ``compact`` style is a
short prompt for small models with the same tags and call format), and :class:`Toolbox` runs the calls
through a :class:`~sim_web.executor.ToolExecutor`.

Upstream references (github.com/Alibaba-NLP/DeepResearch): ``inference/prompt.py`` (the
system prompt, its tool lines and the special ``PythonInterpreter`` description, whose line in
the prompt is not valid JSON: raw newlines and quotes), ``inference/react_agent.py`` (the
``Current date: `` suffix, ``%Y-%m-%d``).
"""

from __future__ import annotations

import copy
import functools
import json
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from sim_web.executor import ToolExecutor
from sim_web.protocol.actions import PYTHON_TOOL, TOOL_NAMES, Action, unknown_tool
from sim_web.protocol.arguments import (
    MAX_GOAL_CHARS,
    MAX_QUERY_CHARS,
    check_goal,
    check_queries,
    valid_unicode,
    valid_unicode_value,
    validate_arguments,
)
from sim_web.protocol.errors import ActionError, ToolUnavailableError
from sim_web.protocol.formatting import (
    format_scholar,
    format_search,
    format_unavailable,
    format_visits,
    join_observations,
    truncate,
)
from sim_web.protocol.results import VisitResult
from sim_web.tools.prompt import PYTHON_DESCRIPTION
from simweb_core.errors import ConfigError

log = logging.getLogger(__name__)
#: Several tool responses of one turn are separate blocks of one user message (Qwen's chat format).
MULTI_RESPONSE_JOINER = "\n</tool_response>\n<tool_response>\n"

#: What a docstring cannot express: (tool, argument) -> item description and minItems, as upstream.
_ARRAY_EXTRAS: dict[tuple[str, str], dict[str, Any]] = {
    ("search", "query"): {"items_description": "The search query.", "min_items": 1},
    ("google_scholar", "query"): {"items_description": "The search query.", "min_items": 1},
}


class ToolMethods:
    """The tools as typed methods: the single definition behind every schema.

    Subclasses implement :meth:`_dispatch`. Only the tool methods are public, so a TRL
    ``environment_factory`` class can inherit this and expose exactly these tools.
    """

    def search(self, query: list[str]) -> str:
        """Perform Google web searches then returns a string of the top search results. Accepts multiple queries.

        Args:
            query: The list of search queries.
        """
        return self._dispatch("search", {"query": query})

    def visit(self, url: list[str], goal: str) -> str:
        """Visit webpage(s) and return the summary of the content.

        Args:
            url: The URL(s) of the webpage(s) to visit. Can be a single URL or an array of URLs.
            goal: The specific information goal for visiting webpage(s).
        """
        return self._dispatch("visit", {"url": url, "goal": goal})

    def google_scholar(self, query: list[str]) -> str:
        """Leverage Google Scholar to retrieve relevant information from academic publications. Accepts multiple queries. This tool will also return results from google search

        Args:
            query: The list of search queries for Google Scholar.
        """
        return self._dispatch("google_scholar", {"query": query})

    def PythonInterpreter(self, code: str) -> str:  # noqa: N802 - the name the models know
        """Executes Python code in a sandboxed environment and returns what it printed.

        Args:
            code: The Python code to run. Any output you want to see must be printed with print().
        """
        return self._dispatch(PYTHON_TOOL, {}, code=code)

    def _dispatch(self, tool: str, arguments: dict[str, Any], code: str | None = None) -> str:
        raise NotImplementedError(f"{type(self).__name__} must implement _dispatch to run {tool}")


@functools.cache
def _generated_schema(tool: str) -> dict[str, Any]:
    """``get_json_schema`` of a tool method, without the ``return`` entry (not part of OpenAI's format).

    ``get_json_schema`` imports transformers and torch (about 3 s), which would dominate a cold
    ``gym.make``; its output is therefore cached on disk under ``$SIM_WEB_HOME/cache``, keyed by
    the method's source (signature and docstring) and the transformers version, so an edit of
    the docstring or an upgrade regenerates it.
    """
    import hashlib
    import inspect
    from importlib import metadata

    from simweb_core.settings import sim_web_home

    method = getattr(ToolMethods, tool)
    key = hashlib.sha256((inspect.getsource(method) + metadata.version("transformers")).encode()).hexdigest()[:16]
    path = sim_web_home() / "cache" / f"tool-schema-{tool}-{key}.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    from transformers.utils import get_json_schema

    schema = get_json_schema(method)
    schema["function"].pop("return", None)
    try:  # best effort: a read-only home only costs the next process the regeneration
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(schema), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as e:
        log.debug("could not cache the %s schema at %s: %s", tool, path, e)
    return schema


def tool_schema(tool: str) -> dict[str, Any]:
    """The schema of one tool exactly as upstream's system prompt shows it (OpenAI function-tool format).

    Args:
        tool: One of :data:`~sim_web.protocol.TOOL_NAMES`.

    Returns:
        ``{"type": "function", "function": {"name", "description", "parameters"}}`` (a fresh copy).

    Raises:
        ConfigError: For an unknown tool name.
    """
    if tool not in TOOL_NAMES:
        raise ConfigError(f"unknown tool {tool!r}; expected one of {TOOL_NAMES}")
    if tool == PYTHON_TOOL:  # the code travels in <code>, so the JSON arguments are empty
        return {
            "type": "function",
            "function": {
                "name": PYTHON_TOOL,
                "description": PYTHON_DESCRIPTION,
                "parameters": {"type": "object", "properties": {}, "required": []},
            },
        }
    schema = copy.deepcopy(_generated_schema(tool))
    props = schema["function"]["parameters"]["properties"]
    for name, prop in list(props.items()):
        extra = _ARRAY_EXTRAS.get((tool, name))
        if extra:  # rebuild in upstream's key order: type, items, minItems, description
            props[name] = {
                "type": prop["type"],
                "items": {**prop["items"], "description": extra["items_description"]},
                "minItems": extra["min_items"],
                "description": prop["description"],
            }
    return schema


def _default_python_runner(code: str) -> str:
    from sim_web.tools.python.sandbox import run_python

    return run_python(code)


class Toolbox(ToolMethods):
    """The enabled tools bound to an executor; turns a parsed :class:`Action` into observation text.

    Args:
        executor: Runs search / scholar / visit on the backends.
        enabled: Tool names to offer, any subset of :data:`~sim_web.protocol.TOOL_NAMES` (prompt order is upstream's).
        max_chars: Cap on one tool response; longer ones are cut with a marker.
        python_runner: ``code -> output text`` (default: :func:`sim_web.tools.python.sandbox.run_python`).
        k: Results per query for search and scholar (upstream: Serper's 10).
        max_items: Most queries / URLs accepted in one call.
        max_query_chars: Longest search / scholar query; longer ones are an agent error (``bad_argument``).
        max_goal_chars: Longest ``visit`` goal; longer ones are an agent error (``bad_argument``).

    Raises:
        ConfigError: For unknown tool names or out-of-range limits.
    """

    def __init__(
        self,
        executor: ToolExecutor,
        *,
        enabled: Sequence[str] = TOOL_NAMES,
        max_chars: int = 20_000,
        python_runner: Callable[[str], str] | None = None,
        k: int = 10,
        max_items: int = 10,
        max_query_chars: int = MAX_QUERY_CHARS,
        max_goal_chars: int = MAX_GOAL_CHARS,
    ) -> None:
        unknown = [t for t in enabled if t not in TOOL_NAMES]
        if unknown or not enabled:
            raise ConfigError(f"Toolbox.enabled must be a non-empty subset of {TOOL_NAMES}, got {tuple(enabled)}")
        if max_chars < 100 or k < 1 or max_items < 1 or max_query_chars < 1 or max_goal_chars < 1:
            raise ConfigError(
                f"Toolbox needs max_chars >= 100, k >= 1, max_items >= 1, max_query_chars >= 1, "
                f"max_goal_chars >= 1; got {max_chars}, {k}, {max_items}, {max_query_chars}, {max_goal_chars}"
            )
        self.executor = executor
        self.enabled = tuple(t for t in TOOL_NAMES if t in enabled)
        self.max_chars, self.k, self.max_items, self.max_query_chars = max_chars, k, max_items, max_query_chars
        self.max_goal_chars = max_goal_chars
        self._python = python_runner or _default_python_runner
        self._schemas = [tool_schema(t) for t in self.enabled]

    def schemas(self) -> list[dict[str, Any]]:
        """The enabled tools' schemas (OpenAI function-tool format, as the Tongyi prompt shows them)."""
        return copy.deepcopy(self._schemas)

    def call(self, action: Action) -> str:
        """Run a tool-call action and return its observation text (without ``<tool_response>``).

        Several calls in one action (``Action.calls``) give their responses joined so that
        :func:`~sim_web.protocol.formatting.format_tool_response` wraps each in its own block.
        Arguments and code are made valid Unicode first (lone surrogates become U+FFFD), so every
        observation can be encoded as UTF-8, whichever route the call came by (env, HTTP, TRL).

        Raises:
            ActionError: Agent mistakes: a disabled tool, missing or ill-typed arguments.
        """
        if action.calls:
            return MULTI_RESPONSE_JOINER.join(self.call(c) for c in action.calls)
        if action.kind != "tool_call" or not action.tool:
            raise ActionError(
                "no_action",
                "Expected a tool call, e.g.\n<tool_call>\n"
                '{"name": "search", "arguments": {"query": ["your query"]}}\n</tool_call>',
            )
        if action.tool not in self.enabled:
            raise unknown_tool(action.tool, self.enabled)
        if action.tool == PYTHON_TOOL:
            code = action.code if action.code is not None else action.arguments.get("code")
            code = valid_unicode(code) if isinstance(code, str) else code
            if not isinstance(code, str) or not code.strip():
                raise ActionError(
                    "missing_argument",
                    "[Python Interpreter Error]: Formatting error. Put the code after the "
                    "JSON, inside <code></code>, and print() what you want to see.",
                )
            return truncate(self._run_python(code), self.max_chars)
        args = validate_arguments(
            action.tool, valid_unicode_value(action.arguments), self._schemas, max_items=self.max_items
        )
        if "query" in args:
            check_queries(action.tool, args["query"], self.max_query_chars)
        if isinstance(args.get("goal"), str):
            check_goal(args["goal"], self.max_goal_chars)
        return truncate(self._execute(action.tool, args), self.max_chars)

    def _dispatch(self, tool: str, arguments: dict[str, Any], code: str | None = None) -> str:
        """The tool methods (``toolbox.search(query=[...])``, TRL) go through :meth:`call`'s checks."""
        return self.call(Action(kind="tool_call", tool=tool, arguments=arguments, code=code))

    def _execute(self, tool: str, arguments: dict[str, Any]) -> str:
        if tool == "search":
            return join_observations([self._one_search(q) for q in arguments["query"]])
        if tool == "google_scholar":
            return join_observations([self._one_scholar(q) for q in arguments["query"]])
        return format_visits([self._one_visit(u, arguments["goal"]) for u in arguments["url"]])

    def _one_search(self, query: str) -> str:
        try:
            return format_search(query, self.executor.search(query, self.k))
        except ToolUnavailableError as e:
            log.warning("search degraded: %s", e)
            return format_unavailable("search", query)

    def _one_scholar(self, query: str) -> str:
        try:
            return format_scholar(query, self.executor.scholar(query, self.k))
        except ToolUnavailableError as e:
            log.warning("google_scholar degraded: %s", e)
            return format_unavailable("scholar", query)

    def _one_visit(self, url: str, goal: str) -> VisitResult:
        try:
            return replace(self.executor.visit(url, goal), url=url, goal=goal)  # echo what the agent wrote
        except ToolUnavailableError as e:
            log.warning("visit degraded: %s", e)
            return VisitResult(url=url, goal=goal, ok=False)

    def _run_python(self, code: str) -> str:
        try:
            out = self._python(code)
        except Exception as e:  # the sandbox itself failed: report it to the model the way upstream does
            log.error("PythonInterpreter runner failed", exc_info=True)
            return f"[Python Interpreter Error]: {type(e).__name__}: {e}"
        return out if isinstance(out, str) else str(out)
