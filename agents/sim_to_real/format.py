"""The Tongyi observation grammar, as a checker: does every tool response parse as Tongyi's tools print it?

A model of the Tongyi DeepResearch / WebSailor family was trained on the exact strings of its tools
(:mod:`sim_web.protocol.formatting`), so a sim-to-real comparison first checks that both backends
print them. :func:`check_observation` parses one ``<tool_response>`` against the grammar of the tool
that was called and says which form it took (results, no results, the outage text, a page, an
unreadable page, the env's own error message) or why it does not parse; :func:`check_records` runs
it over every observation of a set of trajectory records.

Example:
    >>> check_observation("search", "<tool_response>\\nNo results found for 'x'. Try with a more general query.\\n</tool_response>")
    ('no_results', None)
    >>> check_observation("visit", "<tool_response>\\nsomething else\\n</tool_response>")[1]
    'visit part 1 is not "The useful information in {url} for user goal {goal} as follows: ..."'
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import Any

from sim_web.protocol.actions import parse_action
from sim_web.protocol.errors import ActionError
from sim_web.protocol.formatting import (
    INACCESSIBLE_EVIDENCE,
    OBSERVATION_SEPARATOR,
    SCHOLAR_UNAVAILABLE,
    SEARCH_UNAVAILABLE,
    TRUNCATION_MARKER,
    format_tool_response,
    no_results,
)

# the wrapper, the truncation marker and the no-results text, read off the formatter that writes them
WRAP_OPEN, WRAP_CLOSE = format_tool_response("\0").split("\0")
_TRUNCATED = re.compile(re.escape(TRUNCATION_MARKER).replace(re.escape("{n}"), r"\d+") + "$")
_NO_RESULTS = re.compile(re.escape(no_results("\0")).replace(re.escape("\0"), ".*"), re.DOTALL)
_HEADERS = {
    "search": (
        re.compile(r"A Google search for '.*' found (\d+) results:\n\n## Web Results\n", re.DOTALL),
        SEARCH_UNAVAILABLE,
        ("Date published: ", "Source: "),
    ),
    "google_scholar": (
        re.compile(r"A Google scholar for '.*' found (\d+) results:\n\n## Scholar Results\n", re.DOTALL),
        SCHOLAR_UNAVAILABLE,
        ("publicationInfo: ", "Date published: ", "citedBy: "),
    ),
}
_VISIT = re.compile(
    r"The useful information in \S+ for user goal .* as follows: \n\nEvidence in page: \n(.*)\n\nSummary: \n.*",
    re.DOTALL,
)
MAX_EXAMPLES = 5


def _item_problem(tool: str, i: int, item: str) -> str | None:
    """Why one numbered result item does not parse (``None``: it does)."""
    lines = item.split("\n")
    link = r"(?:pdfUrl: \S.*|no available link)" if tool == "google_scholar" else r"\S+"
    if not re.fullmatch(rf"{i}\. \[.*\]\({link}\)", lines[0]):
        return f"{tool} item {i} does not start with '{i}. [title](link)': {lines[0][:80]!r}"
    optional = _HEADERS[tool][2]
    k = 1
    while k < len(lines) and lines[k].startswith(optional):
        k += 1
    if k >= len(lines) or lines[k] != "":
        return f"{tool} item {i}: after the title line and the {'/'.join(o.strip(': ') for o in optional)} lines, a blank line must come"
    return None


def _results_problem(tool: str, part: str) -> tuple[str, str | None]:
    """The form of one query's search / scholar output and why it does not parse."""
    header, unavailable, _ = _HEADERS[tool]
    if part == unavailable:
        return "unavailable", None
    if _NO_RESULTS.fullmatch(part):
        return "no_results", None
    m = header.match(part)
    if not m:
        return (
            "invalid",
            f"{tool} output starts with neither its header, the no-results text nor the outage text: {part[:80]!r}",
        )
    n, items, pos = int(m.group(1)), part[m.end() :], 0
    for i in range(1, n + 1):
        if i > 1:
            pos = items.find(f"\n\n{i}. [", pos)
            if pos < 0:
                return "invalid", f"{tool} header says {n} results, item {i} is missing"
            pos += 2
        end = items.find(f"\n\n{i + 1}. [", pos) if i < n else len(items)
        problem = _item_problem(tool, i, items[pos : end if end >= 0 else len(items)])
        if problem:
            return "invalid", problem
    return "results", None


