"""Question forms of the lookup and bridge tiers: every form reads well, a train task never gets an unseen form, and
the oracle (and the strongest script) still solve every form on the real sample index."""

from __future__ import annotations

import json
import random
from dataclasses import replace

import pytest

from training.synth.tiers.facts import Fact
from training.synth.tiers.forms import (
    ALL_FORMS,
    FORMS,
    bridge_forms,
    lookup_forms,
    relative_ref,
    reword,
    settle_forms,
)
from training.synth.tiers.generate import TierConfig, ask, generate_tier


def _ask(fact):
    return lambda s, a: ask(fact, s, a)


def test_a_lookup_question_has_six_forms_that_name_the_same_fact():
    f = Fact("Bucharest", "Romania", "{src} is the capital of {dst}", "link", "", None)
    forms = lookup_forms(_ask(f), "Bucharest", "country", "which country", "country in Southeast Europe")
    assert forms == {
        "template": "Bucharest is the capital of which country?",
        "clue_order": "Bucharest is the capital of a country. Which country is it?",
        "relative": "What is the country that Bucharest is the capital of?",
        "described": "Bucharest is the capital of which country in Southeast Europe?",
        "reworded": "Bucharest serves as the capital of what country?",
        "what": "Bucharest is the capital of what country?",
    }


def test_a_bridge_question_has_eight_forms_and_the_clue_can_come_after_the_question():
    a = Fact("Kabul", "Afghanistan", "{src} is the capital of {dst}", "link", "", None)
    b = Fact("Afghanistan", "Herat", "{dst} is the third-largest city in {src}", "link", "", None)
    forms = bridge_forms(_ask(a), _ask(b), "Kabul", "country", "which city", "country in South Asia", random.Random(0))
    assert set(forms) == set(ALL_FORMS)
    assert (
        forms["template"] == "Kabul is the capital of a country. Which city is the third-largest city in that country?"
    )
    assert forms["clue_order"].startswith("Which city is the third-largest city in the ")
    assert forms["clue_order"].endswith("? Kabul is the capital of that country.")
    assert forms["relative"] == "Which city is the third-largest city in the country that Kabul is the capital of?"
    assert forms["joined"].endswith(
        " Kabul is the capital of a country, which city is the third-largest city in that country?"
    )
    assert forms["joined"].split(" Kabul ")[0] in ("Given that", "If", "Knowing that")
    assert forms["described"].endswith("Which city is the third-largest city in this country in South Asia?")
    assert forms["parenthetical"] == (
        "Which city is the third-largest city in the country (Kabul is the capital of that country)?"
    )
    assert forms["reworded"] == (
        "Kabul serves as the capital of a country. What city ranks as the third-largest city in that country?"
    )
    assert forms["what"] == "Kabul is the capital of a country. What city is the third-largest city in that country?"


def test_forms_that_do_not_apply_are_left_out():
    assert reword("Mars orbits the Sun") is None
    assert relative_ref("Romania's capital is \x00", "city") is None  # an infobox field: no relative clause
    assert relative_ref("\x00 is the capital of Laos", "city") == "the city that is the capital of Laos"
    f = Fact("Tungsten", "Earth", "{src} orbits {dst}", "link", "", None)
    forms = lookup_forms(_ask(f), "Tungsten", "planet", "which planet", None)
    assert "described" not in forms and "reworded" not in forms and len(forms) == 4
    person = Fact("Plato", "Socrates", "{src} was a student of {dst}", "link", "", None)
    assert "what" not in lookup_forms(_ask(person), "Plato", "person", "who", None)  # no "which" to change


def test_settle_never_gives_a_train_record_an_unseen_form():
    variants = {f: {"question": f"{f}?", "top10_question": False} for f in FORMS}
    recs = [
        {"id": f"r{i}", "split": "train" if i % 2 else "test", "difficulty": {}, "variants": dict(variants)}
        for i in range(200)
    ]
    recs.append({"id": "x", "split": "train", "difficulty": {}, "variants": {"relative": {"question": "r?"}}})
    out = settle_forms(recs, ("relative", "reworded"), seed=1)
    assert len(out) == 200  # the train record with only an unseen form is dropped
    assert all(r["form"] not in ("relative", "reworded") for r in out if r["split"] == "train")
    assert {r["form"] for r in out if r["split"] == "test"} == set(FORMS)
    assert all(r["question"] == f"{r['form']}?" and "variants" not in r for r in out)
    assert all(r["form_seen"] == (r["form"] not in ("relative", "reworded")) for r in out)


