"""Growing a :class:`~training.synth.graph.kg.KnowledgeGraph` from seeds: :func:`build_dense_kg` (SailorFog-QA-V2, step 1).

An expansion phase discovers up to ``max_nodes`` entities breadth-first from the seeds (each attached by the edge
that discovered it), then a densification phase adds every known relation between two discovered entities (see
:mod:`training.synth.graph.kg` for the graph and its attributes). The data comes from two callables, ``neighbours_fn``
and ``entity_fn`` (:class:`~training.synth.graph.store_source.StoreSource` gives both over a store). Kept apart from the
graph class so :mod:`training.synth.graph.kg` holds the data model and this module the crawl.
"""

from __future__ import annotations

import logging
import random
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from training.synth.graph.kg import EDGE_KINDS, BuildReport, Entity, KnowledgeGraph, edge_rank

log = logging.getLogger(__name__)

NeighboursFn = Callable[[str], Iterable[tuple[str, Mapping[str, Any]]]]
EntityFn = Callable[[str], "Entity | None"]


def _valid_edges(title: str, raw: Iterable[Any], report: BuildReport) -> list[tuple[str, dict[str, Any]]]:
    """Validate ``neighbours_fn`` output: ``(title, attrs)`` pairs with a known kind; one edge per target."""
    best: dict[str, dict[str, Any]] = {}
    for item in raw:
        try:
            target, attrs = item
            attrs = dict(attrs)
            attrs.setdefault("kind", "link")
            attrs.setdefault("relation", attrs["kind"])
            ok = isinstance(target, str) and target and attrs["kind"] in EDGE_KINDS
        except (TypeError, ValueError):
            ok = False
        if not ok:
            report.bad_edges += 1
            if report.bad_edges == 1:
                log.warning(
                    "neighbours_fn(%r) returned %r; expected (title, {'kind': one of %s, ...}); "
                    "skipping such items (counted in report.bad_edges)",
                    title,
                    item,
                    EDGE_KINDS,
                )
            continue
        if target == title:
            report.self_loops += 1
            continue
        old = best.get(target)
        if old is None or edge_rank(attrs) < edge_rank(old):
            best[target] = attrs
    return list(best.items())


def build_dense_kg(
    seeds: Iterable[str],
    neighbours_fn: NeighboursFn,
    entity_fn: EntityFn,
    *,
    max_nodes: int,
    densify: bool = True,
    rng: random.Random | int = 0,
    max_neighbours: int | None = None,
) -> KnowledgeGraph:
    """Grow a knowledge graph breadth-first from seed entities, then densify it.

    Args:
        seeds: Titles to start from (kept in the given order; duplicates ignored).
        neighbours_fn: ``title -> [(neighbour_title, edge_attrs), ...]``; ``edge_attrs`` needs
            ``kind`` (``"link"``, ``"mention"`` or ``"infobox"``) and usually ``relation``; malformed
            items are skipped and counted.
        entity_fn: ``title -> Entity`` or ``None`` for a title that is not a page (skipped, counted).
        max_nodes: Stop discovering entities at this many nodes.
        densify: Add every relation between two discovered entities (else the result is the BFS forest).
        rng: Random generator (or seed) that shuffles each neighbour list before expansion, so
            which neighbours fit under ``max_nodes``/``max_neighbours`` is a fair random choice.
        max_neighbours: Expand at most this many neighbours per entity (densification still
            considers all of them).

    Returns:
        The graph; ``kg.report`` holds the counts and the shape before and after densification.

    Raises:
        ValueError: ``max_nodes`` is not positive.
    """
    if max_nodes < 1:
        raise ValueError(f"max_nodes must be >= 1, got {max_nodes}; pass the number of entities to discover")
    rng = rng if isinstance(rng, random.Random) else random.Random(rng)
    grower = _Grower(neighbours_fn, entity_fn, max_nodes)
    kg, rep = grower.kg, grower.kg.report
    grower.add_seeds(seeds)
    grower.expand(rng, max_neighbours)
    rep.before = kg.stats()
    if densify:
        grower.densify()
    kg.refresh_degrees()
    rep.nodes = len(kg)
    rep.after = kg.stats()
    log.info(
        "knowledge graph: %d nodes, %d tree edges + %d densified; cycle rank %d -> %d, clustering %.3f -> %.3f",
        rep.nodes,
        rep.tree_edges,
        rep.dense_edges,
        rep.before.cycle_rank,
        rep.after.cycle_rank,
        rep.before.avg_clustering,
        rep.after.avg_clustering,
    )
    return kg


class _Grower:
    """One :func:`build_dense_kg` run: the graph, and the neighbour and entity lookups, each made once per title."""

    def __init__(self, neighbours_fn: NeighboursFn, entity_fn: EntityFn, max_nodes: int) -> None:
        self.neighbours_fn, self.entity_fn, self.max_nodes = neighbours_fn, entity_fn, max_nodes
        self.kg = KnowledgeGraph()
        self.nbr_cache: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        self.ent_cache: dict[str, Entity | None] = {}
        self.queue: deque[str] = deque()

    def neighbours(self, t: str) -> list[tuple[str, dict[str, Any]]]:
        if t not in self.nbr_cache:
            self.kg.report.neighbours_calls += 1
            self.nbr_cache[t] = _valid_edges(t, self.neighbours_fn(t) or (), self.kg.report)
        return self.nbr_cache[t]

    def entity(self, t: str) -> Entity | None:
        if t not in self.ent_cache:
            self.ent_cache[t] = self.entity_fn(t)
        return self.ent_cache[t]

    def add_seeds(self, seeds: Iterable[str]) -> None:
        """Seeds in order (duplicates ignored) until ``max_nodes``; titles that are not pages are counted."""
        kg, rep = self.kg, self.kg.report
        for s in dict.fromkeys(seeds):
            rep.seeds += 1
            if len(kg) >= self.max_nodes:
                break
            ent = self.entity(s)
            if ent is None:
                rep.seeds_missing += 1
                continue
            if s not in kg:
                kg.add_entity(ent)
                self.queue.append(s)
        if rep.seeds and rep.seeds_missing == rep.seeds:
            log.warning("none of the %d seeds is a known entity (entity_fn returned None for all)", rep.seeds)

    def expand(self, rng: random.Random, max_neighbours: int | None) -> None:
        """Breadth first from the seeds, each neighbour list shuffled, until ``max_nodes``."""
        kg, rep = self.kg, self.kg.report
        while self.queue and len(kg) < self.max_nodes:
            u = self.queue.popleft()
            order = list(self.neighbours(u))
            rng.shuffle(order)
            for v, attrs in order[:max_neighbours] if max_neighbours else order:
                if v in kg:
                    continue
                if len(kg) >= self.max_nodes:
                    break
                ent = self.entity(v)
                if ent is None:
                    rep.missing_entities += 1
                    continue
                kg.add_entity(ent)
                kg.add_relation(u, v, attrs)
                rep.tree_edges += 1
                self.queue.append(v)

    def densify(self) -> None:
        """Every relation between two discovered entities."""
        for u in sorted(self.kg.graph.nodes):
            for v, attrs in self.neighbours(u):
                if v in self.kg and self.kg.add_relation(u, v, attrs):
                    self.kg.report.dense_edges += 1
