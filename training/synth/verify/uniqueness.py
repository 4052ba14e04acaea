"""The uniqueness gate: do a question's clues single out its answer among *all* pages of the corpus?

The generator is not trusted: :class:`Verifier` evaluates the constraint tree
(:mod:`training.synth.compose.constraints`) bottom-up over the store, computing for every node the set
of corpus pages that fit what the question says about it, then for the answer the pages that
fit every clue. The question passes when that set is exactly ``{answer}``.

Semantics of each clue (documented approximations; each errs towards *more* candidates where
it can, so a pass is meaningful):

* identity: a named entity fits only itself; a description fits every page whose own
  description (rendered by the same :func:`describe_entity`) is the same text, found among pages
  whose description or first sentence contains the phrase; a fallback (``"an entity related to
  history"``) fits every page of that category; ``"a certain entity"`` fits anything.
* relation: ``"whose article mentions X"`` fits every page linking to or mentioning a page that
  fits X (and ``"mentioned in the article on X"`` the reverse); an infobox relation (``"whose
  capital is X"``) follows that infobox field; a relation read from a sentence (``"was born in
  X"``) is checked as the link it was read along (a superset: every page so related links so).
* blurred date: some date of the page with the same verb (``born``, ``founded``...; a bare
  ``"mentions an event"`` takes any date) overlaps the clue's interval; a decade or century date
  counts as its whole span. Blurred number: a number of the same attribute inside the clue's
  interval (``about R`` admits ``[0.7R, 1.4R]``). Partial name: the rule itself. Temporal
  order: a date with that verb before/after the reference year. Counting: a neighbour of a
  scope page with exactly that many neighbours. Negation: the excluded description's pages.
  The answer's type noun (``"Which physicist"``) must be the page's head noun.
* cycle-closing edges between two other nodes are not evaluated (ignoring a clue only adds
  candidates).

A candidate set larger than ``max_candidates`` is treated as unbounded. Dates and numbers come
from the same regex extractors as the generator's, so a page whose fact the extractor missed
is not counted as a candidate: uniqueness is relative to what the corpus states extractably.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

from training.synth.compose.clues import Clue, UncertaintyType
from training.synth.compose.constraints import NodeSpec, strip_article
from training.synth.compose.heads import coordinated_heads
from training.synth.compose.naming import describe_entity, head_noun, name_variants
from training.synth.compose.uncertainty import date_phrase, relation_label
from training.synth.extract.relations import is_text_relation
from training.synth.graph.kg import Entity
from training.synth.graph.store_source import StoreSource

log = logging.getLogger(__name__)
U = UncertaintyType
_LINKISH = ("mention", "link", "links to", "")
_SPAN = {"decade": 9, "century": 99}
_COUNT_GROUP = ("quantity", "", "speakers", "species", "members", "employees", "residents", "inhabitants")


@dataclass
class Uniqueness:
    """Outcome of the uniqueness check of one question.

    Attributes:
        unique: The clues fit the answer and nothing else.
        consistent: The answer itself fits the clues (``False`` means the question is wrong about it).
        candidates: Size of the final candidate set (``-1``: unbounded).
        others: A few other pages that fit every clue (for the report).
        reason: ``"unique"``, ``"ambiguous"``, ``"unbounded"`` or ``"inconsistent"``.
    """

    unique: bool
    consistent: bool
    candidates: int
    others: list[str] = field(default_factory=list)
    reason: str = ""


class Verifier:
    """Evaluates constraint trees against a :class:`StoreSource`.

    Args:
        source: The corpus.
        max_candidates: Candidate sets above this size count as unbounded.
    """

    def __init__(self, source: StoreSource, *, max_candidates: int = 20_000) -> None:
        self.src = source
        self.max_candidates = max_candidates
        self._first: dict[int, str] | None = None
        self._desc_index: dict[str, list[int]] | None = None
        self._cat_index: dict[str, list[int]] | None = None
        self._phrase_cache: dict[tuple[str, str, tuple[str, ...]], frozenset[int] | None] = {}
        self._light: dict[int, Entity] = {}

    # --- corpus indexes (built on first use) --------------------------------------------------

    def light_entity(self, pid: int) -> Entity:
        """Page ``pid`` as an entity with its title, description, first sentence and categories only (what a
        description needs; cached per page)."""
        if pid not in self._light:
            from wiki_index.parse.text import first_sentence

            r = self.src.row(pid)
            self._light[pid] = (
                Entity(r.title, r.description, first_sentence(r.lead), categories=self.src.categories(pid))
                if r
                else Entity(str(pid))
            )
        return self._light[pid]

    def _phrase_pool(self, phrase: str) -> list[int]:
        """Pages whose description or first sentence contains ``phrase`` (case-insensitive)."""
        key = " ".join(phrase.lower().split())
        if self.src.preloaded:
            from wiki_index.parse.text import first_sentence

            if self._first is None:  # whitespace normalised as the phrases are (no-break spaces in "c.\xa01,200")
                self._first = {
                    r.page_id: " ".join((first_sentence(r.lead) + " \x00 " + r.description).lower().split())
                    for r in self.src.rows()
                }
            return [pid for pid, text in self._first.items() if key in text]
        return self.src.store.pages_matching(key, self.max_candidates + 1)

    def _category_pool(self, category: str) -> list[int]:
        if self._cat_index is None:
            self._cat_index = self.src.store.category_members()
        return self._cat_index.get(category.lower(), [])

    # --- clue semantics -----------------------------------------------------------------------

    def identity_candidates(self, clue: Clue, forbidden: tuple[str, ...]) -> frozenset[int] | None:
        """Pages the noun phrase fits (``None``: unbounded)."""
        source = dict(clue.record).get("source", "")
        if source == "title":
            pid = self.src.resolve(clue.original)
            return frozenset([pid]) if pid is not None else frozenset()
        key = (source, clue.text, forbidden)
        if key in self._phrase_cache:
            return self._phrase_cache[key]
        if source == "head":  # "a city": the head noun of the page's own lead, not evaluated (sound: more candidates)
            return None
        if source == "fallback":
            m = re.fullmatch(r"an entity related to (.+)", clue.text)
            pool = self._category_pool(m.group(1)) if m else None
        else:
            pool = self._phrase_pool(strip_article(clue.text))
        if pool is None or len(pool) > self.max_candidates:
            out = None
        else:
            out = frozenset(
                p for p in pool if describe_entity(self.light_entity(p), forbidden=forbidden).text == clue.text
            )
        self._phrase_cache[key] = out
        return out

    def _relation_step(self, relation: str, direction: str, anchors: frozenset[int] | None) -> frozenset[int] | None:
        """Pages related to some anchor the way the clue says (``None`` in, ``None`` out)."""
        if anchors is None:
            return None
        out: set[int] = set()
        rel = relation_label(relation)
        for a in sorted(anchors):
            if rel in _LINKISH or is_text_relation(relation):  # a sentence's relation holds along its link
                out.update(self.src.out_ids(a) if direction == "from_anchor" else self.src.in_ids(a))
            elif direction == "from_anchor":  # "that is the <rel> of <anchor>": the anchor's infobox names it
                out.update(d for d, k in self.src.box_out(a) if relation_label(k) == rel)
            else:  # "whose <rel> is <anchor>"
                out.update(s for s, k in self.src.box_in(a) if relation_label(k) == rel)
            if len(out) > self.max_candidates:
                return None
        return frozenset(out)

    def _count_step(self, total: int, scope: frozenset[int] | None) -> frozenset[int] | None:
        if scope is None:
            return None
        out: set[int] = set()
        for a in sorted(scope):
            if self.src.degree(a) == total:
                out.update(self.src.out_ids(a))
                out.update(self.src.in_ids(a))
        return frozenset(out) if len(out) <= self.max_candidates else None

    def fact_holds(self, ent: Entity, clue: Clue) -> bool:
        """Whether a blurred fact (date, number, partial name, temporal order) is true of an entity."""
        rec = dict(clue.record)
        if clue.type is U.FUZZY_DATE:
            lo, hi = int(rec["lo"]), int(rec["hi"])
            phrase = date_phrase(rec.get("attr", "date"))
            generic = rec.get("attr") == "date" or phrase is None
            return any(
                _overlaps(d, lo, hi) for d in ent.dates if generic or (date_phrase(d.attr) or ("",))[0] == phrase[0]
            )
        if clue.type is U.FUZZY_NUMBER:
            lo, hi = float(rec["lo"]), float(rec["hi"])
            attr = relation_label(rec.get("attr", ""))
            group = attr in _COUNT_GROUP
            return any(
                lo <= n.value <= hi
                for n in ent.numbers
                if relation_label(n.attr) == attr or (group and relation_label(n.attr) in _COUNT_GROUP)
            )
        if clue.type is U.PARTIAL_NAME:
            return name_fits(clue, ent.title)
        if clue.type is U.TEMPORAL_ORDER:
            ref, phrase = int(rec["reference_year"]), date_phrase(rec["attr"])
            before = rec["order"] == "before"
            for d in ent.dates:
                if phrase is None or (date_phrase(d.attr) or ("",))[0] != phrase[0]:
                    continue
                lo, hi = d.year, d.year + _SPAN.get(d.precision, 0)
                if (lo < ref) if before else (hi > ref):
                    return True
            return False
        raise ValueError(f"not a fact clue: {clue.type.value} {clue.text!r}")

    # --- the tree -----------------------------------------------------------------------------

    def candidates(self, node: NodeSpec, forbidden: tuple[str, ...], head: str = "") -> frozenset[int] | None:
        """Pages that fit everything the question says about ``node`` (``None``: unbounded)."""
        sets: list[frozenset[int] | None] = []
        if node.identity is not None:
            sets.append(self.identity_candidates(node.identity, forbidden))
        for rel, direction, child in node.relations:
            sets.append(self._relation_step(rel, direction, self.candidates(child, forbidden)))
        for total, child in node.counts:
            sets.append(self._count_step(total, self.candidates(child, forbidden)))
        bounded = sorted((s for s in sets if s is not None), key=len)
        if not bounded:
            return None
        cands = set(bounded[0]).intersection(*bounded[1:])
        for neg in node.negations:
            excluded = self.identity_candidates(neg.identity, forbidden) if neg.identity else None
            cands -= excluded or set()
        if node.facts or head:
            keep = set()
            for pid in sorted(cands):
                ent = self.src.entity(self.src.title(pid))
                if ent is None:
                    continue
                if head and not _head_fits(ent, head, forbidden):
                    continue
                if all(self.fact_holds(ent, f) for f in node.facts):
                    keep.add(pid)
            cands = keep
        return frozenset(cands)

    def check(self, root: NodeSpec, head: str = "") -> Uniqueness:
        """Whether the tree rooted at the answer singles it out in the corpus.

        Args:
            root: The answer's :class:`NodeSpec` (from :func:`~training.synth.compose.constraints.parse_clues`).
            head: The answer's type noun in the question.
        """
        return self.check_extending(root, head)[0]

    def check_extending(
        self,
        root: NodeSpec,
        head: str = "",
        extras: tuple[Clue, ...] | list[Clue] = (),
    ) -> tuple[Uniqueness, int]:
        """:meth:`check`, adding the facts of ``extras`` about the answer one by one until it is the only fit.

        Returns:
            ``(outcome, k)``: the outcome with the first ``k`` extras added (``k`` is 0 when the tree
            alone is unique, inconsistent or unbounded, and ``len(extras)`` when even all of them leave
            others).
        """
        answer = self.src.resolve(root.entity)
        forbidden = tuple(name_variants(root.entity))
        cands = self.candidates(root, forbidden, head)
        if cands is None:
            return Uniqueness(False, True, -1, reason="unbounded"), 0
        out = self._outcome(cands, answer)
        for k, fact in enumerate(extras, 1):
            if out.unique or not out.consistent:
                return out, k - 1
            kept = set()
            for pid in sorted(cands):
                ent = self.src.entity(self.src.title(pid))
                if ent is not None and self.fact_holds(ent, fact):
                    kept.add(pid)
            cands = frozenset(kept)
            out = self._outcome(cands, answer)
        return out, len(extras) if extras and (out.unique or out.consistent) else 0

    def _outcome(self, cands: frozenset[int], answer: int | None) -> Uniqueness:
        others = sorted(self.src.title(p) for p in cands if p != answer)
        if answer not in cands:
            return Uniqueness(False, False, len(cands), others[:5], "inconsistent")
        if others:
            return Uniqueness(False, True, len(cands), others[:5], "ambiguous")
        return Uniqueness(True, True, 1, [], "unique")


def _overlaps(d: object, lo: int, hi: int) -> bool:
    start = d.year  # type: ignore[attr-defined]
    end = start + _SPAN.get(d.precision, 0)  # type: ignore[attr-defined]
    return start <= hi and end >= lo


def _head_fits(ent: Entity, head: str, forbidden: tuple[str, ...]) -> bool:
    if head in ("", "entity"):
        return True
    if head == "person":
        return ent.is_person or head_noun(ent, forbidden=forbidden) == "person"
    return head_noun(ent, forbidden=forbidden) == head or head in coordinated_heads(ent.description)


def name_fits(clue: Clue, title: str) -> bool:
    """Whether a partial-name clue (initial, prefix, letter or word count) is true of a title."""
    name = name_variants(title)[-1]
    text = clue.text
    if m := re.search(r'begins with (?:the letter )?"(.)"', text):
        return name[:1].upper() == m.group(1)
    if m := re.search(r'starts with "(.+)"', text):
        return name.startswith(m.group(1))
    if m := re.search(r"has (\d+) letters", text):
        return sum(c.isalpha() for c in name) == int(m.group(1))
    if "a single word" in text:
        return len(name.split()) == 1
    if m := re.search(r"is (\d+) words long", text):
        return len(name.split()) == int(m.group(1))
    raise ValueError(f"unknown partial-name clue {text!r}")
