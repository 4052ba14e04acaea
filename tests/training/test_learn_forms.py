"""``sim-web learn`` with the question forms, the intersection tier and the strongest script: config and report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simweb_core.errors import ConfigError
from training.learn.config import STAGES, LearnConfig
from training.learn.report import render, summarise
from training.synth.tiers.forms import ALL_FORMS, FORMS
from training.synth.tiers.generate import TierConfig


def _stage(folder: Path, rows: dict[str, tuple[int, str, bool]]) -> None:
    folder.mkdir(parents=True)
    with (folder / "trajectories.jsonl").open("w") as f:
        for tid, (ok, form, seen) in rows.items():
            rec = {
                "key": f"{tid}#0",
                "task_id": tid,
                "gold": tid,
                "em": float(ok),
                "termination": "answer",
                "tool_calls": {"search": 2},
                "metadata": {"form": form, "form_seen": seen},
            }
            f.write(json.dumps(rec) + "\n")


def test_the_report_gives_every_policy_per_form_family_seen_and_unseen(tmp_path):
    forms = {
        "bridge-a": ("template", True),
        "bridge-b": ("relative", False),
        "bridge-c": ("clue_order", True),
        "intersection-d": ("template", True),
    }
    _stage(tmp_path / "eval-rule", {t: (0, *f) for t, f in forms.items()})
    _stage(tmp_path / "eval-script", {t: (int(t != "bridge-b"), *f) for t, f in forms.items()})
    _stage(tmp_path / "eval-oracle", {t: (1, *f) for t, f in forms.items()})
    s = summarise(tmp_path)
    assert list(s["stages"]) == ["rule", "script", "oracle"]  # the script sits beside the one-search rule
    bridge = s["forms"]["script"]["bridge"]
    assert bridge["seen"] == {"n": 2, "pass@1": 1.0} and bridge["unseen"] == {"n": 1, "pass@1": 0.0}
    assert bridge["form:relative"]["n"] == 1 and "unseen" not in s["forms"]["script"]["intersection"]
    assert "| script | bridge | unseen | 1 | 0.000 |" in render(s, [])


def test_the_config_takes_the_intersection_tier_and_checks_the_unseen_forms():
    assert "script" in STAGES and STAGES.index("script") == STAGES.index("rule") + 1
    cfg = LearnConfig(tiers=("lookup", "bridge", "intersection"), unseen_forms=("relative",))
    assert cfg.intersection_test_fraction == 0.5
    with pytest.raises(ConfigError, match="unseen_forms"):
        LearnConfig(unseen_forms=("template",))  # the template is every tier's first form: always seen
    with pytest.raises(ConfigError, match="intersection"):
        LearnConfig(tiers=("sailorfog",))


@pytest.mark.parametrize(
    ("forms", "unseen"),
    [(("clue_order",), ()), (("template", "prose"), ()), (FORMS, ("template",)), (FORMS, ("prose",))],
)
def test_the_learn_and_tier_configs_refuse_the_same_form_settings(forms, unseen):
    with pytest.raises(ConfigError, match="LearnConfig.*forms"):
        LearnConfig(forms=forms, unseen_forms=unseen)
    with pytest.raises(ValueError, match="TierConfig.*forms"):
        TierConfig(tier="bridge", forms=forms, unseen_forms=unseen)
    assert TierConfig(tier="bridge", forms=ALL_FORMS).forms == LearnConfig(forms=ALL_FORMS).forms == ALL_FORMS


def _forms_stage(folder: Path, em: dict[str, dict[str, int]], unseen: tuple[str, ...]) -> None:
    folder.mkdir(parents=True)
    with (folder / "trajectories.jsonl").open("w") as f:
        for base, forms in em.items():
            for form, ok in forms.items():
                meta = {"form": form, "form_seen": form not in unseen}  # as the harness writes it: no base_id
                rec = {"key": f"{base}@{form}#0", "task_id": f"{base}@{form}", "em": float(ok), "metadata": meta}
                f.write(json.dumps(rec) + "\n")


def test_the_forms_stage_compares_seen_and_unseen_forms_on_the_same_tasks(tmp_path):
    from training.learn.forms_eval import forms_summary, render_forms

    unseen = ("relative",)
    em = {
        "bridge-1": {"template": 1, "clue_order": 1, "relative": 0},
        "bridge-2": {"template": 1, "relative": 1},
        "bridge-3": {"template": 0, "clue_order": 1},  # no unseen form: not in the gap
    }
    _forms_stage(tmp_path / "forms-sft", em, unseen)
    s = forms_summary(tmp_path)["sft"]
    assert s["forms"]["template"] == {"n": 3, "pass@1": 2 / 3, "seen": True}
    rel = s["forms"]["relative"]
    assert rel["n"] == 2 and not rel["seen"] and rel["minus_template"]["diff"] == -0.5
    assert s["forms"]["clue_order"]["minus_template"]["diff"] == 0.5  # 1 - 1 and 1 - 0 on the tasks with both
    gap = s["unseen_minus_seen"]
    assert gap["n"] == 2 and gap["seen"] == 1.0 and gap["unseen"] == 0.5 and gap["diff"] == -0.5
    assert gap["ci95"][0] <= -0.5 <= gap["ci95"][1]
    text = "\n".join(render_forms({"sft": s}))
    assert (
        "| sft | relative | unseen | 2 | 0.500 | -0.500 (n=2) |" in text
        and "| sft | 2 | 1.000 | 0.500 | -0.500 |" in text
    )
    assert forms_summary(tmp_path / "none") is None


def test_the_forms_stage_picks_bridge_questions_of_the_eval_window(tmp_path):
    from training.learn.forms_eval import every_form, pick

    tasks = tmp_path / "t.jsonl"
    recs = [
        {"id": "bridge-a", "split": "train", "tier": "bridge"},
        {"id": "lookup-b", "split": "test", "tier": "lookup"},
        {"id": "bridge-c", "split": "test", "tier": "bridge"},
        {"id": "bridge-d", "split": "test", "tier": "bridge"},
        {"id": "bridge-e", "split": "test", "tier": "bridge"},
    ]
    tasks.write_text("".join(json.dumps({**r, "question": r["id"], "answer": "x"}) + "\n" for r in recs))
    with pytest.raises(ConfigError, match="--stages tasks"):
        pick(tasks, LearnConfig())
    two = {"template": {"question": "T?"}, "relative": {"question": "R?"}}
    variants = {r["id"]: two for r in recs if r["split"] == "test"} | {"bridge-d": {"template": {"question": "T?"}}}
    side = every_form([{**r, "question": "q"} for r in recs], variants, ("relative",))
    (tmp_path / "t.forms.jsonl").write_text("".join(json.dumps(r) + "\n" for r in side))
    # the window skips the first held-out task; bridge-d has one form; lookups are not asked
    picked = pick(tasks, LearnConfig(eval_skip=1, eval_n=3, forms_n=5))
    assert [r["id"] for r in picked] == [
        "bridge-c@template",
        "bridge-c@relative",
        "bridge-e@template",
        "bridge-e@relative",
    ]
    assert [r["id"] for r in pick(tasks, LearnConfig(eval_skip=1, eval_n=3, forms_n=1))] == [
        "bridge-c@template",
        "bridge-c@relative",
    ]


def test_the_side_file_is_written_only_for_the_records_the_task_file_holds(tmp_path):
    from training.learn.forms_eval import write_forms

    recs = [{"id": "bridge-c", "question": "T?", "split": "test", "form": "template", "difficulty": {}}]
    variants = {"bridge-c": {"template": {"question": "T?"}, "relative": {"question": "R?"}}}
    tasks = tmp_path / "tasks" / "t.jsonl"
    side = write_forms(tasks, recs, variants, ("relative",))  # before the task file: nothing to check
    assert side == tmp_path / "tasks" / "t.forms.jsonl" and len(side.read_text().splitlines()) == 2
    tasks.write_text(json.dumps({**recs[0], "question": "Edited?"}) + "\n")
    with pytest.raises(ConfigError, match="holds other questions"):
        write_forms(tasks, recs, variants, ("relative",), check=True)
    tasks.write_text(json.dumps(recs[0]) + "\n")
    assert write_forms(tasks, recs, variants, ("relative",), check=True) == side
