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