@pytest.fixture(scope="module")
def unsettled(sample_index):
    """Lookup and bridge records with every form's variant kept, the opt-in ones too (k=5, 160-character snippets, as
    sim-web learn)."""
    common = dict(k=5, snippet_chars=160, test_fraction=0.5, settle=False, forms=ALL_FORMS)
    lookup, _ = generate_tier(sample_index, TierConfig(tier="lookup", n=8, **common))
    bridge, rep = generate_tier(sample_index, TierConfig(tier="bridge", n=40, **common))
    return lookup, bridge, rep


def test_the_sample_gives_every_form_and_the_settled_split_is_form_disjoint(unsettled):
    import copy

    _, bridge, rep = unsettled
    assert {f for r in bridge for f in r["variants"]} == set(ALL_FORMS)
    records = settle_forms(copy.deepcopy(bridge), ("relative", "reworded"), seed=0, report=rep.funnel)
    train = {r["form"] for r in records if r["split"] == "train"}
    assert train and not train & {"relative", "reworded"}
    assert {r["form"] for r in records if r["split"] == "test"} & {"relative", "reworded"}
    assert sum(rep.funnel[f"form_{f}"] for f in ALL_FORMS) == len(records) == len(bridge)


def test_an_opt_in_form_is_drawn_only_when_the_settings_name_it(unsettled):
    import copy

    _, bridge, _ = unsettled
    assert not {"parenthetical", "what"} & set(FORMS) and TierConfig().forms == FORMS
    default = copy.deepcopy(bridge)
    for r in default:  # what the generator keeps with the default forms
        r["variants"] = {f: v for f, v in r["variants"].items() if f in FORMS}
    drawn = {r["id"]: r["form"] for r in settle_forms(default, ("relative", "reworded"), seed=0)}
    assert not {"parenthetical", "what"} & set(drawn.values())
    with_them = settle_forms(copy.deepcopy(bridge), ("relative", "reworded"), seed=0)
    assert {"parenthetical", "what"} <= {r["form"] for r in with_them}


def _per_form_tasks(records, tmp_path):
    rows = []
    for r in records:
        for form, v in r["variants"].items():
            rows.append(
                {
                    **{k: x for k, x in r.items() if k != "variants"},
                    "id": f"{r['id']}-{form}",
                    "form": form,
                    "question": v["question"],
                }
            )
    path = tmp_path / "forms.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in rows), encoding="utf-8")
    return path, rows


def _run(policy, path, sample_index, out):
    from agents.eval_config import eval_env
    from agents.harness import EvalConfig, run_eval

    env = replace(eval_env(), tools=("search", "visit"), search_results=5)
    env = replace(env, sim=replace(env.sim, snippet_chars=160))
    res = run_eval(
        EvalConfig(
            policy=policy,
            index_dir=str(sample_index),
            tasks=str(path),
            split=None,
            out=str(out),
            env=env,
            progress=False,
        )
    )
    return {r["task_id"]: r for r in (json.loads(x) for x in (res.out / "trajectories.jsonl").read_text().splitlines())}


def test_the_oracle_solves_every_form_and_the_script_reads_them(unsettled, sample_index, tmp_path):
    lookup, bridge, _ = unsettled
    path, rows = _per_form_tasks(lookup + bridge[:12], tmp_path)
    forms = {x["form"] for x in rows if x["tier"] == "bridge"}
    assert forms == set(ALL_FORMS)  # every family is asked on the sample
    oracle = _run("oracle:search", path, sample_index, tmp_path / "oracle")
    assert all(r["correct"] == 1.0 for r in oracle.values()), [k for k, r in oracle.items() if r["correct"] < 1]
    script = _run("rule:script", path, sample_index, tmp_path / "script")
    rule = _run("rule:first-title", path, sample_index, tmp_path / "rule")
    bridge = [x["id"] for x in rows if x["tier"] == "bridge"]
    # the script takes the bridge's two searches, in whichever form it is asked
    assert all(script[i]["tool_calls"].get("search", 0) == 2 for i in bridge)
    assert sum(script[i]["correct"] for i in bridge) > sum(rule[i]["correct"] for i in bridge)
