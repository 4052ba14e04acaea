"""Automorphism orbits of small subgraphs and even target selection over them (SailorFog-QA-V2, step 3).

Two nodes are in the same orbit when an automorphism of the graph maps one onto the other:
questions that target either are structurally the same question. WebSailor-V2 spreads
targets over orbits so that a subgraph yields questions about its centre, its middle and its
leaves, not only the easy end of a chain.

:func:`node_orbits` is exact for small graphs (``<= max_exact_nodes``): it enumerates
automorphisms with :class:`networkx.algorithms.isomorphism.GraphMatcher` and merges each node
with its images. When the graph has more automorphisms than ``max_automorphisms`` (a large
clique or star) the enumeration stops and each remaining pair of candidates (nodes with the
same WL colour not yet known to share an orbit) is settled by one anchored isomorphism test
(``u`` in one copy and ``v`` in the other get a unique label), which is still exact.
Bigger graphs fall back to the stable 1-WL colour classes (colour refinement): every orbit lies
inside one colour class, but a class can join several orbits (in a regular graph every node
gets the same colour: the Frucht graph has 12 orbits and one class), so the fallback is an
approximation that errs towards merging.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

import networkx as nx
from networkx.algorithms.isomorphism import GraphMatcher
from networkx.utils import UnionFind

if TYPE_CHECKING:
    from training.synth.graph.sampling import Subgraph

log = logging.getLogger(__name__)


def _key(v: Hashable) -> tuple[int, object]:
    return (0, v) if isinstance(v, (int, float)) else (1, repr(v))


def wl_colour_classes(g: nx.Graph) -> list[frozenset]:
    """The stable 1-WL colour refinement of ``g`` (initial colour = degree), as node classes.

    Returns:
        The classes, ordered by their smallest node.
    """
    colour = {v: g.degree(v) for v in g}
    n_classes = len(set(colour.values()))
    while True:
        sig = {v: (colour[v], tuple(sorted(colour[u] for u in g.adj[v]))) for v in g}
        ids = {s: i for i, s in enumerate(sorted(set(sig.values())))}
        colour = {v: ids[sig[v]] for v in g}
        if len(ids) == n_classes:
            break
        n_classes = len(ids)
    groups: dict[int, set] = {}
    for v, c in colour.items():
        groups.setdefault(c, set()).add(v)
    return _ordered(groups.values())


def _ordered(groups) -> list[frozenset]:  # noqa: ANN001
    return sorted((frozenset(s) for s in groups), key=lambda s: min(_key(v) for v in s))


def _anchored_automorphism(g: nx.Graph, u: Hashable, v: Hashable) -> bool:
    """Whether some automorphism of ``g`` maps ``u`` to ``v``."""
    g1, g2 = g.copy(), g.copy()
    nx.set_node_attributes(g1, 0, "anchor")
    nx.set_node_attributes(g2, 0, "anchor")
    g1.nodes[u]["anchor"] = 1
    g2.nodes[v]["anchor"] = 1
    return nx.vf2pp_is_isomorphic(g1, g2, node_label="anchor")


def node_orbits(g: nx.Graph, *, max_exact_nodes: int = 10, max_automorphisms: int = 256) -> list[frozenset]:
    """Partition the nodes of ``g`` into automorphism orbits.

    Args:
        g: An undirected graph.
        max_exact_nodes: Graphs up to this many nodes get exact orbits; bigger ones the 1-WL
            colour classes (see the module docstring for what that approximation means).
        max_automorphisms: Stop enumerating automorphisms after this many and finish with
            anchored isomorphism tests (still exact).

    Returns:
        The orbits as frozensets, ordered by their smallest node; ``[]`` for an empty graph.
    """
    if g.number_of_nodes() == 0:
        return []
    if g.number_of_nodes() > max_exact_nodes:
        return wl_colour_classes(g)
    uf = UnionFind(g)
    classes = wl_colour_classes(g)  # every orbit lies inside one class: stop once they are all merged
    count, complete = 0, True
    for mapping in GraphMatcher(g, g).isomorphisms_iter():
        for a, b in mapping.items():
            uf.union(a, b)
        count += 1
        if count % 64 == 0 and all(len({uf[v] for v in c}) == 1 for c in classes):
            break
        if count >= max_automorphisms:
            complete = False
            break
    if not complete:
        log.debug("%d automorphisms enumerated without finishing; settling orbits by anchored tests", count)
        for cls in classes:
            members = sorted(cls, key=_key)
            for i, a in enumerate(members):
                for b in members[i + 1 :]:
                    if uf[a] != uf[b] and _anchored_automorphism(g, a, b):
                        uf.union(a, b)
    return _ordered(uf.to_sets())


def pick_targets(subgraph: Subgraph | nx.Graph, n: int, rng: random.Random | int = 0) -> list[Hashable]:
    """Pick up to ``n`` distinct target nodes spread evenly over the automorphism orbits.

    Orbits are visited round-robin in a random order, one node each per round (a random member
    each time), so that a path of five yields its middle, its second nodes and its ends before
    any orbit is used twice.

    Args:
        subgraph: A sampled :class:`~training.synth.graph.sampling.Subgraph` or a plain graph.
        n: How many targets.
        rng: Random generator or seed.

    Returns:
        Up to ``n`` nodes (fewer only when the graph has fewer nodes).
    """
    rng = rng if isinstance(rng, random.Random) else random.Random(rng)
    g = subgraph if isinstance(subgraph, nx.Graph) else subgraph.graph
    orbits = [sorted(o, key=_key) for o in node_orbits(g)]
    rng.shuffle(orbits)
    for members in orbits:
        rng.shuffle(members)
    out: list[Hashable] = []
    depth = 0
    while len(out) < n and any(depth < len(o) for o in orbits):
        for members in orbits:
            if depth < len(members) and len(out) < n:
                out.append(members[depth])
        depth += 1
    return out


def own_share(g: nx.Graph, node: Hashable) -> float:
    """The share of ``node``'s edges in ``g`` that its own page states (``source_page`` is ``node``): a question about
    it would quote its own page, which one search for those words finds."""
    edges = [g.edges[node, other] for other in g.adj[node]]
    return sum(e.get("source_page") == node for e in edges) / len(edges) if edges else 0.0


def targets_at_depth(
    sub: Any, k: int, min_hops: int, rng: random.Random, *, key: Callable[[Hashable], Any] | None = None
) -> list:
    """Up to ``k`` targets of a subgraph (distinct orbits first, :func:`pick_targets`) whose eccentricity is at least
    ``min_hops``: a question about them chains at least that many relations (1: every target, as drawn).

    ``key``: the targets sorted by it (ties in the drawn order), e.g. :func:`own_share` to ask first about targets
    whose relations the pages around them state, so a question reads facts off those pages, not the answer's own."""
    g = sub if isinstance(sub, nx.Graph) else sub.graph
    if min_hops <= 1 and key is None:
        return pick_targets(sub, k, rng)
    drawn = pick_targets(sub, g.number_of_nodes(), rng)
    if key is not None:
        drawn.sort(key=key)
    if min_hops > 1:
        drawn = [t for t in drawn if max(nx.single_source_shortest_path_length(g, t).values()) >= min_hops]
    return drawn[:k]


def interleave(subs: list, rng: random.Random) -> list[tuple[int, Any]]:
    """Subgraphs round-robin over their (structure, size) buckets, each bucket shuffled."""
    buckets: dict[tuple[str, int], list[tuple[int, Any]]] = {}
    for i, s in enumerate(subs):
        buckets.setdefault((s.structure.value, s.size), []).append((i, s))
    lists = [buckets[b] for b in sorted(buckets)]
    for b in lists:
        rng.shuffle(b)
    out = []
    for depth in range(max(map(len, lists), default=0)):
        out.extend(b[depth] for b in lists if depth < len(b))
    return out
