"""Real-web tool layer against a local Serper mock: the Serper backend and the executor over it (cache miss,
in-process cache hit, persistent SQLite cache hit) per call as a ratio to a bare httpx call; throughput with the
QPS limiter saturated as a ratio to the configured limit; time to recover from a burst of 429s.

The mock (``sim_web/backends/mocks.py``) answers ten fixed results per query over loopback, so the
numbers are our own cost on top of one HTTP round trip; the real Serper adds hundreds of ms of network.
Run: ``python -m benchmarks.bench_real [--n 500] [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.common import per_call_us, table

KEY = "bench-key"


class StaticContent:
    """Ten fixed results per query (what the mock serves)."""

    def search(self, query: str, k: int = 10):
        from sim_web.protocol.results import SearchResult

        return [
            SearchResult(title=f"{query} {i}", link=f"https://en.wikipedia.org/wiki/P{i}", snippet="s" * 200)
            for i in range(k)
        ]

    def scholar(self, query: str, k: int = 10):
        return []


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table."""
    import httpx

    from sim_web.backends.mocks import MockSerper
    from sim_web.backends.serper import SerperBackend, SerperConfig, request_body
    from sim_web.executor import BackendPolicy, ExecutorConfig, SqliteCache, ToolExecutor

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=500, help="calls per variant")
    ap.add_argument("--quick", action="store_true", help="smoke run (30 calls per variant)")
    args = ap.parse_args(argv)
    n = 30 if args.quick else args.n

    mock = MockSerper(StaticContent(), KEY)
    tmp = Path(tempfile.mkdtemp(prefix="bench-real-"))
    try:
        cfg = SerperConfig(base_url=mock.base_url)
        bare = httpx.Client(headers={"X-API-KEY": KEY, "Content-Type": "application/json"})
        backend = SerperBackend(KEY, cfg)
        policy = {"serper": BackendPolicy(timeout_s=30.0, max_retries=0)}
        miss = ToolExecutor([backend], ExecutorConfig(cache=False, policies=policy))
        hit = ToolExecutor([backend], ExecutorConfig(policies=policy))
        hit.search("warm", 10)
        warm = ToolExecutor([backend], ExecutorConfig(policies=policy), persistent=SqliteCache(tmp / "results.sqlite"))
        for i in range(n + 50):
            warm.search(f"p{i}", 10)
        disk = ToolExecutor([backend], ExecutorConfig(policies=policy), persistent=SqliteCache(tmp / "results.sqlite"))

        def bare_call(i: int) -> object:
            r = bare.post(mock.base_url + "/search", content=json.dumps(request_body(f"q{i}", cfg)).encode())
            return r.json()["organic"]

        variants: list[tuple[str, Callable[[int], object]]] = [
            ("bare httpx POST + json (baseline)", bare_call),
            ("SerperBackend.search", lambda i: backend.search(f"q{i}", 10)),
            ("executor, cache miss (HTTP)", lambda i: miss.search(f"q{i}", 10)),
            ("executor, persistent cache hit (SQLite)", lambda i: disk.search(f"p{i + 50}", 10)),
            ("executor, in-process cache hit", lambda i: hit.search("warm", 10)),
        ]
        for name, fn in variants:  # warm-up (the disk variant's first 50 keys are spent here)
            for i in range(min(50, n)):
                fn(i - 50 if "SQLite" in name else i)
        timings = {name: per_call_us(fn, n) for name, fn in variants}
        base = statistics.median(timings[variants[0][0]])
        rows = []
        for name, ts in timings.items():
            med = statistics.median(ts)
            p90 = statistics.quantiles(ts, n=10)[-1]
            rows.append([name, f"{med:.1f}", f"{p90:.1f}", f"{med / base:.2f}x"])
        print(
            f"real-web tool layer vs a bare httpx call on a loopback Serper mock, {n} calls per variant, median per call"
        )
        print(table(["variant", "median us", "p90 us", "ratio vs baseline"], rows))
        print()
        print(table(["scenario", "measured", "ratio"], _limits(mock, cfg, n, base)))
        for ex in (miss, hit, warm, disk):
            ex.close()
        backend.close()
        bare.close()
    finally:
        mock.close()
    return 0


def _limits(mock, cfg, n: int, base_us: float) -> list[list[str]]:
    """Throughput under a saturated QPS limit, and recovery from five 429s (Retry-After: 0, 10 ms backoff)."""
    from sim_web.backends.mocks import Fault
    from sim_web.backends.serper import SerperBackend
    from sim_web.executor import BackendPolicy, ExecutorConfig, ToolExecutor

    qps = 50.0
    limited = ToolExecutor(
        [SerperBackend(KEY, cfg)],
        ExecutorConfig(cache=False, policies={"serper": BackendPolicy(qps=qps, burst=1, timeout_s=30.0)}),
    )
    calls = max(20, n // 5)
    t0 = time.perf_counter()
    for i in range(calls):
        limited.search(f"l{i}", 10)
    rate = calls / (time.perf_counter() - t0)
    recovering = ToolExecutor(
        [SerperBackend(KEY, cfg)],
        ExecutorConfig(
            cache=False,
            policies={
                "serper": BackendPolicy(
                    timeout_s=30.0, max_retries=6, backoff_base_s=0.01, backoff_max_s=0.01, jitter_s=0.0
                )
            },
        ),
    )
    mock.inject(*[Fault(status=429, retry_after="0")] * 5)
    t0 = time.perf_counter()
    recovering.search("after the burst", 10)
    recover_us = (time.perf_counter() - t0) * 1e6
    limited.close(), recovering.close()
    return [
        [f"calls/s with qps={qps:g} saturated", f"{rate:.1f}", f"{rate / qps:.2f}x of the limit"],
        ["first answer after five 429s (us)", f"{recover_us:.0f}", f"{recover_us / base_us:.1f}x a bare call"],
    ]


if __name__ == "__main__":
    raise SystemExit(main())
