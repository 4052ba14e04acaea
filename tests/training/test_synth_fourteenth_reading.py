"""Wording the fourteenth reading (tests/data/audit/sailorfog-0faba1e.jsonl) read as true but badly put, on real sample
pages: an infobox key written in camel case run together ("the lowestpoint of a state") and a superlative description
given "a" ("a southernmost region of Africa")."""

from __future__ import annotations

from training.synth.compose.naming import describe_entity, with_article
from training.synth.compose.uncertainty import relational_clue


def test_a_camel_case_infobox_key_is_worded_as_words(src):
    alabama = describe_entity(src.entity("Alabama"))
    clue = relational_clue(alabama, "LowestPoint", anchor_is_source=True)
    assert clue.text.startswith("that is the lowest point of "), clue.text
    assert "lowestpoint" not in relational_clue(alabama, "LowestPoint", anchor_is_source=False).text


def test_a_superlative_in_most_takes_the(src):
    text = describe_entity(src.entity("Southern Africa")).text
    assert text.startswith("the southernmost region"), text
    assert with_article("northernmost point of Europe") == "the northernmost point of Europe"
    assert with_article("most populous city") == "most populous city"  # a quantifier still takes none
    assert with_article("almost island") == "an almost island"


def test_a_look_alike_is_every_kind_its_description_coordinates(src):
    """Cicero's question ("the statesman ... died in the mid 1st century BC") passed as unique while Pompey, "Roman
    general and statesman (106-48 BC)", fits it: his type noun was read as "general" only."""
    from training.synth.verify.uniqueness import _head_fits

    pompey, caesar = src.entity("Pompey"), src.entity("Julius Caesar")
    assert _head_fits(pompey, "statesman", ()) and _head_fits(pompey, "general", ())
    assert not _head_fits(caesar, "statesman", ())  # "Roman general and dictator": the page does not say it
    assert not _head_fits(src.entity("Russia"), "asia", ())  # "Country in Europe and Asia": a complement, no kind
