"""The intersection tier on the real sample index: clues true of many, together of one, none answering alone."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from training.synth.tiers.generate import TierConfig, tier_card
from training.synth.tiers.intersection import MIN_MEMBERS, clue_query, question_text


@pytest.fixture(scope="module")
def mem(sample_index):
    """The membership of every clue over the sample's countries (built once: it reads every country's page)."""
    from training.synth.graph.store_source import StoreSource
    from training.synth.tiers.intersection import Membership
    from wiki_index.search.index import WikiIndex

    src = StoreSource(WikiIndex.from_dir(sample_index).store)
    return Membership(src, sorted(src.title(p) for p in src.page_ids()))


@pytest.fixture(scope="module")
def inter(sample_index, mem):
    from sim_web.backends.sim import SimBackend, SimConfig
    from training.synth.tiers.generate import TierReport
    from training.synth.tiers.intersection import intersection_questions
    from training.synth.tiers.view import ResultView
    from wiki_index.search.index import WikiIndex

    cfg = TierConfig(tier="intersection", n=12, k=5, snippet_chars=160, test_fraction=0.5)
    rep = TierReport(config={"tier": "intersection"})
    view = ResultView(SimBackend(WikiIndex.from_dir(sample_index), SimConfig(snippet_chars=160)), 5)
    return intersection_questions(mem, view, cfg, rep), rep


def test_question_text_groups_clues_of_a_family():
    clues = [("borders", "Mozambique"), ("region", "Southern Africa"), ("borders", "Botswana")]
    assert question_text(clues) == "Which country borders Botswana and Mozambique, and lies in Southern Africa?"
    assert question_text([("landlocked", ""), ("borders", "Peru")]) == "Which country borders Peru and is landlocked?"
    assert clue_query(("coast", "Black Sea")) == "country with a coast on the Black Sea"


def test_every_question_is_unique_by_its_clues_and_no_clue_answers_it_alone(inter, sample_index):
    from sim_web.backends.sim import SimBackend, SimConfig
    from training.synth.compose.naming import leaks
    from training.synth.tiers.generate import ResultView
    from wiki_index.search.index import WikiIndex

    records, rep = inter
    assert len(records) == 12, rep.funnel
    view = ResultView(SimBackend(WikiIndex.from_dir(sample_index), SimConfig(snippet_chars=160)), 5)
    for r in records:
        assert r["tier"] == "intersection" and 2 <= len(r["clues"]) <= 3
        assert all(n >= MIN_MEMBERS for n in r["difficulty"]["clue_members"])  # each clue is true of many
        assert all(p["sentence"] for p in r["provenance"])  # each clue is backed by a sentence
        assert r["answer"].lower() not in r["question"].lower()
        for c in r["clues"]:
            first = next((t for t in view.titles(c["query"]) if not leaks(c["query"], [t])), None)
            assert first != r["answer"]  # a single clue's search does not show the answer first
        assert any(view.shows(c["query"], r["answer"]) for c in r["clues"])  # the oracle reads it off a clue search
    # the gates that dropped candidates are counted
    assert rep.funnel["not_unique"] > 0 and rep.funnel["one_clue_answers"] > 0
    assert len({r["id"] for r in records}) == 12
    card = tier_card(records, rep)
    assert card["records"] == 12 and "every country" in card["uniqueness"]


def test_the_uniqueness_check_counts_every_neighbour_as_a_look_alike(mem):
    laos = mem.members[("borders", "Laos")]
    assert {"Vietnam", "Thailand", "Cambodia", "Myanmar"} <= laos  # from Laos's page, read both ways
    assert "Laos" in mem.members[("region", "Southeast Asia")] and "Laos" in mem.members[("landlocked", "")]
    assert "Czechoslovakia" not in mem.countries  # a former country is no answer


def test_the_oracle_answers_in_at_most_three_searches_and_the_overlap_script_runs(inter, sample_index, tmp_path):
    from agents.eval_config import eval_env
    from agents.harness import EvalConfig, run_eval

    path = tmp_path / "inter.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in inter[0]), encoding="utf-8")
    env = replace(eval_env(), tools=("search", "visit"), search_results=5)
    env = replace(env, sim=replace(env.sim, snippet_chars=160))
    out = {}
    for policy in ("oracle:search", "rule:script"):
        res = run_eval(
            EvalConfig(
                policy=policy,
                index_dir=str(sample_index),
                tasks=str(path),
                split=None,
                out=str(tmp_path / policy.replace(":", "-")),
                env=env,
                progress=False,
            )
        )
        out[policy] = [json.loads(x) for x in (res.out / "trajectories.jsonl").read_text().splitlines()]
    assert all(r["correct"] == 1.0 and r["tool_calls"].get("search", 0) <= 3 for r in out["oracle:search"])
    # its last thought names the overlap when every clue's search listed the answer (what SFT demonstrations teach)
    overlap = [r for r in out["oracle:search"] if "is in the results of every search" in r["messages"][-1]["content"]]
    assert overlap and all(r["gold"] in r["messages"][-1]["content"] for r in overlap)
    assert all(r["tool_calls"].get("search", 0) >= 2 for r in overlap)
    # the script searches every clue together, then once per clue, then answers
    assert all(r["tool_calls"].get("search", 0) == r["metadata"]["difficulty"]["hops"] + 1 for r in out["rule:script"])


def test_plan_demonstrations_see_every_clue_search_and_claim_no_answer_before_the_overlap(
    inter, sample_index, tmp_path
):
    """``oracle:plan`` under the cpu-learn recipe (the env and turn cap `sim-web learn` collects SFT demonstrations in):
    the first thought says how many clues it gives about one answer, a thought between searches names nothing as found,
    and no episode is forced to answer before its last clue search's results are shown."""
    from agents.harness import run_eval
    from agents.policies.oracle import planned_facts
    from training.grpo.recipes import load_recipe

    path = tmp_path / "inter.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in inter[0]), encoding="utf-8")
    recipe = load_recipe("cpu-learn", {"index_dir": str(sample_index), "tasks": str(path)})
    cfg = recipe.eval_config("oracle:plan", tmp_path / "plan", split=None, progress=False)
    recs = [json.loads(x) for x in (run_eval(cfg).out / "trajectories.jsonl").read_text().splitlines()]
    assert recs and max(len(r["clues"]) for r in inter[0]) == 3  # the three-clue questions are in the draw
    tasks = {t["id"]: t for t in inter[0]}
    assert sorted(r["task_id"] for r in recs) == sorted(tasks)
    for r in recs:
        task = tasks[r["task_id"]]
        thoughts = [s["action"].split("</think>")[0] for s in r["steps"]]
        assert planned_facts(thoughts[0]) == len(task["clues"]) and "clues about one answer" in thoughts[0]
        # between searches it counts the clues up to the number its plan named, and names nothing as found
        assert thoughts[1:-1] == [
            f"<think>I search for the {n} clue." for n in ("second", "third")[: len(thoughts) - 2]
        ]
        assert r["termination"] == "answer" and r["correct"] == 1.0
        # its last thought names the overlap exactly when every clue's results named the answer
        shown = [m["content"].lower() for m in r["messages"] if m["content"].startswith("<tool_response>")]
        named = re.compile(rf"\b{re.escape(task['answer'].lower())}\b")
        every = len(shown) >= 2 and all(named.search(o) for o in shown[: len(task["clues"])])
        assert ("is in the results of every search" in thoughts[-1]) == every
        assert r["tool_calls"].get("search", 0) <= len(task["clues"]) + 1


