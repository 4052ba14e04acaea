"""Every benchmark's ``--quick`` mode runs to the end without errors (a smoke test of the benchmarks themselves).

Each runs as ``python -m benchmarks.NAME --quick`` in a subprocess over the session's sample index
(``SIM_WEB_HOME`` points at it). The ones that take more than a few seconds on two cores are marked
``slow``; ``bench_train`` has no ``--quick`` mode (a few real GRPO steps) and is not run here.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

FAST = ["bench_executor", "bench_real", "bench_env", "bench_server", "bench_store"]
SLOW = [
    "bench_retrieval",
    "bench_hard_retrieval",
    "bench_ingest",
    "bench_synth",
    "bench_agent_eval",
    "bench_growth",
    "bench_dense_scale",
    "bench_tiers",
]


def _run(name: str, home: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SIM_WEB_HOME": home}
    return subprocess.run(
        [sys.executable, "-m", f"benchmarks.{name}", "--quick"], capture_output=True, text=True, env=env, timeout=900
    )


def _check(name: str, r: subprocess.CompletedProcess[str]) -> None:
    tail = (r.stdout + r.stderr)[-3000:]
    assert r.returncode == 0, f"{name} --quick exited {r.returncode}:\n{tail}"
    assert "Traceback" not in r.stderr, f"{name} --quick raised:\n{tail}"


@pytest.mark.parametrize("name", FAST)
def test_quick_benchmark_runs_clean(name: str, sample_index) -> None:
    _check(name, _run(name, str(sample_index.parents[1])))


@pytest.mark.slow
@pytest.mark.parametrize("name", SLOW)
def test_slow_quick_benchmark_runs_clean(name: str, sample_index) -> None:
    _check(name, _run(name, str(sample_index.parents[1])))


def test_server_bodies_leave_every_load_phase_some() -> None:
    from benchmarks.bench_server import split_bodies

    bodies = [("/tools/search", {"i": i}) for i in range(600)]  # what --quick's 300 tasks give
    warm, single, load = split_bodies(bodies, 2)
    assert warm and single and len(load) >= 2 * 50 and warm + single + load == bodies
    assert split_bodies([("/x", {})] * 4000, 3)[0] == [("/x", {})] * 400  # the full run keeps its 400 / 200 split
    with pytest.raises(ValueError, match="too few"):
        split_bodies(bodies[:40], 2)


def test_the_grpo_pass_bound_counts_every_product_once() -> None:
    """bench_grpo_loss's FLOP count: 6 x parameters x tokens for the linear layers, the causal half of the attention
    square, the output layer on the scored positions only; and a rate measured on a tiny backbone is positive."""
    from types import SimpleNamespace

    import torch

    from benchmarks.bench_grpo_loss import Part, linear_rate, pass_flops

    cfg = SimpleNamespace(
        hidden_size=8,
        intermediate_size=16,
        num_hidden_layers=2,
        num_key_value_heads=1,
        num_attention_heads=2,
        vocab_size=32,
    )
    lin = 2 * (2 * 8 * 8 + 2 * 4 * 8 + 2 * 16 * 8 + 8 * 16)  # q, o; k, v; gate, up; down; per layer
    assert pass_flops(cfg, [Part(rows=1, columns=1, scored=0)]) == 6 * lin + 3 * 4 * 2 * 2 * 4 / 2
    two = pass_flops(cfg, [Part(rows=2, columns=10, scored=3)])
    assert two == 6 * lin * 20 + 3 * 4 * 2 * 2 * 4 * 2 * 100 / 2 + 6 * 32 * 8 * 3
    assert linear_rate(cfg, 16, torch.float32) > 0


def test_paired_rollouts_can_pit_the_compact_decoder_against_its_earlier_draw() -> None:
    """``--paired-before flat-sampler``: inside the side's block the compact decoder draws with the one-level float64
    inverse CDF (the same tokens as the two-level draw on these scores), restored after; the report names the side."""
    import torch

    from agents.policies import compact_decode
    from benchmarks.rollout_speed import BEFORE, paired_report, sampler_line

    now = compact_decode._sample
    scores, uniform = torch.randn(64, 700, generator=torch.Generator().manual_seed(0)), torch.rand(64)
    with BEFORE["flat-sampler"][1]():
        assert compact_decode._sample is not now
        assert torch.equal(compact_decode._sample(scores, uniform), now(scores, uniform))
    assert compact_decode._sample is now
    records = [
        {"compact": c, "seconds": s, "tokens": 100, "rows": 32, "load": 1.0} for c, s in ((False, 2.0), (True, 1.0))
    ]
    report = paired_report(records, bound=1000.0, streamed=500.0, before="flat-sampler")
    assert "float64 one-level draw" in report and "2.00x on the totals" in report
    assert sampler_line(4, 300).startswith("sampling draw, 4 rows x 300 scores")


def test_the_grpo_pass_profile_names_the_ops_of_one_more_pass() -> None:
    """``bench_grpo_loss --profile N``: one more forward and backward pass under torch.profiler, its top ops listed."""
    from types import SimpleNamespace

    import torch

    from benchmarks.bench_grpo_loss import profile_table

    model = torch.nn.Linear(5, 1)
    trainer = SimpleNamespace(model=model, args=SimpleNamespace(trained_positions_only=True))
    batch = {
        "prompt_ids": torch.zeros(4, 2, dtype=torch.long),
        "completion_ids": torch.zeros(4, 3, dtype=torch.long),
        "completion_mask": torch.ones(4, 3),
        "advantages": torch.ones(4),
        "x": torch.randn(4, 5),
    }
    calls = []

    def loss_of(tr: object, m: torch.nn.Module, part: dict) -> torch.Tensor:
        calls.append(part["x"].shape[0])
        return m(part["x"]).sum()

    out = profile_table(trainer, (loss_of, batch, False, False), micro=2, top=5)
    assert out.startswith("profiled pass: ") and "aten::" in out
    assert calls == [2, 2] and trainer.args.trained_positions_only is False and model.weight.grad is not None


def test_the_rollout_bound_adds_the_prefill_columns_and_the_one_token_passes() -> None:
    """``bench_train --rollout-speed``: a play's generation at the bound, from the compact decoder's split."""
    from benchmarks.rollout_speed import rollout_bound

    timing = {"prefill_columns": 6000, "decode_steps": 100, "generation_seconds": 14.0}
    assert rollout_bound(timing, prefill_rate=3000.0, step_seconds=0.05) == pytest.approx(7.0)
    assert rollout_bound({"generation_seconds": 14.0}, 3000.0, 0.05) is None  # generate: no split to bound
