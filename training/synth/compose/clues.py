"""The record every uncertainty transform returns: a :class:`Clue` tagged with an :class:`UncertaintyType`."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class UncertaintyType(str, Enum):
    """The kinds of blurring a question can use."""

    OBFUSCATED_ENTITY = "obfuscated_entity"  # a name replaced by a description
    FUZZY_DATE = "fuzzy_date"  # a date replaced by a decade / century / window
    FUZZY_NUMBER = "fuzzy_number"  # a number replaced by a rounded value, range or magnitude
    RELATIONAL = "relational"  # an entity given only through its relation to another
    INTERSECTION = "intersection"  # several partial clues that only jointly identify the answer
    TEMPORAL_ORDER = "temporal_order"  # before / after another entity's date
    COUNTING = "counting"  # "among the N entities linked with ..."
    NEGATION = "negation"  # "not <a near-miss candidate>"
    PARTIAL_NAME = "partial_name"  # the initial letter, a prefix, the length of the name


@dataclass(frozen=True)
class Clue:
    """A blurred fact.

    Attributes:
        text: The phrase, ready to follow a noun (``"founded in the early 1700s"``).
        type: The transform applied.
        original: The exact fact it came from (``"14 March 1879"``), for audit; never shown.
        record: What was done, as ``(key, value)`` pairs (granularity, bounds, source field...).
        parts: Sub-clues (the anchor of a relation, the members of an intersection).
    """

    text: str
    type: UncertaintyType
    original: str = ""
    record: tuple[tuple[str, str], ...] = ()
    parts: tuple[Clue, ...] = field(default=())

    def types(self) -> set[UncertaintyType]:
        """This clue's type and those of all its parts."""
        out = {self.type}
        for p in self.parts:
            out |= p.types()
        return out


def listed_phrase(total: int) -> str:
    """What a counting clue adds to a relation its page states as one item of a list of ``total``."""
    return f"(one of {total} named together on that page)"
