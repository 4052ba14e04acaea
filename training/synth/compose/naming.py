"""Names without names: entity descriptions, head nouns (read by :mod:`training.synth.compose.heads`), partial
names, and the leak check.

An entity is obfuscated by its short description (``"a German-born theoretical physicist"``)
or, failing that, the predicate of its first sentence; the English around it (articles,
capitalisation, plurals) is handled by small rules tuned on Wikipedia descriptions. No function
here ever returns text containing a forbidden name: :func:`leaks` is the one check used
everywhere (whole words, case-insensitive, with and without a bracketed qualifier).
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from training.synth.compose.clues import Clue, UncertaintyType
from training.synth.compose.heads import BRACKET_TAIL, CUT_BEFORE, FUNCTION_WORDS, head_of, raw_head, singular

if TYPE_CHECKING:
    from training.synth.graph.kg import Entity

# --- names and leaks ---------------------------------------------------------------------

_QUALIFIER = re.compile(r"\s*\([^()]*\)$")


def name_variants(title: str) -> list[str]:
    """The strings that would give a title away: the title and its bare name (``"Mercury (planet)"`` -> ``"Mercury"``)."""
    base = _QUALIFIER.sub("", title).strip()
    return [v for v in dict.fromkeys([title.strip(), base]) if v]


_DERIVED = r"(?:s|'s|’s|n|ns|an|ans|ian|ians|ean|eans|ese|ish|ic|ics|ite|ites)?"


def leaks(text: str, names: Iterable[str]) -> bool:
    """Whether ``text`` gives away any of ``names`` (or their bare forms), ignoring case.

    A name of 6+ characters leaks anywhere, even inside a longer word ("educational" gives
    away "Education", "hydrocarbon" gives away "Carbon"); a shorter one as a whole word or in a
    derived form (a plural, a demonym: "Japanese" gives away "Japan", "Korean" "Korea",
    "Chinese" "China"), but not inside unrelated words (so "Art" does not leak through "article").
    """
    low = text.lower()
    for name in names:
        for v in name_variants(name):
            v = v.lower()
            if len(v) >= 6:
                if v in low:
                    return True
                continue
            stem = v[:-1] if len(v) >= 4 and v[-1] in "aeiouy" else v  # "china" -> "chin" + "ese"
            if re.search(r"(?<!\w)(?:" + re.escape(v) + "|" + re.escape(stem) + ")" + _DERIVED + r"(?!\w)", low):
                return True
    return False


# --- obfuscated entities -----------------------------------------------------------------

_PREDICATE = re.compile(r"\b(?:is|was|are|were)\s+((?:an?|the|one of the)\s+.+)$")
_THE_WORDS = {
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "last",
    "final",
    "only",
    "main",
    "capital",
    "largest",
    "highest",
    "longest",
    "oldest",
    "biggest",
    "smallest",
    "most",
    "principal",
}


_NO_ARTICLE = {
    "the",
    "a",
    "an",
    "one",
    "two",
    "three",
    "some",
    "many",
    "several",
    "any",
    "something",
    "someone",
    "this",
    "these",
    "those",
    "each",
    "every",
    "all",
    "most",
}


def with_article(phrase: str, plural: bool = False) -> str:
    """Prefix "a", "an" or "the" as English wants (nothing for plurals, possessives, quantifiers)."""
    first = phrase.split(" ", 1)[0]
    low = first.lower()
    if first.endswith(("'s", "’s")) or low in _NO_ARTICLE:
        return phrase
    superlative = (low.endswith("est") and len(low) > 4) or (low.endswith("most") and low != "almost")
    if low in _THE_WORDS or superlative:  # "the largest city", "the southernmost region of Africa"
        return "the " + phrase
    if plural:
        return phrase
    bare = first.replace(".", "")
    if len(bare) >= 2 and bare.isupper() and bare.isalpha():  # an acronym is read letter by letter ("a U.S. state")
        return ("an " if bare[0] in "AEFHILMNORSX" else "a ") + phrase
    vowel = (
        (low[:1] in "aeiou" and not re.match(r"(?:one|once|uni|use|usu|uti|eu|ur[aeiou])", low))
        or re.match(r"(?:hour|honest|honou?r|heir)", low) is not None
        or re.match(r"(8|11|18)\d*(?:th|s|-|\b)", low) is not None
    )
    return ("an " if vowel else "a ") + phrase


def _recase(description: str, context: str, title: str = "") -> str:
    """Lower-case the description's first word unless it is a proper word: written capitalised
    mid-sentence on the page (outside the page's own name), an acronym, a possessive, or a
    nationality-like adjective."""
    if title:
        context = context.replace(title, " ")
    first = description.split(" ", 1)[0]
    if len(first) > 1 and (first[1:2].isupper() or re.match(r"[A-Z]\.[A-Z]", first)):  # "NATO member", "U.S. state"
        return description
    if re.search(r"(?<!\w)" + re.escape(first.lower()) + r"(?!\w)", context):
        return first[:1].lower() + description[1:]
    if re.search(r"(?<=[a-z,] )" + re.escape(first) + r"\b", context) or re.search(
        r"(?:'s|’s|ian|ean|can|ese|ish|-born)$", first
    ):
        return description
    return first[:1].lower() + description[1:]


_NOT_A_NOUN_PHRASE = re.compile(
    r"^\w+ed (?:to|by|for|in|as|from)\b|^(?:Any|Used|Refers?|See)\b"
    r"|^[A-Za-z]+ing\s+(?:a|an|the|their|his|her|its|one's|them|it|up|out)\b"  # "Using a bow to shoot arrows"
)


_CLAUSE = re.compile(
    r",(?! [A-Z]| and)|;|:| (?:that|which|who|whose|where|when|with|consisting|comprising|including"
    r"|[a-z]+ing (?:with|on|of|in|to|from|at|for)) "
)
MAX_PHRASE_WORDS = 6
#: A superlative adjective ("holiest", "largest", "most"), not a noun ending in "-est" ("forest", "west").
_SUPERLATIVE_WORD = re.compile(
    r"(?!(?:\w*west|\w*forest|interest|contest|protest|request|harvest|crest|guest|nest|test|rest|chest|quest|honest"
    r"|modest|manifest|conquest|tempest|priest|inquest|behest|bequest|digest|arrest|suggest|invest|unrest)$)"
    r"(?:[a-z]{2,}est|most|least)"
)
#: Prepositions that open a superlative's domain: "the holiest city in Islam", "the largest of the islands".
_RESTRICTION = frozenset("in of on among within".split())
#: Adjectives that need their "to" complement: "native", "ancestral", "endemic" said alone are no claim.
_TAKES_TO = frozenset(
    "native ancestral endemic indigenous adjacent similar related close specific unique parallel prior contiguous "
    "sacred equivalent akin analogous subject".split()
)

#: Participles whose "from" complement a cut must keep: "line dividing one day" says nothing without "from the next".
_TAKES_FROM = frozenset("dividing separating distinguishing isolating shielding protecting barring".split())


def shorten(phrase: str, max_words: int = MAX_PHRASE_WORDS) -> str:
    """A noun phrase cut at its first clause (a comma before a lower-case word, "that", "which", "with" ...) when 2+
    words come before it; a phrase still longer than ``max_words`` is cut before its last preposition that leaves a
    whole noun (never inside a name, never after a function word or a participle), else kept whole.

    >>> shorten("Ancient Hellenistic polity founded by Ptolemy I in Egypt")
    'Ancient Hellenistic polity'
    >>> shorten("National park in California, United States")
    'National park in California, United States'
    >>> shorten("German-born theoretical physicist, widely held to be one of the greatest")
    'German-born theoretical physicist'
    >>> shorten("a country primarily located in Western Europe")
    'a country'
    >>> shorten("Genus of hominin ancestral to modern humans")
    'Genus of hominin ancestral to modern humans'
    >>> shorten("Continuous geographic trench from Asia to Southeast Africa")
    'Continuous geographic trench'
    >>> shorten("Line dividing one calendar day from the next")
    'Line dividing one calendar day from the next'
    """
    m = _CLAUSE.search(phrase)
    if m and len(phrase[: m.start()].split()) >= 2:
        phrase = phrase[: m.start()]
    words = phrase.rstrip(",;: ").split()  # never before "of" or "and": "the capital (and largest city) of X"
    if len(words) <= max_words:
        return _without_dangling(words)
    for i in range(max_words, 1, -1):
        nxt, last = words[i].lower(), words[i - 1]
        if nxt in _RESTRICTION and any(_SUPERLATIVE_WORD.fullmatch(w.lower()) for w in words[:i]):
            continue  # "Holiest city in Islam": a superlative cut from its domain ranks over everything
        if nxt == "to" and last.lower() in _TAKES_TO:
            continue  # "Species of canine native to North America": "native" needs its complement
        kept = {w.lower() for w in words[:i]}
        if (nxt == "to" and "from" in kept) or (nxt == "from" and kept & _TAKES_FROM):
            continue  # "trench from Asia to Southeast Africa", "line dividing one calendar day from the next"
        if (
            (nxt in CUT_BEFORE or nxt.endswith("ed"))
            and last.lower() not in FUNCTION_WORDS
            and not last.endswith((",", "ed", "ing"))
            and not (last[:1].isupper() and words[i - 2][:1].isupper())
        ):
            return _without_dangling(words[:i])
    return _without_dangling(words)


def _without_dangling(words: list[str]) -> str:
    """``words`` joined without the function words and adverbs a cut left at the end ("a country primarily" of "a
    country primarily located in ...", "Greek god of the sky and" of "... and king of the gods"); at least one word."""
    while len(words) > 1 and words[-1].lower() in _DANGLING:
        words = words[:-1]
    return " ".join(words)


_DANGLING = FUNCTION_WORDS | {
    "primarily",
    "mainly",
    "largely",
    "mostly",
    "chiefly",
    "partly",
    "predominantly",
    "also",
    "now",
    "currently",
    "formerly",
    "originally",
    "officially",
    "especially",
}


def _predicate(first_sentence: str) -> str:
    m = _PREDICATE.search(first_sentence.rstrip(". "))
    if not m:
        return ""
    return shorten(re.split(r"[,;:(]", m.group(1), maxsplit=1)[0])


#: Words of degree that a cut can leave before the adjective they grade ("the capital city and most" of "... and most
#: populated comune of Italy").
_DEGREE = {"most", "more", "least", "less", "very", "highly"}


def _whole_phrase(phrase: str) -> str:
    """``phrase`` without a degree word a cut left at its end, nor the coordinator and function words before it ("the
    capital city and most" -> "the capital city"); ``""`` for nothing left."""
    words = phrase.split()
    while words and words[-1].lower() in _DEGREE:
        words = _without_dangling(words[:-1]).split() if len(words) > 1 else []
    return " ".join(words) if any(w.lower() not in _DANGLING for w in words) else ""


def describe_entity(entity: Entity, *, forbidden: Iterable[str] = (), named: bool = False) -> Clue:
    """Name an entity without its name: its short description, else the predicate of its first sentence.

    Args:
        entity: The entity.
        forbidden: Other names that must not appear either (the question's answer).
        named: Use the plain title instead (still checked against ``forbidden``).

    Returns:
        An ``OBFUSCATED_ENTITY`` clue whose text is a noun phrase (``"a German-born theoretical
        physicist"``); when every candidate leaks a name, a vague fallback (``"an entity
        related to geography"``) recorded with ``source=fallback``.
    """
    names = [entity.title, *forbidden]
    bad = list(forbidden)
    candidates: list[tuple[str, str]] = []
    if named:
        candidates.append(("title", entity.title))
    desc = shorten(BRACKET_TAIL.sub("", entity.description.split(";")[0]).strip())
    if desc and not _NOT_A_NOUN_PHRASE.search(desc):  # "Used to count, measure, and label" is no noun phrase
        raw = raw_head(desc)
        plural = bool(raw) and singular(raw) != raw
        candidates.append(("description", with_article(_recase(desc, entity.first_sentence, entity.title), plural)))
    pred = _whole_phrase(_predicate(entity.first_sentence))
    if pred:
        candidates.append(("first_sentence", pred))
    for source, text in candidates:
        if not leaks(text, bad if source == "title" else names):
            return Clue(text, UncertaintyType.OBFUSCATED_ENTITY, entity.title, (("source", source),))
    topic = next((c for c in entity.categories if c and not leaks(c, names) and c != "Uncategorized"), "")
    text = f"an entity related to {topic.lower()}" if topic else "a certain entity"
    return Clue(text, UncertaintyType.OBFUSCATED_ENTITY, entity.title, (("source", "fallback"),))


def head_noun(entity: Entity, *, forbidden: Iterable[str] = ()) -> str:
    """A one-word type for the entity: the head of its description (``"1968 film by ..."`` ->
    ``"film"``), else of its first sentence's predicate, else ``"person"``/``"entity"``."""
    names = [entity.title, *forbidden]
    context = entity.first_sentence
    for name in name_variants(entity.title):
        context = context.replace(name, " ")  # "Resurrection Symphony" tells, "The Symphony No. 2" does not
    for phrase in (entity.description, _predicate(entity.first_sentence)):
        noun = head_of(phrase, context) if phrase else ""
        if len(noun) >= 3 and not leaks(noun, names):
            return noun
    return "person" if entity.is_person else "entity"


#: Lower-case kind words a title ends with that the entity's everyday name drops ("English language" -> English).
_KIND_WORDS = frozenset("language languages people peoples river script alphabet dynasty religion".split())


def partial_name_clue(title: str, *, mode: str | None = None, rng: random.Random | None = None) -> Clue:
    """Reveal a sliver of the name: its initial, a short prefix, its letter count or word count.

    Args:
        title: The name (its bracketed qualifier is ignored).
        mode: ``"initial"``, ``"prefix"``, ``"length"`` or ``"words"``; ``None`` picks one at random.
        rng: Random generator.

    Returns:
        A ``PARTIAL_NAME`` clue; a prefix is at most a third of the name, so the name never appears whole. A name
        ending in a kind word its everyday form drops ("English language") gets its initial instead of a count.
    """
    rng = rng or random.Random(0)
    name = name_variants(title)[-1]
    mode = mode or ("initial", "prefix", "length", "words")[rng.randrange(4)]
    if mode in ("length", "words") and name.split()[-1] in _KIND_WORDS:
        mode = "initial"  # "English language" is called "English": its length is no fact a reader can count
    letters = sum(c.isalpha() for c in name)
    if mode == "prefix" and len(name) < 6:
        mode = "initial"
    if mode == "initial":
        text = f'whose name begins with "{name[0].upper()}"'
    elif mode == "prefix":
        cut = max(2, min(4, len(name) // 3))
        text = f'whose name starts with "{name[:cut]}"'
    elif mode == "length":
        text = f"whose name has {letters} letters"
    elif mode == "words":
        n = len(name.split())
        text = "whose name is a single word" if n == 1 else f"whose name is {n} words long"
    else:
        raise ValueError(f"mode must be 'initial', 'prefix', 'length' or 'words', got {mode!r}")
    return Clue(text, UncertaintyType.PARTIAL_NAME, title, (("mode", mode),))
