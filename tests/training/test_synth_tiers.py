"""Curriculum tiers (``lookup``, ``bridge``) on the real sample index: gates, records, the oracle, the CLI."""

from __future__ import annotations

import json

import pytest

from training.synth.tiers import Fact, TierConfig, _lists_others, ask, generate_tier, tier_card


@pytest.fixture(scope="module")
def lookup(sample_index):
    return generate_tier(sample_index, TierConfig(tier="lookup", n=60, test_fraction=0.3))


@pytest.fixture(scope="module")
def bridge(sample_index):
    return generate_tier(sample_index, TierConfig(tier="bridge", n=20, test_fraction=0.3))


def test_a_list_in_the_evidence_is_not_a_functional_fact():
    others = ["Ghana", "Benin", "Burkina Faso", "Togo"]
    assert _lists_others("It is bordered by Ghana to the west, Benin and Burkina Faso.", "Benin", others)
    assert _lists_others("Borders: Ghana, Benin, Burkina Faso.", "Ghana", others)
    assert not _lists_others("Bucharest is the capital and largest city of Romania.", "Romania", ["Romania", "Danube"])


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
    from training.synth.gates import sim_search
    from wiki_index.search.index import WikiIndex

    records, report = bridge
    assert records, report.funnel
    search = sim_search(SimBackend(WikiIndex.from_dir(sample_index)), 10)
    for r in records:
        assert r["tier"] == "bridge" and r["difficulty"]["oracle_searches"] == 2
        a, c = r["provenance"][0]["object"], r["answer"]
        assert a.lower() not in r["question"].lower() and c.lower() not in r["question"].lower()
        assert c not in search(r["question"])  # the first search does not find the answer page
        assert a in search(r["clues"][0]["query"]) and c in search(r["clues"][1]["query"])


@pytest.mark.parametrize(
    "policy, turns, visits",
    [
        ("oracle", [3, 5], True),  # lookup: search, visit, answer; bridge: two of each, then the answer
        ("oracle:search", [2, 3], False),  # answers from the search results: one search (lookup) or two (bridge)
    ],
)
def test_the_oracle_solves_both_tiers(lookup, bridge, sample_index, tmp_path, policy, turns, visits):
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
            tools=("search", "visit"),
            progress=False,
        )
    )
    assert res.metrics["pass@1"] == 1.0
    recs = [json.loads(line) for line in (res.out / "trajectories.jsonl").read_text().splitlines()]
    assert sorted({r["turns"] for r in recs}) == turns
    assert any(r["tool_calls"].get("visit", 0) for r in recs) == visits
    assert (res.out / "sft.jsonl").is_file()  # oracle runs write SFT demonstrations


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
