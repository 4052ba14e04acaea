"""Uniqueness beyond the sample: the look-alikes a reader of the question's own pages would find.

:class:`~training.synth.verify.uniqueness.Verifier` counts a page as a candidate only when the corpus *states* every clue of it
extractably, so a page whose population the lead does not give never fits "a population in the millions": on a 10k-page
sample, a clue set can be unique only because the look-alikes' pages are short. A reader has no such luck. This check
takes the entities a reader meets on the way, every page of the answer's type that a page of the question links in the
sentence stating one of the answer's relations ("bordered by Russia, Ukraine, Poland, Lithuania and Latvia" on
Belarus's page, for a country bordering Belarus), and asks whether some clue about the answer rules each one out:

* a relation: the look-alike is not linked with that clue's anchor in either direction (a link is the loosest reading
  of a relation, so a look-alike the page only mentions still fits), or it is that anchor; an anchor the question only
  describes ("a country in East Africa with a population of about 50 million") is any page its description fits, so
  the look-alike must be linked with none of them (Lake Turkana is linked with Kenya as Lake Victoria with Uganda); an
  infobox field of the answer's ("whose main interests include Ethics") rules out only a look-alike whose infobox has
  that field;
* a blurred date or number: the look-alike's page gives a value of that kind outside the clue's interval (a page that
  gives none is *not* ruled out: the fact is unknown, not false);
* a partial name, a negation naming it, the type noun: decided from its title and its lead.

A region is a case of its own: regions overlap (East Asia and Northeast Asia, East Africa and the African Great Lakes,
Southeast Asia and Maritime Southeast Asia), so clues that only name its members ("China is a country in this
subregion") fit every region that contains them, whether or not the sample has its page. A region answer needs a
clue of another kind (a fact, a hint at its name, a relation of the region itself); without one, the regions its page
links stand as its look-alikes (:func:`overlapping_regions`).

An answer pinned thinly is a case of its own too (:func:`thin_lookalikes`, counted apart as ``thin_answer``):

* pinned by one relation only: the names its evidence sentence lists together with it ("Argentina claims sovereignty
  over the Falkland Islands, South Georgia and the South Sandwich Islands, ..."; "the confluence of the Volga and the
  Kazanka rivers") fit that relation as well as it does; a named page is weighed as above, a name the sample has no
  page for can be ruled out only by a hint at the name or a negation naming it (its kind and facts are unknown);
* pinned only by members placed inside it ("Burundi is located in this trench") and nothing of its own: every
  container that holds them fits (the Great Rift Valley, the East African Rift), as overlapping regions do.

Beyond the sentences, a reader meets the answer's kind anywhere near the question: Antigua and Barbuda beside
Dominica in the Caribbean, the Apollo program beside the Manhattan Project among the United States' programs. So every
page of the answer's type that a page of the question links, or that links an entity of the question other than the
answer, is weighed the same way (:func:`page_lookalikes`), counted apart as ``page_look_alike``; so is a name the
sample has no page for that every sentence listing the answer lists with it (Madhya Pradesh beside Rajasthan on
Gujarat's and Uttar Pradesh's pages), or that a sentence stating one of the answer's relations names and whose own
words give it the answer's kind (the Gulf of Aqaba beside the Red Sea on Jordan's page), unless a hint at the name
rules it out. The names a sentence gives beside the answer are candidates even where the question names them
elsewhere: Ovid "was a younger contemporary of Virgil and Horace", so Virgil fits a question about Horace that names
Virgil as Ovid's elder.

A question with a look-alike that no clue rules out is dropped (:func:`unruled`, :func:`page_lookalikes`). What it
cannot see: entities of the answer's type that no page of the question links (a reader searching further would meet
more), names the sample has no page for outside those lists, and relations a look-alike's page states without a
link (Portugal is a NATO member, but the sample's pages do not link the two); what it guarantees: every linked page
of the answer's kind on the question's own pages is excluded by a clue the reader can check.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from training.synth.compose.clues import UncertaintyType
from training.synth.compose.constraints import NodeSpec, walk
from training.synth.compose.heads import head_of
from training.synth.compose.lists import co_named
from training.synth.compose.naming import name_variants
from training.synth.compose.uncertainty import date_phrase, relation_label
from training.synth.extract.relations import DST, SRC, is_text_relation
from training.synth.graph.kg import Entity
from training.synth.verify.uniqueness import Verifier, _head_fits, name_fits

__all__ = [
    "co_named",
    "is_region",
    "overlapping_containers",
    "overlapping_regions",
    "page_lookalikes",
    "siblings",
    "thin_lookalikes",
    "unruled",
]

U = UncertaintyType
_MAX_POOL = 200
#: Type nouns that a name's own words can carry, by family: a name holding one of a family's words ("Gulf of Aqaba")
#: is of the kind of every noun in that family ("inlet", "sea", "gulf") for a reader.
_KIN_FAMILIES = (
    frozenset({"sea", "gulf", "bay", "inlet", "bight", "strait", "sound", "ocean", "channel"}),
    frozenset({"lake", "loch", "lagoon"}),
    frozenset({"river", "tributary"}),
    frozenset({"mountain", "mount", "peak", "volcano", "mountains", "range"}),
    frozenset({"island", "isle", "islands", "archipelago", "atoll"}),
    frozenset({"desert"}),
)
#: A capitalised name of one to four words, with an inner "of (the)" ("Gulf of Aqaba", "Lake Albert", "Caspian Sea").
_KIN_NAME = re.compile(r"\b[A-Z][\w'-]+(?:\s+(?:of\s+(?:the\s+)?)?[A-Z][\w'-]+){1,3}")
#: How many described anchors deep a look-alike's relations are followed (a described anchor's own anchors, ...).
_MAX_DEPTH = 2
_REGION = re.compile(r"\b(?:sub-?)?regions?\b", re.IGNORECASE)
#: The answer is the container of a membership relation: "{src} is a landlocked country in {dst}".
_CONTAINER = r"\b(?:in|within|of|across|throughout)\s+(?:the\s+)?"
#: A member located inside the answer: "{src} is located in {dst}", "{src} lies within {dst}".
_LOCATED_IN = r"\b(?:located|situated|lies|lying|sits|set|found)\s+(?:in|within)\s+(?:the\s+)?"


def is_region(ent: Entity | None, head: str) -> bool:
    """Whether the answer is a region: its type noun or its description says so ("Subregion of the Asian continent")."""
    return _REGION.fullmatch(head or "") is not None or (ent is not None and bool(_REGION.match(ent.description)))


def _membership(relation: str, direction: str) -> bool:
    """Whether a relation of the answer only places another entity inside it (or is an infobox field whose value the
    answer is, "whose region is ...")."""
    me = DST if direction == "from_anchor" else SRC
    if not is_text_relation(relation):
        return direction == "from_anchor"
    return re.search(_CONTAINER + re.escape(me) + r"\W*$", relation) is not None


def overlapping_regions(src: Any, root: NodeSpec, head: str) -> list[str]:
    """For a region answer whose clues only name its members: the regions its page links or is linked from (or, when
    the sample has none, a placeholder naming the overlap); empty for any other answer."""
    ent = src.entity(root.entity)
    if not is_region(ent, head) or root.facts or not root.relations:
        return []
    if not all(_membership(rel, d) for rel, d, _ in root.relations):
        return []
    pid = src.resolve(root.entity)
    linked = {*src.out_ids(pid), *src.in_ids(pid)} if pid is not None else set()
    members = {c.entity for _, _, c in root.relations}
    out = sorted(t for q in linked if (t := src.title(q)) not in members and is_region(src.entity(t), ""))
    return out or [f"a region overlapping {root.entity}"]


def siblings(src: Any, page: str, sentence: str, exclude: Iterable[str]) -> list[str]:
    """Pages that ``page`` links and ``sentence`` (one of its sentences) names, other than ``exclude``."""
    pid = src.resolve(page)
    if pid is None or not sentence:
        return []
    skip = set(exclude)
    out = []
    for q in src.out_ids(pid)[: _MAX_POOL * 5]:
        t = src.title(q)
        if t not in skip and any(len(n) > 2 and n in sentence for n in name_variants(t)):
            out.append(t)
    return out


def _decided(ent: Entity, fact: Any) -> bool:
    """Whether the page states a fact of the clue's kind at all (otherwise the clue cannot rule it out)."""
    rec = dict(fact.record)
    if fact.type is U.FUZZY_NUMBER:
        attr = relation_label(rec.get("attr", ""))
        return any(relation_label(n.attr) == attr for n in ent.numbers)
    if fact.type in (U.FUZZY_DATE, U.TEMPORAL_ORDER):
        phrase = date_phrase(rec.get("attr", "date"))
        return phrase is not None and any((date_phrase(d.attr) or ("",))[0] == phrase[0] for d in ent.dates)
    return fact.type is U.PARTIAL_NAME


