"""Typed relations read from sentences, the prose the questions are written in, and the quality measures."""

from __future__ import annotations

import random
import re

import networkx as nx
import pytest

from tests.training.conftest import ulm_draft
from training.synth.compose.clue_builder import AnswerLeakError
from training.synth.compose.constraints import parse_clues
from training.synth.compose.prose import render
from training.synth.compose.templates import extend, generate_question
from training.synth.compose.uncertainty import UncertaintyType as U
from training.synth.compose.uncertainty import relational_clue
from training.synth.extract.relations import extract_relation, fill, infobox_template, is_text_relation, relation_words
from training.synth.graph.kg import Entity, KnowledgeGraph, edge_rank
from training.synth.graph.structures import Structure, classify_structure
from training.synth.verify.quality import nesting, quality, relation_kind, words

# --- reading a relation from a sentence ------------------------------------------------------------------


@pytest.mark.parametrize(
    "sentence, src, dst, want",
    [
        (
            "Ontario is the southernmost province of Canada.",
            ["Ontario"],
            ["Canada"],
            "{src} is the southernmost province of {dst}",
        ),
        ("He was born in Ulm in 1879.", ["Albert Einstein", "Einstein"], ["Ulm"], "{src} was born in {dst}"),
        (
            "In 1905, Einstein published four papers in Annalen der Physik.",
            ["Albert Einstein", "Einstein"],
            ["Annalen der Physik"],
            "{src} published four papers in {dst}",
        ),
        (
            "Its capital and largest city is Vilnius; other cities include Kaunas.",
            ["Lithuania"],
            ["Vilnius"],
            "{dst} is the capital of {src}",
        ),
        (
            "Paris is the capital and largest city of France, with 2 million residents.",
            ["Paris"],
            ["France"],
            "{src} is the capital of {dst}",
        ),
        (
            "Moscow, the most populous city in Europe, is the capital of Russia.",
            ["Russia"],
            ["Moscow"],
            "{dst} is the capital of {src}",
        ),
        ("It is bordered by Ecuador and Colombia to the north.", ["Peru"], ["Colombia"], "{src} is bordered by {dst}"),
        ("The city is located in central Malawi.", ["Lilongwe"], ["Malawi"], "{src} is located in {dst}"),
        (
            "It was written by Thucydides, an Athenian historian.",
            ["History of the Peloponnesian War"],
            ["Thucydides"],
            "{src} was written by {dst}",
        ),
    ],
)
def test_relations_read_from_sentences(sentence, src, dst, want):
    assert extract_relation(sentence, src, dst) == want


@pytest.mark.parametrize(
    "sentence, src, dst",
    [
        ("The world's earliest texts come from the Sumerian cities of Uruk.", ["Sumer"], ["Uruk"]),  # another subject
        ("Munich is the capital of Bavaria, Germany.", ["Munich"], ["Germany"]),  # the relation is with Bavaria
        ("It lies on Tokyo Bay, south of Tokyo.", ["Yokohama"], ["Tokyo"]),  # Tokyo Bay is not Tokyo
        ("Paris is located on the Seine, which flows into the English Channel.", ["Paris"], ["English Channel"]),
        ("Odysseus plays a key role in Homer's Iliad.", ["Odysseus"], ["Homer"]),  # a possessive, not Homer himself
        ("Bahrain is situated between Qatar and Saudi Arabia.", ["Bahrain"], ["Qatar"]),  # needs both objects
        ("Ireland is an island.", ["Ireland"], ["Europe"]),  # the target is not in the sentence
        ("Einstein is Einstein.", ["Einstein"], ["Einstein"]),
    ],
)
def test_sentences_without_a_readable_relation_give_none(sentence, src, dst):
    assert extract_relation(sentence, src, dst) is None


