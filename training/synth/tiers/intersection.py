"""The ``intersection`` tier: two or three checkable clues about one answer, each true of many, together of one.

Between ``bridge`` (a chain a template can follow) and SailorFog-QA (six clues), a question such as "Which country
borders Laos and has a coast on the South China Sea?": each clue alone fits several countries, the answer is the
only one that fits all. The answers are **countries**: the sample holds the world's countries (203 pages whose
description is "Country in ..."), so a check over the sample's countries is a check over the real candidates, not
over whatever the sample happens to hold (a city or a person would be unique only by the sample's gaps).

A clue is ``(family, Y)`` (``Y`` a page, or none for a property), and a country is a member when a sentence says so:

* ``region``: "lies in Y" (a region or subregion; not a continent, whose page lists only a few of its countries): its short description ("Country in Southeast Asia"),
  its first sentence ("... is a country in West Africa"), or a sentence of Y's page that names it with a word of
  membership ("consists of", "countries", "includes");
* ``borders``: "borders Y" (a country): a sentence of either page names the other after a word of bordering (a
  maritime border makes a look-alike, never the answer's evidence);
* ``coast``: "has a coast on the Y" (a sea, ocean, gulf or bay): a sentence of either page names the other after a
  word of coast or shore ("bordered by", "coastline", "bounded by");
* ``landlocked`` / ``island``: "is landlocked" / "is an island country": its description or first sentence.

Membership is the *union* of what both pages say, so a look-alike counts as a member whenever either page reads so:
the check can only reject too many questions, never pass a clue set that a page of the question contradicts. Gates:
every clue has at least three members (it is true of many); the clues' members intersect in the answer alone, over
every country of the sample (so every country the question's pages link or list); no clue's own search has the
answer as its first result (a one-clue search does not answer it); the question's own search does not either (the
one-search rule cannot); and a clue's search shows the answer (its page in the top ``k`` or its name in a snippet),
so the oracle answers after at most three searches, one per clue.
"""

from __future__ import annotations

import hashlib
import itertools
import random
import re
from pathlib import Path
from typing import Any

from training.synth.compose.naming import head_noun, leaks
from wiki_index.types import bare_title, title_to_url

_BORDER = re.compile(r"\b(?:border|borders|bordered|bordering|neighbo\w*|adjacent|shares? (?:a )?(?:land )?border)")
_COAST = re.compile(r"\b(?:coast\w*|shore\w*|border\w*|bound\w*|on the|by the|washed by|faces|facing|along)\b")
_MEMBER = re.compile(r"\b(?:consists? of|compris\w+|includ\w+|countries|nations|states|made up of|is a country in)\b")
_REGION_HEADS = ("region", "subregion", "peninsula")  # not continents: their pages list a few of their countries
_WATER_HEADS = ("sea", "ocean", "gulf", "bay", "strait", "lake")
#: the phrase each family puts in a question, and the words of its clue's search
TEXTS = {
    "region": ("lies in {y}", "country in {y}"),
    "borders": ("borders {y}", "country bordering {y}"),
    "coast": ("has a coast on the {y}", "country with a coast on the {y}"),
    "landlocked": ("is landlocked", "landlocked country"),
    "island": ("is an island country", "island country"),
}
MIN_MEMBERS = 3


def _sentence_before(sentence: str, name: str, pattern: re.Pattern[str]) -> bool:
    """Whether ``name`` is in ``sentence`` after a word of ``pattern`` (within the same clause run of 160 chars)."""
    i = sentence.find(name)
    return i > 0 and bool(pattern.search(sentence[max(0, i - 160) : i]))