def _linked(src: Any, a: int, b: int) -> bool:
    return b in src.out_ids(a) or b in src.in_ids(a)


def _unstated_field(src: Any, pid: int, relation: str, direction: str) -> bool:
    """Whether the relation is an infobox field of the answer's own ("whose main interests include Ethics") that the
    look-alike's page has no infobox field for: most sample pages have no infobox, so the field's value is unknown,
    not other (Plato's interests include ethics too)."""
    if not relation or is_text_relation(relation) or direction != "to_anchor":
        return False
    return not src.has_field(pid, relation)


def _anchor_fits(src: Any, verifier: Verifier, pid: int, child: NodeSpec, depth: int) -> bool:
    """Whether page ``pid`` is linked with the relation's anchor ``child``, or, for an anchor the question only
    describes ("a country in East Africa with a population of about 50 million"), with some page that fits the
    description as well as the true anchor does (Lake Turkana with Kenya, for Uganda's lake Victoria)."""
    cpid = src.resolve(child.entity)
    if cpid is not None and cpid != pid and _linked(src, pid, cpid):
        return True
    if child.identity is None or child.source == "title" or depth >= _MAX_DEPTH:
        return False  # a named anchor fits only itself
    head = head_of(child.identity.text)
    forbidden = tuple(name_variants(child.entity))
    for q in [*src.out_ids(pid), *src.in_ids(pid)][:_MAX_POOL]:
        if q == pid or q == cpid or not _head_fits(verifier.light_entity(q), head, forbidden):
            continue
        if not ruled_out(src, verifier, child, head, src.title(q), depth=depth + 1):
            return True
    return False


