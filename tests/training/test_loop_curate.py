"""The feedback loop's rules on hand-made outcome tables: verdicts, windows, returns, the pool, steering, resume."""

import json

import pytest

from sim_web.env import Task
from simweb_core.errors import ConfigError
from training.loop.curate import CurationConfig, Decision, curate, recent_stats
from training.loop.loop import FeedbackLoop
from training.loop.outcomes import Outcome, OutcomeLog
from training.loop.pool import TaskPool
from training.loop.steer import SynthSource, Target, rank, target_of

CFG = CurationConfig(every=1, window=4, min_rollouts=2, revisit_after=2, max_return=1)


def rows(task, step, *rewards):
    return [Outcome(task, step, r) for r in rewards]


def task(tid, score=None, types=(), nodes=4):
    meta = (
        {}
        if score is None
        else {
            "difficulty": {
                "nodes": nodes,
                "edges": nodes,
                "hops": 1,
                "constraints": 4,
                "score": score,
                "level": "medium",
            },
            "uncertainty_types": list(types),
        }
    )
    return Task(tid, f"question {tid}?", f"answer {tid}", metadata=meta)


def test_verdicts_solved_unsolved_band_and_unjudged():
    table = rows("s", 1, 1.0, 1.0) + rows("u", 1, 0.0, 0.0, None) + rows("b", 1, 1.0, 0.0) + rows("n", 1, 1.0)
    d = curate(["s", "u", "b", "n", "never"], {}, {}, table, round_=1, step=1, config=CFG)
    assert (d.retire_solved, d.retire_unsolved, d.band, d.unjudged) == (["s"], ["u"], ["b"], ["n", "never"])
    assert d.stats["u"].attempts == 3 and d.stats["u"].passes == 0  # an unscorable rollout is a failure
    assert d.n_fresh == 2 and d.returning == []


def test_only_the_last_window_counts_and_success_is_a_threshold():
    table = (
        rows("t", 1, 0.0, 0.0, 0.0) + rows("t", 2, 1.0, 1.0) + rows("t", 3, 1.0, 1.0)
    )  # learnt it: the last 4 all pass
    assert curate(["t"], {}, {}, table, 1, 3, CFG).retire_solved == ["t"]
    assert curate(["t"], {}, {}, table, 1, 3, CurationConfig(window=7, min_rollouts=2)).band == ["t"]
    partial = rows("f", 1, 0.6, 0.8)
    assert curate(["f"], {}, {}, partial, 1, 1, CFG).retire_unsolved == ["f"]  # success defaults to reward 1
    assert curate(["f"], {}, {}, partial, 1, 1, CurationConfig(min_rollouts=2, solved_reward=0.5)).retire_solved == [
        "f"
    ]


def test_history_before_a_task_reentered_the_set_is_ignored():
    table = rows("t", 1, 0.0, 0.0) + rows("t", 5, 1.0)
    assert recent_stats(table, ["t"], {"t": 4}, 4, 1.0)["t"].attempts == 1
    d = curate(["t"], {"t": 4}, {}, table, 3, 5, CFG)
    assert d.unjudged == ["t"]  # one rollout since it returned: no verdict yet


def test_too_hard_tasks_return_after_revisit_after_rounds_oldest_first_into_freed_slots():
    retired = {
        "old": {"reason": "unsolved", "round": 1},
        "older": {"reason": "unsolved", "round": 0},
        "recent": {"reason": "unsolved", "round": 3},
        "easy": {"reason": "solved", "round": 0},
    }
    table = rows("a", 4, 1.0, 1.0) + rows("b", 4, 0.0, 0.0)
    d = curate(
        ["a", "b"],
        {},
        retired,
        table,
        round_=4,
        step=4,
        config=CurationConfig(min_rollouts=2, max_return=5, revisit_after=2),
    )
    assert d.returning == ["older", "old"]  # solved tasks never return; 'recent' waits; only two freed slots
    assert d.n_fresh == 0
    d = curate(["a", "b"], {}, retired, table, round_=4, step=4, config=CFG)
    assert d.returning == ["older"] and d.n_fresh == 1  # max_return=1
    assert curate(["c"], {}, retired, rows("c", 4, 1.0, 0.0), 4, 4, CFG).returning == []  # nothing freed