def _describes(ent: Any, region: str) -> bool:
    """Whether the country's description or first sentence puts it in ``region`` ("Country in Central and South
    Asia" puts it in Central Asia and in South Asia)."""
    desc = str(ent.description or "")
    parts = re.split(r",| and ", re.sub(r"^[\w\s-]*?\bin (?:the )?", "", desc))
    tail = region.split()[-1]
    named = {p.strip() if p.strip().endswith(tail) else f"{p.strip()} {tail}" for p in parts if p.strip()}
    first = str(ent.first_sentence or "")
    return region in named or region == desc.removeprefix("Country in ") or f"country in {region}" in first


def _current(ent: Any) -> bool:
    """Whether a country page is of a country today (not "Former country in Central Europe", nor dated)."""
    desc = str(ent.description or "")
    return not re.search(r"\b(?:former|historical|ancient|defunct)\b|\d{3,4}", desc, re.IGNORECASE)


class Membership:
    """Which countries each clue holds for, read from the pages' sentences (see the module docstring).

    Args:
        src: A :class:`~training.synth.graph.store_source.StoreSource`.
        titles: Every page title of the index.
    """

    def __init__(self, src: Any, titles: list[str]) -> None:
        self.src = src
        self.heads = {}
        for t in titles:
            ent = src.entity(t)
            if ent is not None:
                self.heads[t] = head_noun(ent)
        self.countries = sorted(t for t, h in self.heads.items() if h == "country" and _current(src.entity(t)))
        self.current = set(self.countries)
        self.members: dict[tuple[str, str], set[str]] = {}
        self.evidence: dict[tuple[str, str, str], str] = {}  # (family, y, country) -> the sentence that says it
        #: the world's regions: those a country's short description names ("Country in Southeast Asia")
        self.regions = {
            r
            for c in self.countries
            for r in self.heads
            if self.heads[r] in _REGION_HEADS and _describes(src.entity(c), r)
        }
        for c in self.countries:
            self._read(c)

    def _add(self, family: str, y: str, country: str, sentence: str) -> None:
        """``country`` is a member of ``(family, y)``; a clue stated by ``sentence`` only loosely (a maritime border)
        makes it a look-alike for uniqueness, never the answer's evidence."""
        self.members.setdefault((family, y), set()).add(country)
        if family != "borders" or not re.search(r"\bmaritime\b", sentence):
            self.evidence.setdefault((family, y, country), sentence)

    def _read(self, country: str) -> None:
        ent = self.src.entity(country)
        text = f"{ent.description or ''}. {ent.first_sentence or ''}"
        if re.search(r"\blandlocked\b", text, re.IGNORECASE):
            self._add("landlocked", "", country, text)
        if re.search(r"\b(?:island (?:country|nation|state)|archipelag\w+ (?:country|nation|state))", text, re.I):
            self._add("island", "", country, text)
        for other, attrs in self.src.neighbours(country):
            ev, head = str(attrs.get("evidence") or ""), self.heads.get(other)
            name = bare_title(other)
            if other in self.regions and _describes(ent, other):
                self._add("region", other, country, ent.description or ev)
            elif other in self.regions and _sentence_before(ev, name, re.compile(r"\bin\b|\bof\b")):
                if f"country in {name}" in ev or f"located in {name}" in ev or f"situated in {name}" in ev:
                    self._add("region", other, country, ev)
            if head == "country" and other in self.current:
                self._pair("borders", other, country, self._sentences(country, other), other, _BORDER)
            if head in _WATER_HEADS:
                self._pair("coast", other, country, self._sentences(country, other), other, _COAST)
        for other, attrs in self._pages_naming(country):  # what the regions', seas' and neighbours' pages say of it
            ev, head = str(attrs.get("evidence") or ""), self.heads.get(other)
            if other in self.regions and _sentence_before(ev, bare_title(country), _MEMBER):
                self._add("region", other, country, ev)
            elif head in _WATER_HEADS:  # a sea's page naming a country at all makes it a look-alike
                self._pair("coast", other, country, self._sentences(other, country), country, _COAST, loose=True)
            elif head == "country" and other in self.current:
                self._pair("borders", other, country, self._sentences(other, country), country, _BORDER)

    def _sentences(self, page: str, other: str) -> list[str]:
        """Every sentence of ``page`` that names ``other``."""
        pid = self.src.resolve(page)
        names = [other, bare_title(other)]
        return [sent for _, sent in self.src.sentences_naming(pid, names)] if pid is not None else []

    def _pair(
        self,
        family: str,
        y: str,
        country: str,
        sentences: list[str],
        named: str,
        cue: re.Pattern[str],
        loose: bool = False,
    ) -> None:
        """Read a ``borders`` / ``coast`` pair from ``sentences`` (one page's sentences naming ``named``, the other of
        the pair): the evidence is a sentence naming it after a word of ``cue`` (a look-alike: ``cue`` anywhere in such a sentence, or any
        sentence at all when ``loose``)."""
        strict = next((x for x in sentences if _sentence_before(x, bare_title(named), cue)), None)
        if strict is None and not (loose and sentences) and not any(cue.search(x) for x in sentences):
            return
        pairs = [(y, country), (country, y)] if family == "borders" else [(y, country)]
        for yy, cc in pairs:
            if strict is not None:
                self._add(family, yy, cc, strict)
            else:
                self.members.setdefault((family, yy), set()).add(cc)

    def _pages_naming(self, country: str) -> list[tuple[str, dict[str, Any]]]:
        pid = self.src.resolve(country)
        out = []
        for other in self.src.in_ids(pid) if pid is not None else []:
            title = self.src.title(other)
            for dst, attrs in self.src.neighbours(title):
                if dst == country:
                    out.append((title, attrs))
        return out

    def clues_of(self, country: str) -> list[tuple[str, str]]:
        """The clues that hold for ``country`` and for at least :data:`MIN_MEMBERS` countries in all."""
        return sorted(
            k
            for k, v in self.members.items()
            if country in v and len(v) >= MIN_MEMBERS and (k[0], k[1], country) in self.evidence
        )


