"""Clues a reader can check on the page: the typed view of the graph, list counts, and the transfer check.

A question trained on in the simulator must be solvable on the real web, by reading pages. So every clue of a
SailorFog-QA question is backed by a sentence or an infobox field of a page:

* :func:`typed_view` keeps only the typed relations of the knowledge graph (an infobox field, or a relation phrase
  read from a sentence); a bare wikilink or a title mention is a fact about the wiki's link graph, not about the
  entity, and never becomes a clue.
* :func:`listed_count` counts the items of the list a sentence or an infobox field states ("bordered by Ghana,
  Benin, Niger and Togo": four), so a counting clue counts facts written on the page, never links.
* :func:`transfer_check` measures, for one question, the share of clues whose evidence page the sim's search finds
  for the clue's own words (what a web searcher could do), and the share of clues that depend on the link graph.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import networkx as nx

from training.synth.compose.constraints import NodeSpec, strip_article, walk
from training.synth.compose.lists import list_size
from training.synth.compose.naming import name_variants
from training.synth.compose.uncertainty import relational_clue
from training.synth.extract.relations import is_text_relation
from training.synth.graph.kg import KnowledgeGraph, edge_rank

#: Relations that are facts of the link graph only (a wikilink, a title mention): no page states them.
LINK_RELATIONS = ("link", "mention", "links to", "")
_LINK_WORDS = re.compile(r"\b(?:entities linked with|are also linked|article mentions|mentioned in the article)\b")
_NOT_A_LIST = re.compile(r"date|place|born|died|birth|death|location|coordinates", re.IGNORECASE)


def is_typed(attrs: Mapping[str, Any]) -> bool:
    """Whether an edge states a typed relation: an infobox field or a sentence's relation phrase."""
    return edge_rank(attrs) <= 1


def typed_view(kg: KnowledgeGraph) -> KnowledgeGraph:
    """The knowledge graph with its typed relations only (nodes left without one are dropped).

    The edges keep every attribute, so a subgraph sampled from the view has the provenance of the full graph; the
    report is the full graph's (what was discovered)."""
    g = nx.Graph()
    g.add_nodes_from((n, d) for n, d in kg.graph.nodes(data=True))
    g.add_edges_from((u, v, d) for u, v, d in kg.graph.edges(data=True) if is_typed(d))
    g.remove_nodes_from([n for n in list(g) if g.degree(n) == 0])
    for n in g:
        g.nodes[n]["degree"] = g.degree(n)
    view = KnowledgeGraph(g)
    view.report = kg.report
    return view


def listed_count(attrs: Mapping[str, Any], listed: str, source_infobox: Mapping[str, str]) -> int:
    """The size of the list of its page that names ``listed`` under this relation (0 when it is no list item).

    Args:
        attrs: The edge's attributes (``kind``, ``relation``, ``anchor``: the words naming the target, ``evidence``:
            the sentence or the infobox field).
        listed: The title of the entity the page lists (the relation's target).
        source_infobox: The source page's infobox (for a field's whole value).
    """
    names = [str(attrs.get("anchor") or ""), *name_variants(listed)]
    if attrs.get("kind") == "infobox":
        if _NOT_A_LIST.search(str(attrs.get("relation", ""))):
            return 0
        value = str(source_infobox.get(str(attrs.get("relation", "")), ""))
        items = [x.strip() for x in re.split(r",|;|•|\n|\s+and\s+", value) if x.strip()]
        hit = any(any(nm and nm in it for nm in names) for it in items)
        return len(items) if hit and len(items) >= 3 else 0
    if not is_text_relation(str(attrs.get("relation", ""))):
        return 0
    sentence = str(attrs.get("evidence") or "")
    return next((n for nm in names if nm and (n := list_size(sentence, nm))), 0)


def link_dependent(clue: Mapping[str, Any]) -> bool:
    """Whether a record's clue (``{"text", "type", "relation"}``) rests on the link graph: a bare link or mention
    relation, a count of links, or "are also linked"."""
    if clue.get("type") == "relational" and str(clue.get("relation", "")).strip().lower() in LINK_RELATIONS:
        return True
    return bool(_LINK_WORDS.search(str(clue.get("text", ""))))


def transfer_check(
    root: NodeSpec, graph: nx.Graph, titles: Callable[[str], list[str]], head: str = ""
) -> dict[str, Any]:
    """For each relation and fact the question states: is the page holding its evidence in the sim's top ``k`` for
    the clue's own words (the described entity's noun phrase, or the answer's type noun, with the clue)?

    Returns:
        ``{"clues": n, "evidence_found": found, "link_graph": m}``: clues checked, those whose evidence page the search
        returns, and those that rest on the link graph.
    """
    n = found = linked = 0
    for node in walk(root):
        subject = strip_article(node.identity.text) if node.identity is not None else head
        for rel, direction, child in node.relations:
            anchor = child.identity
            if anchor is None or node.entity not in graph or child.entity not in graph:
                continue
            attrs = graph.edges[node.entity, child.entity]
            page = attrs.get("source_page", child.entity if direction == "from_anchor" else node.entity)
            text = relational_clue(anchor, rel, anchor_is_source=direction == "from_anchor").text
            n += 1
            linked += str(rel).strip().lower() in LINK_RELATIONS
            found += page in titles(f"{subject} {text}")
        for f in node.facts:
            n += 1
            found += node.entity in titles(f"{subject} {f.text}")
    return {"clues": n, "evidence_found": found, "link_graph": linked}
