"""A question must say enough about its answer for a reader to single it out (training/synth/verify/pinning.py):
regions, answers of no kind and answers with fewer than two clues of their own are dropped, after optional facts
about the answer have been added."""

from __future__ import annotations

import dataclasses

from tests.training.conftest import ulm_draft
from training.synth.compose.clues import Clue
from training.synth.compose.constraints import NodeSpec, parse_clues
from training.synth.compose.uncertainty import UncertaintyType as U
from training.synth.verify.pinning import MIN_OWN_CLUES, loosely_pinned, own_clues, pin


def _member(title: str) -> tuple[str, str, NodeSpec]:
    named = NodeSpec(title, Clue(title, U.OBFUSCATED_ENTITY, title, (("source", "title"),)), depth=1)
    return ("{src} is a landlocked country in {dst}", "from_anchor", named)


def test_a_region_is_never_pinned_whatever_its_members(src):
    # East Africa holds Burundi, Rwanda and Uganda; so does the African Great Lakes region, which no clue rules out
    root = NodeSpec("East Africa", relations=[_member(t) for t in ("Burundi", "Rwanda", "Uganda")])
    assert own_clues(root) == 3 >= MIN_OWN_CLUES
    assert loosely_pinned(src.entity("East Africa"), root, "region") == "region_answer"
    assert loosely_pinned(src.entity("East Africa"), root, "entity") == "region_answer"  # its description says so
    assert loosely_pinned(src.entity("Kenya"), root, "country") == ""


def test_an_answer_of_no_kind_and_one_with_a_single_clue_of_its_own_are_loose(src):
    ent = src.entity("Kenya")
    hint = Clue('whose name begins with "K"', U.PARTIAL_NAME, "Kenya", (("mode", "initial"),))
    one = NodeSpec("Kenya", facts=[hint], relations=[_member("Nairobi")])
    assert own_clues(one) == 1  # a hint at the name is no clue of its own
    assert loosely_pinned(ent, one, "country") == "few_own_clues"
    two = NodeSpec("Kenya", relations=[_member("Nairobi"), _member("Mombasa")])
    assert loosely_pinned(ent, two, "country") == ""
    assert loosely_pinned(ent, two, "entity") == "untyped_answer"


def test_pin_adds_facts_of_the_answer_until_it_is_pinned_and_says_why_when_it_cannot_be():
    draft, ents = ulm_draft()
    ulm = ents["Ulm"]  # "A German-born theoretical physicist was born in this city. ...": one clue of its own
    assert own_clues(parse_clues(draft.answer, list(draft.clues))) == 1
    assert all(c.type is U.PARTIAL_NAME for c in draft.extras)
    kept, why = pin(draft, ulm)  # its optional facts only hint at the name: still loose
    assert why == "few_own_clues" and not kept.extras

    founded = Clue("that was founded in the 9th century", U.FUZZY_DATE, "Ulm", (("attr", "founded"),))
    pinned, why = pin(dataclasses.replace(draft, extras=(founded, *draft.extras)), ulm)
    assert why == "" and founded in pinned.clues and "9th century" in pinned.question
    assert len(pinned.extras) == len(draft.extras)  # one fact added, no more than needed
