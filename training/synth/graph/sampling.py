"""Random-walk subgraph sampling with Weisfeiler-Lehman structural dedup (SailorFog-QA-V2, step 2).

A question is synthesised from a small connected subgraph of the knowledge graph: its shape
(path, star, tree, cycle, dense core) decides how the clues chain and intersect. The sampler
draws node sets with random walks that may jump back to any visited node (so they grow
bushy trees and cores, not only paths), takes the induced subgraph or a random spanning part
of it (a spanning tree, possibly with some extra edges), and keeps a sample when

* it is connected and not a duplicate of an earlier sample (same nodes and edges);
* its isomorphism class (of the *unlabelled* structure) has room: classes are found with
  :func:`networkx.weisfeiler_lehman_graph_hash`, which is *not* a complete isomorphism test
  (e.g. a 6-cycle and two triangles, or decalin and bicyclopentyl, get the same hash), so every
  hash match is confirmed with :func:`networkx.is_isomorphic` and a mismatch opens a new class
  (counted as a WL collision);
* its (structure, size) bucket is under quota, so structures and sizes stay balanced.
  Samples over quota go to a bounded reserve that fills the buckets that cannot be filled
  (a forest has no cycles) once the walk stalls.

Every try costs O(k^2) for a subgraph of k nodes plus the WL hash, and the number of tries is
bounded by ``max_tries`` (linear in ``n``), so sampling is linear in the number of samples.
Randomness comes only from the ``random.Random`` passed in; nodes and neighbours are visited in
sorted order, so a seed gives the same samples on every run.
"""

from __future__ import annotations

import heapq
import logging
import math
import random
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import networkx as nx
from networkx.utils import UnionFind

from training.synth.graph.kg import KnowledgeGraph, edge_rank
from training.synth.graph.structures import (
    Structure,
    StructureRegistry,
    classify_structure,
    feasible_buckets,
    is_connected_indexed,
    sorted_nodes,
)

