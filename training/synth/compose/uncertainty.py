"""Uncertainty transforms: turn exact facts into blurred clues (SailorFog-QA-V2, step 4).

WebSailor-V2 makes questions hard by *removing* information rather than adding length: an
entity is named by a description, a date by its decade, a number by its order of magnitude,
and several weak clues must be intersected to pin the answer down. Each transform here takes
a real fact and returns a :class:`Clue`: the clue text (a phrase that can follow a noun,
e.g. ``"born in the late 1870s"``) plus a record of what was done, tagged with an
:class:`UncertaintyType` so a question lists the transforms it uses.

No transform ever writes an entity's own name: :func:`describe_entity` takes the names to
avoid and falls back to vaguer text when every description leaks one (:func:`leaks`).
Numbers are blurred in :mod:`training.synth.compose.quantities`.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from enum import Enum

from training.synth.compose.clues import Clue, UncertaintyType
from training.synth.compose.naming import describe_entity, head_noun, leaks, name_variants, partial_name_clue
from training.synth.extract.facts import DateFact
from training.synth.extract.relations import DST, SRC, fill, infobox_template, is_text_relation

__all__ = [
    "Clue",
    "DateGranularity",
    "UncertaintyType",
    "counting_clue",
    "date_phrase",
    "describe_entity",
    "fuzz_date",
    "head_noun",
    "intersection_clue",
    "leaks",
    "name_variants",
    "negation_clue",
    "partial_name_clue",
    "relation_label",
    "relational_clue",
    "temporal_order_clue",
]


# --- dates ---------------------------------------------------------------------------------


class DateGranularity(str, Enum):
    """How far a date is blurred."""

    PART_OF_DECADE = "part_of_decade"  # "in the late 1870s"
    DECADE = "decade"  # "in the 1870s"
    YEAR_WINDOW = "year_window"  # "between 1875 and 1882"
    PART_OF_CENTURY = "part_of_century"  # "in the late 19th century"
    CENTURY = "century"  # "in the 19th century"


_DATE_VERBS = {
    "birth": ("born", "was born"),
    "death": ("who died", "died"),
    "founded": ("founded", "was founded"),
    "built": ("built", "was built"),
    "released": ("released", "was released"),
    "published": ("first published", "was first published"),
    "discovered": ("discovered", "was discovered"),
    "invented": ("invented", "was invented"),
    "independence": ("that became independent", "became independent"),
    "opened": ("opened", "opened"),
    "signed": ("signed", "was signed"),
    "start": ("beginning", "began"),
    "end": ("ending", "ended"),
    "reign_start": ("whose reign began", "began to reign"),
    "reign_end": ("whose reign ended", "stopped reigning"),
}


def date_phrase(attr: str) -> tuple[str, str | None] | None:
    """``(modifier, predicate)`` for a date attribute: ``"birth"`` -> ``("born", "was born")``.

    Infobox keys are matched by stem (``birth_date`` -> birth, ``established`` -> founded). A
    date with no known attribute (``"date"``) gets ``("whose article mentions an event", None)``:
    usable as a clue, not for ordering. ``None`` for any other unknown attribute.
    """
    a = attr.lower()
    if a == "date":
        return ("whose article mentions an event", None)
    if a in _DATE_VERBS:
        return _DATE_VERBS[a]
    for stem, key in (
        ("birth", "birth"),
        ("born", "birth"),
        ("death", "death"),
        ("died", "death"),
        ("found", "founded"),
        ("establish", "founded"),
        ("release", "released"),
        ("publi", "published"),
        ("open", "opened"),
        ("built", "built"),
        ("discover", "discovered"),
    ):
        if stem in a:
            return _DATE_VERBS[key]
    return None


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _allowed_granularities(precision: str) -> list[DateGranularity]:
    G = DateGranularity
    if precision == "century":
        return [G.CENTURY]
    if precision == "decade":
        return [G.DECADE, G.PART_OF_CENTURY, G.CENTURY]
    return list(G)


def _decade(y: int, era: str, part: bool) -> tuple[str, int, int]:
    """``(text, lo, hi)`` of a year's decade (``part``: its early, mid or late third) in unsigned years.

    A century's first decade is said as its years: "the late 1700s" reads as the late 18th century, not 1707-1709. A BC
    decade counts down (the 320s BC run from 329 to 320 BC), so its early third is its biggest years: 322 BC is late.

    >>> _decade(322, " BC", True)
    ('in the late 320s BC', 320, 323)
    >>> _decade(1878, "", True)
    ('in the late 1870s', 1877, 1879)
    """
    start, d = y - y % 10, y % 10
    third = (0 if d < 4 else 1 if d < 7 else 2) if not era else (0 if d >= 7 else 1 if d >= 4 else 2)
    offsets = ((0, 3), (4, 6), (7, 9)) if not era else ((7, 9), (4, 6), (0, 3))
    lo, hi = (start + offsets[third][0], start + offsets[third][1]) if part else (start, start + 9)
    if start % 100 == 0:
        return (f"between {lo} and {hi}" if not era else f"between {hi}{era} and {lo}{era}"), lo, hi
    return (f"in the {('early', 'mid', 'late')[third]} {start}s{era}" if part else f"in the {start}s{era}"), lo, hi


def fuzz_date(
    date: DateFact, *, granularity: DateGranularity | str | None = None, rng: random.Random | None = None
) -> Clue:
    """Blur a date to a part of a decade, a decade, a window of years, a part of a century or a century.

    Args:
        date: The date (``14 March 1879``).
        granularity: A :class:`DateGranularity`; ``None`` picks one at random among those the
            date's precision allows (a decade cannot become ``"the late 1870s"``).
        rng: Random generator (for the pick and the window's position).

    Returns:
        A ``FUZZY_DATE`` clue such as ``"in the late 1870s"`` that is true of the date.

    Raises:
        ValueError: The granularity is finer than the date (``PART_OF_DECADE`` of a century).
    """
    rng = rng or random.Random(0)
    allowed = _allowed_granularities(date.precision)
    g = DateGranularity(granularity) if granularity is not None else allowed[rng.randrange(len(allowed))]
    if g not in allowed:
        raise ValueError(
            f"cannot blur a {date.precision}-precision date ({date.text!r}) to {g.value}; "
            f"use one of {[a.value for a in allowed]}"
        )
    y, bc = abs(date.year), date.year < 0
    era = " BC" if bc else ""
    part = lambda r: "early" if r < 0.34 else "mid" if r < 0.67 else "late"  # noqa: E731
    century = (y - 1) // 100 + 1 if not bc else (y + 99) // 100
    if g in (DateGranularity.PART_OF_DECADE, DateGranularity.DECADE):
        text, lo, hi = _decade(y, era, g is DateGranularity.PART_OF_DECADE)
    elif g is DateGranularity.YEAR_WINDOW:
        width = rng.randint(4, 10)
        lo = y - rng.randint(1, width - 1)
        hi = lo + width
        text = f"between {lo}{era} and {hi}{era}" if not bc else f"between {hi} BC and {lo} BC"
    else:
        first = (century - 1) * 100 + 1  # AD: 1801-1900 is the 19th century; BC: 1900-1801 BC
        pos = ((y - 1) % 100) / 100 if not bc else 1 - ((y - 1) % 100) / 100
        if g is DateGranularity.PART_OF_CENTURY:
            p = part(pos)
            text = f"in the {p} {_ordinal(century)} century{era}"
            # offsets into the century's years: BC centuries count down, so their "early" years are the big ones
            cuts = (
                {"early": (0, 33), "mid": (34, 66), "late": (67, 99)}
                if not bc
                else {"early": (67, 99), "mid": (34, 66), "late": (0, 33)}
            )
            lo, hi = first + cuts[p][0], first + cuts[p][1]
        else:
            text = f"in the {_ordinal(century)} century{era}"
            lo, hi = first, first + 99
    if bc:  # the interval in signed years (BC negative), the one a verifier compares against
        lo, hi = -hi, -lo
    return Clue(
        text,
        UncertaintyType.FUZZY_DATE,
        date.text,
        (("attr", date.attr), ("granularity", g.value), ("year", str(date.year)), ("lo", str(lo)), ("hi", str(hi))),
    )


# --- relations, intersections and the rest ---------------------------------------------------


def relation_label(relation: str, camel: bool = True) -> str:
    """An infobox key as words: ``"birth_place"`` -> ``"birth place"``, ``"LowestPoint"`` -> ``"lowest point"``.

    Args:
        relation: The key.
        camel: Split a lower-case letter from the capital after it (off: ``"LowestPoint"`` -> ``"lowestpoint"``, as
            fact reading version 9 of the tiers still words it; their task sets change only with a new version).

    >>> relation_label("LowestPoint"), relation_label("LowestPoint", camel=False)
    ('lowest point', 'lowestpoint')
    """
    if camel:
        relation = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", relation)
    return re.sub(r"[_\s]+", " ", relation).strip().lower()


def relational_clue(anchor: Clue, relation: str, *, anchor_is_source: bool) -> Clue:
    """Describe an entity only through its relation to another (the anchor, itself a clue).

    Args:
        anchor: The clue naming the other entity (``"a German-born theoretical physicist"``).
        relation: ``"mention"``, ``"link"`` or an infobox key such as ``"birth_place"``.
        anchor_is_source: The relation goes from the anchor's page to the described entity
            (the anchor's article mentions it / the anchor's ``relation`` is it).

    Returns:
        A ``RELATIONAL`` clue: ``"mentioned in the article on <anchor>"``, ``"whose article
        mentions <anchor>"``, ``"that is the birth place of <anchor>"``, ``"whose birth place is
        <anchor>"``, or for a sentence template (:mod:`training.synth.extract.relations`) ``"was born in
        <anchor>"`` / ``"such that <anchor> was born in it"``.
    """
    rel = relation_label(relation)
    if is_text_relation(
        relation
    ):  # "{src} was born in {dst}": the anchor plays one role, the described entity the other
        me = DST if anchor_is_source else SRC
        roles = {me: "it", (SRC if me == DST else DST): anchor.text}
        body = fill(relation, roles[SRC], roles[DST])
        text = body[len("it ") :] if relation.startswith(me) else f"such that {body}"
    elif rel in ("mention", "link", "links to", ""):
        text = (
            f"mentioned in the article on {anchor.text}"
            if anchor_is_source
            else f"whose article mentions {anchor.text}"
        )
    elif infobox_template(rel).startswith(SRC + " is"):  # "god of": the field reads as a verb phrase
        body = infobox_template(rel)[len(SRC) + 1 :].replace(DST, "")
        text = f"such that {anchor.text} {body}it" if anchor_is_source else f"{body}{anchor.text}"
    else:
        text = f"that is the {rel} of {anchor.text}" if anchor_is_source else f"whose {rel} is {anchor.text}"
    return Clue(
        text,
        UncertaintyType.RELATIONAL,
        anchor.original,
        (("relation", relation), ("direction", "from_anchor" if anchor_is_source else "to_anchor")),
        (anchor,),
    )


def intersection_clue(parts: Sequence[Clue]) -> Clue:
    """Join several partial clues that must all hold (``"A, B and C"``); needs at least two."""
    if len(parts) < 2:
        raise ValueError(f"an intersection needs at least 2 clues, got {len(parts)}")
    texts = [p.text for p in parts]
    text = ", ".join(texts[:-1]) + (", and " if len(texts) > 2 else " and ") + texts[-1]
    return Clue(text, UncertaintyType.INTERSECTION, "", (("n", str(len(parts))),), tuple(parts))


def temporal_order_clue(date: DateFact, reference: DateFact, reference_desc: Clue) -> Clue | None:
    """``"born before <ref> was founded"``: order one date against another entity's; ``None`` when either attribute has no verb or the years tie."""
    mine, theirs = date_phrase(date.attr), date_phrase(reference.attr)
    if mine is None or theirs is None or theirs[1] is None or mine[1] is None or date.year == reference.year:
        return None
    order = "before" if date.year < reference.year else "after"
    text = f"{mine[0]} {order} {reference_desc.text} {theirs[1]}"
    return Clue(
        text,
        UncertaintyType.TEMPORAL_ORDER,
        f"{date.text} vs {reference.text}",
        (
            ("order", order),
            ("attr", date.attr),
            ("reference_attr", reference.attr),
            ("reference_year", str(reference.year)),
        ),
        (reference_desc,),
    )


def counting_clue(total: int, scope: Clue) -> Clue:
    """``"among the 14 entities linked with <scope>"``: the answer is one of a counted set."""
    if total < 2:
        raise ValueError(f"counting needs a set of at least 2, got {total}")
    return Clue(
        f"among the {total} entities linked with {scope.text}",
        UncertaintyType.COUNTING,
        str(total),
        (("total", str(total)),),
        (scope,),
    )


def negation_clue(excluded: Clue) -> Clue:
    """``"that is not <a near-miss candidate>"``: rule out a candidate that fits the other clues.

    The candidate is named by its title (``excluded.original``), not by its description: "It is not a Greek
    philosopher" (Socrates's description) is false of Plato, "It is not Socrates" is true of any other answer."""
    if dict(excluded.record).get("source") != "title" and excluded.original:
        excluded = Clue(excluded.original, UncertaintyType.OBFUSCATED_ENTITY, excluded.original, (("source", "title"),))
    return Clue(f"that is not {excluded.text}", UncertaintyType.NEGATION, excluded.original, (), (excluded,))
