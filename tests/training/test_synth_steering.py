"""Where synthesis spends its drafts and how its clues read: target order, type steering, shortcut rewrites without a
branch, descriptions that name another entity, list counts from either page, the relation reader's guards."""

from __future__ import annotations

import random

import networkx as nx
import pytest

from training.synth.compose.clue_builder import ClueBuilder
from training.synth.compose.clues import Clue
from training.synth.compose.clues import UncertaintyType as U
from training.synth.compose.constraints import parse_clues
from training.synth.compose.coverage import FLOORS
from training.synth.compose.prose import render
from training.synth.compose.steering import MAX_BRANCH_DROPS, rewrites, short_types
from training.synth.extract.relations import extract_relation
from training.synth.graph.kg import Entity
from training.synth.graph.orbits import own_share, targets_at_depth
from training.synth.graph.sampling import Subgraph, without_branch
from training.synth.graph.structures import Structure, classify_structure


def _edge(g: nx.Graph, src: str, dst: str, relation: str, **kw: str) -> None:
    g.add_edge(src, dst, kind="mention", relation=relation, source_page=src, target_page=dst, **kw)


def _sub(g: nx.Graph) -> Subgraph:
    return Subgraph(tuple(sorted(g)), tuple(sorted(tuple(sorted(e)) for e in g.edges)), classify_structure(g), "", 0, g)


def test_targets_whose_relations_other_pages_state_come_first():
    g = nx.Graph()
    _edge(g, "A", "B", "{src} is the capital of {dst}")  # on A's own page
    _edge(g, "B", "C", "{src} is bordered by {dst}")  # on B's page
    _edge(g, "D", "C", "{src} is a country in {dst}")  # on D's page: C's relations are all stated elsewhere
    assert [own_share(g, n) for n in "ABCD"] == [1.0, 0.5, 0.0, 1.0]
    drawn = targets_at_depth(g, 4, 1, random.Random(0))
    first = targets_at_depth(g, 4, 1, random.Random(0), key=lambda t: own_share(g, t))
    assert first[:2] == ["C", "B"] and sorted(first) == sorted(drawn) == list("ABCD")
    assert targets_at_depth(g, 4, 2, random.Random(0), key=lambda t: own_share(g, t)) == ["C", "B", "A", "D"]
    assert targets_at_depth(g, 4, 3, random.Random(0), key=lambda t: own_share(g, t)) == ["A", "D"]  # the ends


def test_without_branch_leaves_the_rest_of_the_answers_component():
    g = nx.path_graph(["A", "B", "C", "D"])
    sub = _sub(g)
    smaller = without_branch(sub, "B", "C")
    assert smaller is not None and smaller.nodes == ("A", "B") and smaller.iso_class == -1
    assert smaller.structure is Structure.PATH and "C" in sub.graph  # the original is untouched
    assert without_branch(sub, "A", "B") is None  # the answer alone is no question
    star = _sub(nx.star_graph(["T", "x", "y", "z"]))
    assert without_branch(star, "T", "x").nodes == ("T", "y", "z")


def test_short_types_are_those_below_floor_plus_margin():
    records = [{"uncertainty_types": ["counting", "negation", "relational"]}] * 9
    assert short_types(records, 0.02) == frozenset(U(t) for t in FLOORS) - {U.COUNTING, U.NEGATION}
    assert short_types([], 0.0) == frozenset(U(t) for t in FLOORS)  # nothing yet: every type is short
    one = [{"uncertainty_types": list(FLOORS)}] + [{"uncertainty_types": []}] * 9  # each type in 1 of 10 (10%)
    assert short_types(one, 0.0) == frozenset() and short_types(one, 0.02) == frozenset(U(t) for t in FLOORS)


def test_a_shortcut_is_written_again_without_its_named_branch_first():
    g = nx.Graph()
    _edge(g, "Lisbon", "T", "{src} is the capital of {dst}")
    _edge(g, "T", "Porto", "{dst} is the second city of {src}")  # the answer's own page
    _edge(g, "Madeira", "T", "{src} is a region of {dst}")
    _edge(g, "Madeira", "Funchal", "{dst} is the capital of {src}")
    versions = list(rewrites(_sub(g), "T", "Lisbon is the capital of this country. ..."))
    tags = [t for t, _, _ in versions]
    assert tags[:3] == [":described", ":plain", ":again"] and len(tags) == 3 + MAX_BRANCH_DROPS
    assert tags[3:] == [":without:Lisbon", ":without:Porto"]  # named first, then the answer's own page
    assert "Lisbon" not in versions[3][2].graph and set(versions[4][2].graph) == {"T", "Lisbon", "Madeira", "Funchal"}
    assert all(not quote for _, quote, _ in versions[1:])


def _builder(g: nx.Graph, facts: dict[str, Entity], target: str) -> ClueBuilder:
    return ClueBuilder(g, target, facts, random.Random(0), list(U), named_prob=0.0, kg=None)


def test_a_description_naming_another_entity_of_the_question_gives_way_to_its_head_noun():
    g = nx.Graph()
    _edge(g, "Ankara", "Turkey", "{src} is the capital city of {dst}")
    _edge(g, "Turkey", "Asia", "{src} is a country in {dst}")
    facts = {
        "Ankara": Entity(title="Ankara", description="the capital of Turkey", first_sentence="Ankara is a city."),
        "Turkey": Entity(title="Turkey", description="a country in West Asia"),
    }
    b = _builder(g, facts, "Asia")
    assert b.names_other("Ankara", Clue("the capital of Turkey", U.OBFUSCATED_ENTITY))
    assert not b.names_other("Ankara", Clue("Ankara", U.OBFUSCATED_ENTITY, "Ankara", (("source", "title"),)))
    phrase = b.noun_phrase("Ankara", with_fact=False)
    assert "Turkey" not in phrase.text and dict(phrase.record).get("source") in ("head", "title"), phrase


