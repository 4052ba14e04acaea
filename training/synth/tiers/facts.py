"""The typed, functional facts the ``lookup`` and ``bridge`` tiers ask about, read off the knowledge graph.

A fact is one typed relation of the graph (:meth:`~training.synth.graph.store_source.StoreSource.neighbours`: an infobox
field or a relation phrase read from a sentence) that holds for one object only, so the question it makes has one
answer. Two readings of the same edges:

* **forward** (:func:`functional_facts`): page S states the relation with O once (not a relation that holds for
  several objects at once such as "bordered by", and O is not one item of a list in its sentence); S is named and O
  is asked. "Bucharest is the capital of which country?"
* **reverse** (:func:`definite_reverse_facts`): page P states "P is the N of Q" with a *definite*, singular noun
  phrase ("the capital of", "the second-largest city in", "the founder of"), which names one P for each Q; read from
  Q's side, Q is named and P is asked. "Which city is the capital of Romania?" A reverse fact is kept only when no
  other page of the corpus states the same relation with Q, so the corpus holds one answer.

In both directions a definite fact holds only when its sentence says it of the whole entity (:func:`qualified`: "the
largest city in central India" is no fact about India), and an object that is one item of a list is no fact
(:func:`lists_others`).

Both directions give the bridge tier two-hop chains A -> B -> C through many more middle entities B (a country is
the object of many forward facts and the subject of a few reverse ones).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from training.synth.compose.uncertainty import relation_label
from training.synth.extract.relations import DST, SRC, fill, is_text_relation
from training.synth.graph.kg import edge_rank
from wiki_index.types import bare_title

#: Version of the fact reading: a task set written from the same index by another version holds other tasks (2: a
#: definite fact whose sentence narrows its entity, and the last item of a list, are no longer facts; 3: the relation
#: readings and type nouns fixed after the SailorFog-QA audits, a superlative keeping its head noun among them, word
#: and select some tier tasks otherwise; 4: the fourth audit's type nouns: vague heads ("division", "term") and a
#: modifier before "form"/"type" ("the modern form of ...") name no kind; 5: the fifth audit's readings: "arm of" a
#: partitive and a proper word ("Mediterranean between ...") no type noun, an infobox key that is a number no field, an
#: "-ing" word before the phrase's last noun its modifier: "German racing driver" is a driver, not a "former"; 6: the
#: sixth audit's readings: a density, a projection's figure and a range's end year no fact of the entity, a compass
#: modifier or a name going on past the link a cut relation, a subject other than the page's no relation of it, a plural
#: coordinated with a singular phrase its kind: "Islands and coastal region" is a region; 7: the eighth audit's
#: readings: a relation whose claim follows the link ("suggested to X that ...", "designated by X as ...", "the
#: provinces of X, Y") cut, a rank with its measure after the link qualified, a range's start year no date of it,
#: "native to ..." kept whole in a description; 8: the ninth audit's readings: an infobox establishment row naming a
#: predecessor state no founding date, "an islands and coastal region" a region, a name opening a clause after a
#: subordinator ("dissolved shortly after Hungary terminated ...") no relation of it, a definite description that a
#: relative clause restricts ("the forms of the English language that were spoken ...") qualified; 9: the tenth audit's
#: readings: a type noun not read past a preposition ("study of general and fundamental questions" is a study) nor
#: a negated "-able" adjective)
FACTS_VERSION = 9

_LIST_AFTER = re.compile(r"^\s*(?:\(.*?\)\s*)?(?:,|\band\b|\bor\b|/)")
_LIST_BEFORE = re.compile(r"(?:,|\band|\bor|/)\s*(?:the\s+)?$")
#: a word right before a name that narrows it to a part ("the largest city in central India" is not India's largest)
_PART_BEFORE = re.compile(
    r"\b(?:central|northern|southern|eastern|western|north|south|east|west|north-?eastern|north-?western|"
    r"south-?eastern|south-?western|northeast|northwest|southeast|southwest|upper|lower|inner|outer|coastal|"
    r"mainland|metropolitan|rural|urban|ancient|medieval|colonial|pre-?colonial)\s+(?:the\s+)?$"
)
#: a capitalised word right before a name: the name is part of a longer one ("Western Europe", "West Africa")
_LONGER_NAME = re.compile(r"\b[A-Z][\w-]*\s+$")
#: words that, right after a name, merely continue the sentence ("after", "by", "in", "and") or restate the kind of
#: thing it names ("Shandong province"); any other lowercase word there restricts the name ("... in Germany that is
#: not a state", "... of France from the House of Bourbon") or shows it is a modifier inside a longer noun phrase
#: ("the France national team")
_FUNCTION = frozenset(
    "a about above across after against along also among an and around as at before behind below between beyond but by "
    "during for in including into is it its near nearly not of off on onto or over per than the then through "
    "throughout to toward towards under until up upon was were while with within without are has had have according "
    "province state county prefecture region district city island islands archipelago peninsula country oblast "
    "krai".split()
)
#: "the largest bank in Europe in the 15th century", "... in 1990": a time narrows a definite fact as a place does
_IN_A_TIME = re.compile(r"\s+(?:in|during)\s+(?:the\s+)?(?:\d{1,2}(?:st|nd|rd|th)\s+century|\d{4}\b)")
#: function words that do restrict the name before them
_RESTRICT_AFTER = frozenset("that which who whose whom from since outside excluding except other".split())
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
    another linked page is named within a few words before or after it, joined by a comma, "and", "or" or a slash
    (the last item of a list is as much one of many as the first: "through the Norwegian Sea and Barents Sea")."""
    i = sentence.find(bare_title(obj))
    if i < 0:
        return False
    head, tail = sentence[:i], sentence[i + len(bare_title(obj)) :]
    near = (tail[:60] if _LIST_AFTER.match(tail) else "") + " " + (head[-60:] if _LIST_BEFORE.search(head) else "")
    return bool(near.strip()) and any(len(o) > 2 and bare_title(o) in near for o in others if o != obj)


