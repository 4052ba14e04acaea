"""How far a stage moved a model's weights (float32 and bfloat16 rounding), and its place in the learn report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from tests.training.test_learn import _stage
from training.learn.movement import MovementError, weight_movement
from training.learn.report import summarise, write_report


def _model(folder: Path, shards: list[dict[str, torch.Tensor]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i, shard in enumerate(shards):
        save_file(shard, str(folder / f"model-{i:05d}.safetensors"))
    return folder


def test_movement_counts_float32_changes_and_the_bfloat16_roundings_they_flip(tmp_path):
    w = torch.full((100,), 0.25)
    moved = w.clone()
    moved[:60] += 1e-5  # under half a bfloat16 step at 0.25 (2**-9): float32 changes, bfloat16 does not
    moved[60:70] += 0.01  # several bfloat16 steps
    before = _model(tmp_path / "a", [{"w": w}, {"b": torch.ones(4)}])  # two shards: names are found in either
    after = _model(tmp_path / "b", [{"b": torch.ones(4), "w": moved}])
    m = weight_movement(before, after)
    assert m["params"] == 104
    assert m["changed"] == pytest.approx(70 / 104) and m["changed_bf16"] == pytest.approx(10 / 104)
    assert m["mean_abs_delta"] == pytest.approx((60 * 1e-5 + 10 * 0.01) / 104, rel=1e-3)
    assert m["mean_abs_weight"] == pytest.approx((100 * 0.25 + 4) / 104)
    assert weight_movement(before, before)["changed"] == 0.0


def test_movement_names_what_does_not_compare(tmp_path):
    a = _model(tmp_path / "a", [{"w": torch.zeros(3)}])
    with pytest.raises(MovementError, match="different tensors"):
        weight_movement(a, _model(tmp_path / "b", [{"v": torch.zeros(3)}]))
    with pytest.raises(MovementError, match=r"shape \(3,\) in .*, \(4,\) in"):
        weight_movement(a, _model(tmp_path / "c", [{"w": torch.zeros(4)}]))
    with pytest.raises(MovementError, match="no \\*.safetensors weights in .*empty"):
        weight_movement(a, _model(tmp_path / "empty", []))


def test_report_shows_how_far_each_grpo_run_moved_from_sft(tmp_path):
    ids = [f"bridge-{i:02d}" for i in range(4)]
    for folder in ("eval-sft", "eval-grpo", "eval-grpo-seed1", "eval-grpo-seed2"):
        _stage(tmp_path / folder, {t: 1 for t in ids})
    w = torch.full((8,), 0.5)
    _model(tmp_path / "sft", [{"w": w}])
    _model(tmp_path / "grpo" / "final", [{"w": w + torch.tensor([0.1] * 2 + [0.0] * 6)}])
    _model(tmp_path / "grpo-seed1" / "final", [{"v": w}])  # not the same architecture: reported, not fatal
    # grpo-seed2 has no weights here (a report copied without its models): left out
    s = summarise(tmp_path)
    assert s["movement"]["grpo"]["changed"] == 0.25 and s["movement"]["grpo"]["changed_bf16"] == 0.25
    assert "different tensors" in s["movement"]["grpo-seed1"]["error"]
    assert "grpo-seed2" not in s["movement"]
    (tmp_path / "grpo").mkdir(exist_ok=True)
    write_report(tmp_path, tmp_path / "grpo")
    md = (tmp_path / "report.md").read_text()
    assert "| grpo | 8 | 0.250 | 0.250 |" in md and "| grpo-seed1 | " in md
    assert json.loads((tmp_path / "report.json").read_text())["movement"]["grpo"]["params"] == 8
