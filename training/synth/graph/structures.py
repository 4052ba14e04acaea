"""Subgraph shapes: classification and isomorphism classes of small unlabelled graphs.

:class:`StructureRegistry` groups graphs by :func:`networkx.weisfeiler_lehman_graph_hash`,
which is *not* a complete isomorphism test (a 6-cycle and two triangles, or decalin and
bicyclopentyl, get the same hash), so every hash match is confirmed with
:func:`networkx.is_isomorphic`, and a hash shared by non-isomorphic graphs opens a new class
(counted in ``wl_collisions``). Results are cached by labelled shape so each distinct
labelling is hashed once.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

import networkx as nx


class Structure(str, Enum):
    """Shape of a connected subgraph."""

    PATH = "path"  # a tree with maximum degree <= 2
    STAR = "star"  # a tree with a centre joined to all others (4+ nodes)
    TREE = "tree"  # any other tree
    CYCLE = "cycle"  # every node has degree 2
    DENSE = "dense"  # two or more independent cycles
    OTHER = "other"  # exactly one cycle, with pendant branches


_MIN_SIZE = {
    Structure.PATH: 2,
    Structure.STAR: 4,
    Structure.TREE: 5,
    Structure.CYCLE: 3,
    Structure.DENSE: 4,
    Structure.OTHER: 4,
}


def classify_structure(g: nx.Graph) -> Structure:
    """Classify a connected graph as path, star, tree, cycle, dense or other (see :class:`Structure`)."""
    n, m = g.number_of_nodes(), g.number_of_edges()
    degs = [d for _, d in g.degree()]
    if n <= 2 or (m == n - 1 and max(degs) <= 2):
        return Structure.PATH
    if m == n - 1:
        return Structure.STAR if max(degs) == n - 1 else Structure.TREE
    if all(d == 2 for d in degs):
        return Structure.CYCLE
    return Structure.DENSE if m - n + 1 >= 2 else Structure.OTHER


def feasible_buckets(sizes: Sequence[int]) -> list[tuple[Structure, int]]:
    """The (structure, size) pairs that exist at all (a star needs 4 nodes, a branching non-star tree 5)."""
    return [(s, k) for k in sizes for s in Structure if k >= _MIN_SIZE[s]]


def _structural_copy(g: nx.Graph) -> nx.Graph:
    """The unlabelled shape: nodes 0..n-1 in sorted order, each labelled by its degree."""
    index = {v: i for i, v in enumerate(sorted_nodes(g.nodes))}
    h = nx.Graph()
    h.add_nodes_from((index[v], {"d": str(d)}) for v, d in g.degree())
    h.add_edges_from((index[u], index[v]) for u, v in g.edges())
    return h


def sorted_nodes(items) -> list:  # noqa: ANN001 - any hashables
    """Sort node ids naturally, falling back to their ``repr`` for mixed types (deterministic either way)."""
    items = list(items)
    try:
        return sorted(items)
    except TypeError:
        return sorted(items, key=repr)


class StructureRegistry:
    """Isomorphism classes of small unlabelled graphs: WL hash first, ``nx.is_isomorphic`` to confirm.

    Args:
        iterations: WL iterations; ``None`` refines up to the graph's size (the stable colouring).
    """

    def __init__(self, iterations: int | None = None) -> None:
        self.iterations = iterations
        self._reps: dict[str, list[tuple[int, nx.Graph]]] = {}
        self._cache: dict[tuple[int, tuple[tuple[int, int], ...]], tuple[int, str]] = {}
        self.structures: list[Structure] = []
        self.hashes: list[str] = []
        self.wl_collisions = 0
        self.iso_checks = 0

    def __len__(self) -> int:
        return len(self.structures)

    @property
    def classes(self) -> int:
        """Number of isomorphism classes seen."""
        return len(self.structures)

    def wl_hash(self, g: nx.Graph) -> str:
        """WL hash of the unlabelled structure of ``g`` (node labels start as degrees)."""
        h = g if all("d" in d for _, d in g.nodes(data=True)) else _structural_copy(g)
        return nx.weisfeiler_lehman_graph_hash(h, node_attr="d", iterations=self.iterations or max(1, len(h)))

    def classify(self, g: nx.Graph) -> tuple[int, str, bool]:
        """Return ``(class_id, wl_hash, is_new)`` for the structure of ``g``.

        Graphs with equal hashes are compared with ``nx.is_isomorphic``; a hash shared by
        non-isomorphic graphs (a WL failure) gives a new class and counts in ``wl_collisions``.
        """
        index = {v: i for i, v in enumerate(sorted_nodes(g.nodes))}
        return self.classify_indexed(
            len(index), tuple(sorted(tuple(sorted((index[u], index[v]))) for u, v in g.edges()))
        )

    def classify_indexed(self, n: int, edges: tuple[tuple[int, int], ...]) -> tuple[int, str, bool]:
        """:meth:`classify` for a graph on nodes ``0..n-1`` given as a sorted tuple of ``(i, j)``, ``i < j``.

        Results are cached by that exact tuple (a 6-node graph has at most 2^15 labellings), so
        the WL hash and the isomorphism test run once per labelled shape.
        """
        hit = self._cache.get((n, edges))
        if hit is not None:
            return hit[0], hit[1], False
        refined = (n, _degree_relabel(n, edges))  # many labellings of one shape share this key
        hit = self._cache.get(refined)
        if hit is not None:
            self._cache[(n, edges)] = hit
            return hit[0], hit[1], False
        h = nx.Graph()
        h.add_nodes_from(range(n))
        h.add_edges_from(edges)
        nx.set_node_attributes(h, {v: str(d) for v, d in h.degree()}, "d")
        key = self.wl_hash(h)
        reps = self._reps.setdefault(key, [])
        found = None
        for cid, rep in reps:
            self.iso_checks += 1
            if nx.is_isomorphic(h, rep):
                found = cid
                break
        is_new = found is None
        if is_new:
            if reps:
                self.wl_collisions += 1
            found = len(self.structures)
            self.structures.append(classify_structure(h))
            self.hashes.append(key)
            reps.append((found, h))
        self._cache[(n, edges)] = self._cache[refined] = (found, key)
        return found, key, is_new


def _degree_relabel(n: int, edges: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    """Relabel nodes by (degree, neighbour degrees), ties by index: a cheap partial canonical form."""
    adj: list[list[int]] = [[] for _ in range(n)]
    for i, j in edges:
        adj[i].append(j)
        adj[j].append(i)
    sig = [(len(a), sorted(len(adj[u]) for u in a)) for a in adj]
    pos = {v: p for p, v in enumerate(sorted(range(n), key=lambda v: (sig[v], v)))}
    return tuple(sorted((min(pos[i], pos[j]), max(pos[i], pos[j])) for i, j in edges))


def is_connected_indexed(n: int, edges: tuple[tuple[int, int], ...]) -> bool:
    """Whether the graph on nodes ``0..n-1`` with these edges is connected (union-find, no networkx)."""
    parent = list(range(n))

    def find(v: int) -> int:
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    parts = n
    for i, j in edges:
        ri, rj = find(i), find(j)
        if ri != rj:
            parent[ri] = rj
            parts -= 1
    return parts == 1
