"""`sim-web ablate --quick` on a sub-grid of two configurations: table, report files, plot, held-out eval, resume."""

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from simweb_core.errors import ConfigError
from training.ablate.grid import BASELINE, GRID, select, variant
from training.ablate.report import format_table, markdown
from training.ablate.runner import AblateConfig, recipe_of, share_prefilter

ROOT = Path(__file__).resolve().parents[2]


def test_every_variant_differs_from_the_baseline_in_exactly_one_switch():
    assert GRID[0].name == "base" and GRID[0].fields() == BASELINE
    flipped = {}
    for v in GRID[1:]:
        diff = {k for k in BASELINE if v.fields()[k] != BASELINE[k]}
        assert len(diff) == 1 and diff.pop().split(".")[-1] in (v.switch, "enabled"), v.name
        [key] = v.overrides
        flipped.setdefault(key, set()).add(v.fields()[key])
    assert flipped == {
        "trainer.advantage": {"grpo", "loo_std"},
        "trainer.truncation": {"keep_all", "drop_all_truncated"},
        "trainer.dupo": {True},
        "loop.enabled": {True},
    }
    assert [v.name for v in select(["dupo", "base", "dupo"])] == ["base", "dupo"]
    with pytest.raises(ConfigError, match="known: base"):
        variant("nope")
    with pytest.raises(ConfigError):
        AblateConfig(configs=("nope",))


@pytest.mark.parametrize("recipe", ["cpu-learn", "cpu-smoke", "single-gpu"])
def test_every_variant_loads_on_each_recipe(recipe, tmp_path):
    # cpu-learn fixes the tier order (balance_tiers), which the loop cannot keep: the loop variant turns it off
    cfg = AblateConfig(recipe=recipe, out=str(tmp_path), overrides={"model": "tiny"})
    loaded = {v.name: recipe_of(cfg, v) for v in GRID}
    assert loaded["loop"].loop.enabled and not loaded["loop"].balance_tiers
    assert loaded["base"].balance_tiers == (recipe == "cpu-learn")


def test_runs_share_seed_tasks_and_rollouts_and_differ_in_their_switch(tmp_path):
    cfg = AblateConfig(quick=True, out=str(tmp_path), overrides={"n_tasks": 4, "seed": 3})
    recipes = {v.name: recipe_of(cfg, v) for v in GRID}
    assert {(r.seed, r.n_tasks, r.trainer.max_steps, r.per_device_batch, r.model) for r in recipes.values()} == {
        (3, 4, 2, 4, "tiny")
    }
    assert recipes["adv-grpo"].trainer.advantage == "grpo" and recipes["base"].trainer.advantage == "loo"
    assert recipes["loop"].loop.enabled and not recipes["dupo"].loop.enabled and recipes["dupo"].trainer.dupo
    assert recipes["loop"].loop.every == 1 and recipes["base"].loop.every == 10 and recipes["base"].name == "base"
    assert recipes["base"].output_dir == str(tmp_path / "base" / "train")
    short = recipe_of(
        AblateConfig(overrides={"model": "tiny", "trainer.use_vllm": False, "trainer.bf16": False}), GRID[0]
    )
    assert (short.trainer.max_steps, short.trainer.save_steps) == (50, 10)
    assert (
        recipe_of(AblateConfig(overrides={"model": "tiny", "trainer.max_steps": 70}), GRID[0]).trainer.max_steps == 70
    )
    assert not cfg.subprocesses and AblateConfig().subprocesses and AblateConfig(quick=True, isolate=True).subprocesses


def test_the_prefilter_verdict_is_paid_once_per_grid_and_only_shared_between_matching_runs(tmp_path):
    cfg = AblateConfig(recipe="cpu-learn", out=str(tmp_path), overrides={"model": "tiny"})
    base, grpo = recipe_of(cfg, variant("base")), recipe_of(cfg, variant("adv-grpo"))
    other = recipe_of(
        AblateConfig(recipe="cpu-learn", out=str(tmp_path), overrides={"model": "tiny", "seed": 7}),
        variant("trunc-keep_all"),
    )
    shared = share_prefilter(cfg, base)
    assert (
        shared == share_prefilter(cfg, grpo) != share_prefilter(cfg, other)
    )  # the switches are not in the key, the seed is
    assert not shared.parent.exists()  # computing the path creates nothing
    verdict = dataclasses.replace(grpo.prefilter, verdict=str(shared))
    assert shared == share_prefilter(cfg, dataclasses.replace(grpo, prefilter=verdict))
    assert share_prefilter(cfg, dataclasses.replace(base, prefilter=dataclasses.replace(base.prefilter, k=0))) is None


def test_a_run_reuses_a_saved_prefilter_verdict(tmp_path):
    from training.grpo.train import _prefilter

    class Task:
        def __init__(self, i):
            self.id = i

    verdict = tmp_path / "shared.json"
    verdict.write_text(json.dumps({"dropped": ["t1"]}), encoding="utf-8")
    recipe = recipe_of(
        AblateConfig(recipe="cpu-learn", out=str(tmp_path), overrides={"model": "tiny"}), variant("base")
    )
    recipe = dataclasses.replace(recipe, prefilter=dataclasses.replace(recipe.prefilter, verdict=str(verdict)))
    out = tmp_path / "run"
    out.mkdir()
    kept = _prefilter(recipe, None, None, [Task("t0"), Task("t1")], out)  # no trainer needed: nothing is played
    saved = json.loads((out / "prefilter.json").read_text())
    assert [t.id for t in kept] == ["t0"] and saved["dropped"] == ["t1"] and saved["from"] == str(verdict)
    # stamped with this run's own key: a later start-over of the run keeps it without the shared file
    verdict.unlink()
    plain = dataclasses.replace(recipe, prefilter=dataclasses.replace(recipe.prefilter, verdict=None))
    assert [t.id for t in _prefilter(plain, None, None, [Task("t0"), Task("t1")], out)] == ["t0"]


