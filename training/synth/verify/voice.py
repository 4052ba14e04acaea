"""A relation read in the passive from a sentence that says it in the active: a relation turned around.

The relation reader takes a bare participle after the subject for a reduced passive ("Paris, located in ...", "known
as ...") and writes it with "is": an active "Aristotle considered epic poetry ... to be imitative" becomes "{src} is
considered {dst}", a clue "The philosopher is considered a lengthy poem". :func:`turned_around` finds the active
sentence: the relation's subject followed by the verb itself, no form of "be" before it. The passive reading
("Aristotle is considered the father of ...", "He was named consul") is untouched.

Only SailorFog-QA's clue check (:mod:`training.synth.verify.clue_check`) reads this; the relation reader, and so the
tiers' fact reading, is unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from training.synth.extract.relation_lexicon import PARTICIPLES
from training.synth.extract.relations import _COMPLEMENT_PASSIVES, Names, normalise

__all__ = ["passive_verb", "turned_around"]

#: The verbs the reader writes as a passive with no preposition ("was named X") or after an inserted "is".
_VERBS = frozenset(_COMPLEMENT_PASSIVES | PARTICIPLES)
#: A template whose subject is the relation's first endpoint and whose verb is a be-form and a participle.
_PASSIVE = re.compile(r"^\{(?:src|dst)\}\s+(?:(?:is|was|are|were|has been|have been|had been)\s+)([a-z]+)\b")
_PRONOUN = re.compile(r"^(?:He|She|It|They)\b")
#: A parenthetical between the subject and its verb: ", a student of Plato,".
_APPOSITION = re.compile(r"^,\s+[^,]{1,60},")
#: Words that may stand between a subject and its verb without making it a passive ("Aristotle also considered").
_BETWEEN = re.compile(
    r"^\s+(?:(?:[a-z]+ly|also|then|later|once|still|now|often|first|himself|herself|itself|themselves)\s+)*"
)


def passive_verb(relation: str) -> str:
    """The participle of a passive relation template that takes its complement bare or after an inserted "is".

    >>> passive_verb("{src} is considered {dst}")
    'considered'
    >>> passive_verb("{src} was born in {dst}")
    ''
    """
    m = _PASSIVE.match(relation)
    return m.group(1) if m and m.group(1) in _VERBS else ""


def turned_around(relation: str, sentence: str, names: Iterable[str], *, own: bool) -> bool:
    """Whether ``relation`` reads a passive ("{src} is considered {dst}") that ``sentence`` says in the active.

    Args:
        relation: The relation template.
        sentence: Its evidence sentence.
        names: Names of the relation's subject (the template's first endpoint).
        own: Whether that subject is the page's own, which the sentence may name by a pronoun.

    Returns:
        ``True`` when the sentence opens with the subject and, past any apposition or adverb, the participle itself.

    >>> turned_around("{src} is considered {dst}", "Aristotle considered epic poetry to be imitative.",
    ...               ["Aristotle"], own=True)
    True
    >>> turned_around("{src} is considered {dst}", "Aristotle is considered the father of logic.",
    ...               ["Aristotle"], own=True)
    False
    """
    verb = passive_verb(relation)
    if not verb:
        return False
    s = normalise(sentence)
    end = Names(names).match(s)
    if end is None and own:
        m = _PRONOUN.match(s)
        end = m.end() if m else None
    if end is None:
        return False
    app = _APPOSITION.match(s[end:])
    rest = s[end + (app.end() if app else 0) :]
    between = _BETWEEN.match(rest)
    return between is not None and re.match(rf"{verb}\b", rest[between.end() :]) is not None
