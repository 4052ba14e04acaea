"""Clues about the answer beyond its chain of relations: a cycle's closing relation, a near-miss exclusion, and the
optional facts (a blurred date or number, a whole-word name hint, a temporal order), some stated up front.

The first two are read off typed relations only (:func:`~training.synth.compose.transfer.typed_view`): the edge that closes
a cycle is stated with its own relation ("where the physicist was born in the city"), and a negation names an entity
that the same page relates the same way as the answer ("that is not <near miss>"), so a reader can check each on a
page. ``b`` is the template generator's builder (:class:`training.synth.compose.clue_builder.ClueBuilder`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import networkx as nx

from training.synth.compose.clues import Clue, UncertaintyType
from training.synth.compose.heads import head_of
from training.synth.compose.naming import name_variants
from training.synth.compose.uncertainty import (
    date_phrase,
    describe_entity,
    head_noun,
    leaks,
    negation_clue,
    partial_name_clue,
    relation_label,
    temporal_order_clue,
)
from training.synth.extract.relations import fill, infobox_template, is_text_relation

if TYPE_CHECKING:
    from training.synth.graph.kg import Entity

U = UncertaintyType
#: How often a question that has a near miss excludes it.
NEGATION_PROB = 0.6
#: How often a question whose subgraph closes a cycle states the closing relation.
CYCLE_PROB = 0.3
#: How often a question states, up front, an optional fact of each type about its answer (when it has one), so that
#: every uncertainty type appears in a set, not only those the uniqueness check asks for.
FEATURE_PROB = MappingProxyType({U.TEMPORAL_ORDER: 0.9, U.FUZZY_DATE: 0.2, U.FUZZY_NUMBER: 0.2, U.PARTIAL_NAME: 0.1})
#: Name hints a question may give: whole words only (the initial, the number of words), never a cut string.
NAME_HINTS = ("initial", "words")


def closing_text(attrs: Mapping, refs: Mapping[Hashable, str]) -> str | None:
    """``"where the physicist was born in the city"``: the typed relation of a cycle's closing edge between two
    entities the question already refers to; ``None`` for a relation that no page states."""
    src, dst = attrs.get("source_page"), attrs.get("target_page")
    if src not in refs or dst not in refs:
        return None
    relation = str(attrs.get("relation", ""))
    if is_text_relation(relation):
        return "where " + fill(relation, refs[src], refs[dst])
    if attrs.get("kind") == "infobox":
        return "where " + fill(infobox_template(relation_label(relation)), refs[src], refs[dst])
    return None


def structural_clues(b: Any, g: nx.Graph, children: Mapping[Hashable, list], ent: Entity) -> list[Clue]:
    """The closing relation of a cycle and a near-miss negation, as the structure and facts allow."""
    out: list[Clue] = []
    tree = {(u, v) for u, vs in children.items() for v in vs}
    refs = short_refs(b, g)
    for u, v in sorted(g.edges, key=lambda e: (str(e[0]), str(e[1]))):
        if (
            (u, v) in tree
            or (v, u) in tree
            or u not in refs
            or v not in refs
            or U.INTERSECTION not in b.types
            or not {u, v} <= b.seen
        ):
            continue
        if out or b.rng.random() >= CYCLE_PROB:
            break  # one closing relation at most (the verifier does not evaluate it)
        text = closing_text(g.edges[u, v], refs)
        if text is None:
            continue
        out.append(Clue(text, U.INTERSECTION, f"{u} -- {v}", (("edge", "cycle"), ("u", str(u)), ("v", str(v)))))
        b.used.add(U.INTERSECTION)
        b.count += 1
    p = 1.0 if U.NEGATION in b.steer else NEGATION_PROB
    miss = near_miss(b, children.get(b.target, [])) if b.kg is not None and b.allow(U.NEGATION, p) else None
    if miss is not None:
        phrase = b.noun_phrase(miss, with_fact=False)
        if dict(phrase.record).get("source") == "head":  # not "it is not a country": a bare type noun excludes
            phrase = describe_entity(b.entity(miss), forbidden=b.forbidden, named=True)  # nothing; name it
        own = describe_entity(ent, forbidden=b.forbidden)
        if phrase.text != own.text and dict(phrase.record).get("source") != "fallback":
            out.append(negation_clue(phrase))
            b.used.add(U.NEGATION)
            b.count += 1
    return out


#: Type nouns of places that a reader weighs against one another: "This country is not Central Asia" excludes a
#: candidate, "This star is not Medicine" excludes nothing.
_PLACES = frozenset(
    "country nation state kingdom republic empire territory continent landmass region subregion island archipelago "
    "peninsula city capital town".split()
)


def kind_of(b: Any, node: Hashable) -> tuple[str, bool]:
    """A node's type noun and whether it is a person: what :func:`same_kind` compares."""
    ent = b.entity(node)
    return head_noun(ent, forbidden=b.forbidden), ent.is_person


def same_kind(one: tuple[str, bool], other: tuple[str, bool]) -> bool:
    """Whether two :func:`kind_of` kinds are one, so that "<one> is not <other>" excludes a candidate: the same type
    noun, two people, or two places."""
    (ha, pa), (hc, pc) = one, other
    return ha == hc or (pa and pc) or (ha in _PLACES and hc in _PLACES)