def qualified(fact: Fact) -> bool:
    """Whether a definite fact's evidence narrows the entity after "of" / "in", so the fact does not hold for it.

    "P is the N of Q" names one P per Q only when the sentence says it of all of Q: "Nagpur is the largest city in
    central India", "He was the first monarch of France from the House of Bourbon", "the largest city in Germany
    that is not a state of its own" and "the head coach of the France national team" do not. A fact whose relation
    is not a definite phrase, or whose sentence does not name Q as the title does, is not judged.

    >>> qualified(Fact("India", "Nagpur", "{dst} is the largest city in {src}", "link",
    ...                "Nagpur is the largest city in central India.", None))
    True
    >>> qualified(Fact("Brazil", "Rio de Janeiro", "{dst} is the second-largest city in {src}", "link",
    ...                "Rio de Janeiro is the second-largest city in Brazil, after São Paulo.", None))
    False
    >>> qualified(Fact("United States", "Andrew Jackson", "{dst} was the seventh president of {src}", "link",
    ...                "Andrew Jackson was the seventh president of the United States from 1829 to 1837.", None))
    False
    >>> qualified(Fact("Europe", "Western Europe", "{dst} is the western region of {src}", "link",
    ...                "Western Europe is the western region of Europe.", None))
    False
    """
    m = _DEFINITE.match(fact.relation)
    if m is None:
        return False
    named = bare_title(fact.subject if m.group(5) == "src" else fact.obj)
    ev = fact.evidence
    i = next((k.start() for k in re.finditer(re.escape(named), ev) if not _LONGER_NAME.search(ev[: k.start()])), -1)
    if i < 0:
        return False
    rest = ev[i + len(named) :]
    if _PART_BEFORE.search(ev[:i]) or _IN_A_TIME.match(rest):
        return True
    after = re.match(r"\s+([a-z][\w-]*)(\s+\d)?", rest)
    if after is None or after.group(2) or after.group(1).endswith("ly"):
        return False  # "from 1829 to 1837": a time span; "the art of the Hellenistic period generally taken ..."
    return after.group(1) in _RESTRICT_AFTER or after.group(1) not in _FUNCTION


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
            if rels[rel] != 1 or _MANY.search(relation_label(rel, camel=False)):
                report.facts["not_functional"] += 1
            elif a["kind"] == "infobox" and ("," in ev.split("=", 1)[-1] or " and " in ev):
                report.facts["list_value"] += 1
            elif a["kind"] != "infobox" and lists_others(ev, obj, linked):
                report.facts["list_sentence"] += 1
            elif _BAD_GRAMMAR.search(fill(rel, "X", "Y")) or obj == subject or src.entity(obj) is None:
                report.facts["unusable"] += 1
            elif qualified(fact := Fact(subject, obj, rel, a["kind"], ev, a.get("passage"))):
                report.facts["qualified"] += 1
            else:
                report.facts["functional"] += 1
                by_subject.setdefault(subject, []).append(fact)
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
    found: dict[tuple[str, str], dict[str, tuple[dict[str, Any], list[str]]]] = defaultdict(dict)
    for page in titles:
        nbrs = src.neighbours(page)
        linked = [t for t, _ in nbrs]  # the pages P's sentence may list beside P (lists_others)
        for other, a in nbrs:
            rel = str(a["relation"])
            if edge_rank(a) > 1 or not is_text_relation(rel) or other == page:
                continue
            rev = reverse_relation(rel, True)
            if rev is None:
                continue
            template, page_is_p = rev
            p, q = (page, other) if page_is_p else (other, page)
            if p == page:  # stated on P's page: read from Q's side (Q's own page states it forward already)
                found[(q, template)][p] = (a, linked)
    out: dict[str, list[Fact]] = {}
    for (q, template), ps in sorted(found.items()):
        report.facts["reverse_candidates"] += 1
        if len(ps) != 1:
            report.facts["reverse_not_unique"] += 1
            continue
        ((p, (a, linked)),) = ps.items()
        ev = str(a.get("evidence") or "")
        fact = Fact(q, p, template, a["kind"], ev, a.get("passage"), "reverse")
        if src.entity(q) is None or src.entity(p) is None:
            report.facts["unusable"] += 1
        elif qualified(fact):
            report.facts["qualified"] += 1
        elif lists_others(ev, p, linked):
            report.facts["list_sentence"] += 1
        else:
            report.facts["reverse_functional"] += 1
            out.setdefault(q, []).append(fact)
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
