"""Curriculum tiers (``lookup``, ``bridge``) on the real sample index: gates, records, the oracle, the CLI."""

from __future__ import annotations

import json
import re

import pytest

from training.synth.tiers.facts import Fact, lists_others, qualified, reverse_relation
from training.synth.tiers.generate import TierConfig, ask, generate_tier, tier_card
from training.synth.tiers.split import answer_names, answer_overlap


@pytest.fixture(scope="module")
def lookup(sample_index):
    return generate_tier(sample_index, TierConfig(tier="lookup", n=60, test_fraction=0.3))


@pytest.fixture(scope="module")
def bridge(sample_index):
    return generate_tier(sample_index, TierConfig(tier="bridge", n=20, test_fraction=0.3))


def test_a_list_in_the_evidence_is_not_a_functional_fact():
    others = ["Ghana", "Benin", "Burkina Faso", "Togo"]
    assert lists_others("It is bordered by Ghana to the west, Benin and Burkina Faso.", "Benin", others)
    assert lists_others("Borders: Ghana, Benin, Burkina Faso.", "Ghana", others)
    assert not lists_others("Bucharest is the capital and largest city of Romania.", "Romania", ["Romania", "Danube"])
    # the last item of a list is one of many too
    seas = ["Denmark Strait", "Greenland Sea", "Norwegian Sea", "Barents Sea"]
    assert lists_others(
        "It connects through the Denmark Strait, Greenland Sea, Norwegian Sea and Barents Sea.", "Barents Sea", seas
    )
    assert not lists_others("Oslo is the capital and most populous city of Norway.", "Norway", ["Norway", "Sweden"])


@pytest.mark.parametrize(
    ("relation", "subject", "obj", "sentence", "expected"),
    [
        (
            "{dst} was the first monarch of {src}",
            "France",
            "Henry IV of France",
            "He was the first monarch of France from the House of Bourbon, a cadet branch of the Capetian dynasty.",
            True,
        ),
        (
            "{dst} is the largest city in {src}",
            "Germany",
            "Munich",
            "Munich is the largest city in Germany that is not a state of its own.",
            True,
        ),
        (
            "{src} is the head coach of {dst}",
            "Zinedine Zidane",
            "France",
            "He is the head coach of the France national team.",
            True,
        ),
        (
            "{dst} is the highest mountain in {src}",
            "Europe",
            "Mont Blanc",
            "It is the highest mountain in Europe outside the Caucasus Mountains.",
            True,
        ),
        (
            "{dst} is the largest city in {src}",
            "Thailand",
            "Chiang Mai",
            "Chiang Mai is the largest city in northern Thailand.",
            True,
        ),
        (
            "{src} was the largest in {dst}",
            "House of Medici",
            "Europe",
            "This bank was the largest in Europe in the 15th century.",
            True,
        ),
        ("{dst} is the capital of {src}", "Shandong", "Jinan", "Jinan is the capital of the Shandong province.", False),
        (
            "{dst} is the westernmost region of {src}",
            "Africa",
            "West Africa",
            "West Africa, also known as Western Africa, is the westernmost region of Africa.",
            False,
        ),
        (
            "{dst} is the fourth-largest city in {src}",
            "Nigeria",
            "Benin City",
            "It is the fourth-largest city in Nigeria according to the 2006 census.",
            False,
        ),
        ("{src} is a state in {dst}", "Uttar Pradesh", "India", "Uttar Pradesh is a state in northern India.", False),
    ],
)
def test_a_definite_fact_whose_sentence_narrows_its_entity_does_not_hold(relation, subject, obj, sentence, expected):
    # "the largest city in central India" is not the largest city in India; "a state in northern India" is one of
    # India's states (not a definite phrase: not judged)
    assert qualified(Fact(subject, obj, relation, "link", sentence, None)) is expected


def test_ask_puts_the_asked_role_where_the_relation_has_it():
    f = Fact("Bucharest", "Romania", "{src} is the capital of {dst}", "link", "", None)
    assert ask(f, "Bucharest", "which country") == "Bucharest is the capital of which country"
    g = Fact("Lithuania", "Vilnius", "{dst} is the capital of {src}", "link", "", None)
    assert ask(g, "Lithuania", "which city") == "which city is the capital of Lithuania"
    h = Fact("France", "Paris", "capital", "infobox", "capital = Paris", None)
    assert ask(h, "France", "which city") == "what is the capital of France"


def test_lookup_records_pass_their_gates(lookup):
    records, report = lookup
    assert len(records) == 60
    for r in records:
        assert r["tier"] == "lookup" and r["question"].endswith("?")
        assert r["answer"].lower() not in r["question"].lower()  # no leak
        assert r["difficulty"]["oracle_searches"] == 1 and len(r["clues"]) == 1
        assert r["provenance"][0]["sentence"]  # every fact is backed by its sentence or field
        assert r["split"] in ("train", "test")
    assert len({r["id"] for r in records}) == len(records)
    assert {r["split"] for r in records} == {"train", "test"}
    card = tier_card(records, report)
    assert card["records"] == 60 and card["oracle_searches_mean"] == 1.0
    assert 0 < card["question_retrieves_answer_rate"] <= 1


