"""A two-round feedback-loop run on the tiny model: the set changes as the rules say and the same trainer goes on."""

import itertools
import json

import pytest

pytest.importorskip("trl")


@pytest.fixture(scope="module")
def task_file(synth_run, tmp_path_factory):
    records, _ = synth_run
    path = tmp_path_factory.mktemp("tasks") / "sailorfog_qa.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path, records


def read(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_two_rounds_retire_by_the_rules_and_the_trainer_continues_on_the_refreshed_set(
    sample_index, task_file, tmp_path
):
    from training.grpo.recipes import load_recipe
    from training.grpo.train import main

    path, records = task_file
    out = tmp_path / "run"
    recipe = load_recipe(
        "cpu-smoke",
        {
            "index_dir": str(sample_index),
            "tasks": str(path),
            "output_dir": str(out),
            "trainer": {"max_steps": 2, "max_completion_length": 64},
            "env.max_turns": 1,
            "rollout.max_turn_tokens": 16,
            "loop": {
                "enabled": True,
                "every": 1,
                "window": 4,
                "min_rollouts": 2,
                "synth_max_nodes": 300,
                "synth_oversample": 2.0,
            },
        },
    )
    summary = main(recipe)
    assert summary["steps"] == 2 and [r["step"] for r in summary["metrics"]] == [1, 2]  # one trainer, no restart

    outcomes = read(out / "outcomes.jsonl")
    rounds = read(out / "loop" / "rounds.jsonl")
    fresh = {r["id"]: r for r in read(out / "loop" / "tasks.jsonl")}
    assert [r["round"] for r in rounds] == [0, 1, 2] and [r["step"] for r in rounds] == [0, 1, 2]
    assert rounds[0]["size"] == summary["tasks"] and rounds[0]["n_added"] == 0
    assert summary["loop_rounds"] == rounds and (out / "loop" / "rounds.png").stat().st_size > 0
    held_out = {r["question"] for r in records if r["split"] == "test"} | {
        r["answer"] for r in records if r["split"] == "test"
    }
    assert len(outcomes) == 2 * recipe.per_device_batch
    changed = 0
    for before, after in itertools.pairwise(rounds):
        step, active = after["step"], before["state"]["active"]
        played = [o for o in outcomes if o["step"] == step]
        assert {o["task_id"] for o in played} <= set(active)  # this step trained on the set the last round left
        solved, unsolved = [], []
        for tid in active:  # the rule, recomputed from the table: >= 2 rollouts since the task entered, all pass / none
            mine = [
                o["reward"] or 0.0
                for o in outcomes
                if o["task_id"] == tid and before["state"]["since"].get(tid, 0) < o["step"] <= step
            ]
            if len(mine) >= 2 and all(r >= 1.0 for r in mine):
                solved.append(tid)
            elif len(mine) >= 2 and not any(r >= 1.0 for r in mine):
                unsolved.append(tid)
        assert (after["retired_solved"], after["retired_unsolved"]) == (solved, unsolved)
        assert after["added"] == [t for t in after["state"]["active"] if t not in active]
        assert after["state"]["active"] == [t for t in active if t not in solved + unsolved] + after["added"]
        assert after["n_added"] <= len(solved) + len(
            unsolved
        )  # fresh tasks fill freed slots (fewer if the synthesizer ran short)
        assert after["size"] == before["size"] - len(solved) - len(unsolved) + after["n_added"] <= summary["tasks"]
        for tid in after["added"]:
            rec = fresh[tid]
            assert rec["loop_fresh"] and rec["split"] == "train" and tid not in before["state"]["active"]
            assert rec["question"] not in held_out and rec["answer"] not in held_out and rec["difficulty"]["score"] > 0
        changed += len(after["added"])
    assert changed >= 1
    assert rounds[1]["target"] is not None and rounds[1]["mean_pass_rate"] is not None
