"""The verification stage: every fact and relation a clue is made from is re-read in its evidence, and kept only if
the claim is there.

The extractors (:mod:`training.synth.extract.facts`, :mod:`training.synth.extract.relations`) read patterns; a reader checks the
sentence. :class:`ClueChecker` re-reads each date, number and typed relation of the knowledge graph in the one place
it came from (an infobox field, the short description, or one sentence of the lead) before any question is composed,
and drops what the sentence does not say, counted per reason:

* ``subject``: the sentence is about another entity: its subject is another name ("Both provinces have had regional
  autonomy since 2002" on Lima), or a pronoun whose antecedent, the subject of the sentence before, is another name
  ("It also faced an attack from Romania" after "Bulgaria fought against ..." on Balkan Wars);
* ``date_cue``: the word that names the date's kind ("founded", "independence") is not beside the date in the same
  clause, or is a preposition's object ("at independence in 1962": the country's independence, not the city's), or
  is the bare "since";
* ``number_noun``: the number quantifies another noun ("26 states" read as a population), is a percentage with no
  whole ("a salinity of 1.2%" read as a share), or has no noun at all;
* ``number_unit``: a measure without a unit of its kind ("an area of 10.4 per cent");
* ``number_qualified``: the noun is qualified away from the entity ("a metropolitan population of 1,488,307"), or
  an area is a claim or another place's ("claims about 1,250,000 square kilometers ... of Antarctica");
* ``infobox_field``: an infobox field of no known meaning for the attribute (only population, area, heights and
  lengths, founding, birth and death dates are read from fields);
* ``no_evidence``: the fact's text is found in none of the page's fields;
* ``relation_cut``: the relation's complement goes on past the link ("forms part of the Río de la Plata basin": the
  link names only "Río de la Plata"), the link is a possessive ("Brazil's ..."), a modifier before it changes what it
  names ("ancient Greece"), or it is one half of a pair the relation needs ("the interwoven civilizations of ancient
  Greece and Rome", "the intersection of Eastern Europe and West Asia", "the confluence of the Volga and the Kazanka"),
  or a superlative lost its head noun ("the largest in the Philippines"), or the claim follows the link: an object
  clause ("suggested to Erwin Schrödinger that ..."), an "as" complement ("designated by the Republic of Moldova as
  ..."), or the list a plural of the anchor's kind stands for ("shares borders with the provinces of Ontario, ...");
* ``relation_qualified``: a superlative restricted by a clause after the link ("the largest city in Germany that is
  not a state of its own") or ranked within a set named after it ("the highest position in Islam among all women"),
  an ordinal by any phrase after it ("the first monarch of France from the House of Bourbon"), a ranking whose list
  goes on past the link ("the fourth largest province after Quebec, Ontario, ..."), a rank whose measure comes later
  ("ranks fourth in South Asia ... in terms of GDP");
* ``relation_referent``: a city made the capital of a landform ("Dublin is the capital of Ireland" with "Ireland"
  resolved to the island): a capital is a polity's, so the link names another thing than the sentence;
* ``relation_active``: a passive reading of a sentence in the active, the relation turned around ("Aristotle
  considered epic poetry ... to be imitative" read as "{src} is considered {dst}";
  :mod:`training.synth.verify.voice`);
* ``relation_preposition``: a location verb joined to its complement by "with" ("is situated with the Gulf of Guinea
  ... to the south");
* ``relation_field``: an infobox date field that links a page ("death_date = 322 BC ... Greece" read as "whose death
  date is Greece").

Question-level checks (:meth:`ClueChecker.draft`) drop a composed question whose templates combine into nonsense:
``type_noun`` (the answer's type noun is no noun: "Which see is this?" from "radiation humans can see") and
``template_repeat`` ("on the island of an island ...", "on the island of this island") and ``name_part`` (a
distinctive word of the answer's name shows: "A Mediterranean island country" asking for the Mediterranean Sea;
:mod:`training.synth.verify.name_parts`).

Every kept fact keeps its :class:`Evidence` (page, field, sentence) so a record can show, per clue, where to check it.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from typing import Any

from training.synth.compose.naming import head_noun, name_variants
from training.synth.compose.quantities import fuzz_number, number_phrase
from training.synth.compose.uncertainty import date_phrase
from training.synth.extract.facts import _DATE_KEY, DateFact, NumberFact
from training.synth.extract.relations import is_text_relation
from training.synth.graph.kg import Entity
from training.synth.verify.fact_check import Evidence, PageView, check_date, check_number
from training.synth.verify.name_parts import name_part_shown
from training.synth.verify.subjects import PRONOUN, about_page, opening, opening_subject
from training.synth.verify.voice import passive_verb, turned_around

__all__ = ["ClueChecker", "Evidence", "about_page", "opening_subject", "type_noun_ok"]

_MODAL = r"(?:can|could|will|would|may|might|must|shall|should|to|cannot|not|do|does|did)"

#: Words that may follow a linked name without continuing its noun phrase.
_FOLLOW = frozenset(
    "and or but nor to in on at by with from of for as is was are were has had have which that who whom whose where "
    "when while since until after before during via through into onto over under between among along across near "
    "around about than then its their his her the a an both also each itself some following including".split()
)
#: A clause after the linked name that restricts the relation: "the largest city in Germany that is not a state of its
#: own" is no "the largest city in Germany".
_QUALIFIER = re.compile(
    r"^\s*,?\s*(?:(?:that|which|who)\s+(?:is|are|was|were|has|have|had|does|do|did)\s+(?:not|never)\b"
    r"|(?:outside|excluding|except|apart from|other than|not counting)\b)"
)
_SUPERLATIVE = re.compile(r"\b(?:\w+est|most|least|first|second|third|only)\b")
#: A phrase after the linked name that names the set a superlative ranks within: "the highest position in Islam among
#: all women" is no "the highest position in Islam", "the tallest building in Asia of its time" none in Asia's history.
_SUPERLATIVE_SCOPE = re.compile(
    r"^\s*,?\s*(?:among|amongst|of all|of any|of its (?:kind|time|day|era)|in (?:the )?(?:world|history)|on earth"
    r"|ever|at the time|by some)\b"
)
#: An ordinal or "last"/"only" in a relation: "the first monarch of France" is true only with the phrase after the link
#: ("... from the House of Bourbon"), "the last king of France" only "before the fall of the monarchy".
_ORDINAL = re.compile(
    r"\b(?:first|last|only|sole|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|\d+(?:st|nd|rd|th)"
    r"|(?:second|third|fourth|fifth)-\w+)\b"
)
_ORDINAL_QUALIFIER = re.compile(
    r"^\s*(?:from|before|since|until|till|under|during|among|to|in|of|with|without|outside"
    r"|that|which|who)\b"
)
#: A list going on after the linked name: "the fourth largest province after Quebec, Ontario, and British Columbia"
#: is not "the fourth largest province after Quebec".
_LIST_GOES_ON = re.compile(r"^\s*(?:,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+)(?:the\s+)?[A-Z]")
#: A modifier before the linked name that changes what it names: "ancient Greece" is not the country Greece.
_REFERENT_MODIFIERS = frozenset(
    "ancient former old classical medieval colonial imperial historical historic prehistoric pre-colonial".split()
)
#: A possessive right before a linked name makes it the subject's own thing of that name: "his Rhetoric" is a book.
_POSSESSIVES = frozenset("his her its their".split())
#: A compass or part modifier before the linked name names a part of it: "most of northern Eurasia" is not most of
#: Eurasia. What holds of a part holds of the whole only for containment ("a city in northern Italy" is in Italy), so
#: these cut only a relation that quantifies, ranks or spans over the link (:data:`_OVER_WHOLE`).
_PART_MODIFIERS = re.compile(
    r"^(?:(?:north|south)(?:-?(?:east|west))?(?:ern)?|east(?:ern)?|west(?:ern)?|central|upper|lower|inner|outer"
    r"|coastal|interior|mainland)$"
)
_OVER_WHOLE = re.compile(
    r"\b(?:\w+est|most|much|all|whole|entire|majority|bulk|half|span\w*|cover\w*|dominat\w*|capital)\b"
)
#: A linked name whose head shares a complement with the name after it: "the City and County of Cardiff" with the link
#: on "City" names only part of the name.
_NAME_GOES_ON = re.compile(r"^\s+(?:and|&)\s+[A-Z][a-z]+\s+of\s+(?:the\s+)?[A-Z]")
#: A verb whose claim is its object clause: "Einstein suggested to Erwin Schrödinger that ..." says nothing cut there.
_TELLS_TO = re.compile(
    r"\b(?:suggest|propos|explain|announc|declar|report|recommend|reveal|indicat|argu|claim|promis|demonstrat|describ"
    r"|present|wrote|writ|said|sa[iy])\w*\s+to\s+\{(?:src|dst)\}\W*$"
)
#: A passive whose claim is its "as" complement: "designated by the Republic of Moldova as the Administrative ...".
_PASSIVE_BY = re.compile(r"\b\w+ed\s+by\s+[^{}]*\{(?:src|dst)\}\W*$")
#: A rank whose measure follows later in the sentence: "ranks fourth in South Asia ... in terms of GDP".
_RANKS = re.compile(r"\brank(?:s|ed)?\b")
_MEASURE = re.compile(r"\bin terms of\b|\bby (?:GDP|population|area|size|number)\b")
#: "the provinces of {dst}": a plural of the anchor's own kind names a list the anchor is one of, not its provinces.
_PLURAL_OF = re.compile(r"\bthe ([a-z]+)s of \{(?:src|dst)\}\W*$")
#: A subordinator before the link ("was dissolved shortly after {dst}"): with a verb after the name ("Hungary
#: terminated the union"), the name is the subject of a clause and the relation is with that event, not the entity.
_SUBORDINATOR = re.compile(r"\b(?:after|before|when|while|until|since|because|once|as)\s+\{(?:src|dst)\}\W*$")
_CLAUSE_VERB = re.compile(
    r"^\s+(?:[a-z]+ed|was|were|is|are|had|has|have|became|won|lost|took|gave|made|began|fell|left)\b"
)
#: A definite description of the linked name ("is the forms of {dst}") that a relative clause right after the name
#: restricts ("... of the English language that were spoken in England after 1066"): the relation alone overclaims.
_DEFINITE_OF = re.compile(r"\bthe\s+(?:[a-z-]+\s+){0,2}?[a-z-]+\s+(?:of|in)\s+\{(?:src|dst)\}\W*$")
_RESTRICTIVE = re.compile(r"^\s+(?:that|which|who)\s+(?:is|are|was|were|has|have|had)\b")
#: A sentence opening with a possessive noun phrase ("His oracular cult was introduced from Anatolia"): its subject is
#: the possessed thing, not the page's subject.
_POSSESSED = re.compile(r"^(?:its|his|her|their)\s+((?:[\w-]+\s+){0,2}?[\w-]+)\s+(?:is|was|are|were|has|had)\b", re.I)
#: A sentence opening with a definite noun phrase and its verb ("The inspiration oracular-cult was probably introduced
#: from Anatolia"): about the page only when a word of the phrase is one its lead calls it ("The sovereign state ...").
_DEFINITE_SUBJECT = re.compile(
    r"^(?:the|this|these)\s+((?:[\w-]+\s+){0,3}?[\w-]+)\s+(?:(?:also|probably|originally|first|then|now)\s+)?"
    r"(?:is|was|are|were|has|had|have)\b",
    re.IGNORECASE,
)
#: Words of a definite subject that name the page's subject whatever its lead calls it ("The country" of a
#: "microstate", "The city" of a "metropolis").
_ATTRIBUTE_OWN = frozenset("name word term country state nation city town region territory".split())
#: Nouns of a relation whose complement is a pair: "the interwoven civilizations of ancient Greece and Rome", "the
#: intersection of Eastern Europe and West Asia": one member alone does not complete it.
_PAIR_NOUN = re.compile(
    r"\b(?:\w+s|intersection|confluence|convergence|junction|crossroads|union|mixture|combination|merger)\s+of\s+\{"
)
#: A superlative with no head noun before the link: "Luzon is the largest in {dst}" (the page: "the largest and most
#: populous island in the Philippines") names no kind it is the largest of.
_HEADLESS = re.compile(r"\bthe (?:\w+est|most \w+|least \w+)\s+(?:in|of|on|among|within)\s+\{")
_LOCATION_WITH = re.compile(r"\b(?:situated|located|lies|lying|set|placed|positioned|sits)\s+with\s+\{")
#: "{src} is the capital of {dst}": the placeholder of the polity the capital belongs to.
_CAPITAL_OF = re.compile(r"\bcapital\b[^{}]*\bof\s+(\{src\}|\{dst\})")
#: Kinds that have no capital of their own: a capital "of" one names a state that shares its name.
_LANDFORMS = frozenset("island archipelago peninsula continent ocean sea river lake mountain valley desert".split())
#: A noun whose complement is the same noun: "on the island of an island", "on the island of this island" (the answer's
#: type noun, with any determiner a template puts before it).
_REPEAT = re.compile(r"\b(?:the|an?) ([a-z]{3,}) of (?:an?|the|this|that|these|its|one) (?:[a-z]+ )?\1\b")
#: Verbs and function words a head-noun extractor can take for a noun at the end of a description.
_NOT_NOUNS = frozenset(
    "see be have do make use get know hear feel find give take include become seem see watch eat live read write "
    "it them this that these those which who what one other others".split()
)


def type_noun_ok(head: str, phrase: str) -> bool:
    """Whether ``head`` (the type noun read from ``phrase``, a description or lead predicate) names a kind: not a verb
    or function word, and not the verb of a clause in the phrase ("radiation humans can see")."""
    if head in ("", "entity", "person"):
        return True
    if head in _NOT_NOUNS or not head.isalpha():
        return False
    return not re.search(rf"\b{_MODAL}\s+(?:\w+\s+)?{re.escape(head)}\b", phrase.lower())


class ClueChecker:
    """Re-reads the facts and relations clues are made from (see the module docstring); counts in :attr:`counts`.

    Args:
        source: A :class:`~training.synth.graph.store_source.StoreSource` (for page leads).
    """

    def __init__(self, source: Any) -> None:
        self.src = source
        self.counts: Counter = Counter()
        self._sents: dict[str, list[str]] = {}
        self._evidence: dict[tuple[str, str, str], Evidence] = {}

    # --- page text ----------------------------------------------------------------------------------

    def sentences(self, title: str) -> list[str]:
        """The lead's sentences of a page (cached)."""
        if title not in self._sents:
            from wiki_index.parse.text import split_sentences

            pid = self.src.resolve(title)
            row = self.src.row(pid) if pid is not None else None
            self._sents[title] = split_sentences(row.lead.replace("\xa0", " ")) if row else []
        return self._sents[title]

    def names(self, ent: Entity) -> list[str]:
        """The names a sentence about ``ent`` may open with."""
        out = [ent.title, *name_variants(ent.title)]
        if ent.is_person and len(ent.title.split()) > 1:
            out.append(ent.title.split()[-1])
        return sorted(set(out), key=len, reverse=True)

    def complement_lost(self, rel: str, rest: str, other: str) -> str:
        """``relation_cut`` or ``relation_qualified`` when what follows the linked name ``other`` (``rest``) holds the
        claim the relation lacks: an object clause, an "as" complement, the verb of a clause the name opens after a
        subordinator, the measure of a rank, a relative clause restricting a definite description, or the list a
        plural of the anchor's own kind stands for; ``""`` otherwise."""
        if _TELLS_TO.search(rel) and re.match(r"^\W*(?:that|whether|how)\b", rest):
            return "relation_cut"
        if _PASSIVE_BY.search(rel) and re.match(r"^\W*as\b", rest):
            return "relation_cut"
        if _SUBORDINATOR.search(rel) and _CLAUSE_VERB.match(rest):
            return "relation_cut"
        if _RANKS.search(rel) and _MEASURE.search(rest):
            return "relation_qualified"
        if _DEFINITE_OF.search(rel) and _RESTRICTIVE.match(rest):
            return "relation_qualified"
        m = _PLURAL_OF.search(rel)
        if m and (ent := self.src.entity(other)) is not None and head_noun(ent) == m.group(1):
            return "relation_cut"
        return ""

    def head(self, ent: Entity) -> str:
        """The page's type noun and the words of its description ("city capital largest ..."): "The city ..." must
        name one to be about the page."""
        return " ".join([head_noun(ent), *re.findall(r"[a-z]{3,}", ent.description.lower())])

    def evidence(self, title: str, kind: str, text: str) -> Evidence | None:
        """The evidence kept for a fact (``kind`` ``"date"`` or ``"number"``, ``text`` the fact's text)."""
        return self._evidence.get((title, kind, text))

    def any_evidence(self, title: str, kind: str) -> Evidence | None:
        """The first evidence kept for a fact of that kind of a page (``None``: none kept)."""
        return next((e for (t, k, _), e in self._evidence.items() if t == title and k == kind), None)

    # --- facts --------------------------------------------------------------------------------------

    def view(self, ent: Entity) -> PageView:
        """What the date and number checks read of ``ent``'s page."""
        return PageView(self.sentences(ent.title), self.names(ent), self.head(ent))

    def date(self, ent: Entity, d: DateFact) -> tuple[str, Evidence | None]:
        """``(reason, evidence)``: ``reason`` is ``""`` when the date is what the sentence or field says
        (:func:`~training.synth.verify.fact_check.check_date`)."""
        return check_date(ent, d, self.view(ent))

    def number(self, ent: Entity, n: NumberFact) -> tuple[str, Evidence | None]:
        """``(reason, evidence)`` for a quantity (:func:`~training.synth.verify.fact_check.check_number`)."""
        return check_number(ent, n, self.view(ent))

    def entity(self, ent: Entity) -> Entity:
        """``ent`` with only the dates and numbers its page states as such (the others counted and dropped)."""
        dates, numbers = [], []
        for d in ent.dates:
            if d.attr == "date" or date_phrase(d.attr) is None:
                dates.append(d)  # no clue says it (a date of no known kind): nothing to check
                continue
            reason, ev = self.date(ent, d)
            self._count("date", reason)
            if not reason and ev is not None:
                dates.append(d)
                self._evidence[(ent.title, "date", d.text)] = ev
        for n in ent.numbers:
            if number_phrase(n, fuzz_number(n, mode="about")) is None:
                numbers.append(n)  # no clue says it (a bare number): nothing to check
                continue
            reason, ev = self.number(ent, n)
            self._count("number", reason)
            if not reason and ev is not None:
                numbers.append(n)
                self._evidence[(ent.title, "number", n.text)] = ev
        return replace(ent, dates=tuple(dates), numbers=tuple(numbers))

    def _count(self, kind: str, reason: str) -> None:
        self.counts[f"{kind}_checked"] += 1
        self.counts[f"{kind}_kept" if not reason else f"dropped_{kind}_{reason}"] += 1

    # --- relations ----------------------------------------------------------------------------------

    def relation(self, data: dict[str, Any]) -> str:
        """The reason to drop an edge's typed relation (``""``: the sentence or field says it)."""
        rel, kind = str(data.get("relation", "")), str(data.get("kind", ""))
        if kind == "infobox":
            return "relation_field" if _DATE_KEY.search(rel.lower()) else ""
        if not is_text_relation(rel):
            return ""
        sent = str(data.get("evidence") or "")
        page = str(data.get("page") or data.get("source_page") or "")
        if _LOCATION_WITH.search(rel):
            return "relation_preposition"
        if _HEADLESS.search(rel):
            return "relation_cut"
        if self.capital_of_landform(rel, data):
            return "relation_referent"
        if self.active(rel, sent, data, page):
            return "relation_active"
        src, dst = str(data.get("source_page", "")), str(data.get("target_page", ""))
        other = dst if page == src else src
        names = sorted({str(data.get("anchor") or ""), other, *name_variants(other)} - {""}, key=len, reverse=True)
        for name in names:
            at = sent.find(name)
            if at >= 0:
                rest = sent[at + len(name) :]
                if re.match(r"^['’]s\b", rest):
                    return "relation_cut"
                m = re.match(r"^\s+([a-z][a-z-]*)\b", rest)
                if m and m.group(1) not in _FOLLOW and not m.group(1).endswith(("ly", "ing", "ed")):
                    return "relation_cut"
                if _NAME_GOES_ON.match(rest):
                    return "relation_cut"
                if lost := self.complement_lost(rel, rest, other):
                    return lost
                if _SUPERLATIVE.search(rel) and (_QUALIFIER.match(rest) or _SUPERLATIVE_SCOPE.match(rest)):
                    return "relation_qualified"
                ranked = bool(_SUPERLATIVE.search(rel) or _ORDINAL.search(rel))
                if (_ORDINAL.search(rel) and _ORDINAL_QUALIFIER.match(rest)) or (ranked and _LIST_GOES_ON.match(rest)):
                    return "relation_qualified"
                before = sent[:at].split()
                if before and before[-1].lower() in _REFERENT_MODIFIERS:
                    return "relation_cut"
                if before and before[-1].lower() in _POSSESSIVES and name[:1].isupper():
                    return "relation_referent"  # "commented in his Rhetoric": his book, not the linked art
                if before and _PART_MODIFIERS.match(before[-1].lower()) and _OVER_WHOLE.search(rel):
                    return "relation_cut"
                pair_end = bool(before) and before[-1] in ("and", "or")  # "... of ancient Greece and Rome" for Rome
                if _PAIR_NOUN.search(rel) and (pair_end or re.match(r"^\s+(?:and|or|with)\s+(?:the\s+)?[A-Z]", rest)):
                    return "relation_cut"
                break
        own_first = rel.startswith("{src}") == (page == src)  # the page's subject opens the template
        if own_first and self.other_subject(page, rel, sent):
            return "subject"
        ctx = self.context(page, sent) if own_first and PRONOUN.match(opening(sent)) else None
        if ctx is not None:
            ent = self.src.entity(page)
            names = self.names(ent) if ent is not None else [page]
            sents, i, lead = ctx
            if not about_page(sents, i, names, self.head(ent) if ent is not None else "", lead=lead):
                return "subject"
        return ""

    def other_subject(self, page: str, relation: str, sentence: str) -> bool:
        """Whether the sentence's subject is another thing than ``page``'s subject, which the relation's template
        opens with: a possessive noun phrase whose noun the template does not say ("His oracular cult was introduced
        from Anatolia" is no "Apollo was introduced from Anatolia"), or a noun phrase naming neither the page nor its
        kind ("The inspiration oracular cult was ...")."""
        opens = sentence.strip()  # the sentence's own opening: opening() takes "..., the sixth child of" for one
        m = _POSSESSED.match(opens)
        if m:
            return not any(w.lower() in relation.lower() for w in m.group(1).split())
        ent = self.src.entity(page)
        np = _DEFINITE_SUBJECT.match(opens)
        if ent is None or np is None:
            return False
        kinds = set(re.findall(r"[a-z]+", f"{self.head(ent)} {ent.first_sentence}".lower())) | _ATTRIBUTE_OWN
        return not kinds & set(re.findall(r"[a-z]+", np.group(1).lower()))

    def active(self, relation: str, sentence: str, data: dict[str, Any], page: str) -> bool:
        """Whether ``relation`` reads as a passive what ``sentence`` (on ``page``) says in the active, its subject (the
        template's first endpoint, or a pronoun of the page's own) followed by the verb (:func:`~.voice.turned_around`).
        Only a passive template looks its subject's entity up."""
        if not passive_verb(relation):
            return False
        first = str(data.get("source_page" if relation.startswith("{src}") else "target_page", ""))
        ent = self.src.entity(first) if first else None
        names = self.names(ent) if ent is not None else [first, *name_variants(first)]
        if first != page:
            names.append(str(data.get("anchor") or ""))
        return turned_around(relation, sentence, names, own=first == page)

    def capital_of_landform(self, relation: str, data: dict[str, Any]) -> bool:
        """Whether ``relation`` makes a city the capital of a landform: a capital is a polity's, so a name that
        resolved to the island, not the state of the same name ("Dublin is the capital of Ireland" linked to the
        island), states something false of the page it points to."""
        m = _CAPITAL_OF.search(relation)
        if m is None:
            return False
        polity = str(data.get("source_page" if m.group(1) == "{src}" else "target_page", ""))
        ent = self.src.entity(polity) if polity else None
        return ent is not None and head_noun(ent) in _LANDFORMS

    def context(self, page: str, sentence: str) -> tuple[list[str], int, bool] | None:
        """The sentences of the passage of ``page`` holding ``sentence``, its index there and whether that passage
        opens the page (``None``: not found)."""
        from wiki_index.parse.text import split_sentences

        pid = self.src.resolve(page)
        for k, (_, text) in enumerate(self.src.passages(pid) if pid is not None else []):
            if sentence in text:
                sents = split_sentences(text)
                if sentence in sents:
                    return sents, sents.index(sentence), k == 0
        return None

    def prune(self, kg: Any) -> None:
        """Check every node's facts and every edge's typed relation of a knowledge graph, in place: failing facts
        leave the entity, a failing relation leaves the edge (another source's relation takes its place when that one
        passes, else the edge goes); nodes left without an edge go."""
        g = kg.graph
        for _, data in g.nodes(data=True):
            if "entity" in data:
                data["entity"] = self.entity(data["entity"])
                data["dates"], data["numbers"] = data["entity"].dates, data["entity"].numbers
        for u, v in list(g.edges):
            data = g.edges[u, v]
            reason = self.relation(data)
            self.counts["relation_checked"] += 1
            alts = data.get("by_source", {})
            for k in [k for k, a in alts.items() if self.relation({**data, **a})]:
                del alts[k]
            if not reason:
                self.counts["relation_kept"] += 1
                continue
            self.counts[f"dropped_{reason}" if reason.startswith("relation") else f"dropped_relation_{reason}"] += 1
            if alts:
                data.update(next(iter(alts.values())))
            else:
                g.remove_edge(u, v)
        g.remove_nodes_from([n for n in list(g) if g.degree(n) == 0])
        for n in g:
            g.nodes[n]["degree"] = g.degree(n)

    # --- composed questions -------------------------------------------------------------------------

    def draft(self, question: str, head: str, answer: Entity | None) -> str:
        """The reason to drop a composed question (``""``: none); counted."""
        reason = ""
        if answer is not None and not type_noun_ok(head, f"{answer.description} {answer.first_sentence}"):
            reason = "type_noun"
        elif _REPEAT.search(question.lower()):
            reason = "template_repeat"
        elif answer is not None and name_part_shown(question, answer.title):
            reason = "name_part"
        self.counts["question_checked"] += 1
        if reason:
            self.counts[f"dropped_{reason}"] += 1
        return reason
