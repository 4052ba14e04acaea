"""Questions a person can read: a question's constraint tree written as several short sentences.

The template generator used to write one noun phrase with every clue nested inside it ("the
state ... mentioned in the article on a philosopher ... whose article mentions ..."). Here each
relation and each fact of the tree (:class:`~training.synth.compose.constraints.NodeSpec`) is one
sentence, subject first, and an entity introduced as the object of one sentence is the subject
of the sentences about its own relations, by a short reference ("the physicist")::

    This theory was developed by a German-born theoretical physicist. It was first published in
    the 1910s. The physicist was born in a city in southern Germany. Which theory is this?

Relations read from a sentence (:mod:`training.synth.extract.relations`) are written with their own verb
phrase; an infobox field as "Its capital is ..." / "It is the capital of ..."; a bare link as
"Its article mentions ...". :func:`render` is deterministic: ``form`` picks the closing question.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping

from training.synth.compose.clues import UncertaintyType, listed_phrase
from training.synth.compose.constraints import NodeSpec, strip_article, walk
from training.synth.compose.heads import head_of
from training.synth.compose.uncertainty import date_phrase, relation_label
from training.synth.extract.relations import DST, SRC, fill, infobox_template, is_text_relation

U = UncertaintyType
FORMS = ("which", "what", "name")
#: Where the question stands: after the clues ("... Which city is this?") or before them ("Which city is described
#: here? This city ..."), so that a reader cannot take the last sentence for the question by its position.
ORDERS = ("last", "first")
_GENERIC = ("", "entity")


def cap(text: str) -> str:
    """The text with its first letter upper-cased (the rest untouched)."""
    return text[:1].upper() + text[1:]


class _Voice:
    """How one entity is referred to: as a subject, an object and a possessive, first mention or later."""

    def __init__(self, subject: str, obj: str, possessive: str, later: str | None = None) -> None:
        self.first, self.obj, self.later_possessive = subject, obj, possessive
        self.later = later or subject
        self.used = False

    @property
    def subject(self) -> str:
        """The subject form: the first mention's, then the later one ("This city", then "It")."""
        out = self.later if self.used else self.first
        self.used = True
        return out

    @property
    def possessive(self) -> str:
        """The possessive: ``"this city's"`` at the first mention, then ``"its"``."""
        out = self.later_possessive if self.used or self.first == "it" else f"{self.first}'s"
        self.used = True
        return out


def _answer_voice(head: str, person: bool) -> _Voice:
    if head in _GENERIC:
        return _Voice("it", "it", "its")
    if head == "person" or person:
        return _Voice(f"this {head}", f"this {head}", f"this {head}'s")
    return _Voice(f"this {head}", f"this {head}", "its", later="it")


def noun_phrase(node: NodeSpec) -> str:
    """How an entity is introduced: its description (or name) with the facts given about it."""
    ident = node.identity.text if node.identity is not None else node.entity
    return " ".join([ident, *(f.text for f in node.facts)])


def _other_voice(node: NodeSpec, short: Mapping[str, str]) -> _Voice:
    ident = node.identity.text if node.identity is not None else node.entity
    ref = ident if node.source == "title" else short.get(node.entity) or "that " + strip_article(ident)
    return _Voice(ref, ref, f"{ref}'" if ref.endswith("s") else f"{ref}'s")


def relation_sentence(rel: str, direction: str, me: _Voice, anchor: str) -> str:
    """One sentence stating the relation between an entity (``me``) and an anchor's noun phrase."""
    anchor_is_source = direction == "from_anchor"
    if is_text_relation(rel):
        mine = DST if anchor_is_source else SRC
        mine_first = rel.startswith(mine)
        self_text = me.subject if mine_first else me.obj
        roles = {mine: self_text, (SRC if mine == DST else DST): anchor}
        return fill(rel, roles[SRC], roles[DST])
    label = relation_label(rel)
    if label in ("mention", "link", "links to", ""):
        return (
            f"{me.subject} is mentioned in the article on {anchor}"
            if anchor_is_source
            else f"{me.possessive} article mentions {anchor}"
        )
    template = infobox_template(label)
    if template.startswith(SRC + " is"):  # "god of", "known for": the field reads as a verb phrase
        return fill(template, anchor, me.obj) if anchor_is_source else fill(template, me.subject, anchor)
    plural = template.endswith(" include " + DST)
    if anchor_is_source:
        return f"{me.subject} is {'among' if plural else 'the'} {'the ' if plural else ''}{label} of {anchor}"
    return f"{me.possessive} {label} {'include' if plural else 'is'} {anchor}"


