"""The oracle policy: provenance-driven browsing, honest failure, ReSum continuation."""

import pytest

from agents.config import AgentConfig, ReSumConfig
from agents.loop import ReactAgent, run_episode
from agents.policies.oracle import OraclePolicy
from sim_web.env.tasks import Task
from wiki_index.types import title_to_url


def _sentence(task):
    return task.question.split('"')[1]


def _two_hop(test_tasks):
    a, b = test_tasks[0], test_tasks[1]
    return (
        a,
        b,
        Task(
            "synth-1",
            f'Which subject is described as "{_sentence(a)}", and relates to another? Answer with the article title.',
            a.answer,
            metadata={
                "answer_url": title_to_url(a.answer),
                "evidence": [
                    {"title": b.answer, "url": title_to_url(b.answer), "docids": []},
                    {"title": a.answer, "url": title_to_url(a.answer), "docids": []},
                ],
                "clues": [{"text": "a related subject", "type": "relation", "entity": b.answer, "query": _sentence(b)}],
                "uncertainty_types": ["masked_name"],
                "difficulty": {"level": "medium"},
            },
        ),
    )


def test_follows_sailorfog_clues_and_evidence(make_env, test_tasks):
    a, b, task = _two_hop(test_tasks)
    oracle = OraclePolicy([task], make_env().index.store)
    rec = run_episode(ReactAgent(oracle), make_env(), task).to_dict()
    acts = [(s["tool"], s["arguments"]) if s["kind"] == "tool_call" else ("answer", s["answer"]) for s in rec["steps"]]
    assert acts[0] == ("search", {"query": [_sentence(b)]})
    assert (
        acts[1][0] == "visit"
        and acts[1][1]["url"] == [title_to_url(b.answer)]
        and acts[1][1]["goal"] == "a related subject"
    )
    assert acts[2][0] == "search" and acts[3][0] == "visit" and acts[3][1]["url"] == [title_to_url(a.answer)]
    assert acts[4] == ("answer", a.answer) and rec["em"] == 1.0
    info = rec["policy_info"]
    assert info["answer_reached_via"] == "search" and info["evidence_found"] == 2 and info["evidence_total"] == 2
    assert rec["metadata"]["difficulty"] == {"level": "medium"}


def test_answers_the_forcing_prompt_from_what_it_has_read(make_env, test_tasks):
    """At a call cap it answers Tongyi's forcing prompt instead of a tool call nobody would run: the gold answer
    when it has read the answer page, a guess (and no credit) when it has not."""
    a, _, task = _two_hop(test_tasks)

    def run(cfg):
        return run_episode(ReactAgent(OraclePolicy([task], make_env().index.store), cfg), make_env(), task).to_dict()

    read = run(AgentConfig(max_llm_calls=5, force_replaces_observation=False))
    assert read["termination"] == "forced_answer:calls" and read["prediction"] == a.answer and read["em"] == 1.0
    early = run(AgentConfig(max_llm_calls=2))
    assert early["termination"] == "forced_answer:calls" and early["steps"][-1]["purpose"] == "force"
    assert early["prediction"] not in (None, a.answer) and early["em"] == 0.0


def test_does_not_answer_what_search_cannot_surface(make_env, test_tasks):
    a = test_tasks[0]
    task = Task(
        "unreachable", 'Which article is about "zxqv wvut"?', a.answer, metadata={"page_id": a.metadata["page_id"]}
    )
    rec = run_episode(ReactAgent(OraclePolicy([task], make_env().index.store)), make_env(), task).to_dict()
    assert rec["policy_info"]["answer_reached_via"] in ("title_search", "none")
    assert rec["prediction"] != a.answer and rec["em"] == 0.0


def test_continues_after_an_extractive_resum(make_env, test_tasks):
    task = test_tasks[3]
    cfg = AgentConfig(resum=ReSumConfig(enabled=True, trigger_fraction=None, every_n_turns=1, summariser="extractive"))
    rec = run_episode(ReactAgent(OraclePolicy(test_tasks), cfg), make_env(), task).to_dict()
    assert rec["em"] == 1.0 and rec["turns"] == 3 and len(rec["summaries"]) == 2
    assert "- Visited https://en.wikipedia.org/wiki/" in rec["summaries"][1]["summary"]


def test_the_joint_oracle_plays_a_chain_like_the_plan_oracle(make_env, test_tasks):
    """``oracle:joint`` changes only overlap plans (the intersection tier's): on a chain of clues, and on a one-fact
    question, it takes the same actions with the same thoughts as ``oracle:plan``."""
    _, _, chain = _two_hop(test_tasks)
    tasks = [chain, test_tasks[2]]
    with pytest.raises(ValueError, match="plan_thought=True"):
        OraclePolicy(tasks, read_pages=False, joint_search=True)
    store = make_env().index.store
    plan = OraclePolicy(tasks, store, read_pages=False, plan_thought=True)
    joint = OraclePolicy(tasks, store, read_pages=False, plan_thought=True, joint_search=True)
    assert joint.name == "oracle:joint"
    for task in tasks:
        a, b = (run_episode(ReactAgent(p), make_env(), task).to_dict()["steps"] for p in (plan, joint))
        assert [s["action"] for s in a] == [s["action"] for s in b] and len(a) >= 2
