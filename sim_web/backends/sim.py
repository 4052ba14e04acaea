"""The simulation backend: Google-like search, scholar and page visits over a ``wiki_index`` index.

Result links are real Wikipedia URLs, so the same trajectories replay against the real web.
Everything here is deterministic: same index, same call, same result.
"""

from __future__ import annotations

from dataclasses import dataclass

from sim_web.backends.extract import bm25_rank, snippet, summarize, top_indices
from sim_web.protocol.results import ScholarResult, SearchResult, VisitResult
from simweb_core.errors import ConfigError
from wiki_index.parse.text import split_sentences
from wiki_index.search.index import MODES, WikiIndex
from wiki_index.types import Passage, title_to_url, url_to_title


@dataclass(frozen=True)
class SimConfig:
    """Settings of the simulated web.

    Attributes:
        mode: Retrieval mode: ``bm25``, ``dense`` or ``hybrid``.
        depth: Passages retrieved per result page wanted (results are one per page, as on Google).
        snippet_chars: Maximum snippet length.
        evidence_passages: Passages of a visited page quoted as evidence.
        summary_sentences: Sentences in the extractive summary.
        max_evidence_chars: Cap on the evidence text of one page.
    """

    mode: str = "bm25"
    depth: int = 3
    snippet_chars: int = 240
    evidence_passages: int = 3
    summary_sentences: int = 3
    max_evidence_chars: int = 3000

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"SimConfig.mode must be one of {MODES}, got {self.mode!r}")
        if self.depth < 1 or self.evidence_passages < 1 or self.summary_sentences < 1:
            raise ConfigError("SimConfig.depth, evidence_passages and summary_sentences must be >= 1")


class SimBackend:
    """A :class:`sim_web.protocol.results.Backend` over a built index.

    Args:
        index: The opened index (``WikiIndex.from_dir(...)``).
        config: Retrieval and extraction settings.
    """

    name = "sim"
    #: In-process and deterministic: the executor calls it directly, without a timeout thread.
    inline = True

    def __init__(self, index: WikiIndex, config: SimConfig = SimConfig()) -> None:
        self.index = index
        self.config = config

    def result_pages(self, query: str, k: int) -> list[Passage]:
        """The ranked result pages for ``query``: the best passage of each of the top ``k`` pages.

        A navigational query, one that names a page exactly (its title or a redirect, case
        aside), puts that page first, as a web search engine does: BM25 over ~100-word
        passages alone ranks "Folk religion" above "Religion" for the query ``Religion``.
        The rest is the retrieval mode's ranking, one result per page (``k * depth`` passages
        are read, more when a few long pages fill them).
        """
        nav = self.index.titles.lookup(query)
        depth = k * self.config.depth
        while True:  # a long article can fill the first k * depth passages: look deeper, up to 64x
            found = self.index.top_pages(query, depth, k, self.config.mode, first=nav)
            if found.hits < depth or depth >= 64 * k * self.config.depth or found.pages >= k:
                break
            depth *= 4
        pages = found.passages
        if nav is not None and (not pages or pages[0].page_id != nav):
            lead = self.index.passages(nav)[:1]
            pages = (lead + pages)[:k]
        return pages

    def search(self, query: str, k: int = 10) -> list[SearchResult]:
        """Top ``k`` pages for ``query``, one result per page with a query-focused snippet."""
        return [
            SearchResult(
                title=p.title, link=title_to_url(p.title), snippet=snippet(p.text, query, self.config.snippet_chars)
            )
            for p in self.result_pages(query, k)
        ]

    def scholar(self, query: str, k: int = 10) -> list[ScholarResult]:
        """Scholar-style results over the same corpus.

        Only fields the corpus really has are filled: the title, the page link and a snippet.
        There is no PDF, year or citation count in Wikipedia, so those stay ``None`` (and
        the formatter omits them) rather than being invented.
        """
        return [
            ScholarResult(
                title=p.title,
                link=title_to_url(p.title),
                publication_info="Wikipedia",
                snippet=snippet(p.text, query, self.config.snippet_chars),
            )
            for p in self.result_pages(query, k)
        ]

    def visit(self, url: str, goal: str) -> VisitResult:
        """Read the page at ``url`` and extract the evidence and a summary for ``goal``.

        A non-Wikipedia URL or a page not in the index gives ``ok=False`` (the tool prints the
        Tongyi "could not be accessed" text).
        """
        title = url_to_title(url)
        store = self.index.store
        pid = store.resolve(title) if title else None
        if pid is None:
            return VisitResult(url=url, goal=goal, ok=False)
        passages = self.index.passages(pid)
        if not passages:
            return VisitResult(url=url, goal=goal, ok=False)
        scores = bm25_rank(goal, [p.contents for p in passages])
        chosen = [passages[i] for i in top_indices(scores, self.config.evidence_passages)]
        if not any(scores):  # nothing matches the goal: the lead is the best evidence
            chosen = passages[: self.config.evidence_passages]
        evidence = "\n\n".join(f"[{p.section}] {p.text}" if p.section else p.text for p in chosen)
        if len(evidence) > self.config.max_evidence_chars:
            evidence = evidence[: self.config.max_evidence_chars].rsplit(" ", 1)[0] + " ..."
        sentences = [s for p in chosen for s in split_sentences(p.text)]
        summary = summarize(sentences, goal, self.config.summary_sentences)
        return VisitResult(url=url, goal=goal, ok=True, evidence=evidence, summary=f"{passages[0].title}: {summary}")