def near_miss(b: Any, kids: list) -> Hashable | None:
    """A KG neighbour of one of the target's neighbours, outside the subgraph, related to it the
    way the target is (same relation, same direction) and of the target's kind (:func:`same_kind`): it fits that
    clue but is not the answer."""
    kids = list(kids)
    b.rng.shuffle(kids)
    mine = kind_of(b, b.target)  # the answer's kind, once for every candidate
    for c in kids:
        ref = b.g.edges[b.target, c]
        ref_out = ref.get("source_page") == c
        cands = []
        for s in sorted(b.kg.adj[c], key=str) if c in b.kg else []:
            e = b.kg.edges[c, s]
            same = e.get("relation") == ref.get("relation") and (e.get("source_page") == c) == ref_out
            if s not in b.g and same and same_kind(mine, kind_of(b, s)):
                cands.append(s)
        if cands:
            return cands[b.rng.randrange(len(cands))]
    return None


def short_refs(b: Any, g: nx.Graph) -> dict[Hashable, str]:
    """How the question can refer back to each entity it already introduced: by its name where the question names it
    (``"Turkey"``), else as ``"the <head>"`` of the noun phrase it was given (``"the area"`` for "the largest
    continental area on Earth"), where that head is unique among them and not the answer's. The head of the entity's
    own lead ("the landmass") is not used: the question never called it that."""
    answer_head = head_noun(b.entity(b.target), forbidden=b.forbidden)
    named: dict[Hashable, str] = {}
    heads: dict[Hashable, str] = {}
    for n in g:
        phrase = b.phrases.get(n)
        if n == b.target or phrase is None:
            continue
        if phrase in name_variants(str(n)):
            named[n] = phrase
        else:
            heads[n] = head_of(phrase)
    counts = Counter(heads.values())
    described = {
        n: f"the {h}"
        for n, h in heads.items()
        if len(h) >= 3 and counts[h] == 1 and h not in ("entity", "person", answer_head)
    }
    return {**described, **named}


def target_facts(b: Any, g: nx.Graph, ent: Entity) -> list[Clue]:
    """Optional clues about the answer itself: a blurred date and number and a temporal order against another entity
    (where the facts allow), in random order, then two slivers of its name; none showing the answer."""
    out = [x for x in (b.date_clue(ent), b.number_clue(ent)) if x is not None]
    attrs = [dict(x.record).get("attr", "") for x in out]  # a second date and quantity, of other kinds, come last
    more = [x for x in (b.date_clue(ent, skip=attrs), b.number_clue(ent, skip=attrs)) if x is not None]
    if U.PARTIAL_NAME in b.types:  # two different slivers of the name (an initial and a length, say)
        modes = list(NAME_HINTS)
        b.rng.shuffle(modes)
        out.extend(partial_name_clue(str(b.target), mode=m) for m in modes[:2])
    if U.TEMPORAL_ORDER in b.types:
        mine = [d for d in ent.dates if (p := date_phrase(d.attr)) and p[1]]
        others = sorted((n for n in g if n != b.target), key=str)
        b.rng.shuffle(others)
        kinds = person_kinds([b.entity(n) for n in g])
        for n in others:
            theirs = [d for d in dated(b.entity(n), kinds) if (p := date_phrase(d.attr)) and p[1]]
            clue = (
                temporal_order_clue(mine[0], theirs[0], b.noun_phrase(n, with_fact=False)) if mine and theirs else None
            )
            if clue is not None:
                out.append(clue)
                break
    b.rng.shuffle(out)  # blurred facts before slivers of the name: a question asks for a name last
    out = sorted(out + more, key=lambda c: c.type is U.PARTIAL_NAME)
    return [c for c in out if not leaks(c.text, b.forbidden)]


def person_kinds(entities: list[Entity]) -> set[str]:
    """The type nouns of the biographies among ``entities`` ("philosopher" where Aristotle's page reads as one)."""
    return {head_noun(e) for e in entities if e.is_person} - {"entity"}


def dated(ent: Entity, kinds: set[str]) -> list[Any]:
    """``ent``'s dates, without the ends of a bracketed range ("start"/"end") when its kind is one of ``kinds``:
    "(c. 428-347 BC)" on Plato, whose lead has no "He", is a lifetime, and "before Plato ended" says nothing."""
    if ent.is_person or head_noun(ent) not in kinds:
        return list(ent.dates)
    return [d for d in ent.dates if d.attr not in ("start", "end")]


def feature(b: Any, clues: list[Clue], extras: list[Clue]) -> tuple[list[Clue], list[Clue]]:
    """Move optional facts about the answer into the question up front, one per type at most, each with its
    :data:`FEATURE_PROB` (always for a type the run steers towards, ``b.steer``); returns ``(clues, extras)``."""
    if not clues or not b.quote_answer:
        return clues, extras
    for t, p in FEATURE_PROB.items():
        pick = next((c for c in extras if c.type is t), None)
        if pick is not None and b.rng.random() < (1.0 if t in b.steer else p):
            extras = [c for c in extras if c is not pick]
            clues = [*clues, pick]
            b.used |= pick.types() - {U.OBFUSCATED_ENTITY}
            b.used |= {U.OBFUSCATED_ENTITY for q in pick.parts if dict(q.record).get("source") != "title"}
            b.count += 1
    return clues, extras