def test_pool_apply_swaps_tasks_in_place_and_wraps_when_short():
    pool = TaskPool([task("a"), task("b"), task("c")])
    d = Decision(1, 3, retire_solved=["a"], retire_unsolved=["b"])
    changed = pool.apply(d, [task("f1")])  # the synthesizer came up one short
    assert changed == {"retired_solved": ["a"], "retired_unsolved": ["b"], "returned": [], "added": ["f1"]}
    assert pool.active == ["c", "f1"] and pool.since == {"f1": 3}
    assert [pool.row(i)["task_id"] for i in range(3)] == ["c", "f1", "c"]  # 3 slots over 2 tasks
    assert pool.row(1)["prompt"] == [{"role": "user", "content": "question f1?"}]
    pool.apply(Decision(3, 9, retire_unsolved=["c"], returning=["b"]), [task("f2"), task("f3")])
    assert pool.active == ["f1", "b", "f2"] and "b" not in pool.retired and pool.since["b"] == 9  # f3: no room
    assert pool.retired["c"] == {"reason": "unsolved", "round": 3, "step": 9}


def test_pool_never_empties_and_restores_its_state():
    pool = TaskPool([task("a"), task("b")])
    changed = pool.apply(Decision(1, 1, retire_solved=["a", "b"]), [])
    assert pool.active == ["a", "b"] and changed["retired_solved"] == [] and not pool.retired
    pool.apply(Decision(2, 2, retire_solved=["a"]), [task("f")])
    state = json.loads(json.dumps(pool.state()))
    other = TaskPool([task("a"), task("b")])
    with pytest.raises(ConfigError, match="unknown tasks"):
        other.restore(state)
    other.add_tasks([task("f")])
    other.restore(state)
    assert (other.active, other.retired, other.round, other.step) == (["b", "f"], pool.retired, 2, 2)


def test_target_follows_the_band_else_moves_towards_it():
    meta = {
        t.id: t.metadata
        for t in [
            task("b1", 4.0, ["fuzzy_date"], 3),
            task("b2", 6.0, ["fuzzy_date", "negation"], 5),
            task("s", 3.0),
            task("u", 8.0),
            task("plain"),
        ]
    }
    t = target_of(Decision(1, 1, band=["b1", "b2"], retire_solved=["s"]), meta)
    assert (t.score, t.sizes, t.uncertainty, t.source) == (5.0, (3, 5), {"fuzzy_date": 1.0, "negation": 0.5}, "band")
    assert target_of(Decision(1, 1, retire_solved=["s"], retire_unsolved=["u"]), meta).score == 5.5
    assert target_of(Decision(1, 1, retire_solved=["s"]), meta).score == 4.0  # harder than what is solved
    assert target_of(Decision(1, 1, retire_unsolved=["u"]), meta, shift=2).score == 6.0  # easier than what fails
    assert target_of(Decision(1, 1, retire_unsolved=["plain"]), meta) is None  # no difficulty features: no steering
    assert t.searches is None
    meta["b1"]["difficulty"]["oracle_searches"] = 3
    assert target_of(Decision(1, 1, band=["b1", "b2"]), meta).searches == 3.0  # measured where the records have it


def record(rid, score, types=(), question=None, answer=None):
    return {
        "id": rid,
        "question": question or f"q {rid}?",
        "answer": answer or f"a {rid}",
        "split": "test",
        "difficulty": {"nodes": 4, "score": score},
        "uncertainty_types": list(types),
    }