def test_a_bare_head_noun_with_no_clue_of_its_own_gives_way_to_the_name():
    g = nx.Graph()
    _edge(g, "Ankara", "Turkey", "{src} lies in {dst}")
    _edge(g, "Turkey", "Asia", "{src} is a country in {dst}")
    facts = {
        "Ankara": Entity(title="Ankara", description="the capital of Turkey", first_sentence="Ankara is a city."),
        "Turkey": Entity(title="Turkey", description="a country in West Asia"),
    }
    b = _builder(g, facts, "Asia")
    b.phrases["Turkey"] = "a country in West Asia"  # Turkey is in the question: Ankara's description names it
    leaf = b.describe("Ankara", {})  # its description names Turkey; "The capital lies in this country" says nothing
    assert leaf.text == "Ankara" and b.phrases["Ankara"] == "Ankara", leaf


def test_a_count_may_come_from_the_list_on_either_page():
    g = nx.Graph()
    evidence = "Togo is bordered by Ghana, Benin and Burkina Faso."
    _edge(g, "Togo", "Benin", "{src} is bordered by {dst}", anchor="Benin", evidence=evidence)
    facts = {"Togo": Entity(title="Togo"), "Benin": Entity(title="Benin")}
    anchor = Clue("a country in West Africa", U.OBFUSCATED_ENTITY, "Benin", (("source", "description"),))
    b = _builder(g, facts, "Togo")
    from_own_page = b.counted("Togo", "Benin", anchor)  # Togo's page lists Benin among 3
    assert dict(from_own_page.record)["listed"] == "3" and U.COUNTING in b.used
    anchor_t = Clue("a country in West Africa", U.OBFUSCATED_ENTITY, "Togo", (("source", "description"),))
    b2 = _builder(g, facts, "Benin")
    assert dict(b2.counted("Benin", "Togo", anchor_t).record)["listed"] == "3"  # listed on the anchor's page


def test_the_other_country_and_this_country_again_after_another_entitys_sentences():
    from training.synth.compose.uncertainty import relational_clue

    anchor = Clue("a country in East Africa", U.OBFUSCATED_ENTITY, "Ethiopia", (("source", "description"),))
    capital = Clue("Addis Ababa", U.OBFUSCATED_ENTITY, "Addis Ababa", (("source", "title"),))
    inner = relational_clue(capital, "{src} is the capital of {dst}", anchor_is_source=True)
    full = Clue(f"{anchor.text} {inner.text}", anchor.type, anchor.original, anchor.record, (anchor, inner))
    rel = relational_clue(full, "{src} shares borders with {dst}", anchor_is_source=True)
    fact = Clue("founded in the 1970s", U.FUZZY_DATE, "1977", (("attr", "founded"),))
    text = render(parse_clues("Djibouti", [rel, fact]), "country")
    assert "the capital of the other country" in text and "that country in East Africa" not in text, text
    assert "This country was founded in the 1970s" in text, text  # not "It", which would read as Ethiopia


@pytest.mark.parametrize(
    ("sentence", "src", "dst", "person", "want"),
    [
        ("He succeeded in crossing the Atlantic from Morocco.", ["Atlantic Ocean"], ["Morocco"], False, None),
        ("He was born in Ulm.", ["Albert Einstein"], ["Ulm"], True, "{src} was born in {dst}"),
        ("It is bordered by Ghana.", ["Togo"], ["Ghana"], False, "{src} is bordered by {dst}"),
        ("Vilnius is the capital of in Lithuania.", ["Vilnius"], ["Lithuania"], False, None),
        ("Montenegro is has a coastline along the Adriatic Sea.", ["Montenegro"], ["Adriatic Sea"], False, None),
    ],
)
def test_the_relation_reader_rejects_another_subject_and_clauses_run_together(sentence, src, dst, person, want):
    assert extract_relation(sentence, src, dst, person=person) == want


def test_a_look_alike_the_check_leaves_is_named_in_a_negation():
    from training.synth.compose.templates import excluding, generate_question

    g = nx.Graph()
    _edge(g, "Togo", "Benin", "{src} is bordered by {dst}")
    facts = {"Togo": Entity(title="Togo", description="a country in West Africa"), "Benin": Entity(title="Benin")}
    draft = generate_question(g, "Benin", facts, random.Random(0), kg=None)
    wider = excluding(draft, 0, ["Ghana"])
    assert "is not Ghana" in wider.question and "Ghana" not in draft.question, wider.question
    assert "negation" in wider.uncertainty_types and wider.constraints == draft.constraints + 1
    root = parse_clues(wider.answer, wider.clues)
    assert [n.identity.text for n in root.negations] == ["Ghana"]


def test_he_stands_for_a_page_only_when_its_lead_is_a_biography(sample_index):
    from training.synth.graph.store_source import StoreSource
    from wiki_index.search.index import WikiIndex

    src = StoreSource(WikiIndex.from_dir(sample_index).store)
    person = {
        t: src._personal(src.resolve(t), src.entity(t)) for t in ("Karl Marx", "Jesus", "Atlantic Ocean", "France")
    }
    assert person == {"Karl Marx": True, "Jesus": True, "Atlantic Ocean": False, "France": False}
