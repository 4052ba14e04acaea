"""Failures of the twelfth reading (tests/data/audit/sailorfog-f6fef4b.jsonl), on real sample pages: a cleft
sentence read as a relation of the page ("It was after the voyages of Christopher Columbus ... that the Americas
became well known", on the Atlantic Ocean's page)."""

from __future__ import annotations

from tests.training.conftest import mention_edge, sentence_with
from training.synth.verify.subjects import opening_subject


def test_a_cleft_sentences_it_is_no_entity(src, checker):
    sent = sentence_with(src, "Atlantic Ocean", "It was after the voyages of Christopher Columbus")
    relation = "{src} was after the voyages of {dst}"
    assert mention_edge(checker, "Atlantic Ocean", "Christopher Columbus", relation, sent) == "subject"
    ocean = ["Atlantic Ocean"]
    assert opening_subject("It was in 1492 that Columbus reached the Bahamas.", ocean, "ocean") == "other"
    assert opening_subject("It connects to the Arctic Ocean through the Denmark Strait.", ocean, "ocean") == "pronoun"
    assert opening_subject("It was the largest ocean that the Romans knew.", ocean, "ocean") == "pronoun"


def test_a_description_that_only_opens_with_its_relations_noun_restates_it():
    # "The capital city is the capital of this country" (Rome, described as "the capital city" of its lead)
    import random

    import networkx as nx

    from training.synth.compose.clue_builder import ClueBuilder
    from training.synth.compose.clues import Clue, UncertaintyType

    g = nx.Graph()
    g.add_edge("Rome", "Italy", relation="{src} is the capital of {dst}", source_page="Rome", target_page="Italy")
    b = ClueBuilder(g, "Italy", {}, random.Random(0), list(UncertaintyType), 0.0, None)
    described = Clue("the capital city", UncertaintyType.OBFUSCATED_ENTITY, "Rome", (("source", "first_sentence"),))
    assert b.restates("Rome", described)
    longer = Clue("a city in central Italy", UncertaintyType.OBFUSCATED_ENTITY, "Rome", (("source", "description"),))
    assert not b.restates("Rome", longer)
    other = Clue("the capitol city", UncertaintyType.OBFUSCATED_ENTITY, "Rome", (("source", "description"),))
    assert not b.restates("Rome", other)  # a whole word, not a prefix of one


def test_a_fact_after_a_relation_names_its_subject_again():
    # "This country is a member of a global intergovernmental organization. It was founded in the early 1910s": the
    # "it" reads as the organization; the fact says "This country" again.
    from training.synth.compose.clues import Clue, UncertaintyType
    from training.synth.compose.constraints import NodeSpec
    from training.synth.compose.prose import render

    un = NodeSpec(
        "United Nations",
        Clue("a global intergovernmental organization", UncertaintyType.OBFUSCATED_ENTITY, "United Nations"),
        depth=1,
    )
    founded = Clue("founded in the early 1910s", UncertaintyType.FUZZY_DATE, "1912", (("attr", "founded"),))
    root = NodeSpec("Albania", relations=[("{src} is a member of {dst}", "to_anchor", un)], facts=[founded])
    q = render(root, "country", form="which")
    assert "organization. This country was founded in the early 1910s." in q, q


def test_a_question_that_shows_part_of_its_answers_name_is_dropped():
    # "A Mediterranean island country is an island country located in this sea" asks for the Mediterranean Sea
    from training.synth.verify.name_parts import name_part_shown

    assert name_part_shown("A Mediterranean island country is located in this sea.", "Mediterranean Sea")
    assert name_part_shown("This sea is bounded by a group of Caribbean islands.", "Caribbean Sea")
    assert not name_part_shown("The United Kingdom borders this country.", "United States")  # a kind word
    assert not name_part_shown("It is the southernmost country in Africa.", "South Africa")  # a continent
    assert not name_part_shown("Kraków was the capital of this country.", "Poland")  # one word: the leak check's
