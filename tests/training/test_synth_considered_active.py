"""A relation turned around, found by the thirteenth reading (tests/data/audit/sailorfog-b5b4507.jsonl): the active
"Aristotle considered epic poetry ... to be imitative" read as "{src} is considered {dst}" ("The philosopher is
considered a lengthy poem"). SailorFog-QA's clue check drops it as ``relation_active``; the relation reader, and so
the tiers' fact reading (version 9), is unchanged."""

from __future__ import annotations

from tests.training.conftest import mention_edge, sentence_with
from training.synth.graph.kg import KnowledgeGraph
from training.synth.graph.store_source import StoreSource
from training.synth.tiers.facts import FACTS_VERSION
from training.synth.verify.clue_check import ClueChecker
from training.synth.verify.clue_evidence import render_checks


def test_an_active_considered_is_no_passive(src: StoreSource, checker: ClueChecker) -> None:
    sent = sentence_with(src, "Aristotle", "considered epic poetry")
    assert mention_edge(checker, "Aristotle", "Epic poetry", "{src} is considered {dst}", sent) == "relation_active"
    joplin = sentence_with(src, "Scott Joplin", "Joplin considered ragtime")  # the surname as the subject
    assert mention_edge(checker, "Scott Joplin", "Ragtime", "{src} is considered {dst}", joplin) == "relation_active"
    he = "He also considered epic poetry to be imitative."  # the page's pronoun, an adverb between
    assert mention_edge(checker, "Aristotle", "Epic poetry", "{src} is considered {dst}", he) == "relation_active"


def test_the_passive_reading_is_kept(src: StoreSource, checker: ClueChecker) -> None:
    sent = sentence_with(src, "Aristotle", "considered epic poetry")
    passive = sent.replace("Aristotle considered", "Aristotle is considered")
    assert mention_edge(checker, "Aristotle", "Epic poetry", "{src} is considered {dst}", passive) != "relation_active"
    mecca = sentence_with(src, "Mecca", "Mecca is considered the birthplace of Islam")
    assert mention_edge(checker, "Mecca", "Islam", "{src} is considered the birthplace of {dst}", mecca) == ""
    named = "Aristotle was named epic poetry's first critic."  # "was" before the verb: a passive
    assert mention_edge(checker, "Aristotle", "Epic poetry", "{src} was named {dst}", named) != "relation_active"


def test_an_active_named_by_the_other_entity_is_turned_around(src: StoreSource, checker: ClueChecker) -> None:
    # "In 1995, UNESCO named Easter Island a World Heritage Site" read as "UNESCO is named Easter Island"
    sent = sentence_with(src, "Easter Island", "UNESCO named Easter Island")
    assert mention_edge(checker, "Easter Island", "UNESCO", "{dst} is named {src}", sent) == "relation_active"
    time = sentence_with(src, "Tenzing Norgay", "Time named Norgay")
    assert mention_edge(checker, "Tenzing Norgay", "Time", "{dst} is named {src}", time) == "relation_active"


def test_the_drop_is_counted_on_the_card(src: StoreSource) -> None:
    sent = sentence_with(src, "Aristotle", "considered epic poetry")
    kg = KnowledgeGraph()
    g = kg.graph
    data = {"relation": "{src} is considered {dst}", "kind": "mention", "evidence": sent, "page": "Aristotle"}
    g.add_edge("Aristotle", "Epic poetry", **data, source_page="Aristotle", target_page="Epic poetry")
    ck = ClueChecker(src)
    ck.prune(kg)
    assert ck.counts["dropped_relation_active"] == 1 and g.number_of_edges() == 0
    assert "| dropped: relation_active | 1 |" in render_checks(dict(ck.counts))


def test_the_relation_reader_and_the_tiers_are_unchanged(src: StoreSource) -> None:
    # the tiers read the relation reader's templates, not the clue check: the reading and its version stay as they were
    relation = dict(src.neighbours("Aristotle"))["Epic poetry"]["relation"]
    assert relation == "{src} is considered {dst}" and FACTS_VERSION == 9
