"""Look-alikes a reader meets on the question's pages (:func:`~training.synth.verify.lookalikes.page_lookalikes`),
from the seventh reading's non-unique answers (tests/data/audit/sailorfog-ad7e397.jsonl), on real sample pages."""

from __future__ import annotations

import networkx as nx

from training.synth.compose.clues import Clue, UncertaintyType
from training.synth.compose.constraints import NodeSpec
from training.synth.verify.lookalikes import page_lookalikes
from training.synth.verify.uniqueness import Verifier

U = UncertaintyType


def _named(title: str) -> NodeSpec:
    return NodeSpec(title, Clue(title, U.OBFUSCATED_ENTITY, title, (("source", "title"),)))


def _question(answer: str, rel: str, anchor: str) -> tuple[NodeSpec, nx.Graph]:
    g = nx.Graph()
    g.add_edge(answer, anchor, relation=rel, page=answer, source_page=answer)
    return NodeSpec(answer, relations=[(rel, "to_anchor", _named(anchor))]), g


def test_a_country_of_the_answers_kind_beside_the_anchor_is_a_look_alike(src):
    # Dominica "is an island country in the Caribbean": Antigua and Barbuda, whose page links the Caribbean, fits too
    verifier = Verifier(src)
    root, g = _question("Dominica", "{src} is an island country in {dst}", "Caribbean")
    left = page_lookalikes(src, verifier, root, "country", g)
    assert "Antigua and Barbuda" in left and "Dominica" not in left and "Caribbean" not in left
    root.facts.append(Clue('whose name begins with "D"', U.PARTIAL_NAME, "Dominica"))
    root.facts.append(Clue("whose name is a single word", U.PARTIAL_NAME, "Dominica"))  # not the Dominican Republic
    assert page_lookalikes(src, verifier, root, "country", g) == []


def test_a_page_of_another_kind_is_no_look_alike(src):
    # the Manhattan Project "was led by the United States": the Apollo program fits; the states of the country do not
    verifier = Verifier(src)
    root, g = _question("Manhattan Project", "{src} was led by {dst}", "United States")
    left = page_lookalikes(src, verifier, root, "program", g)
    assert "Apollo program" in left
    assert "Hawaii" not in left and "United States" not in left
    assert page_lookalikes(src, verifier, root, "", g) == []  # an answer of no kind is pinning's to drop


def test_an_infobox_field_the_look_alike_has_no_infobox_for_does_not_rule_it_out(src):
    # Aristotle "whose main interests include Ethics" (his infobox): Plato's page has no infobox, so his interests are
    # unknown, not other; a field Plato's page states against (a single-word name starting "A") rules him out
    verifier = Verifier(src)
    root, g = _question("Aristotle", "main_interests", "Ethics")
    assert "Plato" in page_lookalikes(src, verifier, root, "philosopher", g)
    text, _ = _question("Aristotle", "{src} studied {dst}", "Ethics")  # a sentence relation needs the link
    assert "Plato" not in page_lookalikes(src, verifier, text, "philosopher", g)
    root.facts.append(Clue('whose name begins with "A"', U.PARTIAL_NAME, "Aristotle"))
    assert "Plato" not in page_lookalikes(src, verifier, root, "philosopher", g)


def test_a_name_without_a_page_listed_with_the_answer_in_every_sentence_is_a_look_alike(src):
    # Rajasthan bordered by Gujarat and by Uttar Pradesh: both pages list Madhya Pradesh beside it (the eighth reading)
    from tests.training.conftest import sentence_with

    verifier = Verifier(src)
    rel = "{src} is bordered by {dst}"
    g = nx.Graph()
    root = NodeSpec("Rajasthan")
    for anchor in ("Gujarat", "Uttar Pradesh"):
        sent = sentence_with(src, anchor, "Rajasthan")
        g.add_edge("Rajasthan", anchor, relation=rel, evidence=sent, page=anchor, source_page=anchor)
        root.relations.append((rel, "from_anchor", _named(anchor)))
    assert src.resolve("Madhya Pradesh") is None
    assert "Madhya Pradesh" in page_lookalikes(src, verifier, root, "state", g)
    root.facts.append(Clue('whose name begins with "R"', U.PARTIAL_NAME, "Rajasthan"))
    assert "Madhya Pradesh" not in page_lookalikes(src, verifier, root, "state", g)
