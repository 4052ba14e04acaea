"""``sim-web learn``'s evals on task sets of their own (hand-written questions, SailorFog-QA) under a recipe whose
reward charges the searches past each task's oracle searches: those records may carry none, and pass@1 is the
answer's score alone, so these evals run without the training cost."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from training.grpo.recipes import load_recipe
from training.learn import run as learn_run
from training.learn.config import LearnConfig


@pytest.mark.parametrize("charge", ["call_cost", "call_penalty"])
def test_hand_written_questions_are_scored_without_the_oracle_cost(tmp_path, monkeypatch, charge):
    import agents.harness

    seen = []

    def fake_run_eval(ecfg):
        seen.append(ecfg)
        return SimpleNamespace(failures=[], metrics={"pass@1": 0.5})

    monkeypatch.setattr(agents.harness, "run_eval", fake_run_eval)
    over = {f"env.reward.{charge}": 0.3, "env.reward.free_calls": "oracle", "solved_reward": 0.5}
    recipe = load_recipe("cpu-learn", over)
    cfg = LearnConfig(out=str(tmp_path), precision="float32")
    learn_run.stage_handwritten(cfg, recipe)
    assert [e.policy for e in seen] == ["rule:first-title", "rule:script"]  # no model in the run folder yet
    for e in seen:
        assert e.tasks == "handwritten" and e.env.reward.free_calls == "none" and not e.env.reward.charges_calls
        assert e.env.reward.kind == recipe.env.reward.kind and e.agent.max_llm_calls == cfg.sailorfog_turns
    assert recipe.env.reward.free_calls == "oracle"  # the recipe itself is left as it was
    assert (tmp_path / "stages.json").is_file()
