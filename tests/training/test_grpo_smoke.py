"""The cpu-smoke recipe end to end: `sim-web grpo` in a subprocess on SailorFog tasks of the sample, then a resume."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def sailorfog_tasks(synth_run, tmp_path_factory):
    """The synthesized SailorFog-QA questions of the sample index as a task file."""
    records, _ = synth_run
    path = tmp_path_factory.mktemp("tasks") / "sailorfog_qa.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    assert any(r.get("split") == "train" for r in records)
    return path


def test_cpu_smoke_recipe_trains_checkpoints_and_resumes(sample_index, sailorfog_tasks, tmp_path, caplog):
    out = tmp_path / "run"
    sets = [
        f"index_dir={sample_index}",
        f"tasks={sailorfog_tasks}",
        "env.prompt=compact",
        "env.search_results=3",
    ]  # the small-model env
    cmd = [sys.executable, "-m", "sim_web.cli", "grpo", "--recipe", "cpu-smoke", "--out", str(out)]
    for s in sets:
        cmd += ["--set", s]
    env = {**os.environ, "TRL_EXPERIMENTAL_SILENCE": "1"}
    res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "note: tools: search, visit, google_scholar" in res.stderr
    assert "reward  answered  dropped" in res.stdout and "final model" in res.stdout
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    for r in rows:
        assert r["agent/turns"] >= 1 and r["agent/generated_tokens"] > 0 and r["time/generation"] > 0
        assert r["time/prefill"] > 0 and r["time/decode"] > 0  # the compact decoder's split of the generation
        assert r["memory/peak_rss_gb"] >= r["memory/rss_gb"] > 0.1  # at least the torch runtime, at most the peak
        assert isinstance(r["memory/trimmed_gb"], float)  # glibc (CI's Linux) has malloc_trim
        assert 0.0 <= r["agent/frac_dropped"] <= 1.0 and r["agent/answer_rate"] <= 1.0
        assert sum(
            r[f"agent/no_answer/{k}"] for k in ("length", "turn_cap", "rollback", "obs_budget")
        ) == pytest.approx(r["agent/frac_no_answer"])
    assert rows[1]["memory/peak_rss_gb"] >= rows[0]["memory/peak_rss_gb"]  # a peak never falls
    assert (out / "checkpoint-2").is_dir() and (out / "final" / "config.json").is_file()

    from training.grpo.recipes import load_recipe
    from training.grpo.train import main

    recipe = load_recipe(
        "cpu-smoke",
        {
            "index_dir": str(sample_index),
            "tasks": str(sailorfog_tasks),
            "output_dir": str(out),
            "trainer.max_steps": 3,
            "env.prompt": "compact",
            "env.search_results": 3,
        },
    )
    summary = main(recipe)
    assert summary["resumed_from"].endswith("checkpoint-2") and summary["steps"] == 3
    recorded = json.loads((out / "summary.json").read_text())["config"]  # the whole recipe: part of the run's identity
    env = recorded["env"]
    assert (env["prompt"], env["search_results"], env["sim"]["snippet_chars"], recorded["trainer"]["max_steps"]) == (
        "compact",
        3,
        240,
        3,
    )
    assert [r["step"] for r in summary["metrics"]] == [1, 2, 3]  # one new step after the resume

    # resumed once more at its last step (an ablation whose eval was interrupted): no step is trained again (a
    # trainer resumed at its last step may train one more: 13 of 12 steps happened in an ablation with DUPO)
    (out / "final" / "config.json").unlink()
    with caplog.at_level("WARNING", logger="training.grpo.train"):
        again = main(recipe)
    assert "already holds the last step (3): nothing to train" in caplog.text
    assert again["resumed_from"].endswith("checkpoint-3") and again["steps"] == 3
    assert [r["step"] for r in again["metrics"]] == [1, 2, 3] and not (out / "checkpoint-4").exists()
    assert (out / "final" / "config.json").is_file() and not (out / "final" / "optimizer.pt").exists()
    assert again["config"]["trainer"]["max_steps"] == 3  # the finished sitting's summary names its recipe too

    # another seed would resume (and report as its own) a run it did not start: refused before anything trains
    from dataclasses import replace

    from simweb_core.errors import ConfigError

    with pytest.raises(ConfigError, match=rf"seed: started with {recipe.seed}, now {recipe.seed + 1}"):
        main(replace(recipe, seed=recipe.seed + 1))
    assert json.loads((out / "recipe.json").read_text())["seed"] == recipe.seed


def test_trim_heap_gives_back_freed_heap_pages():
    import ctypes

    from training.grpo.memory import rss_gb, trim_heap

    libc = ctypes.CDLL(None)
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    size = 64 << 10  # under glibc's mmap threshold: the blocks come from the heap
    blocks = [libc.malloc(size) for _ in range(7000)]
    for b in blocks:
        ctypes.memset(b, 1, size)  # touched: resident
    for b in blocks[:-1]:  # the last block keeps the heap's top in use, so free() alone cannot shrink it
        libc.free(b)
    held = rss_gb()
    given = trim_heap()
    libc.free(blocks[-1])
    assert given is not None and given > 0.2 and rss_gb() < held  # most of the 448 MB freed went back
