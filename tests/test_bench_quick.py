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
