"""The exact observation strings of the Tongyi DeepResearch tools.

Models of the Tongyi DeepResearch / WebSailor family were trained on these strings, and the sim
and real backends must print the same bytes for the same results, so every format here follows
the upstream code (github.com/Alibaba-NLP/DeepResearch, ``inference/``) character for character:

* search: ``Search.google_search_with_serp`` and ``Search.call`` in ``inference/tool_search.py``;
* scholar: ``Scholar.google_scholar_with_serp`` and ``Scholar.call`` in ``inference/tool_scholar.py``;
* visit: ``Visit.readpage_jina`` and ``Visit.call`` in ``inference/tool_visit.py``;
* the ``<tool_response>`` wrapper: ``MultiTurnReactAgent._run`` in ``inference/react_agent.py``.

Upstream decides "field present" by ``key in page`` on Serper's JSON. Our records map an absent
field to ``None`` (``date``, ``source``, ``pdf_url``, ``snippet``, ...), so a ``None`` field is omitted
exactly as upstream omits a missing key, and an empty snippet (``""``) prints its empty line as upstream's
does. A reply without a result list prints "No results found" (an empty result list); one whose list was
empty prints upstream's "found 0 results" header (the result list ``[EMPTY_SEARCH]`` / ``[EMPTY_SCHOLAR]``).
"""

from __future__ import annotations

from collections.abc import Sequence

from sim_web.protocol.results import EMPTY_SCHOLAR, EMPTY_SEARCH, ScholarResult, SearchResult, VisitResult

#: Separator between the outputs of several queries / URLs in one call (all three tools).
OBSERVATION_SEPARATOR = "\n=======\n"
#: Upstream deletes this boilerplate from every search / scholar item.
VIDEO_BOILERPLATE = "Your browser can't play this video."
#: Visit evidence / summary when a page cannot be read (tool_visit.py).
INACCESSIBLE_EVIDENCE = "The provided webpage content could not be accessed. Please check the URL or file format."
INACCESSIBLE_SUMMARY = "The webpage content could not be processed, and therefore, no information is available."
#: What upstream prints when Serper cannot be reached after its retries (the degradation text).
SEARCH_UNAVAILABLE = "Google search Timeout, return None, Please try again later."
SCHOLAR_UNAVAILABLE = "Google Scholar Timeout, return None, Please try again later."
#: Marker appended when a tool response is cut to the length limit.
TRUNCATION_MARKER = "\n[... {n} characters truncated ...]"


def no_results(query: str) -> str:
    """The text upstream prints when a query returns nothing."""
    return f"No results found for '{query}'. Try with a more general query."


def _search_item(idx: int, r: SearchResult) -> str:
    date = "" if r.date is None else "\nDate published: " + r.date
    source = "" if r.source is None else "\nSource: " + r.source
    snippet = "" if r.snippet is None else "\n" + r.snippet
    return f"{idx}. [{r.title}]({r.link}){date}{source}\n{snippet}".replace(VIDEO_BOILERPLATE, "")


def format_search(query: str, results: Sequence[SearchResult]) -> str:
    """Format one query's web results as Tongyi's ``search`` tool does.

    Args:
        query: The query as the agent wrote it (echoed in the header).
        results: The results in rank order.

    Returns:
        ``A Google search for '{query}' found {n} results:\\n\\n## Web Results\\n`` followed by the
        items joined by blank lines, or the "No results found" text when ``results`` is empty
        (``[EMPTY_SEARCH]``: the header with 0 results).
    """
    if not results:
        return no_results(query)
    listed = [r for r in results if r != EMPTY_SEARCH]
    items = "\n\n".join(_search_item(i, r) for i, r in enumerate(listed, 1))
    return f"A Google search for '{query}' found {len(listed)} results:\n\n## Web Results\n" + items


def _scholar_item(idx: int, r: ScholarResult) -> str:
    link = "no available link" if r.pdf_url is None else "pdfUrl: " + r.pdf_url
    pub = "" if r.publication_info is None else "\npublicationInfo: " + r.publication_info
    date = "" if r.year is None else "\nDate published: " + str(r.year)
    cited = "" if r.cited_by is None else "\ncitedBy: " + str(r.cited_by)
    snippet = "" if r.snippet is None else "\n" + r.snippet
    return f"{idx}. [{r.title}]({link}){pub}{date}{cited}\n{snippet}".replace(VIDEO_BOILERPLATE, "")