def question_text(clues: list[tuple[str, str]]) -> str:
    """``"Which country borders Laos and Myanmar and lies in Southeast Asia?"`` (clues sorted by family)."""
    clues = sorted(clues)
    parts: list[str] = []
    for family, group in itertools.groupby(clues, key=lambda c: c[0]):  # "borders Botswana and Zambia"
        ys = [bare_title(y) for _, y in group]
        names = ys[0] if len(ys) == 1 else ", ".join(ys[:-1]) + " and " + ys[-1]
        parts.append(TEXTS[family][0].format(y=names))
    body = (
        parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + (", and " if len(clues) > 2 else " and ") + parts[-1]
    )
    return f"Which country {body}?"


def clue_query(clue: tuple[str, str]) -> str:
    """The search a solver writes for one clue (``"country bordering Laos"``)."""
    return TEXTS[clue[0]][1].format(y=bare_title(clue[1]))


def _first_new(titles: list[str], text: str) -> str | None:
    return next((t for t in titles if not leaks(text, [t])), None)


def _combos(clues: list[tuple[str, str]], rng: random.Random) -> list[tuple[tuple[str, str], ...]]:
    pairs = list(itertools.combinations(clues, 2))
    triples = list(itertools.combinations(clues, 3))
    rng.shuffle(pairs)
    rng.shuffle(triples)
    return [*pairs, *triples]


