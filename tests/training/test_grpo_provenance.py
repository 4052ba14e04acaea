"""A GRPO folder is resumed or reused only by the recipe that started it (`training.grpo.provenance`)."""

import dataclasses
import json

import pytest

from simweb_core.errors import ConfigError
from training.grpo.config import GRPORecipe
from training.grpo.provenance import RECIPE_FILE, check, record, started_with
from training.learn.config import LearnConfig
from training.learn.run import stage_grpo


def _recipe(out, **kw):
    return dataclasses.replace(GRPORecipe(output_dir=str(out)), **kw)


def test_a_later_sitting_may_change_only_how_long_and_where_it_runs(tmp_path):
    out = tmp_path / "grpo"
    first = _recipe(out, seed=0, tiers=("bridge",))
    record(out, first)
    assert json.loads((out / RECIPE_FILE).read_text())["trainer.max_steps"] == first.trainer.max_steps
    trainer = dataclasses.replace(first.trainer, max_steps=25, save_steps=5)
    check(out, dataclasses.replace(first, trainer=trainer, threads=2, output_dir=str(tmp_path / "moved")))
    with pytest.raises(ConfigError, match=r"seed: started with 0, now 1.*grpo\.name"):
        check(out, dataclasses.replace(first, seed=1))
    lr = dataclasses.replace(first.trainer, learning_rate=first.trainer.learning_rate * 5)
    with pytest.raises(ConfigError, match=r"trainer\.learning_rate"):
        check(out, dataclasses.replace(first, trainer=lr))
    with pytest.raises(ConfigError, match=r"tiers: started with \['bridge'\], now \['lookup'\]"):
        check(out, dataclasses.replace(first, tiers=("lookup",)))


def test_paths_to_the_same_model_or_equal_task_files_are_the_same_run(tmp_path):
    sft, tasks = tmp_path / "sft", tmp_path / "tasks.jsonl"
    sft.mkdir()
    tasks.write_text('{"id": "a"}\n')
    out = tmp_path / "grpo"
    record(out, _recipe(out, model=str(sft), tasks=str(tasks)))
    (tmp_path / "linked-sft").symlink_to(sft)
    copy = tmp_path / "copy.jsonl"
    copy.write_text(tasks.read_text())
    check(out, _recipe(out, model=str(tmp_path / "linked-sft"), tasks=str(copy)))
    copy.write_text('{"id": "b"}\n')
    with pytest.raises(ConfigError, match="tasks: started with"):
        check(out, _recipe(out, model=str(sft), tasks=str(copy)))


def test_a_folder_from_before_the_record_is_checked_against_its_summary_or_warned_about(tmp_path, caplog):
    old = tmp_path / "old"
    old.mkdir()
    recipe = _recipe(old, seed=3)
    (old / "summary.json").write_text(json.dumps({"config": dataclasses.asdict(recipe), "steps": 10}))
    assert started_with(old)["seed"] == 3
    check(old, recipe)
    with pytest.raises(ConfigError, match="seed: started with 3, now 4"):
        check(old, dataclasses.replace(recipe, seed=4))
    bare = tmp_path / "bare"
    bare.mkdir()
    with caplog.at_level("WARNING", logger="training.grpo.provenance"):
        check(bare, _recipe(bare, seed=4))
    assert "no record of the recipe that started it" in caplog.text


def test_learn_does_not_reuse_a_finished_run_of_another_seed_as_this_seed(tmp_path):
    out = tmp_path / "grpo-bridge"
    (out / "final").mkdir(parents=True)
    (out / "final" / "config.json").write_text("{}")
    (out / "summary.json").write_text("{}")
    record(out, _recipe(out, seed=0))
    assert stage_grpo(LearnConfig(), _recipe(out, seed=0)) == out / "final"  # the same run: reused as it is
    with pytest.raises(ConfigError, match="seed: started with 0, now 1"):
        stage_grpo(LearnConfig(), _recipe(out, seed=1))
