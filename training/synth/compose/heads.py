"""Type nouns: the head word of a description, the kind a question asks for ("Which city is this?").

A description's head is its last noun before the first clause, preposition or participle ("German-born theoretical
physicist" -> "physicist"; "Ancient Egyptian writing system of Egypt" -> "system"), with small rules for what is no
kind: a partitive ("range of ..."), a vague noun ("division"), a proper word ("Mediterranean"), a superlative or
adverb left last. :func:`training.synth.compose.naming.head_noun` applies it to an entity.
"""

from __future__ import annotations

import re

BRACKET_TAIL = re.compile(r"\s*\([^()]*\)\s*$")

FUNCTION_WORDS = {
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

CUT_BEFORE = {
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


#: An "-ing" word that modifies the one noun after it, which ends the phrase ("racing driver", "writing system of
#: Egypt"): no clause starts there, so the phrase is not cut at it. Verbs that take an object ("disease affecting
#: humans") always start a clause.
_ING_VERBS = (
    r"(?:involv|contain|us|affect|includ|hav|requir|produc|provid|cover|oppos|study|encounter|creat|express|link"
    r"|remov|shar|reject|explain|combin|prov|hid|oversee|regulat|conferr|tak|form|occupy|exceed|connect|separat|border"
    r"|ly|flow|span|stretch|extend|runn|fac|divid|join|mean|denot|referr|concern|featur|govern|regard|deal|focus"
    r"|surround|compris|consist|serv|mak|allow|enabl|describ|represent|carry|hold|lead|follow|mark|caus|resembl)ing"
)
#: Adverbs a phrase can end on ("Imaginary line halfway between ...", "Island lying offshore"): no noun.
_ADVERBS = (
    "halfway|midway|partway|apart|away|abroad|together|alone|ago|nearby|inland|offshore|worldwide|upstream|downstream"
)
_ING_MODIFIER = (
    r"(?! (?!(?:the|an?|its|their|from|to|into|in|on|at|of|by|with|across|through|along|over|up|down|out|"
    + _ADVERBS
    + r")\b|(?:north|south|east|west)\w*)[a-z]+(?:$| (?:of|in|for|by|from)\b))"
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
#: Words a head-noun cut can leave last that are no noun: adverbs ("Imaginary line halfway between ..."),
#: superlatives ("Largest of the Great Lakes", "the third-largest of the world's oceanic divisions") and negated
#: "-able" adjectives ("Insatiable longing for ...", where the cut drops the "-ing" noun).
_NOT_HEADS = re.compile(
    r"^(?:"
    + _ADVERBS
    + r"|most|least|(?:larg|high|long|old|bigg|small|great|tall|deep|low|short|young|new|near|far|earli|lat"
    r"|bright|heavi|wealthi|rich|poor|busi|dens|hott|cold|wid|fast|strong|hard|clos|fin)est|[a-z]+-(?:\w+est|most)"
    r"|(?:in|un|im|ir|il)[a-z]{3,}(?:able|ible))$"
)
#: A description that opens with a verb form and its object ("Using a bow to shoot arrows") is no noun phrase.
_GERUND_OPENING = re.compile(r"^[A-Za-z]+ing\s+(?:a|an|the|their|his|her|its|one's|them|it|up|out)\b")
#: Coordinated modifiers before the head ("Supranational political and economic union"): the head follows them.
#: The words before the pair are modifiers too: a preposition among them ("study of general and fundamental questions")
#: ends the head's phrase before the pair, so the pattern does not cross one.
_ADJ_PAIR_INNER = re.compile(
    r"^(?:(?!(?:of|for|in|on|at|to|from|with|by|about|between|among|into)\s)[\w-]+\s+){1,3}?"
    r"[\w-]+(?:al|ic|ive|ous|ary|ese|ish)\s+(?:and|or)\s+(?=[\w-]+(?:al|ic|ive|ous|ary)\s+\w)",
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


def singular(word: str) -> str:
    """The singular of a head noun by English suffix rules (``"landmasses"`` -> ``"landmass"``)."""
    if word in _INVARIANT:
        return word
    if word.endswith("sses"):
        return word[:-2]  # "landmasses" -> "landmass"
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith(("ss", "us", "is", "ics")) and len(word) > 3:
        return word[:-1]
    return word


#: "Islands and coastal region ...": a plural noun coordinated with a singular phrase, which is what the entity is.
_PLURAL_AND = re.compile(r"^(?:(?:a|an|the)\s+)?([A-Za-z]+)\s+and\s+(.+)$", re.IGNORECASE)


def raw_head(phrase: str) -> str:
    """The head word of a noun phrase as written (``"basic elements of language"`` -> ``"elements"``)."""
    both = _PLURAL_AND.match(BRACKET_TAIL.sub("", phrase))
    if both and singular(both.group(1).lower()) != both.group(1).lower():
        second = raw_head(both.group(2))  # "Islands and coastal region": the Caribbean is a region of islands
        if second and singular(second) == second:
            return second
    phrase = _ADJ_LIST.sub("", BRACKET_TAIL.sub("", phrase))  # "Artistic, literary, and intellectual movement"
    phrase = _ADJ_PAIR.sub("", phrase)  # "Architectural and visual arts style" -> "visual arts style"
    phrase = _ADJ_PAIR_INNER.sub("", phrase)  # "Supranational political and economic union" -> "economic union"
    chunk = _HEAD_CUT.split(phrase, maxsplit=1)[0]
    words = [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z-]*", chunk)]
    if words and words[-1] in _NOT_NOUNS:  # the word before it is a modifier ("the modern form"), never the head
        rest = re.search(rf"(?i)\b{words[-1]}\s+of\s+(.+)", phrase) if words[-1] in _KIND_OF else None
        return raw_head(rest.group(1)) if rest else ""  # "form of the metric system": a system
    words = [
        w
        for w in words
        if not w.endswith(("ly", "ed", "-born"))
        and w not in _NOT_NOUNS
        and w not in ("a", "an", "the")
        and not _NOT_HEADS.match(w)
    ]
    return words[-1] if words else ""


def head_of(phrase: str, context: str = "") -> str:
    """The type noun of a noun phrase (``""``: it names no kind); ``context`` is the page's first sentence, which
    tells whether a capitalised first word is a proper one."""
    if _GERUND_OPENING.match(phrase):
        return ""  # "Using a bow to shoot arrows" describes an activity, it names no kind: the next phrase gives one
    raw = raw_head(phrase)
    if raw in _PARTITIVE and re.search(rf"\b{raw}\s+(?:of|for)\b", phrase.lower()):
        return ""  # a partitive names no kind ("Arm of the Indian Ocean"): the next phrase (or "entity") gives one
    if raw and _proper(raw, phrase, context):
        return ""  # "Mediterranean between Greece and Turkey": a name cut short, not a kind
    head = singular(raw)
    return "" if head in _VAGUE else head  # "Oceanic division": the next phrase ("a republic of Russia") or "entity"


_COORDINATOR = re.compile(r",\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+")


def coordinated_heads(phrase: str) -> set[str]:
    """The type nouns a description coordinates before anything else cuts it: "Roman general and statesman" ->
    {general, statesman}, so a look-alike described so is a statesman as well as a general (``head_of`` gives the
    first only); "Country in Europe and Asia" -> {country}.

    >>> sorted(coordinated_heads("Roman general and statesman")), sorted(coordinated_heads("Country in Europe and Asia"))
    (['general', 'statesman'], ['country'])
    """
    heads = set()
    for part in _COORDINATOR.split(BRACKET_TAIL.sub("", phrase)):
        if head := head_of(part):
            heads.add(head)
        if _HEAD_CUT.search(part):
            break  # "largest city of Italy": what follows the cut is the complement, not another kind
    return heads


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
    return nxt[0].isupper() or not (low in FUNCTION_WORDS or low in CUT_BEFORE or low.endswith(("ed", "ing")))
