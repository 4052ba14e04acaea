"""Template question generation from a subgraph, a target and facts (SailorFog-QA-V2, step 5).

Deterministic and model-free: the subgraph is read as a breadth-first tree rooted at the
target, whose edges are the most specific relations available (a sentence's typed relation or
an infobox field before a bare link). Every other node becomes a blurred noun phrase (its
description, sometimes its name, sometimes with a fuzzed date), related to its parent by the
edge's relation ("was born in ...", "is the capital of ...", "whose article mentions ..." when
nothing better exists); the target itself gets up to a few direct clues (a fuzzed date or
number, a sliver of its name), and the structure adds the rest: the edges that close cycles
may become an "... are also linked" constraint, a high-degree neighbour can become a counting
clue, a near miss from the whole graph a negation, another dated node a temporal order.
:mod:`training.synth.prose` writes the clue tree as several short sentences. The answer (the
target's title) never appears: descriptions avoid it, clues that would contain it are dropped,
and a question form that contains it is not used.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Hashable, Mapping
from dataclasses import dataclass, replace

import networkx as nx

from training.synth.constraints import parse_clues, strip_article
from training.synth.kg import Entity, KnowledgeGraph, edge_rank
from training.synth.prose import FORMS, render
from training.synth.sampling import Structure, Subgraph, classify_structure
from training.synth.uncertainty import (
    Clue,
    UncertaintyType,
    counting_clue,
    date_phrase,
    describe_entity,
    fuzz_date,
    fuzz_number,
    head_noun,
    leaks,
    name_variants,
    negation_clue,
    number_phrase,
    partial_name_clue,
    relational_clue,
    temporal_order_clue,
)

U = UncertaintyType


class AnswerLeakError(ValueError):
    """Every template would show the answer: its name is one of the template's own words
    (a page called "Name" or "Article"). Skip such targets and count them."""


ALL_TYPES: tuple[UncertaintyType, ...] = tuple(UncertaintyType)


@dataclass(frozen=True)
class QuestionDraft:
    """A synthesised question before any model rewriting or verification.

    Attributes:
        question: The question text.
        answer: The target's title.
        uncertainty_types: The :class:`UncertaintyType` values used, sorted.
        constraints: Number of atomic clues (relations, blurred facts, exclusions...).
        hops: Eccentricity of the target in the subgraph (longest chain of relations to follow).
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
    def __init__(self, g: nx.Graph, target: Hashable, facts: Mapping[str, Entity], rng: random.Random,
                 types: Collection[UncertaintyType], named_prob: float, kg: nx.Graph | None) -> None:
        self.g, self.target, self.facts, self.rng, self.kg = g, target, facts, rng, kg
        self.types = set(types)
        self.named_prob = named_prob
        self.forbidden = name_variants(str(target))
        self.used: set[UncertaintyType] = set()
        self.count = 0
        self.fact_prob = 0.1  # a related entity's noun phrase carries a blurred fact this often
        self.phrases: dict[Hashable, str] = {}  # the noun phrase each entity was given
        self.quote_answer = True  # state the answer's relations in the words of the answer's own page

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
        if (clue.text in self.phrases.values() and self.phrases.get(node) != clue.text) or self.restates(node, clue):
            # two entities described alike could not be told apart, and "a country in Asia is a country in ..."
            # says nothing: name this one
            clue = describe_entity(ent, forbidden=self.forbidden, named=True)
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
        """A fuzzed date with its verb; dates of a known kind first, a bare "date" only if ``generic``."""
        dated = [d for d in ent.dates if date_phrase(d.attr) is not None]
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
        options = [n for n in ent.numbers if n.value > 0 and (p := number_phrase(n, fuzz_number(n, mode="about")))
                   and not leaks(p, self.forbidden)]
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
        if node == self.target and theirs is not None and data.get("source_page") != other \
                and edge_rank(theirs) <= edge_rank(data):
            # the anchor's page states it as well as the answer's: quote the anchor's sentence, not the answer's lead
            data.update(theirs)
        self.used.add(U.RELATIONAL)
        self.count += 1
        relation = str(data.get("relation", "link"))
        if node == self.target and not self.quote_answer and data.get("source_page") == node and "{" in relation:
            relation = str(data.get("kind", "link"))  # the answer's own lead, quoted, is what one search finds
        return relational_clue(anchor, relation, anchor_is_source=data.get("source_page", other) == other)

    def describe(self, node: Hashable, children: Mapping[Hashable, list]) -> Clue:
        """A noun phrase for ``node`` with relational clauses for its subtree."""
        base = self.noun_phrase(node)
        subs = [self.relation(node, c, self.describe(c, children)) for c in children.get(node, [])]
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


