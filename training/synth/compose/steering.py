"""Where the synthesis spends its drafts: which targets of a subgraph come first, which uncertainty types the set is
short of, and how a draft that one search answers is written again.

* :func:`target_key` orders a subgraph's targets: while the set is short of dates, targets with a date first (a
  temporal order needs the answer's date); then those whose relations the pages around them state rather than their
  own page (:func:`~training.synth.graph.orbits.own_share`), so a question reads facts off other pages.
* :func:`short_types` lists the uncertainty types below their floor (:data:`~training.synth.compose.coverage.FLOORS` plus a
  margin) in the questions accepted so far; the generator then uses their optional clues whenever the facts allow.
* :func:`rewrites` lists the versions a shortcut draft is written again in, ending with versions that leave out one
  branch of the answer's tree (the named neighbour first: its name is what the search matched).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterator
from typing import Any

from training.synth.compose.clues import UncertaintyType
from training.synth.compose.coverage import FLOORS, dated
from training.synth.compose.naming import name_variants
from training.synth.graph.orbits import own_share
from training.synth.graph.sampling import Subgraph, without_branch

U = UncertaintyType
#: Branches of the answer's tree a shortcut draft is written again without, at most.
MAX_BRANCH_DROPS = 2


def target_key(
    entities: dict[str, Any], sub: Subgraph, steer: Collection[UncertaintyType], other_pages_first: bool
) -> Callable[[Any], tuple] | None:
    """The sort key of a subgraph's targets (see the module docstring), or ``None`` to keep the drawn order."""
    dates = {U.TEMPORAL_ORDER, U.FUZZY_DATE} & set(steer)
    if not dates and not other_pages_first:
        return None

    def key(t: Any) -> tuple:
        ent = entities.get(t) if isinstance(t, str) else None
        return (
            bool(dates) and not (ent is not None and dated(ent)),
            own_share(sub.graph, t) if other_pages_first else 0.0,
        )

    return key


def short_types(records: list[dict[str, Any]], margin: float) -> frozenset[UncertaintyType]:
    """The uncertainty types whose share of ``records`` and the next question is below their floor plus ``margin``."""
    n = len(records) + 1
    have = Counter(t for r in records for t in r["uncertainty_types"])
    return frozenset(U(t) for t, floor in FLOORS.items() if have[t] < (floor + margin) * n)


def rewrites(sub: Subgraph, target: Any, question: str) -> Iterator[tuple[str, bool, Subgraph]]:
    """The versions a shortcut draft is written again in, as ``(tag, quote_answer, subgraph)``.

    Every related entity described; then without the optional facts up front and a leaf relation quoted from the
    answer's own lead (twice, with two seeds); then without one branch of the answer's tree (a neighbour and what only
    it reaches), neighbours named in ``question`` and relations of the answer's own page first, for at most
    :data:`MAX_BRANCH_DROPS` branches.
    """
    yield ":described", True, sub
    yield ":plain", False, sub
    yield ":again", False, sub
    g = sub.graph

    def revealing(c: Any) -> tuple:
        named = any(v in question for v in name_variants(str(c)))
        return (not named, g.edges[target, c].get("source_page") != target, str(c))

    tried = 0
    for c in sorted(g.adj[target], key=revealing):
        if tried == MAX_BRANCH_DROPS:
            return
        smaller = without_branch(sub, target, c)
        if smaller is not None:
            tried += 1
            yield f":without:{c}", False, smaller
