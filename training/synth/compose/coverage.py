"""What a task set covers: a floor per uncertainty type (with what the graph offers when a type falls short), and the
transfer check summed over the set (clues a web searcher finds, clues resting on the link graph).

WebSailor-V2's questions mix every kind of uncertainty; a set in which a type is rare trains a policy that never
meets it. :data:`FLOORS` is the share of questions each type should reach; when the typed knowledge graph cannot
support it (few list sentences for counting, few dated entities for temporal order), :func:`type_floors` says so
with the count of what the graph offers, so a short type is explained rather than hidden.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from training.synth.compose.transfer import listed_count
from training.synth.compose.uncertainty import date_phrase
from training.synth.graph.kg import Entity, KnowledgeGraph

#: Share of questions each uncertainty type should reach, where the knowledge graph supports it.
FLOORS = {
    "fuzzy_date": 0.08,
    "fuzzy_number": 0.08,
    "negation": 0.08,
    "temporal_order": 0.08,
    "counting": 0.08,
    "partial_name": 0.08,
}
_SUPPORT_TEXT = {
    "counting": "typed relations stated as one item of a list (a sentence or an infobox field)",
    "fuzzy_date": "entities with a date of a known kind (birth, founding, ...)",
    "temporal_order": "entities with a date of a known kind (birth, founding, ...)",
    "fuzzy_number": "entities with a quantity",
    "negation": "typed relations whose page states the same relation for another entity (near misses)",
    "partial_name": "entities (every name has an initial)",
}


def dated(ent: Entity) -> bool:
    """Whether the entity has a date of a known kind (born, founded, ...): what a blurred date or a temporal order needs."""
    return any(x.attr != "date" and date_phrase(x.attr) for x in ent.dates)


def type_support(kg: KnowledgeGraph) -> dict[str, int]:
    """What the typed graph offers each uncertainty type (see :data:`_SUPPORT_TEXT`), as counts."""
    g = kg.graph
    listed = sum(
        bool(listed_count(d, str(d.get("target_page")), g.nodes[d["source_page"]]["entity"].infobox))
        for _, _, d in g.edges(data=True)
        if d.get("source_page") in g
    )
    ents = [d.get("entity") for _, d in g.nodes(data=True) if d.get("entity") is not None]
    n_dated = sum(dated(e) for e in ents)
    pairs: dict[tuple, int] = {}
    for _, _, d in g.edges(data=True):
        key = (d.get("source_page"), d.get("relation"))
        pairs[key] = pairs.get(key, 0) + 1
    return {
        "counting": listed,
        "fuzzy_date": n_dated,
        "temporal_order": n_dated,
        "fuzzy_number": sum(bool(e.numbers) for e in ents),
        "negation": sum(c for c in pairs.values() if c > 1),
        "partial_name": len(ents),
    }


def type_floors(records: list[dict[str, Any]], support: Mapping[str, int] | None = None) -> dict[str, dict[str, Any]]:
    """Per uncertainty type of :data:`FLOORS`: ``{"questions", "share", "floor", "met", "reason"}``; ``reason`` is
    ``""`` when the floor is met, else what the typed graph offers that type."""
    n = max(len(records), 1)
    out: dict[str, dict[str, Any]] = {}
    for t, floor in FLOORS.items():
        k = sum(t in r["uncertainty_types"] for r in records)
        met = k / n >= floor
        why = "" if met else f"the typed graph has {(support or {}).get(t, 'an unknown number of')} {_SUPPORT_TEXT[t]}"
        out[t] = {"questions": k, "share": k / n, "floor": floor, "met": met, "reason": why}
    return out


def transfer_summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The transfer check over the set: mean per-question shares, pooled shares, and questions with a link clue."""
    trs = [r.get("transfer") or {} for r in records]
    n = max(len(trs), 1)
    clues = sum(t.get("clues", 0) for t in trs)
    return {
        "questions": len(trs),
        "evidence_share_mean": sum(t.get("evidence_share", 0.0) for t in trs) / n,
        "evidence_share_pooled": sum(t.get("evidence_found", 0) for t in trs) / clues if clues else 0.0,
        "link_share_mean": sum(t.get("link_share", 0.0) for t in trs) / n,
        "link_clues": sum(t.get("link_graph", 0) for t in trs),
        "questions_with_link_clue": sum(t.get("link_graph", 0) > 0 for t in trs),
    }


def render_coverage(floors: Mapping[str, Mapping[str, Any]], transfer: Mapping[str, Any]) -> list[str]:
    """The card's Markdown for :func:`type_floors` and :func:`transfer_summary`."""
    lines = [
        "## Uncertainty types: floors",
        "",
        "| type | questions | share | floor | met | why short |",
        "|---|---:|---:|---:|---|---|",
    ]
    lines += [
        f"| {t} | {f['questions']} | {f['share']:.1%} | {f['floor']:.0%} | {'yes' if f['met'] else 'no'} | "
        f"{f['reason']} |"
        for t, f in floors.items()
    ]
    lines += [
        "",
        "## Transfer check",
        "",
        "Per question: the share of its relations and facts whose evidence page the sim's search returns (top k) "
        "for the clue's own words (what a web searcher could do), and the share of its clues that rest on the "
        "wiki's link graph (a bare link, a mention, a link count; target 0%).",
        "",
        "| measure | value |",
        "|---|---:|",
        f"| evidence found by searching the clue, mean per question | {transfer['evidence_share_mean']:.1%} |",
        f"| ... pooled over all clues | {transfer['evidence_share_pooled']:.1%} |",
        f"| clues on the link graph, mean per question | {transfer['link_share_mean']:.1%} |",
        f"| questions with a link-graph clue | {transfer['questions_with_link_clue']} |",
        "",
    ]
    return lines