def test_joint_demonstrations_search_the_clues_together_then_two_of_them(inter, sample_index, tmp_path):
    """``oracle:joint`` under the cpu-learn recipe: the first search is the question without "Which" (the clues
    together, as ``rule:script`` searches), then the first two clues one by one; every result is shown before the
    answer, the answer is right, and the overlap is named exactly when all three searches name it."""
    from agents.harness import run_eval
    from agents.policies.oracle import JOINT_CLUES, planned_facts
    from training.grpo.recipes import load_recipe

    path = tmp_path / "inter.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in inter[0]), encoding="utf-8")
    recipe = load_recipe("cpu-learn", {"index_dir": str(sample_index), "tasks": str(path)})
    cfg = recipe.eval_config("oracle:joint", tmp_path / "joint", split=None, progress=False)
    recs = [json.loads(x) for x in (run_eval(cfg).out / "trajectories.jsonl").read_text().splitlines()]
    tasks = {t["id"]: t for t in inter[0]}
    assert sorted(r["task_id"] for r in recs) == sorted(tasks) and {r["policy"] for r in recs} == {"oracle:joint"}
    for r in recs:
        task = tasks[r["task_id"]]
        thoughts = [s["action"].split("</think>")[0].removeprefix("<think>") for s in r["steps"]]
        queries = [s["arguments"]["query"][0] for s in r["steps"] if s.get("tool") == "search"]
        assert queries == [task["question"][len("Which ") : -1], *(c["query"] for c in task["clues"][:JOINT_CLUES])]
        assert planned_facts(thoughts[0]) == len(task["clues"]) and thoughts[0].endswith("I search for them together.")
        assert thoughts[1:3] == ["I search for the first clue.", "I search for the second clue."]
        assert r["termination"] == "answer" and r["correct"] == 1.0
        shown = [m["content"].lower() for m in r["messages"] if m["content"].startswith("<tool_response>")]
        assert len(shown) == 3  # no forced answer hid a result
        named = re.compile(rf"\b{re.escape(task['answer'].lower())}\b")
        assert ("is in the results of every search" in thoughts[-1]) == all(named.search(o) for o in shown)
