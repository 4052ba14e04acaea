"""The GPU recipes without vLLM: `use_vllm` falls back to TRL's transformers generation with one warning where vLLM or
CUDA is missing (or stops, with `trainer.require_vllm`); `--set trainer.use_vllm=false` works; the device logic can be forced on a CPU."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from simweb_core.errors import ConfigError
from training.grpo import trainer_config
from training.grpo.recipes import load_recipe
from training.grpo.trainer_config import choose_generation

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "vllm,cuda,missing",
    [
        (False, True, "the vllm package is not installed"),
        (True, False, "no CUDA GPU is visible"),
        (False, False, "the vllm package is not installed and no CUDA GPU"),
    ],
)
def test_a_missing_vllm_or_gpu_falls_back_with_one_warning(vllm, cuda, missing):
    use, note = choose_generation(True, False, vllm=vllm, cuda=cuda)
    assert use is False and missing in note and "transformers generation" in note and "use_vllm=false" in note
    with pytest.raises(ConfigError, match=f"{missing}.*pip install -e '.\\[gpu\\]'.*require_vllm=false"):
        choose_generation(True, True, vllm=vllm, cuda=cuda)


def test_vllm_is_used_when_it_can_run_and_never_when_not_asked_for():
    assert choose_generation(True, True, vllm=True, cuda=True) == (True, None)
    assert choose_generation(False, True, vllm=False, cuda=False) == (False, None)  # require_vllm alone changes nothing


def test_the_single_gpu_recipe_on_this_machine(monkeypatch, tmp_path):
    """No vLLM and no CUDA here: the recipe keeps asking for vLLM, the run generates with transformers on the CPU."""
    pytest.importorskip("trl")
    recipe = load_recipe("single-gpu", {"output_dir": str(tmp_path)})
    assert recipe.trainer.use_vllm and not recipe.trainer.require_vllm
    monkeypatch.setattr(trainer_config, "vllm_installed", lambda: False)
    monkeypatch.setattr(trainer_config, "cuda_available", lambda: False)
    use, note = recipe.generation()
    assert not use and "the vllm package is not installed and no CUDA GPU is visible" in note
    args = recipe.grpo_config()
    assert (args.use_vllm, args.use_cpu, args.bf16) == (False, True, True)
    assert load_recipe("single-gpu", {"trainer.use_vllm": False}).generation() == (False, None)
    with pytest.raises(ConfigError, match="require_vllm"):
        load_recipe("single-gpu", {"trainer.require_vllm": True}).generation()


def test_forcing_the_device_logic_picks_vllm_on_a_cuda_machine_with_vllm(monkeypatch):
    monkeypatch.setattr(trainer_config, "vllm_installed", lambda: True)
    monkeypatch.setattr(trainer_config, "cuda_available", lambda: True)
    assert load_recipe("single-gpu").generation() == (True, None)
    monkeypatch.setattr(trainer_config, "vllm_installed", lambda: False)
    use, note = load_recipe("single-gpu").generation()  # a CUDA image without vLLM: transformers on the GPU
    assert not use and note.startswith("trainer.use_vllm is set but the vllm package is not installed: ")


def test_single_gpu_recipe_runs_without_vllm_on_cpu_with_a_tiny_model(sample_index, synth_run, tmp_path):
    """`sim-web grpo --recipe single-gpu` end to end with a tiny model: the fallback warning, then real steps."""
    pytest.importorskip("trl")
    records, _ = synth_run
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    sets = [
        f"index_dir={sample_index}",
        f"tasks={tasks}",
        "model=tiny",
        "trainer.bf16=false",
        "trainer.gradient_checkpointing=false",
        "env.tools=search,visit",
        "loop.enabled=false",
        "trainer.max_steps=1",
        "trainer.num_generations=2",
        "trainer.prompts_per_step=1",
        "env.max_turns=2",
        "rollout.max_turn_tokens=16",
        "trainer.max_completion_length=256",
        "env.max_response_chars=400",
        "trainer.learning_rate=1e-3",
        "env.prompt=compact",
        "env.search_results=3",
    ]
    cmd = [sys.executable, "-m", "sim_web.cli", "grpo", "--recipe", "single-gpu", "--out", str(tmp_path / "run")]
    for s in sets:
        cmd += ["--set", s]
    env = {**os.environ, "TRL_EXPERIMENTAL_SILENCE": "1", "CUDA_VISIBLE_DEVICES": ""}
    res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stderr.count("generating with TRL's transformers generation instead") == 1
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1] and rows[0]["agent/generated_tokens"] > 0
