"""SailorFog-QA for transfer: every clue a fact a page states, whole-word name hints, floors per type, --min-hops."""

from __future__ import annotations

import argparse
import re

import networkx as nx
import pytest

from training.synth.compose.clues import Clue
from training.synth.compose.clues import UncertaintyType as U
from training.synth.compose.structural import NAME_HINTS, closing_text
from training.synth.compose.transfer import link_dependent, list_size, listed_count, typed_view
from training.synth.graph.kg import KnowledgeGraph
from training.synth.outputs.records import Difficulty

_LINK_WORDS = ("article mentions", "mentioned in the article", "entities linked with", "are also linked")
_HINT = re.compile(r'whose name begins with "[A-Z0-9]"|whose name is a single word|whose name is \d+ words long')


# --- units -------------------------------------------------------------------------------------------------


def test_list_size_counts_the_items_a_sentence_lists():
    s = "Burkina Faso is bordered by Mali, Niger, Benin, Togo, Ghana and Ivory Coast."
    assert [list_size(s, x) for x in ("Mali", "Benin", "Ivory Coast")] == [6, 6, 6]
    assert list_size(s, "Burkina Faso") == 0  # the subject is no item of the list
    assert list_size("It is bordered by Ghana, Benin and Niger to the north.", "Niger") == 3
    assert list_size("Paris is the capital of France and its largest city.", "France") == 0
    assert list_size("He was born in Ulm, Germany.", "Ulm") == 0  # two items are no list


def test_listed_count_reads_sentences_and_infobox_lists_only():
    text = {
        "kind": "mention",
        "relation": "{src} is bordered by {dst}",
        "anchor": "Benin",
        "evidence": "Togo is bordered by Ghana, Benin and Burkina Faso.",
    }
    assert listed_count(text, "Benin", {}) == 3
    assert listed_count({**text, "relation": "mention"}, "Benin", {}) == 0  # an untyped edge is never counted
    box = {"kind": "infobox", "relation": "languages", "anchor": "French"}
    assert listed_count(box, "French", {"languages": "French, Dutch, German"}) == 3
    assert listed_count({**box, "relation": "birth_place"}, "French", {"birth_place": "A, B, French"}) == 0


def test_typed_view_drops_links_and_mentions():
    g = nx.Graph()
    g.add_edge("A", "B", kind="link", relation="link", source_page="A", target_page="B")
    g.add_edge("B", "C", kind="mention", relation="{src} is the capital of {dst}", source_page="B", target_page="C")
    g.add_edge("C", "D", kind="infobox", relation="capital", source_page="C", target_page="D")
    view = typed_view(KnowledgeGraph(g)).graph
    assert set(map(frozenset, view.edges)) == {frozenset("BC"), frozenset("CD")} and "A" not in view
    assert view.nodes["C"]["degree"] == 2


def test_closing_relation_is_stated_with_its_relation_and_links_never():
    refs = {"P": "the physicist", "C": "the city"}
    attrs = {"source_page": "P", "target_page": "C", "relation": "{src} was born in {dst}", "kind": "mention"}
    assert closing_text(attrs, refs) == "where the physicist was born in the city"
    assert closing_text({**attrs, "relation": "link", "kind": "link"}, refs) is None


def test_link_dependence_and_hard_level():
    assert link_dependent({"type": "relational", "relation": "mention", "text": "whose article mentions X"})
    assert link_dependent({"type": "counting", "relation": "", "text": "among the 5 entities linked with X"})
    assert not link_dependent({"type": "relational", "relation": "{src} is bordered by {dst}", "text": "borders X"})
    assert Difficulty.of(4, 3, 3, 4, searches=4, tries=6).level == "hard"
    assert Difficulty.of(4, 3, 2, 4, searches=5, tries=12).level == "medium"  # two hops are never hard
    assert Difficulty.of(4, 3, 3, 4, searches=3, tries=12).level == "medium"  # nor three searches
    assert NAME_HINTS == ("initial", "words")


# --- the synthesised records ---------------------------------------------------------------------------------