def generate_question(subgraph: Subgraph | nx.Graph, target: Hashable, facts: Mapping[str, Entity],
                      rng: random.Random | int = 0, types: Collection[UncertaintyType] = ALL_TYPES, *,
                      kg: KnowledgeGraph | nx.Graph | None = None, named_prob: float = 0.25,
                      max_extra_facts: int = 4, quote_answer: bool = True) -> QuestionDraft:
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
            sliver of its name, a temporal order) kept in ``extras``; the question states none of them
            until :func:`extend` adds those the uniqueness check needs.
        quote_answer: State a relation read from the answer's own page with its phrase; ``False``
            says only that the pages are linked (the phrase, verbatim from the answer's lead, is
            what a single search finds).

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
    clues = _neighbour_clues(b, g, target, children) + _structural_clues(b, g, children, ent)
    used = set(b.used)  # the optional facts below add their types only when a question uses them
    extras = _target_facts(b, g, ent)
    b.used = used
    if not clues:
        if not extras:
            raise ValueError(f"no clue can be made for {target!r}: it has no neighbour in the subgraph and no usable "
                             f"fact among the allowed types; pass a connected subgraph of 2+ nodes")
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
    return QuestionDraft(question=question, answer=str(target), uncertainty_types=tuple(sorted(t.value for t in b.used)),
                         constraints=b.count, hops=max(depth.values()), structure=structure.value, template=template,
                         clues=tuple(clues), nodes=tuple(g.nodes), scrubbed=scrubbed, head=head,
                         extras=tuple(extras[:max_extra_facts]), persons=persons)


def _neighbour_clues(b: _Builder, g: nx.Graph, target: Hashable, children: Mapping[Hashable, list]) -> list[Clue]:
    """One clue per neighbour of the target: how many pages link to it (sometimes, when 3+ do), else the relation."""
    clues: list[Clue] = []
    for c in children.get(target, []):
        # the count a reader can check is the page's degree in the corpus when the graph knows it, not in the KG
        total = int(g.nodes[c].get("corpus_degree", g.nodes[c].get("degree", 0)))
        if b.allow(U.COUNTING, 0.15) and total >= 3:
            clues.append(counting_clue(total, b.describe(c, children)))
            b.used.add(U.COUNTING)
            b.count += 1
        else:
            clues.append(b.relation(target, c, b.describe(c, children)))
    return clues


def _target_facts(b: _Builder, g: nx.Graph, ent: Entity) -> list[Clue]:
    """Optional clues about the answer itself: a blurred date and number and a temporal order against another entity
    (where the facts allow), in random order, then two slivers of its name; none showing the answer."""
    out = [x for x in (b.date_clue(ent), b.number_clue(ent)) if x is not None]
    if U.PARTIAL_NAME in b.types:  # two different slivers of the name (an initial and a length, say)
        modes = ["initial", "prefix", "length", "words"]
        b.rng.shuffle(modes)
        out.extend(partial_name_clue(str(b.target), mode=m) for m in modes[:2])
    if U.TEMPORAL_ORDER in b.types:
        mine = [d for d in ent.dates if (p := date_phrase(d.attr)) and p[1]]
        others = sorted((n for n in g if n != b.target), key=str)
        b.rng.shuffle(others)
        for n in others:
            theirs = [d for d in b.entity(n).dates if (p := date_phrase(d.attr)) and p[1]]
            clue = temporal_order_clue(mine[0], theirs[0], b.noun_phrase(n, with_fact=False)) \
                if mine and theirs else None
            if clue is not None:
                out.append(clue)
                break
    b.rng.shuffle(out)  # blurred facts before slivers of the name: a question asks for a name last
    out.sort(key=lambda c: c.type is U.PARTIAL_NAME)
    return [c for c in out if not leaks(c.text, b.forbidden)]


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
    return replace(draft, question=question, clues=tuple(clues), extras=draft.extras[k:],
                   uncertainty_types=tuple(sorted(types)), constraints=draft.constraints + k)