__all__ = [
    "SamplingReport",
    "Structure",
    "StructureRegistry",
    "Subgraph",
    "classify_structure",
    "feasible_buckets",
    "sample_subgraphs",
    "sample_subgraphs_with_report",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class Subgraph:
    """A sampled connected subgraph.

    Attributes:
        nodes: Node ids, sorted.
        edges: Edges as ``(u, v)`` pairs, each and all sorted.
        structure: Its :class:`Structure`.
        wl_hash: WL hash of the unlabelled structure.
        iso_class: Isomorphism class id within the sampling run.
        graph: The subgraph with the knowledge graph's node and edge attributes (copied).
    """

    nodes: tuple[Hashable, ...]
    edges: tuple[tuple[Hashable, Hashable], ...]
    structure: Structure
    wl_hash: str
    iso_class: int
    graph: nx.Graph = field(repr=False)

    @property
    def size(self) -> int:
        """Number of nodes."""
        return len(self.nodes)


@dataclass
class SamplingReport:
    """Counts from one :func:`sample_subgraphs_with_report` run."""

    tries: int = 0
    accepted: int = 0
    too_small: int = 0
    disconnected: int = 0
    duplicate: int = 0
    class_full: int = 0
    over_quota: int = 0
    from_reserve: int = 0
    stalled: bool = False
    classes: int = 0
    wl_collisions: int = 0
    buckets: dict[tuple[str, int], int] = field(default_factory=dict)


@dataclass(frozen=True)
class _Draft:
    nodes: tuple
    edges: tuple
    structure: Structure
    wl_hash: str
    iso_class: int


class _Walker:
    """Random walks with jumps over a graph whose adjacency is sorted lazily (only nodes touched)."""

    def __init__(self, g: nx.Graph, rng: random.Random, restart_prob: float, typed_prob: float = 0.0) -> None:
        self.g, self.rng, self.restart, self.typed_prob = g, rng, restart_prob, typed_prob
        self.starts = [v for v in sorted_nodes(g.nodes) if g.degree(v) > 0]
        self._adj: dict[Hashable, list] = {}
        self._typed: dict[Hashable, list] = {}
        self.typed_starts = [v for v in self.starts if self.typed(v)] if typed_prob else []

    def adj(self, v: Hashable) -> list:
        if v not in self._adj:
            self._adj[v] = sorted_nodes(self.g.adj[v])
        return self._adj[v]

    def typed(self, v: Hashable) -> list:
        """Neighbours joined by a typed relation (an infobox field or a sentence's relation)."""
        if v not in self._typed:
            self._typed[v] = [u for u in self.adj(v) if edge_rank(self.g.edges[v, u]) < 2]
        return self._typed[v]

    def step(self, cur: Hashable) -> Hashable:
        """A random neighbour; with ``typed_prob`` one joined by a typed relation when there is one."""
        nb = self.adj(cur)
        if self.typed_prob and self.rng.random() < self.typed_prob and self.typed(cur):
            nb = self.typed(cur)
        return nb[self.rng.randrange(len(nb))]

    def walk(self, k: int) -> list:
        rng = self.rng
        starts = self.typed_starts if self.typed_prob and self.typed_starts else self.starts
        cur = starts[rng.randrange(len(starts))]
        visited, seen = [cur], {cur}
        for _ in range(8 * k):
            if len(visited) >= k:
                break
            if len(visited) > 1 and rng.random() < self.restart:
                cur = visited[rng.randrange(len(visited))]
            cur = self.step(cur)
            if cur not in seen:
                seen.add(cur)
                visited.append(cur)
        return visited


def _edge_subset(
    nodes: list, g: nx.Graph, rng: random.Random, spanning_prob: float, typed_first: bool = False
) -> list[tuple]:
    """The induced edges, or (with ``spanning_prob``, when there are cycles) a random spanning tree plus some extras;
    ``typed_first``: the tree takes typed relations before bare links."""
    edges = [(u, v) for i, u in enumerate(nodes) for v in nodes[i + 1 :] if g.has_edge(u, v)]
    if len(edges) < len(nodes) or rng.random() >= spanning_prob:
        return edges
    rng.shuffle(edges)
    if typed_first:
        edges.sort(key=lambda e: edge_rank(g.edges[e]) >= 2)
    uf = UnionFind(nodes)
    tree, extra = [], []
    for u, v in edges:
        if uf[u] != uf[v]:
            uf.union(u, v)
            tree.append((u, v))
        else:
            extra.append((u, v))
    keep = rng.random() < 0.5  # half the time a pure tree, else each extra edge with p=1/2
    return tree + [e for e in extra if keep and rng.random() < 0.5]


def sample_subgraphs_with_report(
    kg: KnowledgeGraph | nx.Graph,
    n: int,
    *,
    sizes: Sequence[int] = (3, 4, 5, 6),
    rng: random.Random | int = 0,
    max_tries: int | None = None,
    restart_prob: float = 0.3,
    spanning_prob: float = 0.5,
    max_per_class: int | None = None,
    patience: int | None = None,
    typed_prob: float = 0.0,
) -> tuple[list[Subgraph], SamplingReport]:
    """Sample up to ``n`` distinct connected subgraphs, balanced over (structure, size) buckets.

    Args:
        kg: The knowledge graph (or any undirected networkx graph).
        n: Number of subgraphs wanted.
        sizes: Node counts to draw from (each at least 2).
        rng: Random generator or seed.
        max_tries: Walks to attempt at most (default ``40 * n + 2000``).
        restart_prob: Probability that a walk step starts from a random visited node instead of the current one.
        spanning_prob: Probability of replacing a cyclic induced subgraph by a random spanning tree
            (half the time with some of the remaining edges), to obtain trees, paths and stars too.
        max_per_class: Samples per isomorphism class at most; ``1`` keeps only structurally new
            subgraphs (new WL class). Default: the bucket quota ``ceil(n / feasible buckets)``.
        patience: Stop trying after this many tries in a row without a sample under quota, and
            fill the remaining slots from the reserve (default ``max(300, n // 4)``).
        typed_prob: Probability that a walk step follows a typed relation (an infobox field or a
            sentence's relation, :func:`~training.synth.graph.kg.edge_rank`) when the node has one, and
            spanning trees take typed relations first when it is positive; bare links are then
            used where nothing better exists.

    Returns:
        ``(subgraphs, report)``; fewer than ``n`` subgraphs when the graph does not have enough
        distinct ones within ``max_tries`` (logged).

    Raises:
        ValueError: ``n`` is negative, ``sizes`` is empty or has a size below 2, the graph has no
            edges, or a probability / ``max_per_class`` is out of range.
    """
    g = kg.graph if isinstance(kg, KnowledgeGraph) else kg
    if n < 0 or not sizes or min(sizes) < 2:
        raise ValueError(f"need n >= 0 and sizes >= 2, got n={n}, sizes={tuple(sizes)}")
    if g.number_of_edges() == 0:
        raise ValueError(f"the graph has {g.number_of_nodes()} nodes and no edges; nothing to sample")
    if not (0 <= restart_prob <= 1 and 0 <= spanning_prob <= 1) or (max_per_class is not None and max_per_class < 1):
        raise ValueError(
            f"need probabilities in [0, 1] and max_per_class >= 1 (or None), got restart_prob="
            f"{restart_prob}, spanning_prob={spanning_prob}, max_per_class={max_per_class}"
        )
    rng = rng if isinstance(rng, random.Random) else random.Random(rng)
    sampler = _Sampler(g, n, sorted(set(sizes)), rng, restart_prob, spanning_prob, max_per_class, typed_prob)
    chosen, rep = sampler.run(
        max_tries if max_tries is not None else 40 * n + 2000, patience if patience is not None else max(300, n // 4)
    )
    if len(chosen) < n:
        log.warning(
            "sampled %d of %d subgraphs in %d tries (%s); the graph may be too small or too sparse",
            len(chosen),
            n,
            rep.tries,
            "stalled" if rep.stalled else "max_tries reached",
        )
    return [_materialise(d, g) for d in chosen], rep


class _Sampler:
    """The state of one :func:`sample_subgraphs_with_report` run: buckets and quotas, seen instances, the reserve."""

    def __init__(
        self,
        g: nx.Graph,
        n: int,
        sizes: list[int],
        rng: random.Random,
        restart_prob: float,
        spanning_prob: float,
        max_per_class: int | None,
        typed_prob: float,
    ) -> None:
        self.g, self.n, self.sizes, self.rng = g, n, sizes, rng
        self.spanning_prob, self.typed = spanning_prob, typed_prob > 0
        buckets = feasible_buckets(sizes)
        self.quota = math.ceil(n / len(buckets)) if n else 0
        self.cap = max_per_class or max(1, self.quota)
        self.rep = SamplingReport(buckets={(s.value, k): 0 for s, k in buckets})
        self.registry, self.walker = StructureRegistry(), _Walker(g, rng, restart_prob, typed_prob)
        self.seen: set[tuple] = set()  # (sorted nodes, index edges): one entry per distinct instance
        self.per_class: dict[int, int] = {}
        self.chosen: list[_Draft] = []
        self.reserve: dict[tuple[str, int], list[_Draft]] = {}
        self.open_buckets = {k: sum(1 for _, kk in buckets if kk == k) for k in sizes}  # under quota, per size

    def run(self, max_tries: int, patience: int) -> tuple[list[_Draft], SamplingReport]:
        """Walk until ``n`` drafts are chosen, the tries run out or ``patience`` tries in a row add nothing."""
        rep, idle = self.rep, 0
        while len(self.chosen) < self.n and rep.tries < max_tries:
            open_sizes = [k for k in self.sizes if self.open_buckets[k]]  # walk only sizes that can still be accepted
            if idle >= patience or not open_sizes:
                rep.stalled = True
                break
            rep.tries += 1
            idle += 1
            k = open_sizes[self.rng.randrange(len(open_sizes))]
            draft = self._draft(k)
            if draft is not None and self._take(draft, k):
                idle = 0
        if len(self.chosen) < self.n:
            _fill_from_reserve(self.chosen, self.reserve, self.per_class, self.cap, self.n, rep)
        rep.accepted, rep.classes, rep.wl_collisions = (
            len(self.chosen),
            self.registry.classes,
            self.registry.wl_collisions,
        )
        return self.chosen, rep

    def _draft(self, k: int) -> _Draft | None:
        """One walk of ``k`` nodes as a new, connected instance of a class under its cap (None, counted, otherwise)."""
        rep = self.rep
        nodes = self.walker.walk(k)
        if len(nodes) < k:
            rep.too_small += 1
            return None
        edges = _edge_subset(nodes, self.g, self.rng, self.spanning_prob, self.typed)
        order = sorted_nodes(nodes)
        index = {v: i for i, v in enumerate(order)}
        idx = tuple(sorted((min(index[u], index[v]), max(index[u], index[v])) for u, v in edges))
        if not is_connected_indexed(k, idx):
            rep.disconnected += 1
            return None
        key = (tuple(order), idx)
        if key in self.seen:
            rep.duplicate += 1
            return None
        self.seen.add(key)
        cid, wl, _ = self.registry.classify_indexed(k, idx)
        if self.per_class.get(cid, 0) >= self.cap:
            rep.class_full += 1
            return None
        return _Draft(tuple(order), tuple((order[i], order[j]) for i, j in idx), self.registry.structures[cid], wl, cid)

    def _take(self, draft: _Draft, k: int) -> bool:
        """Choose ``draft`` when its bucket is under quota (else keep it in the reserve); True when chosen."""
        rep, bucket = self.rep, (draft.structure.value, k)
        if rep.buckets.get(bucket, 0) >= self.quota:
            rep.over_quota += 1
            pool = self.reserve.setdefault(bucket, [])
            if len(pool) < self.n:
                pool.append(draft)
            return False
        self.chosen.append(draft)
        self.per_class[draft.iso_class] = self.per_class.get(draft.iso_class, 0) + 1
        rep.buckets[bucket] = rep.buckets.get(bucket, 0) + 1
        if rep.buckets[bucket] == self.quota:
            self.open_buckets[k] -= 1
        return True


def _fill_from_reserve(
    chosen: list[_Draft],
    reserve: dict[tuple[str, int], list[_Draft]],
    per_class: dict[int, int],
    cap: int,
    n: int,
    rep: SamplingReport,
) -> None:
    """Top up from the over-quota reserve, always taking from the least-filled bucket that has samples left."""
    heap = [(rep.buckets.get(b, 0), b, 0) for b in sorted(reserve)]
    heapq.heapify(heap)
    while heap and len(chosen) < n:
        count, bucket, pos = heapq.heappop(heap)
        pool = reserve[bucket]
        while pos < len(pool) and per_class.get(pool[pos].iso_class, 0) >= cap:
            pos += 1
        if pos >= len(pool):
            continue
        d = pool[pos]
        chosen.append(d)
        per_class[d.iso_class] = per_class.get(d.iso_class, 0) + 1
        rep.buckets[bucket] = count + 1
        rep.from_reserve += 1
        heapq.heappush(heap, (count + 1, bucket, pos + 1))


def without_branch(sub: Subgraph, keep: Hashable, drop: Hashable) -> Subgraph | None:
    """``sub`` less ``drop`` and whatever only ``drop`` connected to ``keep`` (the part of ``keep``'s component left),
    re-classified; ``None`` when fewer than two nodes remain. ``iso_class`` is -1: it was not sampled."""
    rest = sub.graph.subgraph(n for n in sub.graph if n != drop)
    if keep not in rest:
        return None
    part = nx.node_connected_component(rest, keep)
    if len(part) < 2:
        return None
    g = sub.graph.subgraph(part).copy()
    nodes = tuple(sorted_nodes(g.nodes))
    edges = tuple(sorted(tuple(sorted_nodes(e)) for e in g.edges))
    wl = StructureRegistry().wl_hash(g)
    return Subgraph(nodes, edges, classify_structure(g), wl, -1, g)


def _materialise(d: _Draft, g: nx.Graph) -> Subgraph:
    sub = nx.Graph()
    sub.add_nodes_from((v, dict(g.nodes[v])) for v in d.nodes)
    sub.add_edges_from((u, v, dict(g.edges[u, v])) for u, v in d.edges)
    return Subgraph(d.nodes, d.edges, d.structure, d.wl_hash, d.iso_class, sub)


def sample_subgraphs(
    kg: KnowledgeGraph | nx.Graph,
    n: int,
    *,
    sizes: Sequence[int] = (3, 4, 5, 6),
    rng: random.Random | int = 0,
    max_tries: int | None = None,
    **kwargs: float | int | None,
) -> list[Subgraph]:
    """Sample up to ``n`` distinct connected subgraphs (see :func:`sample_subgraphs_with_report`)."""
    return sample_subgraphs_with_report(kg, n, sizes=sizes, rng=rng, max_tries=max_tries, **kwargs)[0]
