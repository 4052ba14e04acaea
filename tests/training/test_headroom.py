"""The headroom table: greedy, sampled pass@1 and pass@k per tier from recorded eval runs; the band pool."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from training.grpo.recipes import load_recipe
from training.learn.headroom import band_pool, headroom_rows, render, sampled_eval_config, task_outcomes


def _write_run(folder: Path, outcomes: dict[str, list[int]]) -> None:
    folder.mkdir(parents=True)
    with (folder / "trajectories.jsonl").open("w") as f:
        for task, scores in outcomes.items():
            for i, s in enumerate(scores):
                f.write(json.dumps({"key": f"{task}#{i}", "task_id": task, "sample": i, "em": float(s)}) + "\n")


def test_rows_from_recorded_runs(tmp_path: Path) -> None:
    greedy = {"lookup-1": [1], "lookup-2": [0], "bridge-1": [0], "bridge-2": [0]}
    sampled = {
        "lookup-1": [1, 1, 1, 1],
        "lookup-2": [0, 1, 0, 0],
        "bridge-1": [0, 0, 0, 0],
        "bridge-2": [1, 0, 0, 1],
    }
    _write_run(tmp_path / "greedy", greedy)
    _write_run(tmp_path / "sampled", sampled)
    g, s = task_outcomes(tmp_path / "greedy"), task_outcomes(tmp_path / "sampled")
    assert s == sampled
    rows = {r["group"]: r for r in headroom_rows(g, s, k=4)}
    assert rows["lookup"]["greedy"] == 0.5 and rows["lookup"]["sampled"] == 0.625
    assert rows["lookup"]["pass@4"] == 1.0 and rows["bridge"]["pass@4"] == 0.5
    assert rows["bridge"]["mixed"] == 0.5 and rows["all"]["n"] == 4
    assert rows["all"]["in_band"] == 0.5  # lookup-2 at 0.25 and bridge-2 at 0.5
    lines = render({"train": list(rows.values())}, k=4)
    assert any(line.startswith("| bridge | 2 | 0.000 | 0.250 | 0.500 | +0.500 |") for line in lines)


def test_groups_and_short_samples() -> None:
    greedy = {"bridge-1": [1], "bridge-2": [0]}
    sampled = {"bridge-1": [1, 0], "bridge-2": [0]}  # bridge-2 has fewer than k samples: left out
    rows = headroom_rows(greedy, sampled, k=2, groups={"bridge-1": "bridge/relative"})
    assert [r["group"] for r in rows] == ["bridge/relative", "all"] and rows[-1]["n"] == 1


def test_band_pool_bounds() -> None:
    sampled = {"a": [1] * 8, "b": [1] + [0] * 7, "c": [0] * 8, "d": [1] * 7 + [0], "e": []}
    assert band_pool(sampled) == ["b", "d"]  # 0.125 and 0.875 inside 0.1-0.9
    assert band_pool(sampled, (0.2, 0.8)) == []


def test_sampled_eval_config_samples_like_the_rollouts(tmp_path: Path) -> None:
    recipe = load_recipe("cpu-learn", {})
    cfg = sampled_eval_config(recipe, "hf:x", tmp_path, k=8, split="train", n=3)
    assert cfg.k == 8 and cfg.split == "train" and cfg.n == 3
    assert cfg.agent.sampling.temperature == recipe.trainer.temperature > 0
    assert cfg.agent.sampling.top_p == recipe.trainer.top_p
    assert cfg.env == recipe.env and cfg.agent.max_llm_calls == recipe.env.max_turns
    with pytest.raises(ValueError, match="k >= 2"):
        sampled_eval_config(recipe, "hf:x", tmp_path, k=1, split="train")