def _structural_clues(b: _Builder, g: nx.Graph, children: Mapping[Hashable, list], ent: Entity) -> list[Clue]:
    """Cycle-closing edges, a near-miss negation and a temporal order, as the structure and facts allow."""
    out: list[Clue] = []
    tree = {(u, v) for u, vs in children.items() for v in vs}
    refs = _short_refs(b, g)
    for u, v in sorted(g.edges, key=lambda e: (str(e[0]), str(e[1]))):
        if (u, v) in tree or (v, u) in tree or u not in refs or v not in refs or U.INTERSECTION not in b.types:
            continue
        if any(c.type is U.INTERSECTION for c in out) or b.rng.random() < 0.7:
            break  # one closing link at most (the verifier does not need it: it says the relations form a cycle)
        text = f"where {refs[u]} and {refs[v]} are also linked"
        out.append(Clue(text, U.INTERSECTION, f"{u} -- {v}", (("edge", "cycle"), ("u", str(u)), ("v", str(v)))))
        b.used.add(U.INTERSECTION)
        b.count += 1
    miss = _near_miss(b, children.get(b.target, [])) if b.kg is not None and b.allow(U.NEGATION, 0.1) else None
    if miss is not None:
        phrase = b.noun_phrase(miss, with_fact=False)
        own = describe_entity(ent, forbidden=b.forbidden)
        if phrase.text != own.text and dict(phrase.record).get("source") != "fallback":
            out.append(negation_clue(phrase))
            b.used.add(U.NEGATION)
            b.count += 1
    return out


def _near_miss(b: _Builder, kids: list) -> Hashable | None:
    """A KG neighbour of one of the target's neighbours, outside the subgraph, related to it the
    way the target is (same relation, same direction): it fits that clue but is not the answer."""
    if not kids:
        return None
    c = kids[b.rng.randrange(len(kids))]
    ref = b.g.edges[b.target, c]
    ref_out = ref.get("source_page") == c
    cands = []
    for s in sorted(b.kg.adj[c], key=str) if c in b.kg else []:
        if s in b.g:
            continue
        e = b.kg.edges[c, s]
        if e.get("relation") == ref.get("relation") and (e.get("source_page") == c) == ref_out:
            cands.append(s)
    return cands[b.rng.randrange(len(cands))] if cands else None


def _short_refs(b: _Builder, g: nx.Graph) -> dict[Hashable, str]:
    """``"the physicist"`` for nodes whose head noun is unique in the subgraph (and not the target's)."""
    heads = {n: head_noun(b.entity(n), forbidden=b.forbidden) for n in g}
    counts: dict[str, int] = {}
    for h in heads.values():
        counts[h] = counts.get(h, 0) + 1
    return {n: f"the {h}" for n, h in heads.items()
            if n != b.target and counts[h] == 1 and h not in ("entity", "person")}


def _render(forbidden: list[str], answer: str, head: str, clues: list[Clue], persons: tuple[str, ...],
            rng: random.Random) -> tuple[str, str]:
    """The question as short sentences (:func:`~training.synth.prose.render`), closed by a question form picked at
    random among those that do not show the answer."""
    root = parse_clues(answer, clues)
    forms = list(FORMS)
    rng.shuffle(forms)
    for form in forms:
        q = render(root, head, form=form, persons=persons)
        if not leaks(q, forbidden):
            return q, f"prose:{form}"
    raise AnswerLeakError(f"the answer {forbidden[0]!r} is a word of every question form (e.g. {q!r}); skip this target")