def _visit_problem(part: str, i: int) -> tuple[str, str | None]:
    m = _VISIT.fullmatch(part)
    if not m:
        return (
            "invalid",
            f'visit part {i} is not "The useful information in {{url}} for user goal {{goal}} as follows: ..."',
        )
    return ("unreadable" if m.group(1) == INACCESSIBLE_EVIDENCE else "page"), None


def check_observation(tool: str | None, observation: str) -> tuple[str, str | None]:
    """Parse one observation against the Tongyi grammar of ``tool``.

    Args:
        tool: The tool the action called (``None`` when the action was not a valid tool call).
        observation: The user message the env returned (``<tool_response>\\n...\\n</tool_response>``).

    Returns:
        ``(form, problem)``: the form it took (``results``, ``no_results``, ``unavailable``, ``page``,
        ``unreadable``, ``python``, ``env_error``; several queries or URLs join their forms with ``+``)
        and ``None``, or ``("invalid", why)``.
    """
    if not (observation.startswith(WRAP_OPEN) and observation.endswith(WRAP_CLOSE)):
        return "invalid", "not wrapped in <tool_response>\\n...\\n</tool_response>"
    body = observation[len(WRAP_OPEN) : -len(WRAP_CLOSE)]
    if body.startswith("Error: "):
        return "env_error", None
    if tool == "PythonInterpreter":
        return "python", None
    truncated = _TRUNCATED.search(body)
    if truncated:  # only what survived the cut is checked: the first part's header
        body = body[: truncated.start()].split(OBSERVATION_SEPARATOR)[0]
        if tool == "visit":
            return (
                ("truncated", None)
                if body.startswith("The useful information in ")
                else ("invalid", "truncated visit without its header")
            )
        header = _HEADERS[tool][0] if tool in _HEADERS else None
        return (
            ("truncated", None)
            if header is not None and header.match(body)
            else ("invalid", f"truncated {tool} without its header")
        )
    if tool not in ("search", "google_scholar", "visit"):
        return "invalid", f"a tool response to an action that called no known tool ({tool!r})"
    forms = []
    for i, part in enumerate(body.split(OBSERVATION_SEPARATOR), 1):
        form, problem = _visit_problem(part, i) if tool == "visit" else _results_problem(tool, part)
        if problem:
            return form, problem
        forms.append(form)
    return "+".join(sorted(set(forms))), None


def _called_tool(action: str) -> str | None:
    try:
        act = parse_action(action)
    except ActionError:
        return None
    return act.tool if act.kind == "tool_call" else None


def observations(record: dict[str, Any]) -> Iterable[tuple[int, str | None, str]]:
    """``(turn, tool, observation)`` for every tool response of a trajectory record (from its ``messages``)."""
    msgs: Sequence[dict[str, str]] = record.get("messages") or []
    turn = 0
    for prev, msg in pairwise(msgs[2:]):
        if prev["role"] == "assistant" and msg["role"] == "user":
            turn += 1
            yield turn, _called_tool(prev["content"]), msg["content"]


def check_records(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Check every observation of ``records``.

    Returns:
        ``{"observations", "parsed", "passed", "forms": {form: count}, "by_tool": {tool: count},
        "failures": [{"key", "turn", "tool", "problem", "excerpt"}, ...]}`` (at most ``MAX_EXAMPLES`` failures
        listed; ``failed`` counts them all).
    """
    forms: Counter[str] = Counter()
    tools: Counter[str] = Counter()
    failures: list[dict[str, Any]] = []
    n = failed = 0
    for rec in records:
        for turn, tool, obs in observations(rec):
            n += 1
            tools[tool or "none"] += 1
            form, problem = check_observation(tool, obs)
            forms[form] += 1
            if problem:
                failed += 1
                if len(failures) < MAX_EXAMPLES:
                    failures.append(
                        {"key": rec.get("key"), "turn": turn, "tool": tool, "problem": problem, "excerpt": obs[:300]}
                    )
    return {
        "observations": n,
        "parsed": n - failed,
        "failed": failed,
        "passed": failed == 0,
        "forms": dict(sorted(forms.items())),
        "by_tool": dict(sorted(tools.items())),
        "failures": failures,
    }