def format_scholar(query: str, results: Sequence[ScholarResult]) -> str:
    """Format one query's scholar results as Tongyi's ``google_scholar`` tool does.

    Upstream prints only the PDF link (``pdfUrl: ...`` or ``no available link``), then the
    optional ``publicationInfo``, ``Date published`` (the year) and ``citedBy`` lines.

    Args:
        query: The query as the agent wrote it.
        results: The results in rank order.

    Returns:
        The observation text for this query (``[EMPTY_SCHOLAR]``: the header with 0 results).
    """
    if not results:
        return no_results(query)
    listed = [r for r in results if r != EMPTY_SCHOLAR]
    items = "\n\n".join(_scholar_item(i, r) for i, r in enumerate(listed, 1))
    return f"A Google scholar for '{query}' found {len(listed)} results:\n\n## Scholar Results\n" + items


def format_visit(result: VisitResult) -> str:
    """Format one page visit as Tongyi's ``visit`` tool does (before the final strip).

    Args:
        result: The visit result; ``ok=False`` prints the "could not be accessed" texts.

    Returns:
        ``The useful information in {url} for user goal {goal} as follows: \\n\\n`` then
        ``Evidence in page: \\n{evidence}\\n\\nSummary: \\n{summary}\\n\\n``.
    """
    evidence = result.evidence if result.ok else INACCESSIBLE_EVIDENCE
    summary = result.summary if result.ok else INACCESSIBLE_SUMMARY
    return (
        f"The useful information in {result.url} for user goal {result.goal} as follows: \n\n"
        f"Evidence in page: \n{evidence}\n\nSummary: \n{summary}\n\n"
    )


def join_observations(parts: Sequence[str]) -> str:
    """Join the outputs of several queries or URLs of one call with ``\\n=======\\n``."""
    return OBSERVATION_SEPARATOR.join(parts)


def format_visits(results: Sequence[VisitResult]) -> str:
    """The whole ``visit`` observation: pages joined, then stripped (``Visit.call`` strips)."""
    return join_observations([format_visit(r) for r in results]).strip()


def format_unavailable(tool: str, target: str, goal: str = "") -> str:
    """The degradation text for one query / URL whose backends all failed.

    It is what upstream prints when its own service fails, so a model sees a familiar outage
    message rather than a stack trace: the Serper timeout text for ``search`` / ``scholar``,
    and the "could not be accessed" block for ``visit`` (upstream's Jina-failure output).

    Args:
        tool: ``"search"``, ``"scholar"`` (or ``"google_scholar"``) or ``"visit"``.
        target: The query or URL.
        goal: The visit goal (``visit`` only).

    Returns:
        The text to print in place of this query's / URL's results.

    Raises:
        ValueError: For an unknown tool name.
    """
    if tool == "search":
        return SEARCH_UNAVAILABLE
    if tool in ("scholar", "google_scholar"):
        return SCHOLAR_UNAVAILABLE
    if tool == "visit":
        return format_visit(VisitResult(url=target, goal=goal, ok=False))
    raise ValueError(f"format_unavailable: expected tool 'search', 'scholar' or 'visit', got {tool!r}")


def format_tool_response(text: str) -> str:
    """Wrap a tool's output as the user message Tongyi's agent loop sends back.

    Args:
        text: The observation text.

    Returns:
        ``<tool_response>\\n{text}\\n</tool_response>``.
    """
    return "<tool_response>\n" + text + "\n</tool_response>"


def truncate(text: str, max_chars: int) -> str:
    """Cut ``text`` to at most ``max_chars`` characters, ending with a marker saying how much went.

    Args:
        text: Any text.
        max_chars: The limit (at least 64, so that the marker fits).

    Returns:
        ``text`` unchanged when short enough, else a prefix plus
        ``\\n[... N characters truncated ...]``, ``max_chars`` long at most.

    Raises:
        ValueError: If ``max_chars`` is below 64.
    """
    if max_chars < 64:
        raise ValueError(f"truncate: max_chars must be >= 64 to fit the marker, got {max_chars}")
    if len(text) <= max_chars:
        return text
    keep = max_chars - len(TRUNCATION_MARKER.format(n=len(text)))  # the count only shrinks
    return text[:keep] + TRUNCATION_MARKER.format(n=len(text) - keep)
