"""Template question generation from a subgraph, a target and facts (SailorFog-QA-V2, step 5).

Deterministic and model-free: the subgraph is read as a breadth-first tree rooted at the
target, whose edges are the most specific relations available (a sentence's typed relation or
an infobox field before a bare link). Every other node becomes a blurred noun phrase (its
description, sometimes its name, sometimes with a fuzzed date), related to its parent by the
edge's relation ("was born in ...", "is the capital of ...": typed relations only, each stated by a
sentence or an infobox field of a page); the target itself gets up to a few direct clues (a fuzzed
date or number, a whole-word hint at its name, a temporal order), some of them stated up front so
every uncertainty type appears, and the structure adds the rest: the edge that closes a cycle may
be stated with its relation, a relation the page states as one item of a list becomes a counting
clue ("one of 5 named together on that page"), a near miss from the whole graph a negation.
:mod:`training.synth.prose` writes the clue tree as several short sentences. The answer (the
target's title) never appears: descriptions avoid it, clues that would contain it are dropped,
and a question form that contains it is not used.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Hashable, Mapping
from dataclasses import dataclass, replace

import networkx as nx

from training.synth.clues import listed_phrase
from training.synth.constraints import parse_clues, strip_article
from training.synth.kg import Entity, KnowledgeGraph, edge_rank
from training.synth.naming import with_article
from training.synth.prose import FORMS, render
from training.synth.sampling import Structure, Subgraph, classify_structure
from training.synth.structural import feature, structural_clues, target_facts
from training.synth.transfer import listed_count
from training.synth.uncertainty import (
    Clue,
    UncertaintyType,
    date_phrase,
    describe_entity,
    fuzz_date,
    fuzz_number,
    head_noun,
    leaks,
    name_variants,
    number_phrase,
    relational_clue,
)

U = UncertaintyType


class AnswerLeakError(ValueError):
    """Every template would show the answer: its name is one of the template's own words
    (a page called "Name" or "Article"). Skip such targets and count them."""


ALL_TYPES: tuple[UncertaintyType, ...] = tuple(UncertaintyType)
#: How often a relation its page states as one item of a list becomes a counting clue.
COUNTING_PROB = 1.0


@dataclass(frozen=True)
class QuestionDraft:
    """A synthesised question before any model rewriting or verification.

    Attributes:
        question: The question text.
        answer: The target's title.
        uncertainty_types: The :class:`UncertaintyType` values used, sorted.
        constraints: Number of atomic clues (relations, blurred facts, exclusions...).
        hops: The longest chain of relations the question states, from the answer (at most the target's
            eccentricity in the subgraph).
        structure: The subgraph's :class:`Structure` value.
        template: Which template rendered it.
        clues: The top-level clues, with their records.
        nodes: The subgraph's nodes.
        scrubbed: Clues that contained the answer's name were dropped (rare: a unit such as
            "square kilometres" when the answer is "Square"); callers may count these.
        head: The type noun the question asks for ("physicist"), itself a constraint on the answer.
        extras: Optional facts about the answer, not stated yet (see :func:`extend`).
        persons: Titles of the entities that are people (the prose says "this physicist", not "it").
    """

    question: str
    answer: str
    uncertainty_types: tuple[str, ...]
    constraints: int
    hops: int
    structure: str
    template: str
    clues: tuple[Clue, ...] = ()
    nodes: tuple = ()
    scrubbed: bool = False
    head: str = ""
    extras: tuple[Clue, ...] = ()
    persons: tuple[str, ...] = ()


class _Builder:
    def __init__(
        self,
        g: nx.Graph,
        target: Hashable,
        facts: Mapping[str, Entity],
        rng: random.Random,
        types: Collection[UncertaintyType],
        named_prob: float,
        kg: nx.Graph | None,
    ) -> None:
        self.g, self.target, self.facts, self.rng, self.kg = g, target, facts, rng, kg
        self.types = set(types)
        self.named_prob = named_prob
        self.forbidden = name_variants(str(target))
        self.used: set[UncertaintyType] = set()
        self.count = 0
        self.fact_prob = 0.1  # a related entity's noun phrase carries a blurred fact this often
        self.phrases: dict[Hashable, str] = {}  # the noun phrase each entity was given
        self.seen: set[Hashable] = {target}  # the entities the question's chain of relations reaches
        self.quote_answer = True  # state optional facts about the answer up front (FEATURE_PROB)

    def entity(self, node: Hashable) -> Entity:
        ent = self.facts.get(node) if isinstance(node, str) else None
        for graph in (self.g, self.kg):
            if ent is None and graph is not None and node in graph:
                ent = graph.nodes[node].get("entity")
        return ent or Entity(title=str(node))

    def allow(self, t: UncertaintyType, p: float = 1.0) -> bool:
        return t in self.types and self.rng.random() < p

    def noun_phrase(self, node: Hashable, with_fact: bool = True) -> Clue:
        ent = self.entity(node)
        named = not self.allow(U.OBFUSCATED_ENTITY, 1 - self.named_prob)
        clue = describe_entity(ent, forbidden=self.forbidden, named=named)
        vague = dict(clue.record).get("source") == "fallback"
        if (
            (clue.text in self.phrases.values() and self.phrases.get(node) != clue.text)
            or self.restates(node, clue)
            or vague
        ):
            # two entities described alike could not be told apart, "a country in Asia is a country in ..." says
            # nothing, and "an entity related to <category>" says nothing a page states: name this one, or (in a
            # draft written again because one search answered it) give the head noun of its own lead
            head = head_noun(ent, forbidden=self.forbidden)
            clue = describe_entity(ent, forbidden=self.forbidden, named=True)
            if (
                vague
                and not self.quote_answer
                and node != self.target
                and head not in ("entity", "person")
                and dict(clue.record).get("source") == "title"
                and with_article(head) not in self.phrases.values()
            ):
                vaguer = Clue(with_article(head), U.OBFUSCATED_ENTITY, ent.title, (("source", "head"),))
                clue = clue if self.restates(node, vaguer) else vaguer  # not "the capital is the capital of ..."
        if dict(clue.record).get("source") == "fallback":
            raise AnswerLeakError(f"{node!r} has no description of its own and its name shows the answer")
        self.phrases.setdefault(node, clue.text)
        if dict(clue.record).get("source") != "title":
            self.used.add(U.OBFUSCATED_ENTITY)
        if with_fact and dict(clue.record).get("source") != "title" and self.rng.random() < self.fact_prob:
            extra = self.date_clue(ent, generic=False) or self.number_clue(ent) or self.date_clue(ent)
            if extra is not None:
                clue = Clue(f"{clue.text} {extra.text}", clue.type, clue.original, clue.record, (extra,))
        return clue

    def restates(self, node: Hashable, clue: Clue) -> bool:
        """Whether a sentence-relation of ``node`` (as its subject) restates its description: the relation and the
        description came from the same lead sentence ("is a country in ...")."""
        if dict(clue.record).get("source") == "title":
            return False
        key = " ".join(strip_article(clue.text).lower().split()[:2])
        for other in self.g.adj[node] if node in self.g else ():
            data = self.g.edges[node, other]
            for attrs in [data, *data.get("by_source", {}).values()]:
                rel = str(attrs.get("relation", ""))
                subject = attrs.get("source_page") if rel.startswith("{src}") else attrs.get("target_page")
                if "{" in rel and subject == node and key in rel.lower():
                    return True
        return False

    def date_clue(self, ent: Entity, generic: bool = True) -> Clue | None:
        """A fuzzed date with its verb; dates of a known kind first, any other known kind only if ``generic``
        (a date of no known kind is not used: "its article mentions an event" is no fact about the entity)."""
        dated = [d for d in ent.dates if date_phrase(d.attr) is not None and d.attr != "date"]
        named = [d for d in dated if d.attr != "date"]
        named = [d for d in named if not leaks(date_phrase(d.attr)[0], self.forbidden)]
        pool = named or (dated if generic else [])
        if not pool or U.FUZZY_DATE not in self.types:
            return None
        d = pool[self.rng.randrange(len(pool))]
        fuzzed = fuzz_date(d, rng=self.rng)
        self.used.add(U.FUZZY_DATE)
        self.count += 1
        return Clue(f"{date_phrase(d.attr)[0]} {fuzzed.text}", U.FUZZY_DATE, d.text, fuzzed.record)

    def number_clue(self, ent: Entity) -> Clue | None:
        if U.FUZZY_NUMBER not in self.types:
            return None
        options = [
            n
            for n in ent.numbers
            if n.value > 0 and (p := number_phrase(n, fuzz_number(n, mode="about"))) and not leaks(p, self.forbidden)
        ]
        if not options:
            return None
        n = options[self.rng.randrange(len(options))]
        fuzzed = fuzz_number(n, rng=self.rng)
        self.used.add(U.FUZZY_NUMBER)
        self.count += 1
        return Clue(number_phrase(n, fuzzed) or fuzzed.text, U.FUZZY_NUMBER, n.text, fuzzed.record)

    def relation(self, node: Hashable, other: Hashable, anchor: Clue) -> Clue:
        """Describe ``node`` through its edge to ``other`` (described by ``anchor``)."""
        data = self.g.edges[node, other]
        theirs = data.get("by_source", {}).get(other)
        if (
            node == self.target
            and theirs is not None
            and data.get("source_page") != other
            and edge_rank(theirs) <= edge_rank(data)
        ):
            # the anchor's page states it as well as the answer's: quote the anchor's sentence, not the answer's lead
            data.update(theirs)
        self.used.add(U.RELATIONAL)
        self.count += 1
        relation = str(data.get("relation", "link"))
        return relational_clue(anchor, relation, anchor_is_source=data.get("source_page", other) == other)

    def counted(self, node: Hashable, other: Hashable, anchor: Clue) -> Clue | None:
        """The relation of ``node`` to ``other`` as a counting clue, when ``other``'s page states it as one item of a
        list ("bordered by Ghana, Benin, Niger and Togo"): the relational clue with ``listed`` = the list's size."""
        rel = self.relation(node, other, anchor)
        data = self.g.edges[node, other]
        total = listed_count(data, str(node), self.entity(other).infobox) if data.get("source_page") == other else 0
        if total < 2:
            return rel
        self.used.add(U.COUNTING)
        return Clue(
            f"{rel.text} {listed_phrase(total)}",
            rel.type,
            rel.original,
            (*rel.record, ("listed", str(total))),
            rel.parts,
        )

    def describe(self, node: Hashable, children: Mapping[Hashable, list]) -> Clue:
        """A noun phrase for ``node`` with relational clauses for its subtree."""
        self.seen.add(node)
        base = self.noun_phrase(node)
        subs = [
            self.counted(node, c, d) if self.allow(U.COUNTING, COUNTING_PROB) else self.relation(node, c, d)
            for c in children.get(node, [])
            for d in [self.describe(c, children)]
        ]
        if not subs:
            return base
        joined = " and ".join(s.text for s in subs)
        return Clue(f"{base.text} {joined}", base.type, base.original, base.record, (base, *subs))


