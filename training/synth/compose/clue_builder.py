"""The clue builder behind template questions: noun phrases, relations, blurred facts and counts for one question.

:class:`ClueBuilder` holds the state of one :func:`~training.synth.compose.templates.generate_question` call (the target,
the names the question must not show, the uncertainty types allowed and used, the phrase given to each entity) and
makes every clue of it; :mod:`training.synth.compose.templates` walks the subgraph and renders the question. Kept apart so
the template module holds the walk and the rendering only. :class:`AnswerLeakError` lives here because the builder
is the first to raise it.
"""

from __future__ import annotations

import random
import re
from collections.abc import Collection, Hashable, Mapping

import networkx as nx

from training.synth.compose.clues import listed_phrase
from training.synth.compose.constraints import strip_article
from training.synth.compose.naming import with_article
from training.synth.compose.quantities import fuzz_number, number_phrase
from training.synth.compose.transfer import listed_count
from training.synth.compose.uncertainty import (
    Clue,
    UncertaintyType,
    date_phrase,
    describe_entity,
    fuzz_date,
    head_noun,
    leaks,
    name_variants,
    relational_clue,
)
from training.synth.graph.kg import Entity, edge_rank

U = UncertaintyType


class AnswerLeakError(ValueError):
    """Every template would show the answer: its name is one of the template's own words
    (a page called "Name" or "Article"). Skip such targets and count them."""


#: How often a relation its page states as one item of a list becomes a counting clue.
COUNTING_PROB = 1.0
#: How often an entity two or more relations from the answer is named rather than described (when the draft names
#: any at all): a chain a reader can start from, as in BrowseComp, with fewer look-alikes for the uniqueness check.
DEEP_NAMED_PROB = 0.75