def test_templates_fill_and_infobox_fields_read_as_relations():
    rel = "{dst} was developed by {src}"
    assert is_text_relation(rel) and not is_text_relation("capital") and not is_text_relation("mention")
    assert fill(rel, "a physicist", "this theory") == "this theory was developed by a physicist"
    assert infobox_template("capital") == "{src}'s capital is {dst}"
    assert infobox_template("god of") == "{src} is the god of {dst}"
    assert relation_words("{dst} is the capital and largest city of {src}") == "capital largest city"
    assert relation_words("birth_place") == "birth place" and relation_words("mention") == ""
    anchor = relational_clue.__globals__["Clue"]("a city in Germany", U.OBFUSCATED_ENTITY, "Ulm")
    assert (
        relational_clue(anchor, "{src} was born in {dst}", anchor_is_source=False).text
        == "was born in a city in Germany"
    )
    assert (
        relational_clue(anchor, "{src} was born in {dst}", anchor_is_source=True).text
        == "such that a city in Germany was born in it"
    )
    assert (
        relational_clue(anchor, "god_of", anchor_is_source=True).text == "such that a city in Germany is the god of it"
    )


def test_a_typed_relation_wins_over_a_bare_link_either_way_round():
    kg = KnowledgeGraph()
    for t in ("Paris", "France"):
        kg.add_entity(Entity(t))
    kg.add_relation("France", "Paris", {"kind": "mention", "relation": "mention"})
    kg.add_relation("Paris", "France", {"kind": "mention", "relation": "{src} is the capital of {dst}"})
    data = kg.relation("Paris", "France")
    assert data["relation"] == "{src} is the capital of {dst}" and data["source_page"] == "Paris" and data["reciprocal"]
    assert set(data["by_source"]) == {"France", "Paris"}
    kg.add_relation("France", "Paris", {"kind": "infobox", "relation": "capital"})
    assert kg.relation("Paris", "France")["relation"] == "capital"  # an infobox field keeps its field
    assert (
        edge_rank({"kind": "infobox"})
        < edge_rank({"kind": "link", "relation": "{src} x {dst}"})
        < edge_rank({"kind": "link", "relation": "link"})
        < edge_rank({"kind": "mention", "relation": "mention"})
    )


# --- the prose, on every structure ----------------------------------------------------------------------

_DESC = {
    "A": "City in Germany",
    "B": "German-born theoretical physicist",
    "C": "Theory of gravitation",
    "D": "River in Europe",
    "E": "Country in Central Europe",
    "F": "Mountain range in Europe",
}
_SHAPES = {
    Structure.PATH: [("A", "B"), ("B", "C"), ("C", "D"), ("D", "E")],
    Structure.STAR: [("A", "B"), ("A", "C"), ("A", "D"), ("A", "E")],
    Structure.TREE: [("A", "B"), ("B", "C"), ("B", "D"), ("D", "E"), ("D", "F")],
    Structure.CYCLE: [("A", "B"), ("B", "C"), ("C", "D"), ("D", "A")],
    Structure.DENSE: [("A", "B"), ("B", "C"), ("C", "A"), ("C", "D"), ("D", "A"), ("D", "E")],
}
_RELATIONS = [
    "{src} was born in {dst}",
    "{dst} was developed by {src}",
    "{src} flows through {dst}",
    "capital",
    "god_of",
    "mention",
    "link",
    "{dst} is the capital and largest city of {src}",
]


def _shape(structure: Structure, seed: int) -> tuple[nx.Graph, dict[str, Entity]]:
    rng = random.Random(seed)
    g = nx.Graph()
    for u, v in _SHAPES[structure]:
        rel = rng.choice(_RELATIONS)
        g.add_edge(
            u,
            v,
            source_page=u,
            target_page=v,
            relation=rel,
            kind="infobox" if "{" not in rel and rel not in ("mention", "link") else "link",
        )
    ents = {n: Entity(n, description=_DESC[n], first_sentence=f"{n} is a thing.") for n in g}
    for n in g:
        g.nodes[n]["corpus_degree"] = 3 + len(n)
    return g, ents


_SENTENCE_END = re.compile(r"[.?]$")


