"""Typed relations from the text: the phrase of the sentence that carries a knowledge-graph edge.

An edge ``src -> dst`` of the store says only that ``src``'s page names ``dst``. The sentence
naming it often says *how* the two are related: "Ontario is the southernmost province of
Canada", "He was born in Ulm", "Its capital and largest city is Phnom Penh", "General relativity
is a theory of gravitation that was developed by Albert Einstein". :func:`extract_relation`
reads that relation with patterns over the one sentence (no parser, nothing downloaded):

1. the sentence's subject is one endpoint: the source's name, a pronoun or ``"The city"`` (the
   page's own subject), or the target's name; an introductory adverbial ("In 1905,"), brackets
   and an apposition after the subject (", also spelled Odessa,") are skipped;
2. the predicate is the text between the subject and the other endpoint's name; it must start
   with a verb, hold no clause boundary, no other name and no number once dates and adverbs are
   removed, and end with a preposition or a verb; ``is a theory ... that was developed by`` keeps
   its relative clause (its antecedent is the subject), ``was born in Ulm and moved to`` its
   last verb phrase;
3. a possessive subject ("Its capital is X") becomes ``"{dst} is the capital of {src}"``.

The result is a *template* with the two roles, ``"{src} is the southernmost province of {dst}"``
or ``"{dst} was developed by {src}"``: the edge keeps its link direction (the verifier follows
links), and the template says which endpoint is the sentence's subject. ``None`` when the sentence
does not state a relation these patterns can read; the edge then stays a bare ``mention``/``link``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from training.synth.extract.relation_lexicon import AUX, PARTICIPLES, PREPS, SINGULAR, TRAILING

SRC, DST = "{src}", "{dst}"
_BOUNDARY = re.compile(
    r"[,;:\"“”!?]|\b(?:which|who|whom|whose|where|when|while|although|though|because|but|whereas|that"
    r"|if|unless|since|until|and|or|nor|not|no|never|neither|either|only|also known)\b"
)
_DATE = re.compile(
    r"\b(?:in|on|since|from|by|until|around|circa|c\.|during|after|before)\s+(?:the\s+)?(?:early\s+|mid\s+|late\s+)?"
    r"(?:\d{1,2}\s+)?(?:[A-Z][a-z]+\s+)?(?:\d{1,2},\s+)?\d{3,4}s?(?:\s*(?:BC|BCE|AD|CE))?\b"
    r"|\bbetween\s+\d{3,4}\s+and\s+\d{3,4}\b|\bin\s+the\s+\d{1,2}(?:st|nd|rd|th)\s+century\b"
)
_ADVERBS = re.compile(
    r"\b(?:also|currently|now|still|often|widely|generally|usually|mainly|primarily|largely|originally"
    r"|formerly|officially|later|eventually|initially|traditionally|commonly|sometimes|then"
    r"|once|mostly|chiefly|especially|notably|perhaps|probably|possibly|reportedly|best|well)\b\s*"
)
_BRACKETS = re.compile(r"\s*[(\[][^()\[\]]*[)\]]")
_INTRO = re.compile(
    r"^(?:(?:In|On|During|From|After|Before|By|Since|Until|Today|Historically|Originally|Later|Eventually"
    r"|Since then|At the time|In addition|Additionally|However|Also)\b[^,]{0,40},\s+)"
)
_PRONOUN = re.compile(r"^(?:It|He|She|They)\b")
_THING_PRONOUN = re.compile(r"^(?:It|They)\b")
_FINITE = {"is", "was", "are", "were", "has", "had", "have"}
_BE = {"is", "was", "are", "were", "be", "been", "being"}
#: passives that take their object with no preposition ("was named X", "was elected X"); any other passive ending
#: the phrase ("was featured X") has lost its preposition in the sentence and would read wrong as a clue
_COMPLEMENT_PASSIVES = {
    "named",
    "called",
    "renamed",
    "elected",
    "crowned",
    "appointed",
    "declared",
    "considered",
    "titled",
    "nicknamed",
    "dubbed",
    "voted",
    "styled",
    "designated",
    "ranked",
    "given",
    "awarded",
    "granted",
}
_THE_NOUN = re.compile(
    r"^(?:The|This)\s+[a-z][a-z-]+(?:\s+[a-z][a-z-]+)?(?=\s+(?:is|was|are|were|has|had|lies|became|remains|"
    r"serves|contains|covers|borders|forms|includes|stretches|flows|runs)\b)"
)
_POSSESSIVE = re.compile(r"^(?:Its|His|Her|Their)\s+((?:[a-z][a-z-]*\s+){0,5}?[a-z][a-z-]*)\s+(is|was|are|were)\s+$")
_APPOSITION = re.compile(r"^,\s+[^,]{1,60},\s+")
_COPULA_REL = re.compile(r"^(?:is|was|are|were)\s+(?:a|an|the|one of the)\s+[^,;]*?\b(?:who|which|that)\s+(.+)$")
_AND_VERB = re.compile(r"^.*\band\s+(?=(\w+)\b)")
_CAPS = r"[A-Z][\w'’.-]*(?:\s+(?:of\s+|the\s+|de\s+)*[A-Z][\w'’.-]*)*"
_LIST_TAIL = re.compile(r"\b(?:both\s+)?(?:" + _CAPS + r",\s+)*" + _CAPS + r",?\s+and\s+$")  # "by Ecuador and "
#: "the capital and largest city of" -> "the capital of": a second, superlative title of the same thing; a superlative
#: first keeps its head noun: "the largest and most populous island in" -> "the largest island in".
_COORD = re.compile(
    r"\b(\w+) and (?:the )?(?:largest|most populous|biggest|main|principal|chief|most important"
    r"|second-largest|oldest)(?: (\w+))?(?= (?:of|in)\b| $)"
)


def _coord(m: re.Match) -> str:
    first, noun = m.group(1), m.group(2)
    superlative = first.endswith("est") or first in ("main", "principal", "chief")
    return f"{first} {noun}" if superlative and noun else first


_DEMONYM = re.compile(r"^[A-Z][a-z]+(?:an|ian|ean|ese|ish|ic|i)$")
MAX_WORDS = 6


class Names:
    """Whole-word occurrences of any of a few names in a text (plain string search, no regex to compile).

    Args:
        names: The names (case-sensitive); names shorter than 2 characters are ignored.
    """

    def __init__(self, names: Iterable[str]) -> None:
        self.names = sorted({n for n in names if n and len(n) >= 2}, key=lambda n: (-len(n), n))

    def __bool__(self) -> bool:
        return bool(self.names)

    def search(self, text: str, start: int = 0) -> tuple[int, int] | None:
        """``(start, end)`` of the earliest whole-word occurrence at or after ``start`` (the longest name on a tie)."""
        best: tuple[int, int] | None = None
        for n in self.names:
            i = text.find(n, start)
            while i >= 0 and not bounded(text, i, i + len(n)):
                i = text.find(n, i + 1)
            if i >= 0 and (best is None or i < best[0]):
                best = (i, i + len(n))
        return best

    def match(self, text: str) -> int | None:
        """End of a name that starts the text, else ``None``."""
        hit = next((n for n in self.names if text.startswith(n) and bounded(text, 0, len(n))), None)
        return len(hit) if hit else None


def bounded(text: str, i: int, j: int) -> bool:
    """Whether ``text[i:j]`` is a whole word: no word character or hyphen on either side."""
    return (i == 0 or not (text[i - 1].isalnum() or text[i - 1] in "_-")) and (
        j >= len(text) or not (text[j].isalnum() or text[j] in "_-")
    )


def _verbish(word: str, loose: bool = False) -> bool:
    """A verb by its form: a known verb, a past form in ``-ed``, or (``loose``, right after the subject) an ``-s`` form."""
    w = word.lower()
    return (
        w in AUX
        or (w.endswith("ed") and len(w) > 4)
        or (loose and w.endswith("s") and len(w) > 4 and not w.endswith(("ss", "us", "is")))
    )


def clean_predicate(text: str) -> str | None:
    """The relation phrase of a predicate (the text between subject and object), or ``None`` when it is not one.

    >>> clean_predicate("is the southernmost province of")
    'is the southernmost province of'
    >>> clean_predicate("was born in 1879 in")
    'was born in'
    >>> clean_predicate("is a theory of gravitation that was developed by")
    'was developed by'
    >>> clean_predicate("was born in Ulm and moved to")
    'moved to'
    >>> clean_predicate("is the capital of Bavaria,") is None
    True
    >>> clean_predicate("is has a coastline along") is None
    True
    >>> clean_predicate("was featured") is None
    True
    """
    p = _LIST_TAIL.sub("", " ".join(_ADVERBS.sub("", _DATE.sub(" ", text)).split()) + " ").strip()
    p = _COORD.sub(_coord, p + " ").strip()
    m = _COPULA_REL.match(p)
    if m:
        p = m.group(1)
    m = _AND_VERB.match(p)
    if (
        m
        and _verbish(m.group(1))
        and re.match(r"\w+\s+(?:" + "|".join(sorted(PREPS | {"the", "a", "an"})) + r")\b", p[m.end() :])
    ):
        head = p.split()[:2]
        p = p[m.end() :]
        if len(head) == 2 and head[0] in ("is", "was", "are", "were") and head[1].endswith("ed"):
            p = f"{head[0]} {p}"  # "is separated from Africa ... and separated from" -> "is separated from"
    words = p.split()
    while words and words[-1].lower() in TRAILING:
        words.pop()
    if words and words[0].lower() in PARTICIPLES:
        words.insert(0, "is")  # "..., located in": a participle after the subject reads as "is located in"
    if not words or len(words) > MAX_WORDS or not _verbish(words[0], loose=True):
        return None
    p = " ".join(words)
    if _BOUNDARY.search(p) or re.search(r"\d", p):
        return None
    if any(w[0].isupper() and not _DEMONYM.match(w) for w in words):
        return None
    content = [w for w in words if w.lower() not in AUX | PREPS | {"a", "an", "the", "been", "be", "being"}]
    if not content and len(words) < 2:
        return None
    if words[-1].lower() in ("between", "among", "than"):
        return None  # "lies between": the sentence names two objects, the relation needs both
    if words[-1].lower() not in PREPS and not all(_verbish(w) or w.lower() in ("been", "by") for w in words):
        return None
    if len(words) == 1 and words[0].lower() in _FINITE:
        return None
    low = [w.lower() for w in words]
    if any(a in _FINITE and b in _FINITE for a, b in zip(low, low[1:])) or (len(low) > 1 and low[-2] in PREPS):
        return None  # "is has a coastline along", "is the capital of in": two clauses run together
    if len(low) > 1 and low[-2] in _BE and low[-1].endswith("ed") and low[-1] not in _COMPLEMENT_PASSIVES:
        return None  # "was featured": the sentence's preposition is gone ("was featured on"), the clue reads wrong
    words[0] = SINGULAR.get(words[0], words[0])  # the question's subjects are singular ("this language was spoken")
    return " ".join(words)


def _subject_end(sent: str, names: Names, own: bool, person: bool = True) -> int | None:
    """Where the subject ends when the sentence starts with one of ``names`` (or a pronoun, for the page's own subject:
    "he" or "she" only when the page is about a person)."""
    end = names.match(sent)
    if end is None and own:
        m = (_PRONOUN if person else _THING_PRONOUN).match(sent) or _THE_NOUN.match(sent)
        end = m.end() if m else None
    if end is None:
        return None
    app = _APPOSITION.match(sent[end:])
    return end + app.end() - 1 if app else end


def normalise(sentence: str) -> str:
    """The sentence without brackets, an introductory adverbial or the final stop, spaces collapsed."""
    s = " ".join(_BRACKETS.sub("", sentence.replace("\xa0", " ")).split()).rstrip(". ")
    return _INTRO.sub("", s)


def extract_relation(
    sentence: str, src_names: Iterable[str], dst_names: Iterable[str], *, person: bool = True
) -> str | None:
    """The typed relation a sentence of ``src``'s page states between ``src`` and ``dst``, as a template.

    Args:
        sentence: A sentence of the source page that names the target.
        src_names: Names of the source (title, bare title, surname...); a pronoun or "The <noun>"
            subject also stands for it (the page's own subject).
        dst_names: Names of the target as the sentence may write it (anchor, title, bare title).
        person: Whether the source is a person; when not, a sentence opening with "He" or "She" is about someone
            else (a navigator on an ocean's page) and states nothing about the source.

    Returns:
        ``"{src} <phrase> {dst}"``, ``"{dst} <phrase> {src}"``, or ``None``.

    >>> extract_relation("Ontario is the southernmost province of Canada.", ["Ontario"], ["Canada"])
    '{src} is the southernmost province of {dst}'
    >>> extract_relation("Its capital and most populous city is Phnom Penh.", ["Cambodia"], ["Phnom Penh"])
    '{dst} is the capital of {src}'
    >>> extract_relation("Paris is the capital and largest city of France.", ["Paris"], ["France"])
    '{src} is the capital of {dst}'
    >>> extract_relation("General relativity (GR) is a theory that was developed by Albert Einstein.",
    ...                  ["Albert Einstein", "Einstein"], ["General relativity"])
    '{dst} was developed by {src}'
    >>> extract_relation("The world's texts come from the Sumerian cities of Uruk.", ["Sumer"], ["Uruk"]) is None
    True
    >>> extract_relation("He succeeded in crossing the Atlantic from Morocco.", ["Atlantic Ocean"], ["Morocco"],
    ...                  person=False) is None
    True
    """
    s = normalise(sentence)
    dst_names = [v for n in dst_names if n for v in (n, n[:1].lower() + n[1:])]  # "physics" for Physics
    src_re, dst_re = Names(src_names), Names(dst_names)
    if not s or not dst_re:
        return None
    pos = _POSSESSIVE_TEMPLATE(s, dst_re)
    if pos is not None:
        return pos
    for subj_re, obj_re, own, first, second in ((src_re, dst_re, True, SRC, DST), (dst_re, src_re, False, DST, SRC)):
        end = _subject_end(s, subj_re, own, person)
        obj = obj_re.search(s, end) if end is not None else None
        if obj is None or not _whole_name(s, obj):
            continue
        phrase = clean_predicate(s[end : obj[0]])
        if phrase is not None:
            return f"{first} {phrase} {second}"
    return None


def _whole_name(s: str, span: tuple[int, int]) -> bool:
    """The match is a whole name: not part of a longer one ("Tokyo Bay", "North Atlantic Ocean"), not a possessive."""
    after, before = s[span[1] : span[1] + 6], s[: span[0]].rstrip()
    if re.match(r"(?:\s+(?:of\s+)?[A-Z0-9]|['’]s?\b)", after):
        return False
    prev = before.rsplit(" ", 1)[-1] if before else ""
    return not (prev[:1].isupper() and " " in before)


def _POSSESSIVE_TEMPLATE(s: str, dst_re: Names) -> str | None:  # noqa: N802 - a pattern, named as one
    """``"Its capital and largest city is Phnom Penh"`` -> ``"{dst} is the capital of {src}"``."""
    obj = dst_re.search(s)
    if obj is None or not _whole_name(s, obj):
        return None
    m = _POSSESSIVE.match(s[: obj[0]])
    if m is None:
        return None
    noun = _COORD.sub(_coord, m.group(1) + " ").strip()
    if _BOUNDARY.search(noun):
        return None
    verb = "is" if m.group(2) in ("is", "are") else "was"
    return f"{DST} {verb} the {noun} of {SRC}"


def fill(template: str, src: str, dst: str) -> str:
    """The relation as a sentence body: ``fill("{src} was born in {dst}", "he", "a city")`` -> ``"he was born in a city"``."""
    return template.replace(SRC, "\x00s").replace(DST, "\x00d").replace("\x00s", src).replace("\x00d", dst)


_STOP = AUX | PREPS | {"a", "an", "the", "been", "be", "being", "one", "its", "his", "her", "their", "and"}


def relation_words(relation: str) -> str:
    """The content words of a relation, for a search query: ``"{src} is the capital and largest city of {dst}"`` ->
    ``"capital largest city"``; an infobox field's words; ``""`` for a bare link."""
    if relation in ("link", "mention", ""):
        return ""
    text = relation.replace(SRC, " ").replace(DST, " ").replace("'s", " ").replace("_", " ")
    return " ".join(w for w in text.split() if w.lower() not in _STOP)


def infobox_template(label: str) -> str:
    """An infobox field of page ``src`` whose value is page ``dst``, as a sentence template.

    >>> infobox_template("capital")
    "{src}'s capital is {dst}"
    >>> infobox_template("god of")
    '{src} is the god of {dst}'
    >>> infobox_template("known for")
    '{src} is known for {dst}'
    >>> infobox_template("main interests")
    "{src}'s main interests include {dst}"
    """
    words = label.split()
    if words and words[-1] in PREPS:
        return f"{SRC} is {'' if _verbish(words[0]) or words[0] == 'known' else 'the '}{label} {DST}"
    if words and words[-1].endswith("s") and not words[-1].endswith(("ss", "us", "is")):
        return f"{SRC}'s {label} include {DST}"
    return f"{SRC}'s {label} is {DST}"


def is_text_relation(relation: str) -> bool:
    """Whether a relation is a sentence template (and not an infobox field or a bare link)."""
    return SRC in relation and DST in relation
