"""Whose sentence it is: the subject of a lead sentence, pronouns resolved to the subject of the sentence before.

The verification stage (:mod:`training.synth.verify.clue_check`, :mod:`training.synth.verify.fact_check`) keeps a fact or a
relation only when its sentence is about the page's subject: "Both provinces have had regional autonomy since 2002"
on Lima is about the provinces, "It also faced an attack from Romania" after "..., Bulgaria fought ..." is about
Bulgaria. :func:`opening_subject` classifies one sentence's subject, :func:`about_page` follows the pronouns back.
"""

from __future__ import annotations

import re

from training.synth.extract.relations import _BRACKETS, _INTRO

__all__ = ["PRONOUN", "about_page", "opening", "opening_subject"]

PRONOUN = re.compile(r"^(?:it|he|she|they|its|his|her|their)\b", re.IGNORECASE)
_OWN_NOUN = re.compile(r"^(?:the|this|these)\s+[a-z0-9][\w,-]*", re.IGNORECASE)
#: "The population was 71,293": a noun naming an attribute of the page's subject opens a sentence about it.
_ATTRIBUTE_NOUNS = frozenset("population area capital economy climate name territory total".split())
#: A participle or preposition opening a sentence whose subject comes after the first comma naming the page.
_LEADING = re.compile(r"^(?:[A-Z][a-z]+(?:ing|ed)|With|At|According|As|In|On|By|From|Despite|Among|Along)\b")
_MORE_INTRO = re.compile(
    r"^(?:[A-Z](?:[^,]|,(?=\s?\d)){0,120},\s+(?=(?:it|he|she|they|its|his|her|their|the\s[a-z]+|this\s[a-z]+)\b)"
    r"|(?:As|With|Like|Unlike|Although|While|Following|Along|Under|Through|Among|Despite|Within|Jurisdictionally"
    r"|Geographically|Politically|Economically|Culturally|Administratively)\b[^,]{0,60},\s+"
    r"|[A-Z][a-z]+(?:ed|en)\b[^,]{0,80},\s+)"
)

#: A participle phrase with a list inside, then the subject: "Bounded by the Arabian Sea on the south, the Gulf of Oman
#: on the southwest, and ..., it shares land borders with India".
_PARTICIPLE_THEN_PRONOUN = re.compile(r"^(?:[A-Z][a-z]+(?:ed|en)|Known)\b[^.;]{0,250}?,\s+(?:it|he|she|they)\s+[a-z]")


#: A cleft sentence, whose "it" stands for no entity: "It was after the voyages of Christopher Columbus in the late 15th
#: century that the Americas became well known".
_CLEFT = re.compile(
    r"^it\s+(?:is|was)\s+(?:not\s+)?(?:only\s+)?(?:after|before|during|through|in|on|at|from|with|by|because|"
    r"thanks|due|under|since|until|not\s+until)\b[^.;]*?,?\s+(?:that|when|who)\s",
    re.IGNORECASE,
)


def opening(sentence: str) -> str:
    """The sentence from its subject on: brackets and introductory phrases ("In 1905, ", "Founded in 1907 as ...,
    ") removed."""
    s = " ".join(_BRACKETS.sub("", sentence).split())
    for _ in range(3):
        t = _MORE_INTRO.sub("", _INTRO.sub("", s))
        if t == s:
            break
        s = t
    return s


def opening_subject(sentence: str, names: list[str], head: str = "", *, strict: bool = False) -> str:
    """What a sentence's subject is: ``"own"`` (one of ``names``, or "The city ..." with the page's type noun
    ``head`` in its first two words), ``"pronoun"`` or ``"other"`` (another name or noun phrase). On a page of no
    known kind any "The <noun> ..." counts as its own unless ``strict``, where the noun must be one of ``head``'s or
    the names' words (a pronoun's antecedent: "The principal feature of the bathymetry is ... the Mid-Atlantic Ridge.
    It extends from Iceland" is about the ridge)."""
    s = opening(sentence)
    low = s.lower()
    for n in names:
        if n and (low.startswith(n.lower()) or low.startswith("the " + n.lower())):
            return "own"
        if n and _LEADING.match(s) and re.search(rf",\s+(?:the\s+)?{re.escape(n)}\s+[a-z]", s[:300]):
            return (
                "own"  # "At an elevation of 2,300 metres, Sanaa is ...", "According to the 2024 census, Chile had ..."
            )
    if _CLEFT.match(s):
        return "other"  # "It was after ... that the Americas became well known": the "it" is no entity
    if PRONOUN.match(s) or _PARTICIPLE_THEN_PRONOUN.match(" ".join(sentence.split())):
        return "pronoun"
    if re.match(r"^there\s+(?:is|are|was|were)\b", s, re.IGNORECASE):
        return "own"
    if not _OWN_NOUN.match(s) or re.match(r"^(?:[Tt]he|[Tt]his|[Tt]hese)\s+[A-Z]", s):
        return "other"
    words = [re.sub(r"(?:['’]s?|,)$", "", w).lower() for w in s.split()[1:3]]  # "city's," -> "city"; "sea" stays
    own_words = {*head.split(), *(w.lower() for n in names for w in n.split()), *_ATTRIBUTE_NOUNS} - {""}
    unknown_kind = head.split()[:1] in ([], ["entity"])
    return "own" if own_words & set(words) or (unknown_kind and not strict) else "other"


def about_page(sentences: list[str], i: int, names: list[str], head: str = "", *, lead: bool = True) -> bool:
    """Whether sentence ``i`` of a page is about the page's subject: its subject is the page's, or a pronoun whose
    antecedent (the subject of the nearest sentence before it that opens with a noun phrase; for "it", read strictly) is.
    ``lead``: ``sentences`` open the page, so the first names its subject whatever the spelling; a later passage's
    first sentence is the page's unless it opens with another noun phrase (a pronoun there is taken for the page's,
    as its antecedent lies in the passage before)."""
    neuter = re.match(r"^its?\b", opening(sentences[i]), re.IGNORECASE) is not None  # "he"/"she" skip things
    for j in range(i, -1, -1):
        if j == 0 and lead:
            return True  # a lead's first sentence names its page's subject, whatever the spelling
        kind = opening_subject(sentences[j], names, head, strict=neuter and j < i)
        if j == 0:
            return kind != "other" or not neuter
        plural = re.match(r"^(?:they|their)\b", opening(sentences[j]), re.IGNORECASE)
        if kind == "pronoun" and plural and not any(n.endswith("s") for n in names):
            return False  # "They are imported from ..." on Afghanistan's page: the cars, not the country
        if kind != "pronoun":
            return kind == "own"
    return True