def test_quick_sub_grid_writes_the_table_the_report_and_resumes(sample_index, synth_run, tmp_path):
    records, _ = synth_run
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    out = tmp_path / "grid"
    cmd = [
        sys.executable,
        "-m",
        "sim_web.cli",
        "ablate",
        "--quick",
        "--configs",
        "base,dupo",
        "--out",
        str(out),
        "--set",
        f"index_dir={sample_index}",
        "--set",
        f"tasks={tasks}",
        "--set",
        "n_tasks=4",
    ]
    env = {**os.environ, "TRL_EXPERIMENTAL_SILENCE": "1"}
    res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    lines = res.stdout.splitlines()
    lines = lines[next(i for i, ln in enumerate(lines) if ln.startswith("config ")) :]
    assert lines[0].split() == ["config", "switch", "reward", "pass@1", "answered", "dropped", "tokens", "wall", "s"]
    assert [ln.split()[0] for ln in lines[2:4]] == ["base", "dupo"]
    assert "the numbers mean nothing" in res.stdout

    report = json.loads((out / "results.json").read_text())
    rows = {r["name"]: r for r in report["results"]}
    assert set(rows) == {"base", "dupo"} and "mean nothing" in report["note"]
    for r in rows.values():
        assert r["steps"] == 2 and [s for s, _ in r["curve"]] == [1, 2] and r["tokens"] > 0
        assert r["rollouts"] == 2 * 4 and 0.0 <= r["dropped"] <= 1.0 and r["heldout_tasks"] == 2
        assert r["heldout_pass1"] is not None and 0.0 <= r["heldout_pass1"] <= 1.0
        eval_metrics = json.loads(next((out / r["name"] / "eval").glob("metrics*.json")).read_text())
        assert eval_metrics["pass@1"] == r["heldout_pass1"]
    assert rows["base"]["dupo_duplicated"] == 0
    assert (out / "rewards.png").stat().st_size > 0
    assert "| base | - |" in (out / "results.md").read_text()

    again = subprocess.run(
        cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )  # resumable: nothing reruns
    assert again.returncode == 0, again.stderr[-3000:]
    assert "resumed: base, dupo already finished" in again.stdout
    assert json.loads((out / "results.json").read_text())["results"] == report["results"]


@pytest.mark.slow
def test_isolate_runs_each_configuration_in_its_own_process(sample_index, synth_run, tmp_path):
    from training.ablate.runner import run_grid

    records, _ = synth_run
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    cfg = AblateConfig(
        quick=True,
        isolate=True,
        configs=("adv-grpo",),
        out=str(tmp_path / "grid"),
        eval_n=0,
        overrides={"index_dir": str(sample_index), "tasks": str(tasks), "n_tasks": 4},
    )
    [row] = run_grid(cfg)
    assert row["name"] == "adv-grpo" and row["steps"] == 2 and not row["skipped"] and row["heldout_pass1"] is None
    assert "training with tools" in (tmp_path / "grid" / "adv-grpo" / "run.log").read_text()
    assert run_grid(cfg)[0]["skipped"]


def test_table_and_markdown_show_missing_values_as_dashes():
    rows = [{"name": "loop", "switch": "loop", "final_reward": None, "tokens": 10}]
    assert format_table(rows).splitlines()[2].split() == ["loop", "loop", "-", "-", "-", "-", "10", "-"]
    assert markdown(rows, "note").endswith("note\n")


def test_the_prefilter_can_count_a_charged_right_answer_as_unsolved(tmp_path):
    """Under a call cost a right answer that paid for a call scores 0.5: the recipe's solved_reward (0.5) drops its
    task, prefilter.solved_reward=1.0 keeps it (its group varies under the cost)."""
    from types import SimpleNamespace

    from training.grpo.train import _prefilter

    tasks = [SimpleNamespace(id=i, question=i) for i in ("free", "charged", "wrong")]
    rewards = {"free": 1.0, "charged": 0.5, "wrong": 0.0}  # "charged" is right, after a call the cost charges

    def rollout(prompts, trainer):
        return {"env_reward": [rewards[p[0]["content"]] for p in prompts]}

    accel = SimpleNamespace(process_index=0, num_processes=1, is_main_process=True)
    trainer = SimpleNamespace(accelerator=accel)
    recipe = recipe_of(
        AblateConfig(
            recipe="cpu-learn",
            out=str(tmp_path),
            overrides={"model": "tiny", "env.reward.call_cost": 0.5, "solved_reward": 0.5},
        ),
        variant("base"),
    )
    kept = {}
    for name, threshold in (("recipe", None), ("full", 1.0)):
        run = dataclasses.replace(recipe, prefilter=dataclasses.replace(recipe.prefilter, solved_reward=threshold))
        out = tmp_path / name
        out.mkdir()
        kept[name] = [t.id for t in _prefilter(run, trainer, rollout, tasks, out)]
        assert json.loads((out / "prefilter.json").read_text())["solved_reward"] == (threshold or 0.5)
    assert kept == {"recipe": ["wrong"], "full": ["charged", "wrong"]}
