"""Per-clue evidence for a record and the card's clue-verification table.

:func:`clue_evidence` tells a reader where to check each clue of a record (the relation's sentence or infobox field,
the fact's sentence or field kept by :class:`~training.synth.verify.clue_check.ClueChecker`, the description behind a
description, the title behind a name); :func:`render_checks` renders the checker's counts for the dataset card.
"""

from __future__ import annotations

from typing import Any

from training.synth.verify.clue_check import Evidence

__all__ = ["clue_evidence", "render_checks"]


def _edge_evidence(graph: Any, a: str, b: str) -> Evidence | None:
    if not graph.has_edge(a, b):
        return None
    d = graph.edges[a, b]
    page = str(d.get("page") or d.get("source_page") or a)
    field = str(d.get("relation")) if d.get("kind") == "infobox" else "lead"
    return Evidence(page, field, str(d.get("evidence") or ""))


def clue_evidence(clue: dict[str, str], specs: dict[str, Any], graph: Any, src: Any, checker: Any) -> dict[str, str]:
    """Where a reader checks one clue of a record: ``{"page", "field", "sentence"}`` (the relation's sentence or infobox
    field, the fact's sentence or field, the description or first sentence an identity phrase was made from, the title
    for a name or a partial name); empty strings when not known.

    Args:
        clue: One item of :func:`~training.synth.compose.constraints.flatten`.
        specs: Entity title -> its :class:`~training.synth.compose.constraints.NodeSpec`.
        graph: The question's subgraph.
        src: The store.
        checker: The run's :class:`ClueChecker` (``None``: facts get their page only).
    """
    title, kind = clue["entity"], clue["type"]
    ev: Evidence | None = None
    if clue.get("anchor"):
        ev = _edge_evidence(graph, title, clue["anchor"])
    elif kind == "intersection":  # a cycle-closing edge between two other entities: "u -- v" in the clue's record
        spec = specs.get(title)
        c = next((c for c in (spec.ignored if spec else []) if c.text == clue["text"]), None)
        rec = dict(c.record) if c is not None else {}
        ev = _edge_evidence(graph, rec["u"], rec["v"]) if "u" in rec and "v" in rec else None
    elif kind == "negation":  # what the answer is not: the excluded page, as its description names it
        spec = specs.get(title)
        neg = next(
            (
                n
                for n in (spec.negations if spec else [])
                if clue["text"].endswith(n.identity.text if n.identity else n.entity)
            ),
            None,
        )
        ent = src.entity(neg.entity) if neg is not None else None
        if ent is not None:
            ev = Evidence(ent.title, "description", ent.description or ent.first_sentence)
    elif kind in ("named", "partial_name"):
        ev = Evidence(title, "title", title)
    elif kind in ("fuzzy_date", "fuzzy_number", "temporal_order"):
        spec = specs.get(title)
        fact = next((f for f in (spec.facts if spec else []) if f.text == clue["text"]), None)
        which = "number" if kind == "fuzzy_number" else "date"
        ev = checker.evidence(title, which, fact.original) if checker is not None and fact is not None else None
        if ev is None and kind == "temporal_order" and checker is not None and fact is not None:
            ev = checker.any_evidence(title, "date")  # a temporal order states no date: the page's dated sentence
    elif kind in ("type", "obfuscated_entity"):
        ent = src.entity(title)
        spec = specs.get(title)
        source = spec.source if spec is not None else ""
        if ent is not None:
            use_desc = source == "description" or (kind == "type" and not ent.first_sentence)
            ev = Evidence(
                title, "description" if use_desc else "lead", ent.description if use_desc else ent.first_sentence
            )
    ev = ev or Evidence(title, "", "")
    return ev.as_dict()


def render_checks(counts: dict[str, int]) -> list[str]:
    """The card's clue-verification section (Markdown lines)."""
    if not counts:
        return []
    rows = [
        ("dates checked / kept", f"{counts.get('date_checked', 0)} / {counts.get('date_kept', 0)}"),
        ("numbers checked / kept", f"{counts.get('number_checked', 0)} / {counts.get('number_kept', 0)}"),
        ("typed relations checked / kept", f"{counts.get('relation_checked', 0)} / {counts.get('relation_kept', 0)}"),
        ("composed questions checked", str(counts.get("question_checked", 0))),
    ]
    rows += [
        (f"dropped: {k[len('dropped_') :]}", str(v)) for k, v in sorted(counts.items()) if k.startswith("dropped_")
    ]
    return (
        ["## Clue verification", "", "Each fact and relation re-read in its evidence sentence or field.", ""]
        + ["| check | count |", "|---|---:|"]
        + [f"| {k} | {v} |" for k, v in rows]
        + [""]
    )