def _bfs_children(g: nx.Graph, root: Hashable) -> tuple[dict[Hashable, list], dict[Hashable, int]]:
    """A breadth-first spanning tree from ``root`` whose edges are, among those of equal depth, the most specific
    relations (:func:`~training.synth.kg.edge_rank`: an infobox field or a sentence's relation before a bare link)."""
    children: dict[Hashable, list] = {}
    depth = {root: 0}
    frontier = [root]
    while frontier:
        best: dict[Hashable, tuple[int, str, Hashable]] = {}
        for u in frontier:
            for v in sorted(g.adj[u], key=str):
                if v not in depth:
                    cand = (edge_rank(g.edges[u, v]), str(u), u)
                    if v not in best or cand[:2] < best[v][:2]:
                        best[v] = cand
        nxt = sorted(best, key=str)
        for v in nxt:
            depth[v] = depth[best[v][2]] + 1
            children.setdefault(best[v][2], []).append(v)
        for u in children:
            children[u].sort(key=str)
        frontier = nxt
    return children, depth


def generate_question(
    subgraph: Subgraph | nx.Graph,
    target: Hashable,
    facts: Mapping[str, Entity],
    rng: random.Random | int = 0,
    types: Collection[UncertaintyType] = ALL_TYPES,
    *,
    kg: KnowledgeGraph | nx.Graph | None = None,
    named_prob: float = 0.25,
    max_extra_facts: int = 4,
    quote_answer: bool = True,
) -> QuestionDraft:
    """Turn a subgraph, a target node and the entities' facts into one question.

    Args:
        subgraph: A sampled :class:`Subgraph` (or a connected graph with KG edge attributes).
        target: The node whose title is the answer.
        facts: Title -> :class:`Entity` (e.g. ``kg.entities``); nodes missing here fall back to
            their ``entity`` node attribute, then to a bare title.
        rng: Random generator or seed (the same seed gives the same question).
        types: The uncertainty transforms allowed. ``RELATIONAL`` is used whenever the target
            has neighbours (the subgraph's edges are the question); the others are optional.
        kg: The whole knowledge graph, for near-miss candidates (a negation names a neighbour of
            the target's neighbour, related the same way, that is *not* the answer); without it
            no negation clue is made.
        named_prob: Probability that a non-target node is named instead of described.
        max_extra_facts: At most this many optional facts about the answer (a blurred date or number, a
            hint at its name, a temporal order) kept in ``extras``; the question states some of them up front
            (:data:`FEATURE_PROB`) and :func:`extend` adds those the uniqueness check needs.
        quote_answer: ``False`` states no optional fact up front and leaves out a leaf relation quoted from the
            answer's own lead when other relations remain (for a draft written again because one search answered it).

    Returns:
        The :class:`QuestionDraft`.

    Raises:
        KeyError: ``target`` is not a node of the subgraph.
        ValueError: No clue at all can be made (a lone node without usable facts).
        AnswerLeakError: The answer's name is a word of every template (skip the target).
    """
    rng = rng if isinstance(rng, random.Random) else random.Random(rng)
    g = subgraph if isinstance(subgraph, nx.Graph) else subgraph.graph
    if target not in g:
        raise KeyError(f"target {target!r} is not in the subgraph (nodes: {sorted(map(str, g.nodes))})")
    structure = classify_structure(g) if nx.is_connected(g) else Structure.OTHER
    full = kg.graph if isinstance(kg, KnowledgeGraph) else kg
    b = _Builder(g, target, facts, rng, types, named_prob, full)
    b.quote_answer = quote_answer
    children, depth = _bfs_children(g, target)
    ent = b.entity(target)
    head = head_noun(ent, forbidden=b.forbidden) if U.OBFUSCATED_ENTITY in b.types else "entity"
    clues = _neighbour_clues(b, g, target, children) + structural_clues(b, g, children, ent)
    used = set(b.used)  # the optional facts below add their types only when a question uses them
    extras = target_facts(b, g, ent)
    b.used = used
    clues, extras = feature(b, clues, extras)
    if not clues:
        if not extras:
            raise ValueError(
                f"no clue can be made for {target!r}: it has no neighbour in the subgraph and no usable "
                f"fact among the allowed types; pass a connected subgraph of 2+ nodes"
            )
        clues, extras = extras[:1], extras[1:]
        b.used |= clues[0].types() - {U.OBFUSCATED_ENTITY}
    if len(clues) >= 2 and U.INTERSECTION in b.types:
        b.used.add(U.INTERSECTION)  # the answer is only pinned down by all the top-level clues together
    kept = [c for c in clues if not leaks(c.text, b.forbidden)]
    scrubbed = len(kept) < len(clues)
    if not kept:
        raise AnswerLeakError(f"every clue for {target!r} contains the answer's name; skip this target")
    clues = kept
    persons = tuple(sorted(str(n) for n in g if b.entity(n).is_person))
    question, template = _render(b.forbidden, str(target), head, clues, persons, rng)
    return QuestionDraft(
        question=question,
        answer=str(target),
        uncertainty_types=tuple(sorted(t.value for t in b.used)),
        constraints=b.count,
        hops=max(depth[n] for n in b.seen),
        structure=structure.value,
        template=template,
        clues=tuple(clues),
        nodes=tuple(g.nodes),
        scrubbed=scrubbed,
        head=head,
        extras=tuple(extras[:max_extra_facts]),
        persons=persons,
    )