def test_lookup_is_deterministic(sample_index, lookup):
    again, _ = generate_tier(sample_index, TierConfig(tier="lookup", n=60, test_fraction=0.3))
    assert [r["id"] for r in again] == [r["id"] for r in lookup[0]]


def test_bridge_records_hide_the_answer_from_the_first_search(bridge, sample_index):
    from sim_web.backends.sim import SimBackend
    from training.synth.tiers.generate import ResultView
    from wiki_index.search.index import WikiIndex

    records, report = bridge
    assert records, report.funnel
    view = ResultView(SimBackend(WikiIndex.from_dir(sample_index)), 10)
    for r in records:
        assert r["tier"] == "bridge" and r["difficulty"]["oracle_searches"] == 2
        a, c = r["provenance"][0]["object"], r["answer"]
        words = f" {' '.join(re.findall(r'[a-z0-9]+', r['question'].lower()))} "
        assert all(f" {' '.join(re.findall(r'[a-z0-9]+', t.lower()))} " not in words for t in (a, c))  # no leak
        assert c not in view.titles(r["question"])  # the first search does not find the answer page
        # each hop's search shows the next entity: as a result, or named in a result's snippet
        assert view.shows(r["clues"][0]["query"], a) and view.shows(r["clues"][1]["query"], c)


def test_no_question_restates_its_answer(bridge, lookup):
    # RewardConfig.echo_penalty charges a wrong answer whose words are in the question: it relies on this
    from sim_web.env.rewards import echoes_question

    for r in bridge[0] + lookup[0]:
        assert not any(echoes_question(a, r["question"]) for a in (r["answer"], *r["aliases"])), r["question"]


def test_result_view_reads_names_in_snippets_as_whole_words(sample_index):
    from sim_web.backends.sim import SimBackend
    from training.synth.tiers.generate import ResultView
    from wiki_index.search.index import WikiIndex

    view = ResultView(SimBackend(WikiIndex.from_dir(sample_index)), 5)
    top = view.titles("Kabul is the capital of a country")
    assert "Kabul" in top and view.shows("Kabul is the capital of a country", "Afghanistan")
    assert not view.shows("Kabul is the capital of a country", "Afghan")  # a part of a word is not a name
    assert view.searches == 1  # cached


def test_reverse_facts_read_a_definite_relation_from_its_object(sample_index):
    from training.synth.graph.store_source import StoreSource
    from training.synth.tiers.facts import definite_reverse_facts
    from training.synth.tiers.generate import TierReport
    from wiki_index.search.index import WikiIndex

    assert reverse_relation("{src} is the capital of {dst}", True) == ("{dst} is the capital of {src}", True)
    assert reverse_relation("{dst} is the capital of {src}", True) == ("{dst} is the capital of {src}", False)
    assert reverse_relation("{src} is a city in {dst}", True) is None  # indefinite: many cities per country
    assert reverse_relation("{src} is the art of {dst}", True) is None  # not one thing per object
    src = StoreSource(WikiIndex.from_dir(sample_index).store)
    rep = TierReport()
    facts = definite_reverse_facts(src, ["Vientiane", "Luang Prabang", "Laos"], rep)
    (fact,) = [f for f in facts.get("Laos", []) if f.obj == "Vientiane"]
    assert fact.direction == "reverse" and ask(fact, "Laos", "which city") == "which city is the capital of Laos"
    assert rep.facts["reverse_functional"] >= 1


def test_the_split_keeps_every_answer_name_on_one_side(bridge, lookup):
    records = bridge[0] + lookup[0]
    for tier_records in (bridge[0], lookup[0]):  # each tier's own split, drawn by answer
        assert answer_overlap(tier_records)["test_answer_in_train"] == 0
        assert {r["split"] for r in tier_records} == {"train", "test"}
    from training.synth.tiers.split import answer_disjoint_split

    answer_disjoint_split(records, {"lookup": 0.3, "bridge": 0.5}, seed=3)  # across tiers, as sim-web learn draws it
    assert answer_overlap(records)["test_answer_in_train"] == 0
    held = [r for r in records if r["split"] == "test"]
    assert 0 < len(held) < len(records)


def test_answer_names_join_aliases_and_the_disjoint_split_honours_them():
    from training.synth.tiers.split import answer_disjoint_split

    recs = [
        {"id": "a", "answer": "United Kingdom", "aliases": ["UK"], "tier": "lookup"},
        {"id": "b", "answer": "UK", "aliases": [], "tier": "lookup"},
        {"id": "c", "answer": "Peru", "aliases": [], "tier": "lookup"},
        {"id": "d", "answer": "Chile", "aliases": [], "tier": "lookup"},
    ]
    assert answer_names(recs[0]) == {"united kingdom", "uk"}
    for seed in range(6):
        answer_disjoint_split(recs, 0.5, seed)
        assert recs[0]["split"] == recs[1]["split"]  # linked by the alias "UK"
        assert answer_overlap(recs)["test_answer_in_train"] == 0
        assert sum(r["split"] == "test" for r in recs) <= 2  # at or under the share asked for


