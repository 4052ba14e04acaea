"""Names without names: entity descriptions, head nouns, partial names, and the leak check.

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

_BRACKET_TAIL = re.compile(r"\s*\([^()]*\)\s*$")
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
    if low in _THE_WORDS or (low.endswith("est") and len(low) > 4):
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


_FUNCTION_WORDS = {
    "a",
    "an",
    "the",
    "of",
    "in",
    "on",
    "by",
    "for",
    "to",
    "with",
    "and",
    "or",
    "as",
    "at",
    "from",
    "that",
    "which",
    "who",
    "its",
    "their",
    "his",
    "her",
    "is",
    "was",
    "are",
    "were",
    "be",
    "into",
}
_NOT_A_NOUN_PHRASE = re.compile(
    r"^\w+ed (?:to|by|for|in|as|from)\b|^(?:Any|Used|Refers?|See)\b"
    r"|^[A-Za-z]+ing\s+(?:a|an|the|their|his|her|its|one's|them|it|up|out)\b"  # "Using a bow to shoot arrows"
)


_CLAUSE = re.compile(
    r",(?! [A-Z]| and)|;|:| (?:that|which|who|whose|where|when|with|consisting|comprising|including"
    r"|[a-z]+ing (?:with|on|of|in|to|from|at|for)) "
)
MAX_PHRASE_WORDS = 6


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
    """
    m = _CLAUSE.search(phrase)
    if m and len(phrase[: m.start()].split()) >= 2:
        phrase = phrase[: m.start()]
    words = phrase.rstrip(",;: ").split()  # never before "of" or "and": "the capital (and largest city) of X"
    if len(words) <= max_words:
        return _without_dangling(words)
    for i in range(max_words, 1, -1):
        nxt, last = words[i].lower(), words[i - 1]
        if (
            (nxt in _CUT_BEFORE or nxt.endswith("ed"))
            and last.lower() not in _FUNCTION_WORDS
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


_DANGLING = _FUNCTION_WORDS | {
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
_CUT_BEFORE = {
    "in",
    "by",
    "from",
    "for",
    "on",
    "at",
    "with",
    "to",
    "during",
    "between",
    "near",
    "founded",
    "located",
    "based",
    "known",
    "used",
    "made",
    "built",
    "written",
    "born",
}


def _predicate(first_sentence: str) -> str:
    m = _PREDICATE.search(first_sentence.rstrip(". "))
    if not m:
        return ""
    return shorten(re.split(r"[,;:(]", m.group(1), maxsplit=1)[0])


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
    desc = shorten(_BRACKET_TAIL.sub("", entity.description.split(";")[0]).strip())
    if desc and not _NOT_A_NOUN_PHRASE.search(desc):  # "Used to count, measure, and label" is no noun phrase
        raw = _raw_head(desc)
        plural = bool(raw) and _singular(raw) != raw
        candidates.append(("description", with_article(_recase(desc, entity.first_sentence, entity.title), plural)))
    pred = _predicate(entity.first_sentence)
    if pred:
        candidates.append(("first_sentence", pred))
    for source, text in candidates:
        if not leaks(text, bad if source == "title" else names):
            return Clue(text, UncertaintyType.OBFUSCATED_ENTITY, entity.title, (("source", source),))
    topic = next((c for c in entity.categories if c and not leaks(c, names) and c != "Uncategorized"), "")
    text = f"an entity related to {topic.lower()}" if topic else "a certain entity"
    return Clue(text, UncertaintyType.OBFUSCATED_ENTITY, entity.title, (("source", "fallback"),))


#: An "-ing" word that modifies the one noun after it, which ends the phrase ("racing driver", "writing system of
#: Egypt"): no clause starts there, so the phrase is not cut at it. Verbs that take an object ("disease affecting
#: humans") always start a clause.
_ING_VERBS = (
    r"(?:involv|contain|us|affect|includ|hav|requir|produc|provid|cover|oppos|study|encounter|creat|express|link"
    r"|remov|shar|reject|explain|combin|prov|hid|oversee|regulat|conferr|tak|form|occupy|exceed|connect|separat|border"
    r"|ly|flow|span|stretch|extend|runn|fac|divid|join|mean|denot|referr|concern|featur|govern|regard|deal|focus"
    r"|surround|compris|consist|serv|mak|allow|enabl|describ|represent|carry|hold|lead|follow|mark|caus|resembl)ing"
)
_ING_MODIFIER = (
    r"(?! (?!(?:the|an?|its|their|from|to|into|in|on|at|of|by|with|across|through|along|over|up|down|out|away"
    r"|halfway|midway|apart|abroad|together|alone|nearby|inland|offshore|worldwide|upstream|downstream)\b"
    r"|(?:north|south|east|west)\w*)[a-z]+(?:$| (?:of|in|for|by|from)\b))"
)
_HEAD_CUT = re.compile(
    r",|;| "
    + _ING_VERBS
    + r"\b| [a-z]+ing\b"
    + _ING_MODIFIER
    + r"| (?:of|in|by|from|for|on|at|with|and|or|that|who|which|to|without|between|within|under"
    r"|over|into|as|used|known|located|based|consisting|made|found|named|grown|built|written|given|spoken"
    r"|drawn|shown|worn|born|off|near|across|along|around|(?:north|south)?(?:east|west)(?:ern)?|north(?:ern)?|south(?:ern)?)\b"
)
_ADJ_LIST = re.compile(r"^(?:[\w-]+,\s+)+(?:(?:and|or)\s+)?(?=[\w-]+\s+\w)")
_ADJ_PAIR = re.compile(r"^[\w-]+(?:al|ic|ive|ous|ary|an|ese|ish)\s+(?:and|or)\s+(?=[\w-]+\s+\w)", re.IGNORECASE)
_NOT_NOUNS = {
    "one",
    "two",
    "three",
    "first",
    "second",
    "third",
    "any",
    "some",
    "other",
    "many",
    "various",
    "several",
    "something",
    "someone",
    "type",
    "kind",
    "form",
}
#: Words a head-noun cut can leave last that are no noun: adverbs ("Imaginary line halfway between ...") and
#: superlatives ("Largest of the Great Lakes", "the third-largest of the world's oceanic divisions").
_NOT_HEADS = re.compile(
    r"^(?:halfway|midway|partway|apart|away|abroad|together|alone|ago|nearby|inland|offshore|worldwide|upstream"
    r"|downstream|most|least|(?:larg|high|long|old|bigg|small|great|tall|deep|low|short|young|new|near|far|earli|lat"
    r"|bright|heavi|wealthi|rich|poor|busi|dens|hott|cold|wid|fast|strong|hard|clos|fin)est|[a-z]+-(?:\w+est|most))$"
)
#: A description that opens with a verb form and its object ("Using a bow to shoot arrows") is no noun phrase.
_GERUND_OPENING = re.compile(r"^[A-Za-z]+ing\s+(?:a|an|the|their|his|her|its|one's|them|it|up|out)\b")
#: Coordinated modifiers before the head ("Supranational political and economic union"): the head follows them.
_ADJ_PAIR_INNER = re.compile(
    r"^(?:[\w-]+\s+){1,3}?[\w-]+(?:al|ic|ive|ous|ary|ese|ish)\s+(?:and|or)\s+(?=[\w-]+(?:al|ic|ive|ous|ary)\s+\w)",
    re.IGNORECASE,
)
#: Nouns whose "of" names the kind itself: "the modern form of the metric system" is a system, "a type of rock" a rock.
_KIND_OF = frozenset("form type kind sort".split())
_INVARIANT = {"series", "species", "news", "means", "physics", "mathematics", "gas", "bus", "lens", "chaos", "aircraft"}


#: Nouns that name a share or a collection of something else ("a range of Indian religious traditions", "the body of
#: myths", "the northeastern part of the Indian Ocean", "an umbrella term for ..."): "Which range is this?" names no
#: kind.
_PARTITIVE = frozenset(
    "range body part portion section segment piece fraction share bulk majority minority set collection variety "
    "array number handful term group grouping mix mixture aggregation assortment cluster kind sort type arm".split()
)


#: Nouns that name no kind by themselves, only with their modifier ("Oceanic division", "an umbrella term",
#: "administrative division"): "Which division is this?" could be an army's or a country's.
_VAGUE = frozenset("division term concept notion designation label".split())


def _singular(word: str) -> str:
    if word in _INVARIANT:
        return word
    if word.endswith("sses"):
        return word[:-2]  # "landmasses" -> "landmass"
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith(("ss", "us", "is", "ics")) and len(word) > 3:
        return word[:-1]
    return word


def _raw_head(phrase: str) -> str:
    """The head word of a noun phrase as written (``"basic elements of language"`` -> ``"elements"``)."""
    phrase = _ADJ_LIST.sub("", _BRACKET_TAIL.sub("", phrase))  # "Artistic, literary, and intellectual movement"
    phrase = _ADJ_PAIR.sub("", phrase)  # "Architectural and visual arts style" -> "visual arts style"
    phrase = _ADJ_PAIR_INNER.sub("", phrase)  # "Supranational political and economic union" -> "economic union"
    chunk = _HEAD_CUT.split(phrase, maxsplit=1)[0]
    words = [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z-]*", chunk)]
    if words and words[-1] in _NOT_NOUNS:  # the word before it is a modifier ("the modern form"), never the head
        rest = re.search(rf"(?i)\b{words[-1]}\s+of\s+(.+)", phrase) if words[-1] in _KIND_OF else None
        return _raw_head(rest.group(1)) if rest else ""  # "form of the metric system": a system
    words = [
        w
        for w in words
        if not w.endswith(("ly", "ed", "-born"))
        and w not in _NOT_NOUNS
        and w not in ("a", "an", "the")
        and not _NOT_HEADS.match(w)
    ]
    return words[-1] if words else ""


def _head_of(phrase: str, context: str = "") -> str:
    """The type noun of a noun phrase (``""``: it names no kind); ``context`` is the page's first sentence, which
    tells whether a capitalised first word is a proper one."""
    if _GERUND_OPENING.match(phrase):
        return ""  # "Using a bow to shoot arrows" describes an activity, it names no kind: the next phrase gives one
    raw = _raw_head(phrase)
    if raw in _PARTITIVE and re.search(rf"\b{raw}\s+(?:of|for)\b", phrase.lower()):
        return ""  # a partitive names no kind ("Arm of the Indian Ocean"): the next phrase (or "entity") gives one
    if raw and _proper(raw, phrase, context):
        return ""  # "Mediterranean between Greece and Turkey": a name cut short, not a kind
    head = _singular(raw)
    return "" if head in _VAGUE else head  # "Oceanic division": the next phrase ("a republic of Russia") or "entity"


def _proper(word: str, phrase: str, context: str) -> bool:
    """Whether ``word`` (a head read from ``phrase``) is a proper word, not a kind: capitalised in ``phrase``, and in
    ``context`` (the page's first sentence) capitalised and a modifier wherever it stands ("the Mediterranean Sea
    between ..."). A title before its complement ("King of France") or a name's last word ("La Plata River in") is a
    kind; an acronym ("NGO") is left alone."""
    m = re.search(rf"(?i)(?<![\w-]){re.escape(word)}(?![\w-])", phrase)
    if m is None or not m.group(0)[:1].isupper() or m.group(0).isupper():
        return False
    if re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", context):
        return False  # written in lower case on the page: a common noun
    after = re.findall(rf"(?<![\w-]){re.escape(m.group(0))}(?![\w-])(\s+[A-Za-z][\w-]*|)", context)
    return bool(after) and all(_modifies(w.strip()) for w in after)


def _modifies(nxt: str) -> bool:
    """Whether ``nxt``, the word after a capitalised word, shows that word to be a modifier: a name going on ("Sea")
    or a word of the noun phrase ("tennis"), not a preposition, a participle or the phrase's end."""
    if not nxt:
        return False
    low = nxt.lower()
    return nxt[0].isupper() or not (low in _FUNCTION_WORDS or low in _CUT_BEFORE or low.endswith(("ed", "ing")))


def head_noun(entity: Entity, *, forbidden: Iterable[str] = ()) -> str:
    """A one-word type for the entity: the head of its description (``"1968 film by ..."`` ->
    ``"film"``), else of its first sentence's predicate, else ``"person"``/``"entity"``."""
    names = [entity.title, *forbidden]
    context = entity.first_sentence
    for name in name_variants(entity.title):
        context = context.replace(name, " ")  # "Resurrection Symphony" tells, "The Symphony No. 2" does not
    for phrase in (entity.description, _predicate(entity.first_sentence)):
        noun = _head_of(phrase, context) if phrase else ""
        if len(noun) >= 3 and not leaks(noun, names):
            return noun
    return "person" if entity.is_person else "entity"


def partial_name_clue(title: str, *, mode: str | None = None, rng: random.Random | None = None) -> Clue:
    """Reveal a sliver of the name: its initial, a short prefix, its letter count or word count.

    Args:
        title: The name (its bracketed qualifier is ignored).
        mode: ``"initial"``, ``"prefix"``, ``"length"`` or ``"words"``; ``None`` picks one at random.
        rng: Random generator.

    Returns:
        A ``PARTIAL_NAME`` clue; a prefix is at most a third of the name, so the name never appears whole.
    """
    rng = rng or random.Random(0)
    name = name_variants(title)[-1]
    mode = mode or ("initial", "prefix", "length", "words")[rng.randrange(4)]
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