def test_rank_and_synth_source_keep_the_candidates_closest_to_the_target_and_nothing_known():
    cands = [
        record("far", 9.0),
        record("near", 5.5),
        record("exact", 5.0),
        record("exact2", 5.0, ["negation"]),
        record("leak", 5.0, answer="Held Answer"),
        record("seen", 5.0, question="known question?"),
    ]
    target = Target(5.0, (4,), {"negation": 1.0})
    assert [r["id"] for r in rank(cands[:4], target)] == ["exact2", "exact", "near", "far"]
    measured = [
        {**record("s1", 5.0), "difficulty": {"score": 5.0, "oracle_searches": 4}},
        {**record("s2", 5.5), "difficulty": {"score": 5.5, "oracle_searches": 1}},
    ]
    assert [r["id"] for r in rank(measured, Target(5.0, searches=1.0))] == ["s2", "s1"]  # 0.5 + 0 beats 0 + 3
    calls = []

    def fake_generate(index_dir, config):
        calls.append(config)
        return cands, None

    src = SynthSource(
        "idx",
        max_nodes=50,
        oversample=2.0,
        exclude_questions={"known question?"},
        exclude_answers={"held answer"},
        generate=fake_generate,
    )
    got = src(3, seed=17, target=target)
    assert [r["id"] for r in got] == ["exact2", "exact", "near"]
    assert all(r["split"] == "train" and r["loop_fresh"] for r in got)
    assert (calls[0].n, calls[0].seed, calls[0].sizes, calls[0].max_nodes, calls[0].test_fraction) == (
        6,
        17,
        (4,),
        50,
        0.0,
    )
    assert [r["id"] for r in src(3, seed=18, target=target)] == ["far"]  # what was added once is never added again
    assert src(0, seed=19, target=None) == [] and len(calls) == 2


def test_a_resumed_run_keeps_its_history_and_restores_the_set_of_its_checkpoint(tmp_path):
    fresh = iter(range(100))

    def synthesize(n, seed, target):
        return [record(f"f{next(fresh)}", 5.0) for _ in range(n)]

    def make_loop():
        outcomes = OutcomeLog(tmp_path / "outcomes.jsonl")
        return FeedbackLoop(
            TaskPool([task("a", 5.0), task("b", 5.0), task("c", 5.0)]), tmp_path / "loop", outcomes, CFG, synthesize
        ), outcomes

    loop, outcomes = make_loop()
    loop.start(None)
    outcomes.append(rows("a", 1, 1.0, 1.0) + rows("b", 1, 0.0) + rows("c", 1, 1.0, 0.0))
    r1 = loop.run_round(1)
    assert (r1["retired_solved"], r1["retired_unsolved"], r1["added"]) == (["a"], [], ["f0"])
    outcomes.append(rows("b", 2, 0.0))
    r2 = loop.run_round(2)  # b now has two failures: retired; the rollouts of step 1 still count
    assert r2["retired_unsolved"] == ["b"] and r2["added"] == ["f1"]
    outcomes.append(rows("c", 3, 1.0, 1.0))  # played by a run that died before checkpoint 3
    assert (tmp_path / "loop" / "rounds.png").is_file()

    loop2, outcomes2 = make_loop()  # a new process, resuming from checkpoint-2
    assert len(outcomes2.rows) == 8
    outcomes2.truncate(2)
    loop2.start(2)
    assert len(outcomes2.rows) == 6 and len(OutcomeLog(tmp_path / "outcomes.jsonl").rows) == 6
    assert loop2.pool.active == ["c", "f0", "f1"] and set(loop2.pool.retired) == {"a", "b"} and loop2.pool.round == 2
    assert loop2.pool.tasks["f1"].question == "q f1?"  # fresh tasks come back from tasks.jsonl
    outcomes2.append(rows("c", 3, 1.0) + rows("f0", 3, 1.0, 0.0))
    r3 = loop2.run_round(3)  # c: 1.0, 0.0 (step 1) + 1.0 (step 3) -> in the band, thanks to the kept history
    assert r3["round"] == 3 and r3["band"] == 2 and r3["n_retired_solved"] == r3["n_retired_unsolved"] == 0
    assert [r["round"] for r in loop2.rounds()] == [0, 1, 2, 3]
    assert r3["pass_rates"]["c"] == pytest.approx(2 / 3, abs=1e-4)


def test_config_errors():
    with pytest.raises(ConfigError):
        CurationConfig(window=2, min_rollouts=3)
    with pytest.raises(ConfigError):
        TaskPool([])
    with pytest.raises(ConfigError, match="task_id and step"):
        Outcome.of({"reward": 1.0})
