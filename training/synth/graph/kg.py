"""A dense knowledge graph of Wikipedia entities, grown from seeds (SailorFog-QA-V2, step 1).

WebSailor-V2 starts from a graph whose nodes are pages and whose edges are the relations
between them, and insists on a *dense* one: a crawl's breadth-first tree has no cycles, so
every question sampled from it is a chain or a star. :func:`~training.synth.graph.kg_build.build_dense_kg`
therefore runs in two phases: an expansion phase that discovers up to ``max_nodes`` entities breadth-first (each
new entity is attached by the edge that discovered it, giving a BFS forest), then a
densification phase that adds *every* known relation between two discovered entities
(``u``'s neighbours include ``v``), which closes cycles and triangles.

The structure is an undirected :class:`networkx.Graph` (the question templates and the
isomorphism tests need an undirected shape); the direction and provenance of each relation
live in the edge attributes::

    {"source_page": "Paris", "target_page": "France", "kind": "link" | "mention" | "infobox",
     "relation": "country" | "{src} is the capital of {dst}" | "link" | "mention", "passage": docid?, "query": str?,
     "reciprocal": bool, "relations": [(source_page, relation), ...]}

Node attributes are the entity's statistics: ``entity`` (the :class:`Entity`), ``description``,
``page_len``, ``infobox``, ``dates``, ``numbers``, ``categories`` and ``degree``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from training.synth.extract.facts import DateFact, NumberFact, facts_from_fields

EDGE_KINDS = ("infobox", "link", "mention")  # in order of preference when a pair has several
_PERSON_KEYS = ("birth_date", "born", "birth_place", "death_date")


def edge_rank(attrs: Mapping[str, Any]) -> int:
    """Preference of an edge's attributes when a pair has several (lower wins): an infobox field, then a typed
    relation read from a sentence (:mod:`training.synth.extract.relations`), then a wikilink, then a title mention."""
    kind = attrs.get("kind", "link")
    if kind == "infobox":
        return 0
    typed = "{src}" in str(attrs.get("relation", ""))
    return 1 if typed else 2 + (kind == "mention")


@dataclass(frozen=True)
class Entity:
    """One page as a graph node.

    Attributes:
        title: The page title (the node id and, for questions, the answer string).
        description: The short description (``"Capital of France"``), or ``""``.
        first_sentence: The first sentence of the lead.
        infobox: Infobox key -> value text (not hashed).
        categories: Category names (or the topic, for sources without categories).
        page_len: Length of the page text in characters.
        dates: Dates from the infobox, description and lead, each with its attribute name.
        numbers: Quantities from the same places, each with its attribute name and unit.
    """

    title: str
    description: str = ""
    first_sentence: str = ""
    infobox: dict[str, str] = field(default_factory=dict, hash=False, compare=True)
    categories: tuple[str, ...] = ()
    page_len: int = 0
    dates: tuple[DateFact, ...] = ()
    numbers: tuple[NumberFact, ...] = ()

    @property
    def is_person(self) -> bool:
        """Whether the page looks like a biography: category ``People``/``... births``, a birth
        infobox key, a birth date among its dates, or a sentence starting with He/She."""
        return _looks_like_person(self.categories, self.infobox, self.first_sentence) or any(
            d.attr in ("birth", "death") for d in self.dates
        )


_PRONOUN = re.compile(r"(?:^|[.!?]\s+)(?:He|She) [a-z]")


def reads_as_biography(text: str) -> bool:
    """Whether a sentence of ``text`` opens with "He" or "She": the page is about a person."""
    return bool(_PRONOUN.search(text))


def _looks_like_person(categories: Iterable[str], infobox: Mapping[str, str], lead: str = "") -> bool:
    cats = [c.lower() for c in categories]
    return (
        any(c == "people" or c.endswith(" births") or c.endswith(" deaths") for c in cats)
        or any(k in infobox for k in _PERSON_KEYS)
        or reads_as_biography(lead)
    )


def make_entity(
    title: str,
    *,
    description: str = "",
    lead: str = "",
    infobox: Mapping[str, str] | None = None,
    categories: Iterable[str] = (),
    page_len: int | None = None,
) -> Entity:
    """Build an :class:`Entity` from a page's fields, extracting its dates and numbers.

    Args:
        title: Page title.
        description: Short description.
        lead: Lead section text (its first sentence is kept; dates and numbers are extracted).
        infobox: Infobox fields.
        categories: Categories (or a topic).
        page_len: Page length in characters (defaults to the lead's length).

    Returns:
        The entity.
    """
    from wiki_index.parse.text import first_sentence

    box = {str(k): str(v) for k, v in (infobox or {}).items()}
    cats = tuple(categories)
    # the title itself is not a fact about the page ("2001: A Space Odyssey is a 1968 film")
    strip = re.compile(r"(?<!\w)" + re.escape(title) + r"(?!\w)") if title else None
    lead_text = strip.sub(" ", lead or "") if strip else lead or ""
    desc_text = strip.sub(" ", description or "") if strip else description or ""
    dates, numbers = facts_from_fields(desc_text, lead_text, box, person=_looks_like_person(cats, box, lead or ""))
    return Entity(
        title=title,
        description=(description or "").strip(),
        first_sentence=first_sentence(lead or ""),
        infobox=box,
        categories=cats,
        page_len=len(lead or "") if page_len is None else int(page_len),
        dates=dates,
        numbers=numbers,
    )


@dataclass(frozen=True)
class GraphStats:
    """Shape of a graph: size, density, clustering and how many independent cycles it has.

    ``avg_clustering`` is exact up to ``clustering_sample`` nodes and estimated on a fixed
    random sample of that many nodes beyond. ``cycle_rank`` is ``E - V + components``: 0 for
    a forest, the number of independent cycles otherwise.
    """

    nodes: int
    edges: int
    density: float
    avg_degree: float
    avg_clustering: float
    cycle_rank: int
    components: int


def graph_stats(g: nx.Graph, *, clustering_sample: int = 2000) -> GraphStats:
    """Compute :class:`GraphStats` for an undirected graph (clustering sampled beyond ``clustering_sample`` nodes)."""
    n, e = g.number_of_nodes(), g.number_of_edges()
    if n == 0:
        return GraphStats(0, 0, 0.0, 0.0, 0.0, 0, 0)
    comps = nx.number_connected_components(g)
    nodes = sorted(g.nodes, key=str)
    if n > clustering_sample:
        nodes = random.Random(0).sample(nodes, clustering_sample)
    clust = nx.average_clustering(g, nodes=nodes)
    return GraphStats(n, e, nx.density(g), 2 * e / n, float(clust), e - n + comps, comps)


@dataclass
class BuildReport:
    """What :func:`~training.synth.graph.kg_build.build_dense_kg` did: counts of everything added and skipped, shape before/after densification."""

    seeds: int = 0
    seeds_missing: int = 0
    nodes: int = 0
    tree_edges: int = 0
    dense_edges: int = 0
    missing_entities: int = 0
    bad_edges: int = 0
    self_loops: int = 0
    neighbours_calls: int = 0
    before: GraphStats | None = None
    after: GraphStats | None = None


class KnowledgeGraph:
    """An undirected entity graph whose edges remember direction, relation and provenance.

    Args:
        graph: An existing graph to wrap (its nodes should carry an ``entity`` attribute);
            a new empty one by default.
    """

    def __init__(self, graph: nx.Graph | None = None) -> None:
        self.graph: nx.Graph = graph if graph is not None else nx.Graph()
        self.report = BuildReport()

    def __len__(self) -> int:
        return self.graph.number_of_nodes()

    def __contains__(self, title: object) -> bool:
        return title in self.graph

    def add_entity(self, entity: Entity) -> None:
        """Add (or replace) a node with the entity's statistics as attributes."""
        self.graph.add_node(
            entity.title,
            entity=entity,
            description=entity.description,
            page_len=entity.page_len,
            infobox=entity.infobox,
            dates=entity.dates,
            numbers=entity.numbers,
            categories=entity.categories,
        )

    def entity(self, title: str) -> Entity:
        """Return the entity of a node.

        Raises:
            KeyError: The title is not in the graph, or the node carries no entity.
        """
        if title not in self.graph:
            raise KeyError(f"{title!r} is not a node of this knowledge graph ({len(self)} nodes)")
        ent = self.graph.nodes[title].get("entity")
        if ent is None:
            raise KeyError(f"node {title!r} has no 'entity' attribute; add nodes with add_entity()")
        return ent

    @property
    def entities(self) -> dict[str, Entity]:
        """Title -> entity for every node that carries one."""
        return {n: d["entity"] for n, d in self.graph.nodes(data=True) if "entity" in d}

    def add_relation(self, src: str, dst: str, attrs: Mapping[str, Any]) -> bool:
        """Record the relation ``src -> dst``; both must be nodes already.

        A pair seen again keeps one edge: the reverse direction sets ``reciprocal``, a more
        specific relation (:func:`edge_rank`: an infobox field over a typed sentence relation over
        a link over a mention) takes over the main attributes, and every ``(source_page,
        relation)`` is listed in ``relations`` (and its attributes in ``by_source[source_page]``,
        so a question can state the relation as the other page's sentence says it).

        Returns:
            ``True`` when a new edge was created.

        Raises:
            KeyError: An endpoint is not a node yet.
            ValueError: ``attrs["kind"]`` is not one of :data:`EDGE_KINDS`.
        """
        if src not in self.graph or dst not in self.graph:
            missing = [t for t in (src, dst) if t not in self.graph]
            raise KeyError(f"add_relation({src!r}, {dst!r}): {missing} not in the graph; add_entity() them first")
        kind = attrs.get("kind", "link")
        if kind not in EDGE_KINDS:
            raise ValueError(f"edge kind must be one of {EDGE_KINDS}, got {kind!r} for {src!r} -> {dst!r}")
        attrs = {**attrs, "kind": kind}
        rel = (src, str(attrs.get("relation", kind)))
        own = {**attrs, "source_page": src, "target_page": dst}
        if self.graph.has_edge(src, dst):
            data = self.graph.edges[src, dst]
            if rel not in data["relations"]:
                data["relations"].append(rel)
            data["by_source"].setdefault(src, own)
            if data["source_page"] != src:
                data["reciprocal"] = True
            if edge_rank(attrs) < edge_rank(data):
                keep = {k: data[k] for k in ("relations", "reciprocal", "by_source")}
                data.clear()
                data.update(own, **keep)
            return False
        self.graph.add_edge(src, dst, **own, reciprocal=False, relations=[rel], by_source={src: own})
        return True

    def relation(self, u: str, v: str) -> dict[str, Any]:
        """The attributes of the edge between ``u`` and ``v`` (either order)."""
        return self.graph.edges[u, v]

    def refresh_degrees(self) -> None:
        """Store each node's current degree in its ``degree`` attribute."""
        for n, d in self.graph.degree():
            self.graph.nodes[n]["degree"] = d

    def stats(self) -> GraphStats:
        """Shape of the graph (see :class:`GraphStats`)."""
        return graph_stats(self.graph)