def _neighbour_clues(b: _Builder, g: nx.Graph, target: Hashable, children: Mapping[Hashable, list]) -> list[Clue]:
    """One clue per neighbour of the target: its relation, counted when the neighbour's page lists it (sometimes)."""
    clues: list[Clue] = []
    kids = children.get(target, [])
    for c in kids:
        data = g.edges[target, c]
        own = data.get("source_page") == target and data.get("by_source", {}).get(c) is None
        spare = not b.quote_answer and not children.get(c) and len(clues) + 1 < len(kids)
        if own and spare:
            continue  # the answer's own lead, quoted, is what one search finds: leave it out when others remain
        anchor = b.describe(c, children)
        clues.append(
            b.counted(target, c, anchor) if b.allow(U.COUNTING, COUNTING_PROB) else b.relation(target, c, anchor)
        )
    return clues


def extend(draft: QuestionDraft, k: int) -> QuestionDraft:
    """The draft with its first ``k`` optional facts about the answer added (the question written again in the
    same form); the uniqueness check asks for as many as the answer needs to be the only fit."""
    if k <= 0:
        return draft
    add = draft.extras[:k]
    clues = [*draft.clues, *add]
    types = set(draft.uncertainty_types) | {t.value for c in add for t in c.types() if t is not U.OBFUSCATED_ENTITY}
    types |= {U.OBFUSCATED_ENTITY.value for c in add for p in c.parts if dict(p.record).get("source") != "title"}
    types.add(U.INTERSECTION.value)
    form = draft.template.split(":", 1)[-1]
    question = render(parse_clues(draft.answer, clues), draft.head, form=form, persons=draft.persons)
    if leaks(question, name_variants(draft.answer)):
        raise AnswerLeakError(f"the extended question shows the answer {draft.answer!r}")
    return replace(
        draft,
        question=question,
        clues=tuple(clues),
        extras=draft.extras[k:],
        uncertainty_types=tuple(sorted(types)),
        constraints=draft.constraints + k,
    )


def _render(
    forbidden: list[str], answer: str, head: str, clues: list[Clue], persons: tuple[str, ...], rng: random.Random
) -> tuple[str, str]:
    """The question as short sentences (:func:`~training.synth.prose.render`), closed by a question form picked at
    random among those that do not show the answer."""
    root = parse_clues(answer, clues)
    forms = list(FORMS)
    rng.shuffle(forms)
    for form in forms:
        q = render(root, head, form=form, persons=persons)
        if not leaks(q, forbidden):
            return q, f"prose:{form}"
    raise AnswerLeakError(
        f"the answer {forbidden[0]!r} is a word of every question form (e.g. {q!r}); skip this target"
    )
