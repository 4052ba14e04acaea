"""Lists in a sentence: how many items the list holding a name has, and the names listed with it.

A sentence lists items joined by commas, "and", "or" or slashes ("bordered by Ghana, Benin, Niger and Togo"); an item
is a capitalised name of up to six words, its first may close the clause before it and its last may open the one
after. :func:`list_size` counts such a list for a counting clue (:mod:`training.synth.compose.transfer`);
:func:`co_named` gives its other items, the look-alikes a reader meets beside an answer
(:mod:`training.synth.verify.lookalikes`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["co_named", "list_size"]

#: What joins a list's items: a comma (with "and" / "or"), "and", "or", a slash.
SPLIT = re.compile(r",\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+|\s*/\s*")
#: A part that is a whole item: a capitalised name of up to six words ("the Democratic Republic of the Congo").
ITEM = re.compile(r"^(?:the\s+)?[A-Z0-9][^\s]*(?:\s+(?:of|de|la|the|and|du|del|von|van)?\s*[A-Z0-9(][^\s]*){0,5}$")
#: The first item, closing the clause before it ("bordered by Ghana").
HEAD_ITEM = re.compile(r"(?:^|\s)((?:the\s+)?[A-Z0-9][^\s]*(?:\s+(?:of|de|la|the)?\s*[A-Z0-9(][^\s]*){0,5})$")
#: The last item, opening the clause after it ("Togo to the east").
TAIL_ITEM = re.compile(r"^((?:the\s+)?[A-Z0-9][^\s]*(?:\s+(?:of|de|la|the)?\s*[A-Z0-9(][^\s]*){0,5})(?:\s|$)")


def list_size(text: str, name: str) -> int:
    """How many items the list that holds ``name`` in ``text`` has ("bordered by A, B, C and D" -> 4); 0 when ``name``
    is not an item of a list of 3 or more (a list is items joined by commas, "and", "or" or slashes; its first item
    may close the clause before it and its last may open the one after)."""
    text = " ".join(re.sub(r"\([^()]*\)", "", text).split()).rstrip(". ")
    i = text.find(name)
    if i < 0 or not name:
        return 0
    parts = SPLIT.split(text)
    spans, pos = [], 0
    for p in parts:
        at = text.find(p, pos)
        spans.append((at, at + len(p)))
        pos = at + len(p)
    k = next((j for j, (a, b) in enumerate(spans) if a <= i < b), None)
    if k is None:
        return 0
    whole = bool(ITEM.match(parts[k]))
    head = not whole and bool((m := HEAD_ITEM.search(parts[k])) and name in m.group(1))
    tail = not whole and bool((m := TAIL_ITEM.match(parts[k])) and name in m.group(1))
    if not (whole or head or tail):
        return 0
    lo = hi = k
    while (whole or tail) and lo > 0:
        if ITEM.match(parts[lo - 1]):
            lo -= 1
        elif HEAD_ITEM.search(parts[lo - 1]):
            lo -= 1
            break
        else:
            break
        whole = True
    whole = bool(ITEM.match(parts[k]))
    while (whole or head) and hi + 1 < len(parts):
        if ITEM.match(parts[hi + 1]):
            hi += 1
        elif TAIL_ITEM.match(parts[hi + 1]):
            hi += 1
            break
        else:
            break
        whole = True
    if _resumes(parts, hi):
        return 0  # "the European Bank for Reconstruction and Development, ..." or "Futuna to the northwest, Samoa ..."
    n = hi - lo + 1
    return n if n >= 3 else 0


def _resumes(parts: list[str], hi: int) -> bool:
    """Whether the list whose last counted item is ``parts[hi]`` goes on past it: that item is a name with words after
    it (a name read only up to a preposition, "the Organization for Security", or an item with its own phrase,
    "Futuna to the northwest") and the part after it opens with a name again ("Co-operation in Europe", "Samoa to the
    northeast"). The words split the list where the counting stopped, so its size is unknown."""
    cut = not ITEM.match(parts[hi])
    nxt = parts[hi + 1] if hi + 1 < len(parts) else ""
    return cut and bool(ITEM.match(nxt) or TAIL_ITEM.match(nxt))


#: A list item's compass tail: "bordered by Rajasthan to the northeast, Maharashtra to the southeast, ...".
_COMPASS_TAIL = re.compile(r"\s+to the (?:north|south|east|west)[a-z-]*\b")


def co_named(sentence: str, names: Iterable[str]) -> list[str]:
    """The names ``sentence`` lists together with the first of ``names`` it holds: the items of its list or
    coordination ("the Falkland Islands, South Georgia and the South Sandwich Islands" -> the last two), "the" and
    compass tails ("Maharashtra to the southeast") dropped.
    """
    text = " ".join(_COMPASS_TAIL.sub("", re.sub(r"\([^()]*\)", "", sentence)).split()).rstrip(". ")
    parts = SPLIT.split(text)
    k = next((i for i, p in enumerate(parts) if any(len(n) > 2 and n in p for n in names)), None)
    if k is None:
        return []
    out = []
    for p in parts[k + 1 :]:  # "the Volga and the Kazanka rivers": the items after it, up to one that goes on
        m = TAIL_ITEM.match(p)
        if m is None:
            break
        out.append(m.group(1))
        if not ITEM.match(p):
            break
    starts = any(re.match(rf"^(?:the\s+)?{re.escape(n)}\b", parts[k]) for n in names if n)
    for p in reversed(parts[:k] if starts else []):  # "bordered by Ghana, Benin": the items before it
        m = HEAD_ITEM.search(p)
        if m is None:
            break
        out.append(m.group(1).strip())
        if not ITEM.match(p):
            break
    return [re.sub(r"^the\s+", "", n) for n in out]
