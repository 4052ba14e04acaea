"""The ninth reading's non-unique answers (tests/data/audit/sailorfog-20707d3.jsonl), on real sample pages: Lake
Victoria beside Lake Turkana (a described anchor, "a country in East Africa", fits Kenya as well as Uganda), Horace
beside Virgil (Ovid's sentence names both, and the question names Virgil elsewhere) and the Red Sea beside the Gulf of
Aqaba (Jordan's sentence names a gulf the sample has no page for)."""

from __future__ import annotations

import networkx as nx

from tests.training.conftest import sentence_with
from training.synth.compose.clues import Clue, UncertaintyType
from training.synth.compose.constraints import NodeSpec
from training.synth.verify.lookalikes import page_lookalikes, ruled_out, unruled
from training.synth.verify.uniqueness import Verifier

U = UncertaintyType


def _named(title: str) -> NodeSpec:
    return NodeSpec(title, Clue(title, U.OBFUSCATED_ENTITY, title, (("source", "title"),)))


def _described(title: str, phrase: str, *facts: Clue) -> NodeSpec:
    return NodeSpec(title, Clue(phrase, U.OBFUSCATED_ENTITY, title, (("source", "description"),)), list(facts))


def _population(lo: float, hi: float) -> Clue:
    rec = (("attr", "population"), ("mode", "about"), ("lo", repr(lo)), ("hi", repr(hi)))
    return Clue("with a population of about 50 million", U.FUZZY_NUMBER, "45.9 million", rec)


def test_a_described_anchor_fits_every_page_its_description_fits(src):
    # "A country in East Africa with a population of about 50 million includes a substantial portion of this lake":
    # Kenya (54.2 million) holds Lake Turkana as Uganda holds Lake Victoria
    verifier = Verifier(src)
    rel = "{src} includes a substantial portion of {dst}"
    uganda = _described("Uganda", "a country in East Africa", _population(35e6, 70e6))
    root = NodeSpec("Lake Victoria", relations=[(rel, "from_anchor", uganda)])
    assert not ruled_out(src, verifier, root, "lake", "Lake Turkana")
    named = NodeSpec("Lake Victoria", relations=[(rel, "from_anchor", _named("Uganda"))])
    assert ruled_out(src, verifier, named, "lake", "Lake Turkana")  # named, the anchor is Uganda only
    small = _described("Uganda", "a country in East Africa", _population(35e6, 50e6))
    narrow = NodeSpec("Lake Victoria", relations=[(rel, "from_anchor", small)])
    assert ruled_out(src, verifier, narrow, "lake", "Lake Turkana")  # Kenya's population is stated outside it


def test_a_name_the_question_gives_elsewhere_is_still_a_look_alike(src):
    # "A Roman poet was a younger contemporary of this poet. The other poet was a younger contemporary of Virgil. This
    # poet died in the late 1st century BC": Ovid's sentence names Virgil and Horace, and Virgil fits every clue
    verifier = Verifier(src)
    rel = "{src} was a younger contemporary of {dst}"
    sent = sentence_with(src, "Ovid", "younger contemporary of Virgil and Horace")
    g = nx.Graph()
    g.add_edge("Horace", "Ovid", relation=rel, evidence=sent, page="Ovid", source_page="Ovid")
    g.add_edge("Ovid", "Virgil", relation=rel, evidence=sent, page="Ovid", source_page="Ovid")
    ovid = _described("Ovid", "a Roman poet")
    ovid.relations.append((rel, "to_anchor", _named("Virgil")))
    died = Clue(
        "who died in the late 1st century BC", U.FUZZY_DATE, "8 BC", (("attr", "death"), ("lo", "-33"), ("hi", "-1"))
    )
    root = NodeSpec("Horace", facts=[died], relations=[(rel, "from_anchor", ovid)])
    assert unruled(src, verifier, root, "poet", g) == ["Virgil"]
    root.facts.append(Clue('whose name begins with "H"', U.PARTIAL_NAME, "Horace"))
    assert unruled(src, verifier, root, "poet", g) == []  # a hint at the name tells them apart


def test_an_unpaged_name_of_the_answers_kind_in_its_sentence_is_a_look_alike(src):
    # "Jordan has a small coastline along this inlet. Saudi Arabia is bordered by this inlet": Jordan's sentence names
    # the Gulf of Aqaba, an inlet by its name, which the sample has no page for
    verifier = Verifier(src)
    g = nx.Graph()
    root = NodeSpec("Red Sea")
    for anchor, words, rel in (
        ("Jordan", "small coastline", "{src} has a small coastline along {dst}"),
        ("Saudi Arabia", "bordered by the Red Sea", "{src} is bordered by {dst}"),
    ):
        sent = sentence_with(src, anchor, words)
        g.add_edge("Red Sea", anchor, relation=rel, evidence=sent, page=anchor, source_page=anchor)
        root.relations.append((rel, "from_anchor", _named(anchor)))
    assert src.resolve("Gulf of Aqaba") is None
    left = page_lookalikes(src, verifier, root, "inlet", g)
    assert "Gulf of Aqaba" in left and "Red Sea" not in left
    assert "Gulf of Aqaba" not in page_lookalikes(src, verifier, root, "country", g)  # a gulf is no country
    root.facts.append(Clue('whose name begins with "R"', U.PARTIAL_NAME, "Red Sea"))
    assert "Gulf of Aqaba" not in page_lookalikes(src, verifier, root, "inlet", g)
