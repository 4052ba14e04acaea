"""The failures of the fourth reading (tests/data/audit/sailorfog-527d63d.jsonl), one test per kind, on real sample
pages: each checks the bad clue or question is dropped and a true one of the same kind stays."""

from __future__ import annotations

import networkx as nx
import pytest

from tests.training.conftest import mention_edge, sentence_with
from training.synth.compose.clues import Clue, UncertaintyType
from training.synth.compose.constraints import NodeSpec
from training.synth.verify.uniqueness import Verifier

U = UncertaintyType


def _named(title: str) -> NodeSpec:
    return NodeSpec(title, Clue(title, U.OBFUSCATED_ENTITY, title, (("source", "title"),)))


def test_a_list_split_by_a_name_holding_and_is_not_counted(src):
    # Azerbaijan "became a member of the International Monetary Fund, the World Bank, the European Bank for
    # Reconstruction and Development, the Islamic Development Bank and the Asian Development Bank": five, counted 3
    from training.synth.compose.transfer import list_size

    sent = sentence_with(src, "Azerbaijan", "International Monetary Fund")
    assert list_size(sent, "International Monetary Fund") == 0
    argentina = sentence_with(src, "Argentina", "claims sovereignty over the Falkland Islands")
    assert list_size(argentina, "Falkland Islands") == 4  # a plain list is still counted


def test_a_capital_of_the_island_is_no_capital(src, checker):
    # Dublin "is the capital and largest city of Ireland": the mention resolved to the island, which has no capital
    dublin = next(s for s in checker.sentences("Dublin") if "capital" in s)
    rel = "{src} is the capital of {dst}"
    assert mention_edge(checker, "Dublin", "Ireland", rel, dublin) == "relation_referent"
    assert mention_edge(checker, "Dublin", "Republic of Ireland", rel, dublin) == ""
    lima = next(s for s in checker.sentences("Lima") if "largest city of Peru" in s)
    assert mention_edge(checker, "Lima", "Peru", rel, lima) == ""


@pytest.mark.parametrize(
    ("title", "bad", "good"),
    [
        ("Atlantic Ocean", "division", "entity"),  # "Oceanic division"
        ("Indian Ocean", "division", "entity"),  # and "the third-largest of the world's five oceanic divisions"
        ("Hinduism", "term", "entity"),  # "an umbrella term for a range of ..."
        ("Tatarstan", "division", "republic"),  # "First-level administrative division": the lead's "a republic"
        ("International System of Units", "modern", "system"),  # "Modern form of the metric system"
    ],
)
def test_a_type_noun_that_needs_its_modifier_is_no_kind(src, title, bad, good):
    from training.synth.compose.naming import head_noun

    assert head_noun(src.entity(title)) == good != bad


def test_one_river_of_a_confluence_is_a_relation_cut(checker):
    # Kazan "lies at the confluence of the Volga and the Kazanka rivers": not "at the confluence of Volga"
    kazan = next(s for s in checker.sentences("Kazan") if "confluence" in s)
    rel = "{src} lies at the confluence of {dst}"
    assert mention_edge(checker, "Kazan", "Volga", rel, kazan) == "relation_cut"
    assert mention_edge(checker, "Kazan", "Volga", rel, "The city lies at the confluence of the Volga.") == ""


def test_a_range_of_a_persons_kind_is_no_start_and_end(src):
    # Plato's "(c. 428-347 BC)" is read as start and end (no "He" in its lead): "born before Plato ended"; beside
    # Aristotle, a philosopher whose page reads as a biography, the range is a lifetime and gives no temporal order
    from training.synth.compose.structural import dated, person_kinds

    plato, aristotle, cold_war = src.entity("Plato"), src.entity("Aristotle"), src.entity("Cold War")
    assert {d.attr for d in plato.dates} >= {"start", "end"}
    kinds = person_kinds([plato, aristotle, cold_war])
    assert "philosopher" in kinds
    assert not {d.attr for d in dated(plato, kinds)} & {"start", "end"}
    assert dated(aristotle, kinds) == list(aristotle.dates)
    assert dated(cold_war, kinds) == list(cold_war.dates)  # a period's range keeps "began" and "ended"


def test_names_listed_with_a_thinly_pinned_answer_are_its_look_alikes(src):
    # the Falkland Islands pinned only by "a country claims sovereignty over it": South Georgia and the South Sandwich
    # Islands, in the same list of Argentina's sentence, fit as well; a hint at the name rules them out
    from training.synth.verify.lookalikes import co_named, thin_lookalikes

    verifier = Verifier(src)
    sent = sentence_with(src, "Argentina", "claims sovereignty over the Falkland Islands")
    assert {"South Georgia", "South Sandwich Islands"} <= set(co_named(sent, ["Falkland Islands"]))
    rel = "{src} claims sovereignty over {dst}"
    g = nx.Graph()
    attrs = {"relation": rel, "evidence": sent, "page": "Argentina", "source_page": "Argentina"}
    g.add_edge("Falkland Islands", "Argentina", **attrs, target_page="Falkland Islands", anchor="Falkland Islands")
    root = NodeSpec("Falkland Islands", relations=[(rel, "from_anchor", _named("Argentina"))])
    left = thin_lookalikes(src, verifier, root, "archipelago", g)
    assert "South Georgia" in left
    root.facts.append(Clue('whose name begins with "F"', U.PARTIAL_NAME, "Falkland Islands"))
    assert thin_lookalikes(src, verifier, root, "archipelago", g) == []


def test_a_container_pinned_only_by_a_member_inside_it_is_ambiguous(src):
    # "Burundi is located in this trench": the East African Rift holds Burundi too; a fact of its own pins it
    from training.synth.verify.lookalikes import thin_lookalikes

    verifier = Verifier(src)
    sent = sentence_with(src, "Burundi", "located in the Great Rift Valley")
    rel = "{src} is located in {dst}"
    g = nx.Graph()
    g.add_edge("Great Rift Valley", "Burundi", relation=rel, evidence=sent, page="Burundi", source_page="Burundi")
    root = NodeSpec("Great Rift Valley", relations=[(rel, "from_anchor", _named("Burundi"))])
    assert thin_lookalikes(src, verifier, root, "trench", g)
    root.facts.append(Clue('whose name begins with "G"', U.PARTIAL_NAME, "Great Rift Valley"))
    assert thin_lookalikes(src, verifier, root, "trench", g) == []


def test_one_ocean_of_a_convergence_is_a_relation_cut(checker):
    # Svalbard "lies at the convergence of the Arctic Ocean with the Atlantic Ocean": not "at the convergence of" one
    svalbard = next(s for s in checker.sentences("Svalbard") if "convergence" in s)
    rel = "{src} lies at the convergence of {dst}"
    assert mention_edge(checker, "Svalbard", "Arctic Ocean", rel, svalbard) == "relation_cut"
    assert (
        mention_edge(checker, "Svalbard", "Arctic Ocean", rel, "It lies at the convergence of the Arctic Ocean.") == ""
    )
