"""``make bench``: every benchmark in turn, each printing its side-by-side table.

Run: ``python -m benchmarks.run_all [--quick]``. A benchmark that fails is reported and the
others still run; the exit status is non-zero if any failed.
"""

from __future__ import annotations

import argparse
import importlib
import time
import traceback

BENCHMARKS = [
    "bench_ingest",
    "bench_retrieval",
    "bench_env",
    "bench_executor",
    "bench_server",
    "bench_synth",
    "bench_agent_eval",
    "bench_real",
    "bench_growth",
    "bench_store",
    "bench_hard_retrieval",
    "bench_dense_scale",
    "bench_tiers",
]


def main(argv: list[str] | None = None) -> int:
    """Run every benchmark module's ``main``; returns the number of failures (capped at 1 for the shell)."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.run_all")
    ap.add_argument("--quick", action="store_true", help="smoke-sized runs")
    ap.add_argument("--only", nargs="*", default=None, help="names from: " + ", ".join(BENCHMARKS))
    args = ap.parse_args(argv)
    failed = []
    for name in args.only or BENCHMARKS:
        try:
            mod = importlib.import_module(f"benchmarks.{name}")
        except ModuleNotFoundError as e:
            if e.name == f"benchmarks.{name}":
                print(f"\n##### {name}: not present, skipped")
                continue
            raise
        print(f"\n##### {name}", flush=True)
        t = time.perf_counter()
        try:
            mod.main(["--quick"] if args.quick else [])
        except Exception:  # one broken benchmark must not hide the others' numbers
            traceback.print_exc()
            failed.append(name)
        print(f"##### {name}: {time.perf_counter() - t:.0f} s", flush=True)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
