"""Search-based quality gates: answerable in the simulator, not answerable by one search, not a duplicate.

* :meth:`SearchGates.retrieval` plays an oracle searcher over the *simulator's own* tools
  (:class:`sim_web.backends.sim.SimBackend`, the results an agent sees): it resolves the
  question's entities bottom-up, leaves first, each with a query built only from what a solver
  knows at that point (the entity's noun phrase and facts from the question, the names of its
  neighbours already resolved, each with the words of the relation the question states between
  them, and its own name once the question or a visited neighbour page has shown it), and accepts a query when the entity's page is among the top ``k`` results.
  The question is answerable when every evidence page, the answer's included, is reached this
  way; the winning query of each entity is recorded (the records' ``clues[].query``).
* :meth:`SearchGates.shortcut`: the raw question as a query already returns the answer page
  at rank 1 (BM25 top-1), i.e. no research is needed.
* :class:`Deduper`: exact duplicates after normalisation, and the same answer asked from the
  same node set.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from training.synth.compose.constraints import NodeSpec, strip_article, walk
from training.synth.compose.naming import name_variants
from training.synth.extract.relations import relation_words


@dataclass
class Retrieval:
    """Outcome of the answerability check.

    Attributes:
        answerable: Every entity of the question (answer included) was reached by search.
        queries: Entity title -> the query whose top-``k`` results hold its page.
        missing: Entities no query reached.
        order: The order in which the entities were resolved.
        tries: Distinct queries tried in all (those that failed included): how much searching the
            question takes a solver that knows only what the question says.
    """

    answerable: bool
    queries: dict[str, str] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    order: list[str] = field(default_factory=list)
    tries: int = 0
    deps: dict[str, list[str]] = field(default_factory=dict)

    def searches_needed(self, title: str) -> int:
        """Searches it takes to reach ``title``'s page: its own winning query and, recursively, those of the
        entities that query needed (the names it used, or the pages whose visit showed its name)."""
        seen, todo = {title}, [title]
        while todo:
            for d in self.deps.get(todo.pop(), []):
                if d not in seen:
                    seen.add(d)
                    todo.append(d)
        return len(seen)


class SearchGates:
    """Answerability and shortcut checks through the simulator's search and visit tools.

    Args:
        search: ``query -> titles of the top-k result pages`` (see :func:`sim_search`).
        visit: ``(title, goal) -> evidence text`` of the page (see :func:`sim_visit`), or ``None``
            to resolve entities by search only.
    """

    def __init__(self, search: Callable[[str], list[str]], visit: Callable[[str, str], str] | None = None) -> None:
        self._search, self._visit = search, visit
        self._cache: dict[str, list[str]] = {}
        self._visits: dict[tuple[str, str], str] = {}
        self.searches = 0
        self.visits = 0

    def titles(self, query: str) -> list[str]:
        """Titles of the top-``k`` results for ``query`` (cached)."""
        query = " ".join(query.split())
        if query not in self._cache:
            self.searches += 1
            self._cache[query] = self._search(query) if query else []
        return self._cache[query]

    def evidence(self, title: str, goal: str) -> str:
        """What visiting ``title``'s page with ``goal`` shows (cached; ``""`` without a visit tool)."""
        if self._visit is None:
            return ""
        key = (title, goal)
        if key not in self._visits:
            self.visits += 1
            self._visits[key] = self._visit(title, goal)
        return self._visits[key]

    def shortcut(self, question: str, answer: str) -> bool:
        """Whether the question itself, as a search, returns the answer page first."""
        top = self.titles(question)
        return bool(top) and top[0] == answer

    def retrieval(self, root: NodeSpec, subgraph: nx.Graph, head: str = "") -> Retrieval:
        """Resolve every entity of the question by search, leaves first (see the module docstring).

        An entity is resolved when one of its queries returns its page in the top ``k``. A solver
        learns an entity's *name* from the question (a named entity) or from reading a resolved
        neighbour's page (a visit whose evidence names it); a known name is then searched,
        alone or with the names already found.

        Args:
            root: The answer's constraint tree.
            subgraph: The question's subgraph (its adjacency says which resolved names may help).
            head: The answer's type noun.
        """
        nodes = {n.entity: n for n in walk(root)}
        resolved: dict[str, str] = {}
        order: list[str] = []
        pending = sorted(nodes, key=lambda t: (-nodes[t].depth, t))
        progress = True
        tried: set[str] = set()
        deps: dict[str, list[str]] = {}
        while pending and progress:
            progress = False
            for title in list(pending):
                node, known = nodes[title], _known(subgraph, title, resolved)
                queries = self._queries(node, title == root.entity, head, known)
                queries += [
                    f"{c.entity} {relation_words(rel)}"
                    for rel, _, c in node.relations
                    if c.entity in resolved and relation_words(rel)
                ]
                if self._discovered(node, title == root.entity, head, known):
                    queries += [title] + [f"{title} {k}" for k in known]
                for q in dict.fromkeys(queries):
                    tried.add(" ".join(q.split()))
                    if title in self.titles(q):
                        own = q == title or q.startswith(title + " ")  # a name learnt from a neighbour's page
                        deps[title] = (
                            list(known)
                            if own and node.source != "title"
                            else [k for k in known if k.lower() in q.lower()]
                        )
                        resolved[title] = " ".join(q.split())
                        order.append(title)
                        pending.remove(title)
                        progress = True
                        break
        return Retrieval(not pending, resolved, pending, order, len(tried), deps)

    def reach(self, question: str, clues: list[str], answer: str) -> dict[str, Any]:
        """Where the answer page stands for the question as a query and for each single clue about the answer.

        Returns:
            ``{"top10_question": bool, "top10_clue": bool, "best_clue_rank": int | None}`` (ranks from 1,
            within the top ``k``).
        """
        ranks = [self.titles(c).index(answer) + 1 for c in clues if answer in self.titles(c)]
        return {
            "top10_question": answer in self.titles(question),
            "top10_clue": bool(ranks),
            "best_clue_rank": min(ranks) if ranks else None,
        }

    def _discovered(self, node: NodeSpec, is_answer: bool, head: str, known: list[str]) -> bool:
        """Whether visiting a resolved neighbour's page shows this entity's name."""
        if node.source == "title":
            return True
        goal = _goal(node, is_answer, head)
        names = [v.lower() for v in name_variants(node.entity)]
        return any(any(n in self.evidence(k, goal).lower() for n in names) for k in known)

    @staticmethod
    def _queries(node: NodeSpec, is_answer: bool, head: str, known: list[str]) -> list[str]:
        """Queries a solver could write from the question alone: the phrase, with facts, with the names found."""
        facts = " ".join(_fact_words(f.text) for f in node.facts)
        if is_answer:
            phrase = head if head not in ("", "entity") else ""
            out = [f"{phrase} {k}" for k in known] + ([f"{' '.join(known)} {phrase} {facts}"] if known else [])
        else:
            phrase = strip_article(node.identity.text) if node.identity and node.source != "title" else ""
            out = [phrase, f"{phrase} {facts}"] + [f"{phrase} {k}" for k in known]
        return [q for q in dict.fromkeys(" ".join(x.split()) for x in out) if q]