@pytest.mark.parametrize(
    "structure", [Structure.PATH, Structure.STAR, Structure.TREE, Structure.CYCLE, Structure.DENSE]
)
def test_every_structure_reads_as_short_grammatical_sentences(structure):
    seen = 0
    for seed in range(12):
        g, ents = _shape(structure, seed)
        assert classify_structure(g) is structure
        for target in sorted(g):
            try:
                d = generate_question(g, target, ents, random.Random(seed), kg=g, named_prob=0.3)
                d = extend(d, len(d.extras))
            except AnswerLeakError:
                continue
            seen += 1
            q = d.question
            assert "{" not in q and "}" not in q and "  " not in q, q
            assert not re.search(r"\b(\w+) \1\b", q, re.IGNORECASE), q  # "of of", "the the"
            assert not re.search(r"\bit's\b|'s's\b|\ba an?\b|\ban? the\b", q, re.IGNORECASE), q
            sentences = re.split(r"(?<=[.?])\s+", q)
            assert len(sentences) >= 2 and sentences[-1].endswith(("?", ".")), q
            for s in sentences:
                assert s[0].isupper() and _SENTENCE_END.search(s), (s, q)
            assert nesting(q) <= 2, q
            assert "mentioned in the article on" not in q or any(
                e[2]["relation"] in ("mention", "link") for e in g.edges(data=True)
            ), q
            root = parse_clues(d.answer, d.clues)  # the prose says what the clue tree says
            assert len(root.relations) + len(root.counts) == len(
                [c for c in d.clues if c.type in (U.RELATIONAL, U.COUNTING)]
            )
    assert seen >= 30


def test_prose_refers_back_to_entities_and_uses_the_relation_verbs():
    d, _ = ulm_draft()
    root = parse_clues(d.answer, d.clues)
    q = render(root, d.head, form="which", persons=("Albert Einstein",))
    assert q == (
        "A German-born theoretical physicist was born in this city. A theory of gravitation was developed by "
        "the physicist. Which city is this?"
    )
    assert render(root, d.head, form="name").endswith("Name this city.")
    assert render(root, d.head, form="which", order="first", persons=("Albert Einstein",)) == (
        "Which city is described here? A German-born theoretical physicist was born in this city. A theory of "
        "gravitation was developed by the physicist."
    )
    assert render(root, d.head, form="name", order="first").startswith("Name the city described here. ")
    with pytest.raises(ValueError, match="order one of"):
        render(root, d.head, order="middle")


# --- quality measures --------------------------------------------------------------------------------------


def test_quality_counts_relation_kinds_lengths_and_nesting():
    old = {
        "question": "Which city whose article mentions a river that is long, mentioned in the article on X?",
        "subgraph": {"edges": [{"relation": "mention"}, {"relation": "capital"}]},
        "clues": [
            {"type": "relational", "text": "whose article mentions a river"},
            {"type": "relational", "text": "whose capital is X"},
            {"type": "type", "text": "is a city"},
        ],
    }
    new = {
        "question": "This city was founded by a king. It lies on a river. Which city is this?",
        "subgraph": {"edges": [{"relation": "{src} was founded by {dst}"}, {"relation": "link"}]},
        "clues": [
            {"type": "relational", "text": "was founded by a king", "relation": "{src} was founded by {dst}"},
            {"type": "relational", "text": "whose article mentions a river", "relation": "link"},
        ],
    }
    q = quality([old, new])
    assert q["edge_relations"] == {"infobox": 1, "link": 1, "mention": 1, "text": 1}
    assert q["relational_clue_kinds"] == {"infobox": 1, "link": 1, "mention": 1, "text": 1}
    assert q["typed_clue_share"] == 0.25 and q["typed_or_infobox_share"] == 0.5
    assert nesting(old["question"]) == 3 and nesting(new["question"]) == 0 and q["nesting_over_2"] == 1
    assert words(new["question"]) == 16 and q["question_words_max"] == 16
    assert relation_kind("{src} x {dst}") == "text" and relation_kind("birth_place") == "infobox"
