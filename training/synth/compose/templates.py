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
:mod:`training.synth.compose.prose` writes the clue tree as several short sentences. The answer (the
target's title) never appears: descriptions avoid it, clues that would contain it are dropped,
and a question form that contains it is not used.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Collection, Hashable, Mapping
from dataclasses import dataclass, replace

import networkx as nx

from training.synth.compose.clue_builder import COUNTING_PROB, AnswerLeakError, ClueBuilder
from training.synth.compose.constraints import parse_clues
from training.synth.compose.prose import FORMS, render
from training.synth.compose.structural import feature, structural_clues, target_facts
from training.synth.compose.uncertainty import (
    Clue,
    UncertaintyType,
    head_noun,
    leaks,
    name_variants,
    negation_clue,
)
from training.synth.graph.kg import Entity, KnowledgeGraph, edge_rank
from training.synth.graph.sampling import Structure, Subgraph, classify_structure

U = UncertaintyType


ALL_TYPES: tuple[UncertaintyType, ...] = tuple(UncertaintyType)


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


def _bfs_children(g: nx.Graph, root: Hashable) -> tuple[dict[Hashable, list], dict[Hashable, int]]:
    """A breadth-first spanning tree from ``root`` whose edges are, among those of equal depth, the most specific
    relations (:func:`~training.synth.graph.kg.edge_rank`: an infobox field or a sentence's relation before a bare link)."""
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
    max_extra_facts: int = 6,
    quote_answer: bool = True,
    steer: Collection[UncertaintyType] = (),
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
        steer: Uncertainty types the set is short of: their optional clues (a negation, a fact stated up front, a
            blurred fact in a related entity's noun phrase) are used whenever the facts allow.

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
    b = ClueBuilder(g, target, facts, rng, types, named_prob, full, steer)
    b.quote_answer = quote_answer
    children, depth = _bfs_children(g, target)
    b.depth = depth
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
    if not kept or (
        any(c.type is U.RELATIONAL for c in clues) and not any(c.type is U.RELATIONAL for c in kept)
    ):  # a question with its relations scrubbed would be a bare date or number: no SailorFog question
        raise AnswerLeakError(f"every clue (or every relation) for {target!r} contains the answer's name; skip it")
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


def _neighbour_clues(b: ClueBuilder, g: nx.Graph, target: Hashable, children: Mapping[Hashable, list]) -> list[Clue]:
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
    form, order = template_form(draft.template)
    question = render(parse_clues(draft.answer, clues), draft.head, form=form, order=order, persons=draft.persons)
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


def excluding(draft: QuestionDraft, k: int, titles: Collection[str]) -> QuestionDraft:
    """The draft with its first ``k`` optional facts and a negation naming each of ``titles`` (look-alikes the
    uniqueness check left: "It is not Geology"), written again in the same form."""
    negs = tuple(negation_clue(Clue(t, U.OBFUSCATED_ENTITY, t, (("source", "title"),))) for t in titles)
    return extend(replace(draft, extras=(*draft.extras[:k], *negs, *draft.extras[k:])), k + len(negs))


def question_first(question: str) -> bool:
    """Whether a question is written with its question sentence first: one in three, chosen by a hash of its text
    (not the generator's random stream, so the questions drawn and their clues are the same either way)."""
    return zlib.crc32(question.encode("utf-8")) % 3 == 0


def template_form(template: str) -> tuple[str, str]:
    """``(form, order)`` of a record's template: ``"prose:what:first"`` -> ``("what", "first")``."""
    _, form, *order = template.split(":")
    return form, order[0] if order else "last"


def _render(
    forbidden: list[str], answer: str, head: str, clues: list[Clue], persons: tuple[str, ...], rng: random.Random
) -> tuple[str, str]:
    """The question as short sentences (:func:`~training.synth.compose.prose.render`), closed by a question form picked at
    random among those that do not show the answer."""
    root = parse_clues(answer, clues)
    forms = list(FORMS)
    rng.shuffle(forms)
    for form in forms:
        q = render(root, head, form=form, persons=persons)
        if not leaks(q, forbidden):
            if question_first(q):  # the same words, the question put before the clues
                first = render(root, head, form=form, order="first", persons=persons)
                if not leaks(first, forbidden):
                    return first, f"prose:{form}:first"
            return q, f"prose:{form}"
    raise AnswerLeakError(
        f"the answer {forbidden[0]!r} is a word of every question form (e.g. {q!r}); skip this target"
    )
