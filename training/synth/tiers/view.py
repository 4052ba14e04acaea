"""What a search shows an agent, as the tiers' gates read it, and the names an answer goes by."""

from __future__ import annotations

from typing import Any

from training.synth.compose.naming import name_variants
from training.synth.extract.relations import Names
from wiki_index.types import bare_title


def aliases(src: Any, title: str) -> list[str]:
    """The other names of page ``title``: its redirects and its name variants."""
    pid = src.resolve(title)
    return sorted({a for a in (src.aliases(pid) if pid is not None else []) + name_variants(title) if a != title})


class ResultView:
    """What one search shows an agent: the top ``k`` result titles and their query-focused snippets (cached).

    Args:
        backend: A :class:`~sim_web.backends.sim.SimBackend` with the env's snippet length.
        k: Results per search.
    """

    def __init__(self, backend: Any, k: int) -> None:
        self._backend, self._k = backend, k
        self._cache: dict[str, list[tuple[str, str]]] = {}
        self.searches = 0

    def results(self, query: str) -> list[tuple[str, str]]:
        """``(title, snippet)`` of the top ``k`` results."""
        query = " ".join(query.split())
        if query not in self._cache:
            self.searches += 1
            self._cache[query] = [(r.title, r.snippet) for r in self._backend.search(query, self._k)] if query else []
        return self._cache[query]

    def titles(self, query: str) -> list[str]:
        """Titles of the top ``k`` results."""
        return [t for t, _ in self.results(query)]

    def shows(self, query: str, title: str) -> bool:
        """Whether the results name page ``title``: as a result, or in a snippet (its name as whole words)."""
        res = self.results(query)
        if any(t == title for t, _ in res):
            return True
        finder = Names({title, bare_title(title)})
        return any(finder.search(snip) is not None for _, snip in res)
