"""Failures of the tenth reading (tests/data/audit/sailorfog-5369446.jsonl), on real sample pages: a pronoun whose
antecedent is another noun phrase of a later passage (the Atlantic Ocean's "It extends from Iceland", said of the
Mid-Atlantic Ridge), a description cut inside its noun phrase (Rome as "the capital city and most") and a type noun
read past a preposition (philosophy as "the question")."""

from __future__ import annotations

from tests.training.conftest import mention_edge, sentence_with
from training.synth.compose.naming import _whole_phrase, describe_entity
from training.synth.verify.subjects import about_page


def test_a_pronoun_after_another_noun_phrase_is_not_the_pages(src, checker):
    # "The principal feature of the bathymetry is a submarine mountain range called the Mid-Atlantic Ridge. It extends
    # from Iceland in the north ...": the ridge extends from Iceland, not the ocean
    sent = sentence_with(src, "Atlantic Ocean", "It extends from Iceland")
    assert mention_edge(checker, "Atlantic Ocean", "Iceland", "{src} extends from {dst}", sent) == "subject"
    ocean = ["Atlantic Ocean"]
    before = "The principal feature of the bathymetry is a submarine mountain range called the Mid-Atlantic Ridge."
    assert not about_page([before, sent], 1, ocean, "entity oceanic division", lead=False)
    assert about_page(["The ocean covers about a fifth of the surface.", sent], 1, ocean, "entity oceanic division")
    assert about_page(["The Atlantic Ocean is the second-largest ocean.", sent], 1, ocean, "ocean")
    assert about_page([sent], 0, ocean, "ocean")  # a lead's first sentence names the page, whatever the spelling
    he = "He placed emphasis on the type(s) of soul an organism possessed."
    assert about_page([before, he], 1, ["Aristotle"], "entity")  # "he" is no ridge: a person's pronoun is not held


def test_the_pages_noun_and_a_participle_before_the_subject_are_read(src, checker):
    # "The sea is flanked by ...": "sea" names the Sea of Azov's kind ("sea" was read as "ea"), so "It is an
    # important access route for Central Asia" after it is the sea's; "Bounded by the Arabian Sea on the south, the
    # Gulf of Oman on the southwest, and the Sir Creek on the southeast, it shares land borders ..." opens with "it"
    from training.synth.verify.subjects import opening_subject

    sent = sentence_with(src, "Sea of Azov", "important access route for Central Asia")
    assert (
        mention_edge(checker, "Sea of Azov", "Central Asia", "{src} is an important access route for {dst}", sent) == ""
    )
    assert (
        opening_subject("The sea is flanked by continental shelves.", ["Labrador Sea"], "entity", strict=True) == "own"
    )
    bounded = sentence_with(src, "Pakistan", "Bounded by the Arabian Sea")
    assert opening_subject(bounded, ["Pakistan"], "country") == "pronoun"


def test_a_description_cut_inside_its_noun_phrase_keeps_the_whole_phrase(src):
    # "Rome is the capital city and most populated comune (municipality) of Italy": "the capital city and most"
    rome = src.entity("Rome")
    clue = describe_entity(rome, forbidden=["Italy"])
    assert clue.text == "the capital city" and dict(clue.record)["source"] == "first_sentence"
    assert _whole_phrase("the largest and most") == "the largest"
    assert _whole_phrase("a very") == ""
    assert _whole_phrase("a German-born theoretical physicist") == "a German-born theoretical physicist"


def test_a_type_noun_is_not_read_past_a_preposition(src):
    # Philosophy is the "Systematic study of general and fundamental questions": a study, not a "question" (the
    # coordinated-adjective cut crossed "of"); Weed is an "Unwanted ... plant", not "undesirable".
    from training.synth.compose.heads import raw_head
    from training.synth.compose.naming import head_noun

    assert raw_head("Systematic study of general and fundamental questions") == "study"
    assert raw_head("Supranational political and economic union") == "union"
    assert raw_head("Insatiable longing for material or immaterial gain") == ""
    assert head_noun(src.entity("Philosophy")) == "study"
    assert head_noun(src.entity("Greed")) == "desire"