def ruled_out(src: Any, verifier: Verifier, root: NodeSpec, head: str, title: str, *, depth: int = 0) -> bool:
    """Whether some clue about the answer ``root`` is decidably false of page ``title`` (``depth``: how many described
    anchors deep the check is, bounded by ``_MAX_DEPTH``)."""
    pid = src.resolve(title)
    ent = src.entity(title)
    if pid is None or ent is None:
        return True
    if not _head_fits(ent, head, tuple(name_variants(root.entity))):
        return True
    for rel, direction, child in root.relations:
        if _unstated_field(src, pid, rel, direction):
            continue
        if not _anchor_fits(src, verifier, pid, child, depth):
            return True
    for fact in root.facts:
        if fact.type is U.PARTIAL_NAME and not name_fits(fact, title):
            return True
        if _decided(ent, fact) and not verifier.fact_holds(ent, fact):
            return True
    return any(n.entity == title for n in root.negations)


def unruled(src: Any, verifier: Verifier, root: NodeSpec, head: str, graph: Any) -> list[str]:
    """The look-alikes of a question's answer that no clue rules out (see the module docstring).

    Args:
        src: The store.
        verifier: The uniqueness verifier (its fact semantics are reused).
        root: The question's constraint tree (the answer's node).
        head: The answer's type noun in the question.
        graph: The question's subgraph (its edges carry the evidence sentences).

    Returns:
        Titles of pages of the answer's type, named beside it on the question's own pages, that fit every clue (for a
        region answer pinned only by its members, the regions that overlap it: :func:`overlapping_regions`).
    """
    answer = root.entity
    regions = overlapping_regions(src, root, head)
    if regions:
        return regions
    pool: list[str] = []
    for _, _, child in root.relations:
        if not graph.has_edge(answer, child.entity):
            continue
        data = graph.edges[answer, child.entity]
        page = str(data.get("page") or data.get("source_page") or "")
        # an entity the question names elsewhere is no less a fit ("a younger contemporary of Virgil and Horace")
        for t in siblings(src, page, str(data.get("evidence") or ""), (answer, child.entity)):
            if t not in pool:
                pool.append(t)
    return [t for t in pool[:_MAX_POOL] if not ruled_out(src, verifier, root, head, t)]


def page_lookalikes(src: Any, verifier: Verifier, root: NodeSpec, head: str, graph: Any) -> list[str]:
    """The pages of the answer's type that a page of the question links or that link one of its other entities (see
    the module docstring), other than the question's own entities, that no clue rules out; empty for an answer of no
    kind.

    Args:
        src: The store.
        verifier: The uniqueness verifier (its light entities give the type noun cheaply; its fact semantics rule out).
        root: The question's constraint tree (the answer's node).
        head: The answer's type noun in the question.
        graph: The question's subgraph (its nodes are the question's own entities).
    """
    if head in ("", "entity"):
        return []
    nodes = list(walk(root))
    own = {str(n) for n in graph} | {n.entity for n in nodes}
    forbidden = tuple(name_variants(root.entity))
    seen: set[int] = set()
    out = []
    for node in nodes:
        pid = src.resolve(node.entity)
        near = [*src.out_ids(pid), *(src.in_ids(pid) if node is not root else [])] if pid is not None else []
        for q in near[: _MAX_POOL * 5]:
            if q in seen:
                continue
            seen.add(q)
            light = verifier.light_entity(q)
            if light.title in own or not _head_fits(light, head, forbidden):
                continue
            if not ruled_out(src, verifier, root, head, light.title):
                out.append(light.title)
    return out + _unpaged_siblings(src, root, graph, own) + _unpaged_kin(src, root, head, graph, own)


