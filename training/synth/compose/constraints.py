"""A question's clues as a constraint tree, read back from the generator's :class:`Clue` records.

The template generator renders a question from a breadth-first tree rooted at the answer: every
other node is a noun phrase (its *identity*: a description or its name), chained to its parent
by a relation, with optional blurred facts. :func:`parse_draft` recovers that tree from the
:class:`~training.synth.compose.templates.QuestionDraft`'s clues (each clue keeps the entity it came from
in ``original`` and what was done in ``record``), so that the verifier can evaluate it against
the whole corpus without trusting the generator, and so that each record can list its clues per
entity. :func:`flatten` gives the per-entity clue list of the record schema.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from training.synth.compose.clues import Clue, UncertaintyType, listed_phrase
from training.synth.compose.naming import with_article
from training.synth.compose.uncertainty import relational_clue

U = UncertaintyType


@dataclass
class NodeSpec:
    """What the question says about one entity.

    Attributes:
        entity: The true page title (known to the generator; the verifier checks it is the only fit).
        identity: The noun phrase naming or describing it (``None`` for the answer, which is asked for).
        facts: Blurred facts about it: ``FUZZY_DATE``, ``FUZZY_NUMBER``, ``PARTIAL_NAME``, ``TEMPORAL_ORDER``.
        relations: ``(relation, direction, child)``; ``direction`` is ``"from_anchor"`` when the
            child's page holds the relation (its article mentions this entity / its ``relation`` is it).
        counts: ``(total, scope)``: this entity is one of the ``total`` pages linked with ``scope``.
        negations: Descriptions this entity is *not*.
        ignored: Clues the verifier does not evaluate (cycle-closing edges between other nodes);
            ignoring a clue can only add candidates, so a uniqueness pass stays sound.
        depth: Distance from the answer in the question's tree.
        listed: For a related entity: the size of the list, on the page stating its relation to its parent, that
            names one of the two ("one of 5 named together on that page"); 0 when no count is stated. The verifier checks the relation
            and not the count (sound, as above).
    """

    entity: str
    identity: Clue | None = None
    facts: list[Clue] = field(default_factory=list)
    relations: list[tuple[str, str, NodeSpec]] = field(default_factory=list)
    counts: list[tuple[int, NodeSpec]] = field(default_factory=list)
    negations: list[NodeSpec] = field(default_factory=list)
    ignored: list[Clue] = field(default_factory=list)
    depth: int = 0
    listed: int = 0

    @property
    def source(self) -> str:
        """How the identity was made: ``title``, ``description``, ``first_sentence``, ``fallback`` (or ``""``)."""
        return dict(self.identity.record).get("source", "") if self.identity else ""

    def constraint_count(self) -> int:
        """Atomic constraints in this subtree (identity, facts, relations, counts, negations, ignored)."""
        own = (
            (self.identity is not None and self.source != "title")
            + len(self.facts)
            + len(self.negations)
            + len(self.ignored)
            + len(self.relations)
            + len(self.counts)
        )
        return (
            own
            + sum(c.constraint_count() for _, _, c in self.relations)
            + sum(c.constraint_count() for _, c in self.counts)
        )


class ParseError(ValueError):
    """A clue tree that :func:`parse_draft` does not understand (from a generator other than the template one)."""


def _entity_clue(c: Clue, depth: int) -> NodeSpec:
    """Parse an ``OBFUSCATED_ENTITY`` clue: a noun phrase, maybe with facts and a subtree of relations."""
    if c.type is not U.OBFUSCATED_ENTITY or not c.original:
        raise ParseError(
            f"expected an entity clue (obfuscated_entity with the title in .original), got {c.type}: {c.text!r}"
        )
    if c.parts and c.parts[0].type is U.OBFUSCATED_ENTITY and c.parts[0].original == c.original:
        node = _entity_clue(c.parts[0], depth)  # a describe() wrapper: base phrase, then relations to children
        for sub in c.parts[1:]:
            _add_relation(node, sub, depth)
        return node
    text = c.text
    facts: list[Clue] = []
    for extra in c.parts:  # "a physicist born in the late 1870s": the fact was appended to the phrase
        if not text.endswith(" " + extra.text):
            raise ParseError(f"entity clue {c.text!r} does not end with its fact {extra.text!r}")
        text = text[: -len(extra.text) - 1]
        facts.append(extra)
    return NodeSpec(c.original, Clue(text, c.type, c.original, c.record), facts, depth=depth)


def _add_relation(node: NodeSpec, rel: Clue, depth: int) -> None:
    if rel.type is not U.RELATIONAL or not rel.parts:
        raise ParseError(f"expected a relational clue with an anchor, got {rel.type}: {rel.text!r}")
    rec = dict(rel.record)
    child = _entity_clue(rel.parts[0], depth + 1)
    child.listed = int(rec.get("listed", 0))
    node.relations.append((rec.get("relation", "link"), rec.get("direction", "to_anchor"), child))


def parse_clues(answer: str, clues: tuple[Clue, ...] | list[Clue]) -> NodeSpec:
    """Build the constraint tree of a question from its top-level clues.

    Args:
        answer: The answer's title.
        clues: The draft's top-level clues.

    Returns:
        The answer's :class:`NodeSpec`, its relations leading to every other node.

    Raises:
        ParseError: A clue of a shape the template generator does not make.
    """
    root = NodeSpec(answer)
    for c in clues:
        if c.type is U.RELATIONAL:
            _add_relation(root, c, 0)
        elif c.type is U.COUNTING:
            root.counts.append((int(dict(c.record)["total"]), _entity_clue(c.parts[0], 1)))
        elif c.type is U.NEGATION:
            root.negations.append(_entity_clue(c.parts[0], 1))
        elif c.type in (U.FUZZY_DATE, U.FUZZY_NUMBER, U.PARTIAL_NAME, U.TEMPORAL_ORDER):
            root.facts.append(c)
        elif c.type is U.INTERSECTION and dict(c.record).get("edge") == "cycle":
            root.ignored.append(c)
        else:
            raise ParseError(f"unexpected top-level clue {c.type.value}: {c.text!r}")
    return root


def walk(node: NodeSpec) -> Iterator[NodeSpec]:
    """Every node of the tree, parents before children (relations, then counting scopes)."""
    yield node
    for _, _, child in node.relations:
        yield from walk(child)
    for _, child in node.counts:
        yield from walk(child)


_ARTICLE = re.compile(r"^(?:an?|the)\s+", re.IGNORECASE)


def strip_article(text: str) -> str:
    """``"a German-born physicist"`` -> ``"German-born physicist"``."""
    return _ARTICLE.sub("", text.strip())


def flatten(root: NodeSpec, head: str = "") -> list[dict[str, str]]:
    """The per-entity clue list of a record: ``{"text", "type", "entity", "relation", "anchor"}`` for every atomic
    clue (``relation``: the relation of a relational clue, ``anchor``: the entity it relates to; ``""`` for the
    others).

    Identity phrases, facts, relations (phrased with the anchor's identity only), counts,
    negations and cycle edges, each attached to the entity it constrains (``query`` is added by
    the answerability gate).
    """
    out: list[dict[str, str]] = []
    for node in walk(root):
        start = len(out)
        if node is root and head:
            out.append({"text": f"is {with_article(head)}", "type": "type", "entity": node.entity})
        if node.identity is not None:
            named = node.source == "title"
            out.append(
                {
                    "text": node.identity.text,
                    "type": "named" if named else U.OBFUSCATED_ENTITY.value,
                    "entity": node.entity,
                }
            )
        for f in node.facts:
            out.append({"text": f.text, "type": f.type.value, "entity": node.entity})
        for rel, direction, child in node.relations:
            anchor = child.identity or Clue(child.entity, U.OBFUSCATED_ENTITY)
            text = relational_clue(anchor, rel, anchor_is_source=direction == "from_anchor").text
            out.append(
                {
                    "text": text,
                    "type": U.RELATIONAL.value,
                    "entity": node.entity,
                    "relation": rel,
                    "anchor": child.entity,
                }
            )
            if child.listed:
                out.append(
                    {
                        "text": f"{text} {listed_phrase(child.listed)}",
                        "type": U.COUNTING.value,
                        "entity": node.entity,
                        "relation": rel,
                        "anchor": child.entity,
                    }
                )
        for total, child in node.counts:
            anchor = child.identity.text if child.identity else child.entity
            out.append(
                {
                    "text": f"among the {total} entities linked with {anchor}",
                    "type": U.COUNTING.value,
                    "entity": node.entity,
                }
            )
        for neg in node.negations:
            out.append(
                {
                    "text": f"that is not {neg.identity.text if neg.identity else neg.entity}",
                    "type": U.NEGATION.value,
                    "entity": node.entity,
                }
            )
        for c in node.ignored:
            out.append({"text": c.text, "type": U.INTERSECTION.value, "entity": node.entity})
        for c in out[start:]:
            c.setdefault("relation", "")
            c.setdefault("anchor", "")
    return out