def _record(country: str, clues: tuple[tuple[str, str], ...], mem: Membership, view: Any, cfg: Any) -> dict[str, Any]:
    from sim_web.env.tasks import split_of
    from training.synth.tiers.view import aliases

    question = question_text(list(clues))
    rid = "intersection-" + hashlib.sha1(f"{cfg.seed}|{question}".encode()).hexdigest()[:12]
    queries = [clue_query(c) for c in clues]
    return {
        "id": rid,
        "question": question,
        "answer": country,
        "aliases": aliases(mem.src, country),
        "split": split_of(rid, cfg.test_fraction),
        "tier": "intersection",
        "answer_url": title_to_url(country),
        "evidence": [{"title": y, "url": title_to_url(y)} for _, y in clues if y] or [{"title": country}],
        "clues": [
            {"entity": country, "query": q, "text": TEXTS[f][0].format(y=bare_title(y)), "type": f}
            for (f, y), q in zip(clues, queries)
        ],
        "provenance": [
            {
                "page": country,
                "relation": f,
                "kind": "membership",
                "sentence": mem.evidence[(f, y, country)],
                "object": y,
                "members": len(mem.members[(f, y)]),
            }
            for f, y in clues
        ],
        "uncertainty_types": ["intersection"],
        "difficulty": {
            "score": 2.5,
            "hops": len(clues),
            "level": "medium",
            "oracle_searches": len(clues),
            "top10_question": country in view.titles(question),
            "nodes": len(clues) + 1,
            "edges": len(clues),
            "clue_members": [len(mem.members[c]) for c in clues],
        },
        "uniqueness": f"the only one of the sample's {len(mem.countries)} countries that every clue holds for",
        "generator": "tier:intersection",
        "seed": cfg.seed,
        "weight": 1.0,
        "form": "template",
    }


def intersection_questions(mem: Membership, view: Any, cfg: Any, rep: Any, per_answer: int = 8) -> list[dict]:
    """Up to ``per_answer`` gated questions per country (pairs of clues first, then triples), at most ``cfg.n``."""
    rng = random.Random(f"{cfg.seed}:intersection")
    out, seen = [], set()
    countries = list(mem.countries)
    rng.shuffle(countries)
    for country in countries:
        kept = 0
        for combo in _combos(mem.clues_of(country), rng):
            if len(out) >= cfg.n or kept >= per_answer:
                break
            rep.funnel["candidates"] += 1
            if set.intersection(*(mem.members[c] for c in combo)) != {country}:
                rep.funnel["not_unique"] += 1
                continue
            question = question_text(list(combo))
            if question in seen or leaks(question, [country]):
                rep.funnel["duplicate_or_leak"] += 1
                continue
            queries = [clue_query(c) for c in combo]
            if any(_first_new(view.titles(q), q) == country for q in queries):
                rep.funnel["one_clue_answers"] += 1
                continue
            if _first_new(view.titles(question), question) == country:
                rep.funnel["question_answers"] += 1
                continue
            if not any(view.shows(q, country) for q in queries):
                rep.funnel["unanswerable"] += 1
                continue
            seen.add(question)
            kept += 1
            out.append(_record(country, combo, mem, view, cfg))
    return out


def generate_intersection(index_dir: str | Path | None, cfg: Any, rep: Any) -> tuple[list[dict[str, Any]], Any]:
    """Synthesise the ``intersection`` tier (called by :func:`training.synth.tiers.generate.generate_tier`)."""
    from sim_web.backends.sim import SimBackend, SimConfig
    from training.synth.graph.store_source import StoreSource
    from training.synth.tiers.split import answer_disjoint_split
    from training.synth.tiers.view import ResultView
    from wiki_index.search.index import WikiIndex

    index = WikiIndex.from_dir(index_dir)
    src = StoreSource(index.store)
    view = ResultView(SimBackend(index, SimConfig(snippet_chars=cfg.snippet_chars)), cfg.k)
    titles = sorted(src.title(p) for p in src.page_ids())
    mem = Membership(src, titles)
    rep.facts["pages"] = len(titles)
    rep.facts["countries"] = len(mem.countries)
    rep.facts["clues"] = sum(len(v) >= MIN_MEMBERS for v in mem.members.values())
    records = intersection_questions(mem, view, cfg, rep)
    if cfg.split == "answer":
        answer_disjoint_split(records, cfg.test_fraction, cfg.seed)
    rep.funnel["accepted"] = len(records)
    rep.funnel["searches"] = view.searches
    return records, rep
