"""The date and number checks of the verification stage: a date or number is kept only when its page states it as
that kind of fact of the page's subject.

:mod:`training.synth.verify.clue_check` runs these on every fact of the knowledge graph (its docstring lists the reasons:
``subject``, ``date_cue``, ``number_noun``, ``number_unit``, ``number_qualified``, ``infobox_field``,
``no_evidence``); kept apart from the relation and question checks, which share none of the number and date rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from training.synth.extract.facts import _DATE_CUES, _DATE_KEY, MEASURE_UNITS, DateFact, NumberFact
from training.synth.graph.kg import Entity
from training.synth.verify.subjects import about_page, opening

__all__ = ["Evidence", "PageView", "check_date", "check_number", "locate", "unit_reason"]

_PREP_BEFORE_CUE = re.compile(r"\b(?:at|upon|after|before|following|until|since|by|from|of|during)\s+(?:the\s+)?$")
_PEOPLE = ("people", "inhabitants", "residents")
_AREA_UNITS = ("km2", "km²", "sq mi", "sqmi", "square kilometres", "square kilometers", "square miles")
_LENGTH_UNITS = ("km", "kilometres", "kilometers", "miles", "mi", "metres", "meters", "m", "cm", "mm", "ft", "feet")
_MEASURES = ("length", "height", "elevation", "depth", "width", "distance", "diameter")
_QUALIFIERS = re.compile(
    r"\b(?:metropolitan|metropolis|metro|urban|built-up|greater|agglomeration|conurbation|combined|wider|regional|region|county"
    r"|district|province|provincial)\b"
)
#: An area the entity claims is no area of its own: "claims about 1,250,000 square kilometers ... of Antarctica", "its
#: claimed territory", an infobox value "(including the Antarctic claim)".
_CLAIM = re.compile(r"\bclaim(?:s|ed|ing)?\b", re.IGNORECASE)
#: A measure "of" another named place, after the number and its bracketed conversion ("... (480,000 sq mi) of
#: Antarctica", "32,000 square kilometres of southeastern Algeria"): the place's, not the entity's.
_OF_PLACE = re.compile(r"^\s*(?:\([^()]*\)\s*)?of\s+(?:the\s+)?(?:[a-z]+ern\s+)?[A-Z]")
#: A projection or forecast in the number's clause: "Africa's population will exceed 3.8 billion people by 2100" (based
#: on projections) is no current value of the entity.
_PROJECTION = re.compile(
    r"\b(?:project(?:s|ed|ion|ions)|forecasts?|forecasted|predict(?:s|ed|ion|ions)?|expected|anticipated|will|would"
    r"|estimated to (?:reach|rise|grow|exceed|increase|fall|decline)|set to|by (?:the year )?(?:20[3-9]\d|2[1-9]\d\d))\b",
    re.IGNORECASE,
)
#: The end of a range before a date: "constructed between 1113 and 1150 CE" says when the building ended, not when it
#: was built.
_RANGE_END = re.compile(
    r"\b(?:between|from)\s+(?:c\.\s*|circa\s+|about\s+)?\d{1,4}(?:\s*(?:BCE?|CE|AD))?\s*(?:and|to|until|till|through|[–—-])\s*$"
)
#: The start of a range: "between" or "from" before the date, its end after it ("constructed between 1113 and 1150"
#: was not built in 1113 either).
_RANGE_OPEN = re.compile(r"\b(?:between|from)\s+(?:c\.\s*|circa\s+)?$")
_RANGE_START = re.compile(r"^\s*(?:BCE?|CE|AD)?\s*(?:and|to|until|till|through|[–—-])\s*(?:c\.\s*|circa\s+)?\d{1,4}\b")
_FIELD_OK = re.compile(r"population|area|elevation|height|length|depth|founded|established|formation|birth|death")
_FIELD_BAD = re.compile(r"metro|urban|density|rank|water|percent|blank|footnote|demonym|note|ref")
#: Plural nouns a number can stand before that are no count of the entity's parts ("92 times greater").
_NOT_COUNTS = frozenset("times others ones cases kinds types ways means parts units words years days hours".split())
#: A count of the entity's parts follows a verb of having: "comprises 700 islands", "composed of 26 states".
_HAS = re.compile(
    r"\b(?:has|have|had|comprises?|comprising|contains?|containing|includes?|including|of|into|spans?|covers?"
    r"|consists?|numbers?|totals?)\s+(?:(?:over|about|approximately|some|around|nearly|almost|roughly|more than"
    r"|fewer than|less than|an estimated|estimated|at least|up to|just)\s+)*$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Evidence:
    """Where a fact or relation can be checked: the page, the field (an infobox key, ``"description"`` or
    ``"lead"``) and the sentence (or the field's text)."""

    page: str
    field: str
    sentence: str

    def as_dict(self) -> dict[str, str]:
        """The record's per-clue ``evidence`` value."""
        return {"page": self.page, "field": self.field, "sentence": self.sentence[:400]}


@dataclass(frozen=True)
class PageView:
    """What the checks read of the fact's page besides the entity: its lead's sentences, the names a sentence about
    it may open with, and its type noun with its description's words."""

    sentences: list[str]
    names: list[str]
    head: str


def _words_between(text: str) -> int:
    return len(text.split())


_VERB = re.compile(r"^(?:is|was|are|were|has|had|have|lies|covers|spans|comprises|contains|includes|ranks|forms)$")


def _subject_words(opens: str) -> list[str]:
    """The words of a sentence's subject noun phrase (up to its verb, at most six)."""
    out = []
    for w in opens.lower().split()[:7]:
        if _VERB.match(w.strip(",")):
            break
        out.append(w.strip(","))
    return out[:6]


def locate(ent: Entity, text: str, sentences: list[str]) -> tuple[str, str, int]:
    """``(field, sentence, index)``: the infobox key, ``"description"`` or ``"lead"`` holding ``text`` (index of the
    lead sentence; -1 otherwise); ``("", "", -1)`` when nowhere."""
    pat = re.compile(r"(?<![\w.,])" + re.escape(text) + r"(?![\w]|[.,]\d)")
    for key, value in ent.infobox.items():
        if pat.search(value.replace("\xa0", " ")):
            return key, f"{key} = {value[:200]}", -1
    if pat.search(ent.description.replace("\xa0", " ")):
        return "description", ent.description, -1
    for i, s in enumerate(sentences):
        if pat.search(s):
            return "lead", s, i
    return "", "", -1


def check_date(ent: Entity, d: DateFact, page: PageView) -> tuple[str, Evidence | None]:
    """``(reason, evidence)``: ``reason`` is ``""`` when the date is what the sentence or field says (the reasons are
    those of :mod:`training.synth.verify.clue_check`)."""
    fld, sent, i = locate(ent, d.text, page.sentences)
    if not fld:
        return "no_evidence", None
    ev = Evidence(ent.title, fld, sent)
    if fld not in ("description", "lead"):
        return ("" if _FIELD_OK.search(fld.lower()) or _DATE_KEY.search(fld.lower()) else "infobox_field"), ev
    if d.attr in ("birth", "death", "start", "end", "reign_start", "reign_end") and re.search(
        r"\(\s*[^()]*" + re.escape(d.text), sent
    ):  # a bracketed lifespan or range after the subject's name
        return "", ev
    if fld == "lead" and not about_page(page.sentences, i, page.names, page.head):
        return "subject", ev
    words = dict(_DATE_CUES).get(d.attr)
    if not words:
        return "date_cue", ev
    at = sent.find(d.text)
    before = sent[:at]
    if _RANGE_END.search(before):
        return "date_cue", ev  # the end of a range is not the date its cue names
    if (
        d.attr not in ("start", "reign_start")
        and _RANGE_OPEN.search(before)
        and _RANGE_START.match(sent[at + len(d.text) :])
    ):
        return "date_cue", ev  # nor is its start
    best = max(((before.lower().rfind(w), w) for w in words), default=(-1, ""))
    pos, word = best
    if pos < 0 or word == "since":
        return "date_cue", ev
    gap = before[pos + len(word) :]
    if _words_between(gap) > 6 or re.search(r"[,;:()]", gap) or _PREP_BEFORE_CUE.search(before[:pos].lower()):
        return "date_cue", ev
    return "", ev


def check_number(ent: Entity, n: NumberFact, page: PageView) -> tuple[str, Evidence | None]:
    """``(reason, evidence)`` for a quantity (see :func:`check_date`)."""
    fld, sent, _ = locate(ent, n.text, page.sentences)
    if not fld:
        return "no_evidence", None
    ev = Evidence(ent.title, fld, sent)
    unit = n.unit.lower()
    if fld not in ("description", "lead"):
        key = fld.lower()
        if not _FIELD_OK.search(key) or _FIELD_BAD.search(key):
            return "infobox_field", ev
        if n.attr.lower().startswith("area") and _CLAIM.search(sent):
            return "number_qualified", ev
        return unit_reason(n.attr.lower(), unit), ev
    if fld == "lead":
        i = page.sentences.index(sent)
        if not about_page(page.sentences, i, page.names, page.head):
            return "subject", ev
    at = sent.find(n.text)
    before, after = sent[:at], sent[at + len(n.text) :]
    near = before.lower().split()[-5:]
    clause = re.split(r"[;:]|,\s(?:and|while|but|whereas)\s", before)[-1]  # the clause holding the number
    scope = [
        *clause.lower().split()[-12:],
        "|",
        *re.split(r"[,;.(]|\s(?:and|while|but|or)\s", after)[0].split()[:8],
    ]
    around = " ".join(scope)  # the number's own clause, before the sentence's subject joins it
    opens = opening(sent)
    if re.match(r"^(?:its|his|her|their|the\s+\w+['’]s)\s", opens, re.IGNORECASE):
        scope += opens.lower().split()[:6]  # "The city's wider metropolitan area ... 6.55 million"
    scope += _subject_words(opens)  # "The Shenyang metropolitan area is ..., with a population of over 23 million"
    attr = n.attr.lower()
    if unit in ("%", "percent", "per cent") and attr not in ("area", *_MEASURES):
        return "number_noun", ev
    if attr == "density":
        return "number_noun", ev  # "578 people per square kilometre": people per area, no count of the entity's
    if _PROJECTION.search(around):
        return "number_qualified", ev  # a projection's figure, not the entity's value
    if _QUALIFIERS.search(" ".join(scope)) and attr in ("population", "area"):
        return "number_qualified", ev  # "a metropolitan population of", "people living in the metropolitan area"
    if (
        attr == "area"
        and unit in _AREA_UNITS
        and (_CLAIM.search(clause) or _CLAIM.search(" ".join(scope)) or _OF_PLACE.match(after))
    ):
        return "number_qualified", ev  # a claimed territory, or the area of another place
    if attr == "population":
        if unit in _PEOPLE or (not unit and "population" in near[-4:]):
            return "", ev
        return "number_noun", ev
    if attr in ("quantity", "") and not _HAS.search(before):
        return "number_noun", ev  # "diplomatic relations with 158 countries" is no "with about 160 countries"
    return unit_reason(attr, unit), ev


def unit_reason(attr: str, unit: str) -> str:
    """The reason a quantity of ``attr`` with ``unit`` says nothing (``""``: its unit is one of its kind)."""
    if attr.startswith("area") or attr == "area":
        return "" if unit in _AREA_UNITS else "number_unit"
    if any(attr.startswith(m) for m in _MEASURES):
        return "" if unit in _LENGTH_UNITS else "number_unit"
    if attr.startswith("population"):
        return "" if unit in ("", *_PEOPLE) else "number_noun"
    if attr in ("quantity", "", "share"):
        plural = re.fullmatch(r"[a-z]+s", unit) is not None and unit not in MEASURE_UNITS
        return "" if plural and unit not in _NOT_COUNTS else "number_noun"
    return "" if unit else "number_noun"
