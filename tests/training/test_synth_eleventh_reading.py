"""Failures of the eleventh reading (tests/data/audit/sailorfog-ca08a3e.jsonl): a count whose noun is said twice
("about 130,000 people employees"), a cycle-closing clue that refers to entities by nouns the question never used
for them ("the highest volcano in the landmass"), and a negation of an entity of another kind ("This star is not
Medicine")."""

from __future__ import annotations

import random
from types import SimpleNamespace

import networkx as nx

from training.synth.compose.structural import closing_text, near_miss, short_refs
from training.synth.graph.kg import Entity


def _builder(ents: dict[str, Entity], target: str, **more: object) -> SimpleNamespace:
    """The parts of a template builder that the structural clues read: its entities, answer and forbidden names."""
    return SimpleNamespace(entity=ents.__getitem__, target=target, forbidden=[target], **more)


def test_a_count_of_people_employed_is_said_once():
    # "The Manhattan Project employed nearly 130,000 people": not "with about 130,000 people employees"
    from training.synth.compose.quantities import fuzz_number, number_phrase
    from training.synth.extract.facts import NumberFact

    staff = NumberFact("employees", "nearly 130,000 people", 130000.0, "people")
    assert number_phrase(staff, fuzz_number(staff, mode="about")) == "with about 130,000 employees"
    people = NumberFact("inhabitants", "19 million inhabitants", 19e6, "inhabitants")
    assert number_phrase(people, fuzz_number(people, mode="about")) == "with about 19 million inhabitants"


def test_a_closing_relation_refers_to_entities_as_the_question_introduced_them():
    # The eleventh reading: "The country is a country located in the peninsula" (Turkey and Anatolia, both named)
    # and "the highest volcano in the landmass" (Eurasia, introduced as "the largest continental area on Earth").
    ents = {
        "Europe": Entity(title="Europe", description="Continent"),
        "Eurasia": Entity(title="Eurasia", description="Combined landmasses of Europe and Asia"),
        "Mount Elbrus": Entity(title="Mount Elbrus", description="Highest mountain in Europe"),
        "Turkey": Entity(title="Turkey", description="Country in Asia and Europe"),
    }
    phrases = {"Eurasia": "the largest continental area on Earth", "Mount Elbrus": "Mount Elbrus", "Turkey": "Turkey"}
    b = _builder(ents, "Europe", phrases=phrases)
    g = nx.Graph([("Europe", t) for t in phrases])
    refs = short_refs(b, g)
    assert refs == {"Eurasia": "the area", "Mount Elbrus": "Mount Elbrus", "Turkey": "Turkey"}
    attrs = {"source_page": "Mount Elbrus", "target_page": "Eurasia", "kind": "mention"}
    volcano = closing_text({**attrs, "relation": "{src} is the highest volcano in {dst}"}, refs)
    assert volcano == "where Mount Elbrus is the highest volcano in the area"
    assert "Europe" not in refs  # the answer is "this continent", never referred to by name


def test_a_near_miss_is_of_the_answers_kind():
    # The eleventh reading's "This star is not Medicine": Apollo is god of the Sun and of medicine, but medicine is
    # no star, so excluding it excludes no candidate.
    ents = {
        "Sun": Entity(title="Sun", description="Star at the centre of the Solar System"),
        "Apollo": Entity(title="Apollo", description="Ancient Greek god"),
        "Medicine": Entity(title="Medicine", description="Science and practice of caring for patients"),
        "Sirius": Entity(title="Sirius", description="Star in the constellation Canis Major"),
    }
    edge = {"relation": "god_of", "source_page": "Apollo", "kind": "infobox"}
    g = nx.Graph()
    g.add_edge("Sun", "Apollo", **edge)
    kg = g.copy()
    kg.add_edge("Apollo", "Medicine", **edge)
    b = _builder(ents, "Sun", g=g, kg=kg, rng=random.Random(0))
    assert near_miss(b, ["Apollo"]) is None
    kg.add_edge("Apollo", "Sirius", **edge)
    assert near_miss(b, ["Apollo"]) == "Sirius"