def fact_sentence(clue_text: str, ctype: UncertaintyType, record: Mapping[str, str], me: _Voice) -> str:
    """A blurred fact as a sentence: ``"born in the 1870s"`` -> ``"This physicist was born in the 1870s"``."""
    if clue_text.startswith("whose "):
        return f"{me.possessive} {clue_text[len('whose ') :]}"
    if clue_text.startswith("with "):
        return f"{me.subject} has {clue_text[len('with ') :]}"
    if ctype in (U.FUZZY_DATE, U.TEMPORAL_ORDER):
        phrase = date_phrase(record.get("attr", "date"))
        if phrase is not None and phrase[1] is not None and clue_text.startswith(phrase[0] + " "):
            return f"{me.subject} {phrase[1]} {clue_text[len(phrase[0]) + 1 :]}"
    return f"{me.subject} {clue_text}"


def _sentences(node: NodeSpec, me: _Voice, short: Mapping[str, str]) -> list[str]:
    """The sentences about ``node``: its relations (each followed by those about the related entity), counts, facts,
    exclusions and cycle-closing links."""
    out: list[str] = []
    for rel, direction, child in node.relations:
        said = relation_sentence(rel, direction, me, noun_phrase(child))
        out.append(f"{said} {listed_phrase(child.listed)}" if child.listed else said)
        theirs = _sentences(child, _other_voice(child, short), short)
        out.extend(theirs)
        me.used = False  # after a sentence that names another entity, "it" could be read as that one
    for total, child in node.counts:
        out.append(f"{me.subject} is one of {total} entities linked with {noun_phrase(child)}")  # older drafts only
        out.extend(_sentences(child, _other_voice(child, short), short))
    for f in node.facts if node.depth == 0 else ():  # a related entity's facts are in its noun phrase
        out.append(fact_sentence(f.text, f.type, dict(f.record), me))
    for neg in node.negations:
        out.append(f"{me.subject} is not {noun_phrase(neg)}")
    for c in node.ignored:
        out.append(c.text[len("where ") :] if c.text.startswith("where ") else c.text)
    return out


def short_refs(root: NodeSpec, head: str) -> dict[str, str]:
    """``"the physicist"`` for each described entity whose noun phrase's head word is its own in the question, and
    ``"the other country"`` for the one described entity that shares its head word with the answer's ("this
    country")."""
    heads = {
        n.entity: head_of(n.identity.text)
        for n in walk(root)
        if n is not root and n.identity is not None and n.source != "title"
    }
    counts = Counter(heads.values())
    return {
        e: f"the other {h}" if h == head else f"the {h}"
        for e, h in heads.items()
        if len(h) >= 3 and counts[h] == 1 and h not in ("entity", "person")
    }


def closing(head: str, form: str, person: bool = False) -> str:
    """The question itself: ``"Which city is this?"``, ``"What is this city?"`` or ``"Name this city."``."""
    if head in _GENERIC:
        return {"which": "What is it?", "what": "What is it?", "name": "Name it."}[form]
    if head == "person" or (person and form != "name"):
        return f"Who is this {head}?"
    return {"which": f"Which {head} is this?", "what": f"What is this {head}?", "name": f"Name this {head}."}[form]


def opening(head: str, form: str, person: bool = False) -> str:
    """The question put before its clues: ``"Which city is described here?"``, ``"What is the city described
    here?"`` or ``"Name the city described here."``."""
    if head in _GENERIC:
        return "Name what is described here." if form == "name" else "What is described here?"
    if head == "person" or (person and form != "name"):
        return f"Who is the {head} described here?"
    return {
        "which": f"Which {head} is described here?",
        "what": f"What is the {head} described here?",
        "name": f"Name the {head} described here.",
    }[form]


def render(
    root: NodeSpec,
    head: str,
    *,
    form: str = "which",
    order: str = "last",
    short: Mapping[str, str] | None = None,
    persons: Collection[str] = (),
) -> str:
    """The question as short sentences (see the module docstring).

    Args:
        root: The answer's constraint tree.
        head: The answer's type noun ("city"; ``"entity"`` or ``""`` when none).
        form: The kind of question, one of :data:`FORMS`.
        order: Where the question stands, one of :data:`ORDERS`.
        short: Entity title -> a short reference for an entity introduced earlier ("the physicist").
        persons: Titles of the entities that are people ("this physicist", not "it").

    Returns:
        The question text.
    """
    if form not in FORMS or order not in ORDERS:
        raise ValueError(f"form must be one of {FORMS} and order one of {ORDERS}, got {form!r} and {order!r}")
    person = root.entity in persons
    body = _sentences(root, _answer_voice(head, person), short_refs(root, head) if short is None else short)
    text = " ".join(cap(s.strip()) + "." for s in body if s.strip())
    if order == "first":
        return f"{opening(head, form, person)} {text}".strip()
    return text + (" " if text else "") + closing(head, form, person)
