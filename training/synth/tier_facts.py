"""The typed, functional facts the ``lookup`` and ``bridge`` tiers ask about, read off the knowledge graph.

A fact is one typed relation of the graph (:meth:`~training.synth.store_source.StoreSource.neighbours`: an infobox
field or a relation phrase read from a sentence) that holds for one object only, so the question it makes has one
answer. Two readings of the same edges:

* **forward** (:func:`functional_facts`): page S states the relation with O once (not a relation that holds for
  several objects at once such as "bordered by", and O is not one item of a list in its sentence); S is named and O
  is asked. "Bucharest is the capital of which country?"
* **reverse** (:func:`definite_reverse_facts`): page P states "P is the N of Q" with a *definite*, singular noun
  phrase ("the capital of", "the second-largest city in", "the founder of"), which names one P for each Q; read from
  Q's side, Q is named and P is asked. "Which city is the capital of Romania?" A reverse fact is kept only when no
  other page of the corpus states the same relation with Q, so the corpus holds one answer.

Both directions give the bridge tier two-hop chains A -> B -> C through many more middle entities B (a country is
the object of many forward facts and the subject of a few reverse ones).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from training.synth.kg import edge_rank
from training.synth.relations import DST, SRC, fill, is_text_relation
from training.synth.uncertainty import relation_label
from wiki_index.types import bare_title

_LIST_AFTER = re.compile(r"^\s*(?:\(.*?\)\s*)?(?:,|\band\b|\bor\b|/)")
#: relations that hold for several objects at once, whatever one sentence lists ("bordered by", "shares borders with")
_MANY = re.compile(r"border|bound|neighbo|adjacent|\bshares?\b|includ|contain|consist|compris")
_BAD_GRAMMAR = re.compile(r"\b(?:is|was|are|were) (?:has|had|have|is|was|are|were)\b")
#: "{src} is the capital of {dst}": a definite, singular noun phrase of at most four words before "of" / "in"
_DEFINITE = re.compile(r"^\{(src|dst)\} (is|was) the ((?:[\w-]+ ){0,3}[\w-]+) (of|in) \{(src|dst)\}$")
#: nouns a definite phrase may not end with: plurals and words that do not name one thing per object
_NOT_ONE = re.compile(r"(?:[^s]s|\b(?:art|literature|history|culture|music|concentration|home|site|name|part))$")


@dataclass(frozen=True)
class Fact:
    """One typed, functional fact: page ``subject`` states ``relation`` with ``obj`` (the asked role)."""

    subject: str
    obj: str
    relation: str
    kind: str
    evidence: str
    passage: str | None
    direction: str = "forward"


def lists_others(sentence: str, obj: str, others: list[str]) -> bool:
    """Whether the object is one item of a list in the evidence sentence ("bordered by Ghana, Benin and ..."):
    another linked page is named within a few words after it, joined by a comma, "and", "or" or a slash."""
    i = sentence.find(bare_title(obj))
    if i < 0:
        return False
    tail = sentence[i + len(bare_title(obj)) :]
    if not _LIST_AFTER.match(tail):
        return False
    near = tail[:60]
    return any(len(o) > 2 and bare_title(o) in near for o in others if o != obj)


def functional_facts(src: Any, titles: list[str], report: Any) -> dict[str, list[Fact]]:
    """Subject title -> its forward typed facts that hold for one object only (see the module docstring)."""
    by_subject: dict[str, list[Fact]] = {}
    for subject in titles:
        nbrs = src.neighbours(subject)
        rels = Counter(str(b.get("relation")) for _, b in nbrs)
        linked = [t for t, _ in nbrs]
        for obj, a in nbrs:
            if edge_rank(a) > 1:
                continue
            report.facts["typed"] += 1
            rel, ev = str(a["relation"]), str(a.get("evidence") or "")
            if rels[rel] != 1 or _MANY.search(relation_label(rel)):
                report.facts["not_functional"] += 1
            elif a["kind"] == "infobox" and ("," in ev.split("=", 1)[-1] or " and " in ev):
                report.facts["list_value"] += 1
            elif a["kind"] != "infobox" and lists_others(ev, obj, linked):
                report.facts["list_sentence"] += 1
            elif _BAD_GRAMMAR.search(fill(rel, "X", "Y")) or obj == subject or src.entity(obj) is None:
                report.facts["unusable"] += 1
            else:
                report.facts["functional"] += 1
                by_subject.setdefault(subject, []).append(Fact(subject, obj, rel, a["kind"], ev, a.get("passage")))
    return by_subject


def reverse_relation(relation: str, page_is_src: bool) -> tuple[str, bool] | None:
    """The relation read from its object's side, when it is a definite "is the N of" phrase.

    Args:
        relation: A text relation template of a page's edge (``"{src} is the capital of {dst}"``).
        page_is_src: Whether the page stating it is the template's ``{src}`` (True) or its ``{dst}``.

    Returns:
        ``(template, page_is_p)``: the template with ``{src}`` at the named side Q and ``{dst}`` at the asked P
        (``"{dst} is the capital of {src}"``), and whether the page stating it is P; ``None`` when the relation is
        not a definite, singular phrase.

    >>> reverse_relation("{src} is the capital of {dst}", True)
    ('{dst} is the capital of {src}', True)
    >>> reverse_relation("{src} is a city in {dst}", True) is None
    True
    >>> reverse_relation("{src} is the capitals of {dst}", True) is None
    True
    """
    m = _DEFINITE.match(relation)
    if m is None or m.group(1) == m.group(5) or _NOT_ONE.search(m.group(3)) or " and " in f" {m.group(3)} ":
        return None
    template = f"{DST} {m.group(2)} the {m.group(3)} {m.group(4)} {SRC}"
    return template, (m.group(1) == "src") == page_is_src


def definite_reverse_facts(src: Any, titles: list[str], report: Any) -> dict[str, list[Fact]]:
    """Subject title Q -> reverse facts "P is the N of Q" stated on P's page, one P per (Q, relation) in the corpus.

    A forward fact that already asks the same (Q, P) is not repeated.
    """
    found: dict[tuple[str, str], dict[str, tuple[str, dict[str, Any]]]] = defaultdict(dict)
    for page in titles:
        for other, a in src.neighbours(page):
            rel = str(a["relation"])
            if edge_rank(a) > 1 or not is_text_relation(rel) or other == page:
                continue
            rev = reverse_relation(rel, True)
            if rev is None:
                continue
            template, page_is_p = rev
            p, q = (page, other) if page_is_p else (other, page)
            if p == page:  # stated on P's page: read from Q's side (Q's own page states it forward already)
                found[(q, template)][p] = (page, a)
    out: dict[str, list[Fact]] = {}
    for (q, template), ps in sorted(found.items()):
        report.facts["reverse_candidates"] += 1
        if len(ps) != 1:
            report.facts["reverse_not_unique"] += 1
            continue
        ((p, (page, a)),) = ps.items()
        if src.entity(q) is None or src.entity(p) is None:
            report.facts["unusable"] += 1
            continue
        report.facts["reverse_functional"] += 1
        ev = str(a.get("evidence") or "")
        out.setdefault(q, []).append(Fact(q, p, template, a["kind"], ev, a.get("passage"), "reverse"))
    return out


def all_facts(src: Any, titles: list[str], report: Any, progress: bool = False) -> dict[str, list[Fact]]:
    """Forward and reverse facts by subject; a reverse fact whose (subject, object) a forward one asks is dropped."""
    from tqdm.auto import tqdm

    by_subject = functional_facts(src, tqdm(titles, desc="typed facts", unit="page", disable=not progress), report)
    for q, facts in definite_reverse_facts(src, titles, report).items():
        have = {f.obj for f in by_subject.get(q, [])}
        rels = {f.relation for f in by_subject.get(q, [])}
        for f in facts:
            if f.obj in have or f.relation in rels:
                report.facts["reverse_duplicate"] += 1
                continue
            by_subject.setdefault(q, []).append(f)
    return by_subject
