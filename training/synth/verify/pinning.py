"""Whether a question says enough about its answer for a reader to single it out, whatever the sample holds.

The uniqueness check (:mod:`training.synth.verify.uniqueness`) and the look-alike checks
(:mod:`training.synth.verify.lookalikes`) weigh the entities the sample's pages name. A reader weighs the real world,
where most answers pinned by little have look-alikes the sample lacks. Three kinds of answer are dropped here,
counted by reason:

* ``region_answer``: a region ("Which subregion is this?"). Regions overlap (East Africa and the African Great Lakes,
  Southeast Asia and Maritime Southeast Asia, Scandinavia and Northern Europe): whatever places, peoples and name
  hints the clues give, an overlapping region the pages do not list fits them as well.
* ``untyped_answer``: an answer whose kind the question cannot say ("What is it?"): any entity of any kind that the
  clues fit is an answer (the Pacific for an Atlantic asked as "it").
* ``few_own_clues``: fewer than :data:`MIN_OWN_CLUES` clues about the answer itself (relations, counts and facts
  other than hints at its name); the question's other clues describe the entities it is related to. One clue of its
  own pins a sun god, a capital of a North African country or an arm of a sea no better than its look-alikes do.
  Before dropping such a question, its optional facts about the answer are added one by one
  (:func:`~training.synth.compose.templates.extend`).

What it cannot guarantee: two clues of the answer's own can still fit several real entities (Plato's pupils); it makes
such questions rarer, and the audits measure what is left.
"""

from __future__ import annotations

from typing import Any

from training.synth.compose.clue_builder import AnswerLeakError
from training.synth.compose.clues import UncertaintyType
from training.synth.compose.constraints import NodeSpec, parse_clues
from training.synth.compose.templates import QuestionDraft, extend
from training.synth.verify.lookalikes import is_region

__all__ = ["MIN_OWN_CLUES", "loosely_pinned", "own_clues", "pin"]

#: Clues of its own an answer needs beside its kind and hints at its name.
MIN_OWN_CLUES = 2
_UNTYPED = ("", "entity")


def own_clues(root: NodeSpec) -> int:
    """The clues about the answer itself: its relations, counts and facts other than hints at its name."""
    facts = sum(f.type is not UncertaintyType.PARTIAL_NAME for f in root.facts)
    return len(root.relations) + len(root.counts) + facts


def loosely_pinned(entity: Any, root: NodeSpec, head: str) -> str:
    """Why a reader cannot single out the answer of ``root`` (see the module docstring), or ``""`` when they can.

    Args:
        entity: The answer's :class:`~training.synth.graph.kg.Entity` (its description says whether it is a region).
        root: The answer's constraint tree.
        head: The answer's type noun in the question.
    """
    if is_region(entity, head):
        return "region_answer"
    if head in _UNTYPED:
        return "untyped_answer"
    return "few_own_clues" if own_clues(root) < MIN_OWN_CLUES else ""


def pin(draft: QuestionDraft, entity: Any) -> tuple[QuestionDraft, str]:
    """``draft`` with optional facts about its answer added until it has :data:`MIN_OWN_CLUES` of its own, and the
    reason it stays loosely pinned (``""``: it is pinned; the draft is then the one to keep)."""
    root = parse_clues(draft.answer, list(draft.clues))
    reason = loosely_pinned(entity, root, draft.head)
    while reason == "few_own_clues" and draft.extras:
        try:
            draft = extend(draft, 1)
        except AnswerLeakError:
            return draft, reason
        reason = loosely_pinned(entity, parse_clues(draft.answer, list(draft.clues)), draft.head)
    return draft, reason
