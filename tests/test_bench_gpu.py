"""The GPU check (`python -m benchmarks.bench_gpu`): without CUDA it says so and exits 0; its recipe is the single-gpu
one cut to a few small steps; its report reads the trainer's per-step metrics."""

import argparse
import os
import subprocess
import sys
from pathlib import Path

from benchmarks import bench_gpu

ROOT = Path(__file__).resolve().parents[1]


def test_without_cuda_it_says_so_and_exits_0():
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    r = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_gpu"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "GPU check: no CUDA GPU visible" in r.stdout and "run this on a CUDA machine" in r.stdout


def test_the_recipe_is_single_gpu_cut_to_a_few_small_steps(tmp_path, monkeypatch):
    from sim_web.tools.python import sandbox

    monkeypatch.setattr(sandbox, "sandbox_problem", lambda config=None: "bubblewrap is not on PATH")
    monkeypatch.setattr(bench_gpu, "ensure_sailorfog", lambda index: None)  # synthesis is `sim-web synth`'s to test
    args = argparse.Namespace(model="smollm2", steps=3, group=4, prompts=2, turns=4, turn_tokens=128, budget=2048)
    r = bench_gpu.gpu_recipe(args, tmp_path, str(tmp_path / "out"))  # no cpu-learn tier there: the default task set
    assert (r.name, r.model, r.trainer.bf16, r.trainer.use_vllm, r.tasks) == ("single-gpu", "smollm2", True, True, None)
    assert (
        r.trainer.max_steps,
        r.trainer.num_generations,
        r.trainer.prompts_per_step,
        r.env.max_turns,
        r.rollout.max_turn_tokens,
    ) == (3, 4, 2, 4, 128)
    assert not r.loop.enabled and r.prefilter.k == 0 and "PythonInterpreter" not in r.tools
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "cpu-learn.jsonl").write_text("")
    assert bench_gpu.gpu_recipe(args, tmp_path, str(tmp_path / "out")).tasks == "cpu-learn"


def test_the_report_splits_each_step_and_the_totals():
    metrics = [
        {
            "step": 1,
            "agent/reward_mean": 0.25,
            "agent/generated_tokens": 800,
            "time/generation": 4.0,
            "time/tool": 0.5,
            "time/training": 3.5,
        },
        {
            "step": 2,
            "agent/reward_mean": 0.5,
            "agent/generated_tokens": 1200,
            "time/generation": 6.0,
            "time/tool": 0.5,
            "time/training": 5.5,
        },
    ]
    rows, tot = bench_gpu.step_rows(metrics)
    assert rows[0] == ["1", "0.250", "800", "200", "8.0", "4.0", "0.50", "3.5"]
    line = bench_gpu.split_line(tot)
    assert (
        "generation 50.0%" in line
        and "tool calls 5.00%" in line
        and "training 45.0%" in line
        and "200 generated" in line
    )
