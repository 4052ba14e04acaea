"""The wire protocol, without I/O: errors, result types and the Backend protocol, action parsing, Tongyi formatting.

Everything above (backends, executor, tools, env, serve) speaks these types and strings; this
package imports nothing from them.
"""

from sim_web.protocol.actions import (
    NO_PYTHON_TOOLS,
    PYTHON_TOOL,
    TOOL_NAMES,
    Action,
    loads_lenient,
    parse_action,
    unknown_tool,
)
from sim_web.protocol.arguments import MAX_QUERY_CHARS, check_queries, valid_unicode, validate_arguments
from sim_web.protocol.errors import ACTION_ERROR_KINDS, ActionError, BackendError, SimWebError, ToolUnavailableError
from sim_web.protocol.formatting import (
    INACCESSIBLE_EVIDENCE,
    INACCESSIBLE_SUMMARY,
    OBSERVATION_SEPARATOR,
    SCHOLAR_UNAVAILABLE,
    SEARCH_UNAVAILABLE,
    format_scholar,
    format_search,
    format_tool_response,
    format_unavailable,
    format_visit,
    format_visits,
    join_observations,
    no_results,
    truncate,
)
from sim_web.protocol.results import Backend, ScholarResult, SearchResult, VisitResult

__all__ = [
    "ACTION_ERROR_KINDS",
    "INACCESSIBLE_EVIDENCE",
    "INACCESSIBLE_SUMMARY",
    "MAX_QUERY_CHARS",
    "OBSERVATION_SEPARATOR",
    "PYTHON_TOOL",
    "SCHOLAR_UNAVAILABLE",
    "SEARCH_UNAVAILABLE",
    "NO_PYTHON_TOOLS",
    "TOOL_NAMES",
    "Action",
    "ActionError",
    "Backend",
    "BackendError",
    "ScholarResult",
    "SearchResult",
    "SimWebError",
    "ToolUnavailableError",
    "VisitResult",
    "check_queries",
    "format_scholar",
    "format_search",
    "format_tool_response",
    "format_unavailable",
    "format_visit",
    "format_visits",
    "join_observations",
    "loads_lenient",
    "no_results",
    "parse_action",
    "truncate",
    "unknown_tool",
    "valid_unicode",
    "validate_arguments",
]
