"""Agent evaluation throughput: the oracle sequential vs threaded vs lockstep, and a real small model (SmolLM2).

Run: ``python -m benchmarks.bench_agent_eval [--index DIR] [--quick] [--smollm2-tasks N]``.
``--quick`` runs the oracle on 16 tasks and skips SmolLM2 (which takes minutes on a CPU).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from benchmarks.common import ensure_sample_index, table

LATENCY = 0.05  # seconds per request of the simulated remote endpoint


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the tables."""
    from agents.config import AgentConfig, SamplingConfig
    from agents.harness import EvalConfig, resolve_tasks, run_eval
    from agents.policies.base import FunctionPolicy
    from agents.policies.oracle import OraclePolicy
    from wiki_index.search.index import WikiIndex

    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_agent_eval")
    ap.add_argument("--index", default=None)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--smollm2-tasks", type=int, default=3, help="tasks for the SmolLM2 run (0 = skip)")
    ap.add_argument(
        "--smollm2-threads", type=int, default=1, help="torch threads for SmolLM2 (1 is fastest on a busy 2-core box)"
    )
    args = ap.parse_args(argv)
    path = str(ensure_sample_index(args.index))
    n = 16 if args.quick else None
    tasks = resolve_tasks(WikiIndex.from_dir(path), None, "test")[:n]
    tmp = Path(tempfile.mkdtemp(prefix="bench-agent-"))
    base = dict(policy="oracle", index_dir=path, n=n, progress=False)

    for i in range(2):  # warm the JVM's JIT, Lucene's and DuckDB's pages (the first pass is several times slower)
        run_eval(EvalConfig(**base, out=str(tmp / f"warm{i}"), workers=4))
    store = WikiIndex.from_dir(path).store

    class Lockstep(FunctionPolicy):
        batched = True

    class Remote(OraclePolicy):
        """The oracle behind a simulated endpoint that takes ``LATENCY`` seconds per request."""

        def generate(self, batch, sampling=None, seeds=None):  # type: ignore[no-untyped-def]
            time.sleep(LATENCY)
            return super().generate(batch, sampling, seeds)

    rows, seq, seq_remote = [], None, 1.0
    for label, cfg, policy in [
        ("oracle, sequential (1 thread)", EvalConfig(**base, out=str(tmp / "w1"), workers=1), None),
        ("oracle, 4 threads", EvalConfig(**base, out=str(tmp / "w4"), workers=4), None),
        ("oracle, lockstep batches of 8", EvalConfig(**base, out=str(tmp / "b8"), batch_size=8), "lockstep"),
        (
            f"oracle + {LATENCY * 1000:.0f} ms endpoint latency, 1 thread",
            EvalConfig(**base, out=str(tmp / "r1"), workers=1),
            "remote",
        ),
        (
            f"oracle + {LATENCY * 1000:.0f} ms endpoint latency, 8 threads",
            EvalConfig(**base, out=str(tmp / "r8"), workers=8),
            "remote",
        ),
    ]:
        pol = None
        if policy == "lockstep":
            pol = Lockstep(OraclePolicy(tasks, store).act_batch, name="oracle", batched_fn=True)
        elif policy == "remote":
            pol = Remote(tasks, store)
        t = time.perf_counter()
        res = run_eval(cfg, policy=pol)
        dt = time.perf_counter() - t
        eps = res.metrics["episodes"] / dt
        seq = seq or eps
        if policy == "remote" and cfg.workers == 1:
            seq_remote = eps
        if policy == "remote" and cfg.workers > 1:
            label += f" ({eps / seq_remote:.2f}x vs 1 thread)"
        rows.append(
            [
                label,
                res.metrics["episodes"],
                f"{res.metrics['pass@1']:.3f}",
                f"{dt:.2f}",
                f"{eps:.2f}",
                f"{eps / seq:.2f}x",
            ]
        )
    print(f"\noracle on the held-out derived tasks of {path}")
    print(table(["run", "episodes", "pass@1", "seconds", "episodes/s", "vs sequential"], rows))

    if args.quick or args.smollm2_tasks <= 0:
        return 0
    from agents.models import smollm2_path

    smollm2_path()  # convert once, outside the timing
    agent = AgentConfig(max_llm_calls=4, sampling=SamplingConfig(temperature=0.0, presence_penalty=0.0, max_tokens=192))
    rows = []
    for bs in (1, args.smollm2_tasks):
        t = time.perf_counter()
        res = run_eval(
            EvalConfig(
                policy="hf:smollm2",
                index_dir=path,
                n=args.smollm2_tasks,
                batch_size=bs,
                agent=agent,
                threads=args.smollm2_threads,
                out=str(tmp / f"smol{bs}"),
                progress=False,
            )
        )
        m = res.metrics
        rows.append(
            [
                f"batch {bs}",
                m["episodes"],
                f"{m['format_validity']:.3f}",
                f"{m['pass@1']:.3f}",
                m["tokens"]["completion_total"],
                f"{m['run']['generated_tokens_per_second']:.1f}",
                f"{time.perf_counter() - t:.0f}",
            ]
        )
    print(f"\nSmolLM2-135M-Instruct (greedy, 192 new tokens/turn, 4 LLM calls) on {args.smollm2_tasks} held-out tasks")
    print(
        table(["generation", "episodes", "format validity", "pass@1", "tokens generated", "tokens/s", "wall s"], rows)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