def _unpaged_siblings(src: Any, root: NodeSpec, graph: Any, own: set[str]) -> list[str]:
    """Names with no page that every sentence listing the answer lists with it ("bordered by Rajasthan to the north,
    Madhya Pradesh to the east ..." on Gujarat's and on Uttar Pradesh's page), that no hint at the name rules out:
    their kind and facts are unknown, so they fit as well as the answer."""
    mine = name_variants(root.entity)
    common: set[str] | None = None
    for _, direction, child in root.relations:
        if direction != "from_anchor" or not graph.has_edge(root.entity, child.entity):
            continue  # the answer is the subject of the sentence: it lists the anchor's siblings, not the answer's
        named = set(co_named(str(graph.edges[root.entity, child.entity].get("evidence") or ""), mine))
        common = named if common is None else common & named
    return sorted(n for n in common or () if n not in own and src.resolve(n) is None and _unpaged_fits(root, n))


def kind_names(sentence: str, head: str) -> list[str]:
    """The names in ``sentence`` whose own words say they are of the kind ``head`` is ("the Gulf of Aqaba" for an
    inlet, "Lake Albert" for a lake); empty for a kind no name word tells."""
    family = next((f for f in _KIN_FAMILIES if head in f), None)
    if family is None:
        return []
    out = []
    for m in _KIN_NAME.finditer(sentence):
        name = m.group(0)
        words = {w.lower() for w in name.split()}
        if words & family and name not in out:
            out.append(name)
    return out


def _unpaged_kin(src: Any, root: NodeSpec, head: str, graph: Any, own: set[str]) -> list[str]:
    """Names with no page, of the answer's kind by their own words, that a sentence stating one of the answer's
    relations names ("Jordan has a small coastline along the Red Sea ..., separated by the Gulf of Aqaba from Egypt"),
    that no hint at the name rules out: a reader takes them for candidates, and nothing in the sample rules them
    out."""
    mine = set(name_variants(root.entity))
    out: list[str] = []
    for _, _, child in root.relations:
        if not graph.has_edge(root.entity, child.entity):
            continue
        for name in kind_names(str(graph.edges[root.entity, child.entity].get("evidence") or ""), head):
            bare = re.sub(r"^the\s+", "", name, flags=re.IGNORECASE)
            if bare in mine or bare in own or bare in out or src.resolve(bare) is not None:
                continue
            if _unpaged_fits(root, bare):
                out.append(bare)
    return out


def overlapping_containers(root: NodeSpec, head: str) -> list[str]:
    """For an answer pinned only by members located inside it ("Burundi is located in this trench"), with no fact of
    its own: a placeholder naming the overlap (every container holding those members fits); empty otherwise."""
    if root.facts or not root.relations:
        return []
    for rel, direction, _ in root.relations:
        me = DST if direction == "from_anchor" else SRC
        if not is_text_relation(rel) or not re.search(_LOCATED_IN + re.escape(me) + r"\W*$", rel):
            return []
    return [f"another {head} containing {root.relations[0][2].entity}"]


def _unpaged_fits(root: NodeSpec, name: str) -> bool:
    """Whether a name with no page survives the clues decidable from the name alone (hints at it, negations)."""
    hints = [f for f in root.facts if f.type is U.PARTIAL_NAME]
    return all(name_fits(f, name) for f in hints) and not any(n.entity == name for n in root.negations)


def thin_lookalikes(src: Any, verifier: Verifier, root: NodeSpec, head: str, graph: Any) -> list[str]:
    """The look-alikes of an answer pinned thinly (see the module docstring): the overlapping containers of one
    pinned only by members inside it, else, for one pinned by a single relation, the names its evidence sentence
    lists with it that no clue rules out."""
    containers = overlapping_containers(root, head)
    if containers or len(root.relations) != 1:
        return containers
    child = root.relations[0][2]
    if not graph.has_edge(root.entity, child.entity):
        return []
    data = graph.edges[root.entity, child.entity]
    own = {str(n) for n in graph} | {v for n in graph for v in name_variants(str(n))}
    mine = [*name_variants(root.entity), *([str(data.get("anchor"))] if data.get("target_page") == root.entity else [])]
    out = []
    for name in co_named(str(data.get("evidence") or ""), [m for m in mine if m]):
        if name in own:
            continue
        title = src.title(pid) if (pid := src.resolve(name)) is not None else None
        if title is None and _unpaged_fits(root, name):
            out.append(name)
        elif title is not None and title not in own and not ruled_out(src, verifier, root, head, title):
            out.append(title)
    return out
