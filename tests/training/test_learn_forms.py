"""``sim-web learn`` with the question forms, the intersection tier and the strongest script: config and report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simweb_core.errors import ConfigError
from training.learn.config import STAGES, LearnConfig
from training.learn.report import render, summarise


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
