"""The headroom table: greedy, sampled pass@1 and pass@k per tier from recorded eval runs; the band pool."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from training.grpo.recipes import load_recipe
from training.learn.headroom import (
    band_pool,
    headroom_rows,
    render,
    sampled_eval_config,
    stage_headroom,
    task_outcomes,
)


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


def _records(folder: Path, outcomes: dict[str, list[int]], meta: dict[str, dict] | None = None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "trajectories.jsonl").open("w") as f:
        for task, scores in outcomes.items():
            for i, s in enumerate(scores):
                row = {"key": f"{task}#{i}", "task_id": task, "sample": i, "em": float(s), "gold": task}
                f.write(json.dumps({**row, "metadata": (meta or {}).get(task, {})}) + "\n")


def test_the_stage_samples_a_draw_over_the_whole_train_split_and_writes_the_pool(monkeypatch, tmp_path: Path) -> None:
    import agents.harness
    from training.learn.config import HeadroomStage, LearnConfig
    from training.learn.headroom import stage_headroom
    from training.learn.run import grpo_recipe

    tasks = tmp_path / "tasks.jsonl"
    ids = [f"bridge-{i:03d}" for i in range(40)]
    tasks.write_text(
        "".join(json.dumps({"id": t, "split": "train" if i % 2 else "test"}) + "\n" for i, t in enumerate(ids))
    )
    seen = []

    def fake_eval(ecfg):  # every train task: sample 0 right when its number is even, the rest wrong
        seen.append(ecfg)
        rows = [json.loads(x) for x in Path(ecfg.tasks or tasks).read_text().splitlines()]
        rows = [r for r in rows if r["split"] == ecfg.split][: ecfg.n]
        _records(
            Path(ecfg.out), {r["id"]: [int(j == 0 and int(r["id"][-3:]) % 4 == 1) for j in range(ecfg.k)] for r in rows}
        )
        return SimpleNamespace(failures=[], metrics={})

    monkeypatch.setattr(agents.harness, "run_eval", fake_eval)
    cfg = LearnConfig(out=str(tmp_path / "run"), headroom=HeadroomStage(k=4, n_train=6, n_test=3))
    recipe = grpo_recipe(cfg, tasks, str(tmp_path / "sft"))
    out = stage_headroom(cfg, recipe, tmp_path / "sft", {"progress": False})
    drawn = [json.loads(x)["id"] for x in (out / "train.jsonl").read_text().splitlines()]
    assert len(drawn) == 6 and max(drawn) > ids[12]  # a draw over the split, not its first six
    greedy, train, test = seen
    assert (greedy.k, greedy.agent.sampling.temperature, greedy.split) == (1, 0.0, "train")
    assert (train.k, train.split, train.tasks) == (4, "train", str(out / "train.jsonl"))
    assert (test.k, test.split, test.n, test.agent.sampling.temperature) == (4, "test", 3, recipe.trainer.temperature)
    pool = json.loads((out / "pool.json").read_text())
    assert pool["ids"] == sorted(t for t in drawn if int(t[-3:]) % 4 == 1)  # 1 of 4 samples right: in the band
    assert pool["k"] == 4 and pool["band"] == [0.1, 0.9]


def test_with_rl_share_the_stage_draws_from_the_pool_and_the_grpo_tiers_only(monkeypatch, tmp_path: Path) -> None:
    import agents.harness
    from simweb_core.errors import ConfigError
    from training.learn.config import HeadroomStage, LearnConfig
    from training.learn.rl_pool import write_rl_pool
    from training.learn.run import grpo_recipe

    tasks = tmp_path / "tasks.jsonl"
    rows = [
        {"id": f"{tier}-{i:03d}", "answer": f"a{i % 9}", "tier": tier, "split": "train" if i % 5 else "test"}
        for tier in ("lookup", "bridge")
        for i in range(60)
    ]
    tasks.write_text("".join(json.dumps(r) + "\n" for r in rows))
    seen = []

    def fake_eval(ecfg):
        seen.append(ecfg)
        drawn = [json.loads(x)["id"] for x in Path(ecfg.tasks).read_text().splitlines()]
        _records(Path(ecfg.out), {t: [int(j == 0) for j in range(ecfg.k)] for t in drawn})
        return SimpleNamespace(failures=[], metrics={})

    monkeypatch.setattr(agents.harness, "run_eval", fake_eval)
    cfg = LearnConfig(out=str(tmp_path / "run"), rl_share=0.5, headroom=HeadroomStage(k=4, n_train=10, n_test=0))
    held = set(json.loads(write_rl_pool(tasks, cfg.out_dir(), 0.5, cfg.seed).read_text())["ids"])
    recipe = dataclasses.replace(grpo_recipe(cfg, tasks, "sft"), tiers=("bridge",))
    out = stage_headroom(cfg, recipe, tmp_path / "sft", {"progress": False})
    drawn = {json.loads(x)["id"] for x in (out / "train.jsonl").read_text().splitlines()}
    assert len(drawn) == 10 and drawn <= held and all(t.startswith("bridge-") for t in drawn)
    assert [e.split for e in seen] == ["train", "train"]  # n_test=0: no held-out sampling
    assert set(json.loads((out / "pool.json").read_text())["ids"]) == drawn  # 1 of 4 right: every one in the band
    with pytest.raises(ConfigError, match="does not train on now"):  # the draw is kept only while it still fits
        stage_headroom(cfg, dataclasses.replace(recipe, tiers=("lookup",)), tmp_path / "sft", {"progress": False})


def test_the_report_has_the_headroom_tables_and_the_hand_written_rows(tmp_path: Path) -> None:
    from training.learn.report import summarise, write_report

    meta = {"bridge-1": {"tier": "bridge", "form": "relative"}, "bridge-2": {"tier": "bridge", "form": "template"}}
    _records(tmp_path / "headroom-train", {"bridge-1": [1, 0], "bridge-2": [0, 0]}, meta)
    _records(tmp_path / "headroom-greedy-train", {"bridge-1": [0], "bridge-2": [0]})
    _records(tmp_path / "headroom-test", {"lookup-1": [1, 1]})
    _records(tmp_path / "eval-sft", {"lookup-1": [1]})
    _records(tmp_path / "handwritten-rule", {"hw-1": [0], "hw-2": [1]})
    summary = summarise(tmp_path)
    assert summary["headroom"]["k"] == 2
    train = {r["group"]: r for r in summary["headroom"]["train"]}
    assert train["bridge"]["pass@2"] == 0.5 and train["bridge/relative"]["mixed"] == 1.0
    assert summary["headroom"]["test"][0]["group"] == "lookup"
    assert summary["handwritten"]["rule"]["n"] == 2 and summary["handwritten"]["rule"]["pass@1"] == 0.5
    report = (write_report(tmp_path, tmp_path / "grpo"), (tmp_path / "report.md").read_text())[1]
    assert "## Headroom before RL" in report and "| bridge/relative | 1 | 0.000 | 0.500 | 1.000 |" in report
    assert "| Hand-written questions | n | pass@1 |" in report


def test_grpo_trains_on_the_pool_once_the_headroom_stage_wrote_it(sample_index, tmp_path: Path) -> None:
    from simweb_core.errors import ConfigError
    from training.grpo.train import train_tasks
    from training.learn.config import GRPOStage, LearnConfig
    from training.learn.run import grpo_recipe
    from wiki_index.search.index import WikiIndex

    path = tmp_path / "tasks.jsonl"
    rows = [
        {"id": f"bridge-{i}", "question": f"q{i}?", "answer": "a", "tier": "bridge", "split": "train"} for i in range(6)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    index = WikiIndex.from_dir(str(sample_index))
    cfg = LearnConfig(out=str(tmp_path / "run"))
    assert grpo_recipe(cfg, path, "sft").task_pool is None  # before the headroom stage: the recipe's own tasks
    (tmp_path / "run" / "headroom").mkdir(parents=True)
    (tmp_path / "run" / "headroom" / "pool.json").write_text(json.dumps({"ids": ["bridge-4", "bridge-1", "other"]}))
    recipe = grpo_recipe(cfg, path, "sft")
    assert [t.id for t in train_tasks(recipe, index)] == ["bridge-1", "bridge-4"]
    off = LearnConfig(out=str(tmp_path / "run"), grpo=GRPOStage(pool=False))
    assert grpo_recipe(off, path, "sft").task_pool is None
    (tmp_path / "run" / "headroom" / "pool.json").write_text(json.dumps({"ids": ["nothing"]}))
    with pytest.raises(ConfigError, match="keeps no task"):
        train_tasks(recipe, index)
    (tmp_path / "run" / "headroom" / "pool.json").write_text("[1, 2]")
    with pytest.raises(ConfigError, match="'ids' list"):
        train_tasks(recipe, index)
