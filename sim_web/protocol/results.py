"""Structured tool results and the backend protocol that produces them.

A backend (the Wikipedia simulation, Serper + Jina, a remote tool server) returns these records;
:mod:`sim_web.protocol.formatting` turns them into the exact Tongyi DeepResearch observation strings, so
every backend prints byte-identical text for the same results.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class SearchResult:
    """One organic web result (Serper's ``organic[]`` item).

    Attributes:
        title: Page title.
        link: Page URL.
        snippet: Text shown under the link; ``None`` when the engine gave none (``""``: it gave an empty one,
            which Tongyi prints as an empty line).
        date: Publication date as the engine prints it (``None``: not shown).
        source: Publisher / site name (``None``: not shown).
    """

    title: str
    link: str
    snippet: str | None = None
    date: str | None = None
    source: str | None = None


@dataclass(frozen=True)
class ScholarResult:
    """One Google Scholar result (Serper's ``/scholar`` ``organic[]`` item).

    Attributes:
        title: Publication title.
        pdf_url: Direct PDF link (``pdfUrl``), the only link Tongyi prints.
        link: Landing-page link (kept for clients; Tongyi's formatter does not print it).
        publication_info: Authors / venue line (``publicationInfo``).
        year: Publication year.
        cited_by: Citation count (``citedBy``), as the engine gave it (a number, or text such as ``"1,234"``).
        snippet: Abstract excerpt; ``None`` when none (``""``: an empty one, printed as an empty line).
    """

    title: str
    pdf_url: str | None = None
    link: str | None = None
    publication_info: str | None = None
    year: int | str | None = None
    cited_by: int | str | None = None
    snippet: str | None = None


#: Stands alone in a result list for a reply that listed zero results (Serper's ``"organic": []``), which
#: Tongyi prints as a "found 0 results" header; an empty list is a reply that listed nothing ("No results found").
EMPTY_SEARCH = SearchResult(title="", link="")
#: The scholar counterpart of :data:`EMPTY_SEARCH`.
EMPTY_SCHOLAR = ScholarResult(title="")


@dataclass(frozen=True)
class VisitResult:
    """What a page visit produced for a goal.

    Attributes:
        url: The URL visited.
        goal: The agent's stated goal for the visit.
        ok: ``False`` for an unknown, unreachable or unreadable page (the formatter then prints
            Tongyi's "could not be accessed" evidence and summary).
        evidence: Goal-relevant excerpts of the page.
        summary: A short summary of the evidence for the goal.
    """

    url: str
    goal: str
    ok: bool
    evidence: str = ""
    summary: str = ""


@runtime_checkable
class Backend(Protocol):
    """A source of search, scholar and visit results.

    Implementations raise :class:`sim_web.protocol.errors.BackendError` (with ``retryable`` set) when a
    call fails; an unknown or inaccessible page is not a failure but ``VisitResult(ok=False)``.
    ``name`` identifies the backend in cache keys and stats.
    """

    name: str

    def search(self, query: str, k: int = 10) -> list[SearchResult]:
        """Top ``k`` web results for ``query``."""
        ...

    def scholar(self, query: str, k: int = 10) -> list[ScholarResult]:
        """Top ``k`` scholar results for ``query``."""
        ...

    def visit(self, url: str, goal: str) -> VisitResult:
        """Read ``url`` and extract evidence and a summary for ``goal``."""
        ...