class ClueBuilder:
    """The clues of one question as it is built: each entity's noun phrase, its relations, blurred facts and counts,
    with the uncertainty types used and the number of atomic clues (:func:`~training.synth.compose.templates.generate_question`
    runs it; :mod:`training.synth.compose.structural` adds the structure's own clues through it)."""

    def __init__(
        self,
        g: nx.Graph,
        target: Hashable,
        facts: Mapping[str, Entity],
        rng: random.Random,
        types: Collection[UncertaintyType],
        named_prob: float,
        kg: nx.Graph | None,
        steer: Collection[UncertaintyType] = (),
    ) -> None:
        self.g, self.target, self.facts, self.rng, self.kg = g, target, facts, rng, kg
        self.types = set(types)
        self.named_prob = named_prob
        self.forbidden = name_variants(str(target))
        self.used: set[UncertaintyType] = set()
        self.count = 0
        self.steer = set(steer)  # types the run is short of: their optional clues are used whenever possible
        # a related entity's noun phrase carries a blurred fact this often (more often when dates are short)
        self.fact_prob = 0.25 if U.FUZZY_DATE in self.steer else 0.1
        self.phrases: dict[Hashable, str] = {}  # the noun phrase each entity was given
        self.depth: dict[Hashable, int] = {}  # each entity's distance from the answer in the question's tree
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
        p = self.named_prob
        if 0 < p < DEEP_NAMED_PROB and self.depth.get(node, 0) >= 2:
            p = DEEP_NAMED_PROB  # the far end of a chain is where a reader starts: usually a name
        named = not self.allow(U.OBFUSCATED_ENTITY, 1 - p)
        clue = describe_entity(ent, forbidden=self.forbidden, named=named)
        vague = dict(clue.record).get("source") == "fallback"
        circular = self.names_other(node, clue)
        if (
            (clue.text in self.phrases.values() and self.phrases.get(node) != clue.text)
            or self.restates(node, clue)
            or vague
            or circular
        ):
            # two entities described alike could not be told apart, "a country in Asia is a country in ..." says
            # nothing, "an entity related to <category>" says nothing a page states, and "the capital of Turkey is
            # the capital city of Turkey" says nothing twice: name this one, or (a description naming another
            # entity of the question, or a draft written again because one search answered it) give the head noun
            # of its own lead, unless it is the answer's ("the capital" beside "this capital" reads as the answer's)
            head = head_noun(ent, forbidden=self.forbidden)
            clue = describe_entity(ent, forbidden=self.forbidden, named=True)
            if (
                (circular or (vague and not self.quote_answer))
                and node != self.target
                and head not in ("entity", "person", head_noun(self.entity(self.target), forbidden=self.forbidden))
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

    def names_other(self, node: Hashable, clue: Clue) -> bool:
        """Whether a description of ``node`` names another entity of the question ("the capital of Turkey", with
        Turkey in the question): the sentence relating the two would then state its own description again."""
        if dict(clue.record).get("source") == "title":
            return False
        return any(other != node and leaks(clue.text, name_variants(str(other))) for other in self.g)

    def restates(self, node: Hashable, clue: Clue) -> bool:
        """Whether a sentence-relation of ``node`` (as its subject) restates its description: the relation and the
        description came from the same lead sentence ("is a country in ..."), or a description of two words at most
        opens with the relation's noun ("the capital city" beside "is the capital of")."""
        if dict(clue.record).get("source") == "title":
            return False
        words = strip_article(clue.text).lower().split()
        keys = [re.escape(" ".join(words[:2]))] + ([rf"\b{re.escape(words[0])}\b"] if 0 < len(words) <= 2 else [])
        for other in self.g.adj[node] if node in self.g else ():
            data = self.g.edges[node, other]
            for attrs in [data, *data.get("by_source", {}).values()]:
                rel = str(attrs.get("relation", ""))
                subject = attrs.get("source_page") if rel.startswith("{src}") else attrs.get("target_page")
                if "{" in rel and subject == node and any(re.search(k, rel.lower()) for k in keys):
                    return True
        return False

    def date_clue(self, ent: Entity, generic: bool = True, skip: Collection[str] = ()) -> Clue | None:
        """A fuzzed date with its verb; dates of a known kind first, any other known kind only if ``generic``
        (a date of no known kind is not used: "its article mentions an event" is no fact about the entity); none of
        the attributes in ``skip``."""
        dated = [d for d in ent.dates if date_phrase(d.attr) is not None and d.attr not in ("date", *skip)]
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

    def number_clue(self, ent: Entity, skip: Collection[str] = ()) -> Clue | None:
        """A blurred quantity of ``ent`` with its phrase ("a population of about 9 million"), of no attribute in
        ``skip``."""
        if U.FUZZY_NUMBER not in self.types:
            return None
        options = [
            n
            for n in ent.numbers
            if n.value > 0
            and n.attr not in skip
            and (p := number_phrase(n, fuzz_number(n, mode="about")))
            and not leaks(p, self.forbidden)
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
        """The relation of ``node`` to ``other`` as a counting clue, when the page stating it names one of them as
        one item of a list ("bordered by Ghana, Benin, Niger and Togo"): the relational clue with ``listed`` = the
        list's size. Either page may hold the list: ``other``'s listing ``node``, or ``node``'s listing ``other``."""
        rel = self.relation(node, other, anchor)
        data = self.g.edges[node, other]
        page = data.get("source_page")
        item = node if page == other else other if page == node else None
        total = listed_count(data, str(item), self.entity(page).infobox) if item is not None else 0
        if total < 2 or self._named_links(page, data) > total:
            return rel  # "one of 3" of a sentence that names seven linked places counts wrong: no count
        self.used.add(U.COUNTING)
        return Clue(
            f"{rel.text} {listed_phrase(total)}",
            rel.type,
            rel.original,
            (*rel.record, ("listed", str(total))),
            rel.parts,
        )

    def _named_links(self, page: Hashable, data: Mapping) -> int:
        """How many of ``page``'s knowledge-graph neighbours its edge's evidence sentence names (0: no graph)."""
        sentence = str(data.get("evidence") or "") if data.get("kind") != "infobox" else ""
        if self.kg is None or page not in self.kg or not sentence:
            return 0
        return sum(1 for n in self.kg.adj[page] if any(len(v) > 2 and v in sentence for v in name_variants(str(n))))

    def _not_bare(self, node: Hashable, base: Clue) -> Clue:
        """``base``, or the entity's name when ``base`` is a bare noun and nothing else ("a country"): a relation to
        "a country" with no further clue ("A country is part of this country") identifies nothing."""
        bare = len(strip_article(base.text).split()) <= 1  # a head noun alone, whether from the lead or a description
        if dict(base.record).get("source") == "title" or base.parts or not bare:
            return base
        named = describe_entity(self.entity(node), forbidden=self.forbidden, named=True)
        if dict(named.record).get("source") != "title" or named.text in self.phrases.values():
            return base
        self.phrases[node] = named.text
        return named

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
            return self._not_bare(node, base)
        joined = " and ".join(s.text for s in subs)
        return Clue(f"{base.text} {joined}", base.type, base.original, base.record, (base, *subs))