def _goal(node: NodeSpec, is_answer: bool, head: str) -> str:
    if is_answer or node.identity is None:
        return " ".join([head, *(_fact_words(f.text) for f in node.facts)]).strip() or node.entity
    return strip_article(node.identity.text)


def sim_search(backend: Any, k: int = 10) -> Callable[[str], list[str]]:
    """The simulator's result pages for a query, as titles (the ranking an agent's ``search`` sees).

    Args:
        backend: A :class:`~sim_web.backends.sim.SimBackend`; its
            :meth:`~sim_web.backends.sim.SimBackend.result_pages` is the one ranking both use.
        k: Result pages per search.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1 (results per search), got {k}")

    def search(query: str) -> list[str]:
        return [p.title for p in backend.result_pages(query, k)]

    return search


def sim_visit(backend: Any) -> Callable[[str, str], str]:
    """``(title, goal) -> evidence + summary`` of the simulator's visit tool on that page."""
    from wiki_index.types import title_to_url

    def visit(title: str, goal: str) -> str:
        r = backend.visit(title_to_url(title), goal)
        return f"{r.evidence}\n{r.summary}" if r.ok else ""

    return visit


def _known(g: nx.Graph, title: Hashable, resolved: dict[str, str]) -> list[str]:
    """Resolved neighbours of ``title`` in the subgraph, sorted."""
    return sorted(str(n) for n in g.adj[title] if n in resolved) if title in g else []


_FACT_NOISE = re.compile(
    r"\b(?:whose|with|in|the|a|an|of|about|between|and|is|early|mid|late|name|begins|letter|"
    r"starts|has|letters|words|long|single|word|that|before|after|was|mentions|event|article)\b"
)


def _fact_words(text: str) -> str:
    """The content words of a blurred fact (``"born in the late 1870s"`` -> ``"born 1870s"``)."""
    return " ".join(_FACT_NOISE.sub(" ", re.sub(r"[\"',;]", " ", text.lower())).split())


def normalize_question(q: str) -> str:
    """Lower-case word tokens joined by one space (for exact-duplicate detection)."""
    return " ".join(re.findall(r"\w+", q.lower()))


class Deduper:
    """Drops a question equal to an earlier one (after normalisation) or asking the same answer from the same nodes."""

    def __init__(self) -> None:
        self._texts: set[str] = set()
        self._shapes: set[tuple[str, tuple[str, ...]]] = set()
        self.dropped = 0

    def seen_text(self, question: str) -> bool:
        """Record a question text alone (a rewrite); ``True`` when that text was seen before."""
        text = normalize_question(question)
        if text in self._texts:
            self.dropped += 1
            return True
        self._texts.add(text)
        return False

    def seen(self, question: str, answer: str, nodes: tuple[str, ...] | list[str]) -> bool:
        """Record the question; ``True`` when it duplicates one seen before."""
        text, shape = normalize_question(question), (answer, tuple(sorted(nodes)))
        if text in self._texts or shape in self._shapes:
            self.dropped += 1
            return True
        self._texts.add(text)
        self._shapes.add(shape)
        return False