@pytest.mark.parametrize(
    "policy, turns, visits",
    [
        # lookup: search, visit, answer; bridge: two of each, then the answer (one visit fewer when the first search
        # names the bridge entity only in a snippet)
        ("oracle", [3, 4, 5], True),
        ("oracle:search", [2, 3], False),  # answers from the search results: one search (lookup) or two (bridge)
        ("oracle:plan", [2, 3], False),  # the same, its first thought saying how many facts the question chains
        ("oracle:quote", [2, 3], False),  # oracle:plan whose later thoughts count the facts and quote the results
    ],
)
def test_the_oracle_solves_both_tiers(lookup, bridge, sample_index, tmp_path, policy, turns, visits):
    from dataclasses import replace

    from agents.eval_config import eval_env
    from agents.harness import EvalConfig, run_eval

    path = tmp_path / "tiers.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lookup[0][:8] + bridge[0][:4]), encoding="utf-8")
    res = run_eval(
        EvalConfig(
            policy=policy,
            index_dir=str(sample_index),
            tasks=str(path),
            split=None,
            out=str(tmp_path / "run"),
            env=replace(eval_env(), tools=("search", "visit")),
            progress=False,
        )
    )
    assert res.metrics["pass@1"] == 1.0
    recs = [json.loads(line) for line in (res.out / "trajectories.jsonl").read_text().splitlines()]
    assert {r["turns"] for r in recs} <= set(turns) and min(r["turns"] for r in recs) == turns[0]
    assert any(r["tool_calls"].get("visit", 0) for r in recs) == visits
    assert (res.out / "sft.jsonl").is_file()  # oracle runs write SFT demonstrations
    plans = {r["steps"][0]["action"].split("</think>")[0] for r in recs}
    if policy == "oracle:quote":  # every later thought counts the facts and quotes words of the results it follows
        for r in recs:
            said = [m["content"] for m in r["messages"] if m["role"] == "assistant"][1:]
            seen_before = [m["content"] for m in r["messages"] if m["role"] == "user"][1:]  # the tool responses
            facts = r["metadata"]["difficulty"]["oracle_searches"]
            assert [t.split(":")[0] for t in said] == [f"<think>Fact {i} of {facts}" for i in range(1, facts + 1)]
            for turn, seen in zip(said, seen_before, strict=True):
                quote = re.search(r': "(.+?)", so ', turn)
                assert quote and quote.group(1) in " ".join(seen.replace('"', "'").split()), (turn, seen)
            assert said[-1].endswith(f"so the answer is {r['gold']}.</think>\n<answer>{r['gold']}</answer>")
    if policy in (
        "oracle:plan",
        "oracle:quote",
    ):  # the plan matches the task's hops, and is the only thing that differs
        for r in recs:
            facts = {1: "asks one fact", 2: "chains two facts"}[r["metadata"]["difficulty"]["oracle_searches"]]
            assert facts in r["steps"][0]["action"]
            assert "every search" not in r["messages"][-1]["content"]  # a chain's answer is no overlap of its searches
        assert len(plans) == 2
    elif policy == "oracle:search":
        assert plans == {"<think>I search for the first fact."}


def test_cli_writes_the_tier_and_its_card(sample_index, tmp_path, capsys):
    from training.synth.cli import main

    out = tmp_path / "lookup.jsonl"
    assert main(["--index", str(sample_index), "--tier", "lookup", "--n", "5", "--out", str(out), "--quiet"]) == 0
    assert len(out.read_text().splitlines()) == 5
    card = json.loads((tmp_path / "lookup.card.json").read_text())
    assert card["tier"] == "lookup" and card["records"] == 5
    assert (tmp_path / "lookup.card.md").read_text().startswith("# Task set: tier `lookup`")


def test_the_loop_moves_up_the_tiers_as_its_target_rises(sample_index):
    from training.loop.steer import SynthSource, Target, tier_for

    tiers = ("lookup", "bridge", "sailorfog")
    assert [tier_for(Target(s), tiers) for s in (0.5, 1.4, 2.0, 3.0, 6.0)] == [
        "lookup",
        "lookup",
        "bridge",
        "sailorfog",
        "sailorfog",
    ]
    assert tier_for(None, tiers) == "lookup" and tier_for(Target(6.0), ("lookup", "bridge")) == "bridge"
    src = SynthSource(sample_index, tiers=("lookup", "bridge"), k=10)
    easy = src(3, seed=1, target=Target(1.0))
    hard = src(3, seed=2, target=Target(2.2))
    assert [r["tier"] for r in easy] == ["lookup"] * 3 and [r["tier"] for r in hard] == ["bridge"] * 3
    assert all(r["split"] == "train" for r in easy + hard) and [c["tier"] for c in src.calls] == ["lookup", "bridge"]
    with pytest.raises(ValueError, match="tiers"):
        SynthSource(sample_index, tiers=("nope",))