def test_no_clue_depends_on_the_link_graph(synth_run):
    records, _ = synth_run
    for r in records:
        assert r["transfer"]["link_graph"] == 0 and r["transfer"]["link_share"] == 0.0
        assert not any(link_dependent(c) for c in r["clues"]), r["clues"]
        for e in r["subgraph"]["edges"]:  # every relation of the subgraph is stated by a sentence or a field
            assert e["kind"] == "infobox" or "{src}" in e["relation"], e
        assert 0 <= r["transfer"]["evidence_found"] <= r["transfer"]["clues"]


def test_no_mentions_no_category_fallbacks_and_whole_word_name_hints(synth_run):
    records, _ = synth_run
    for r in records:
        texts = [r["question"], *(c["text"] for c in r["clues"])]
        for t in texts:
            assert not any(w in t for w in _LINK_WORDS), t
            assert "entity related to" not in t and "a certain entity" not in t, t
            assert "starts with" not in t and not re.search(r"name has \d+ letters", t), t
        for c in r["clues"]:
            if c["type"] == "partial_name":
                assert _HINT.fullmatch(c["text"]), c


def test_card_reports_floors_per_type_and_the_transfer_check(synth_run):
    from training.synth.compose.coverage import FLOORS
    from training.synth.outputs.write import build_card, render_card

    records, rep = synth_run
    card = build_card(records, rep)
    floors = card["type_floors"]
    assert (
        set(floors)
        == set(FLOORS)
        == {"fuzzy_date", "fuzzy_number", "negation", "temporal_order", "counting", "partial_name"}
    )
    for t, f in floors.items():
        assert f["questions"] == sum(t in r["uncertainty_types"] for r in records)
        assert f["met"] == (f["share"] >= f["floor"]) and bool(f["reason"]) == (not f["met"])
    assert card["transfer"]["questions"] == len(records) and card["transfer"]["link_share_mean"] == 0.0
    md = render_card(card)
    assert "## Uncertainty types: floors" in md and "## Transfer check" in md
    assert "## Read against its pages" in md and "clue precision" in md  # the latest reading, with its sample size


def test_min_hops_is_respected_and_checked(sample_index, small_config):
    from simweb_core.cli import given_flags
    from training.synth.cli import add_arguments
    from training.synth.config import SynthConfig
    from training.synth.pipeline import generate

    deep = generate(sample_index, n=4, seed=0, config=small_config, min_hops=3)
    assert deep and all(r["difficulty"]["hops"] >= 3 for r in deep)
    with pytest.raises(ValueError, match="min_hops"):
        SynthConfig(min_hops=5, sizes=(3, 4, 5))
    p = argparse.ArgumentParser()
    add_arguments(p)
    assert given_flags(p.parse_args(["--min-hops", "3"])) == {"min_hops": 3}
    assert given_flags(p.parse_args([])) == {} and SynthConfig().min_hops == 1  # not given: the config's default


def test_same_seed_gives_the_same_bytes(synth_run, sample_index, small_config, tmp_path):
    from training.synth.outputs.write import write_jsonl
    from training.synth.pipeline import generate

    records, _ = synth_run
    write_jsonl(records, tmp_path / "a.jsonl")
    write_jsonl(generate(sample_index, n=12, seed=0, config=small_config), tmp_path / "b.jsonl")
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()


def test_counting_clue_round_trips_through_the_tree():
    from training.synth.compose.constraints import flatten, parse_clues
    from training.synth.compose.prose import render

    anchor = Clue("a country in West Africa", U.OBFUSCATED_ENTITY, "Togo", (("source", "description"),))
    rel = Clue(
        "such that a country in West Africa is bordered by it (one of 3 named together on that page)",
        U.RELATIONAL,
        "Togo",
        (("relation", "{src} is bordered by {dst}"), ("direction", "from_anchor"), ("listed", "3")),
        (anchor,),
    )
    root = parse_clues("Benin", [rel])
    assert root.relations[0][2].listed == 3
    kinds = [c["type"] for c in flatten(root, "country")]
    assert "counting" in kinds and "relational" in kinds
    assert "(one of 3 named together on that page)" in render(root, "country")
