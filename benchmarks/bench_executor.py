"""Tool-layer overhead: the executor (inline / thread-pool timeout / cache hit) and a whole
``parse_action`` + ``Toolbox.call`` step, against a direct backend call (the baseline).

The backend is an in-memory one that builds ten results per query (a few microseconds), so the
numbers are the tool layer's own cost; a sim search over the index costs milliseconds on top.
Run: ``python -m benchmarks.bench_executor [--n 5000] [--quick]``.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable

from benchmarks.common import per_call_us, table


class MemoryBackend:
    """Ten deterministic results per query, built on every call."""

    name = "memory"

    def search(self, query: str, k: int = 10):  # noqa: ANN201 - benchmark fixture
        from sim_web.protocol.results import SearchResult

        return [
            SearchResult(title=f"{query} {i}", link=f"https://en.wikipedia.org/wiki/P{i}", snippet="s" * 200)
            for i in range(k)
        ]

    def scholar(self, query: str, k: int = 10):  # noqa: ANN201
        return []

    def visit(self, url: str, goal: str):  # noqa: ANN201
        from sim_web.protocol.results import VisitResult

        return VisitResult(url=url, goal=goal, ok=True, evidence="e" * 1000, summary="s" * 200)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table."""
    from sim_web.executor import ExecutorConfig, ToolExecutor
    from sim_web.protocol.actions import parse_action
    from sim_web.tools import Toolbox

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=5000, help="calls per variant")
    ap.add_argument("--quick", action="store_true", help="smoke run (200 calls per variant)")
    args = ap.parse_args(argv)
    n = 200 if args.quick else args.n

    backend = MemoryBackend()
    inline = ToolExecutor([backend], ExecutorConfig(cache=False, timeout_s=None))
    pooled = ToolExecutor([backend], ExecutorConfig(cache=False, timeout_s=60.0))
    cached = ToolExecutor([backend], ExecutorConfig(cache=True, timeout_s=60.0))
    cached.search("warm", 10)
    toolbox = Toolbox(cached)
    turn = '<think>look it up</think>\n<tool_call>\n{"name": "search", "arguments": {"query": ["warm"]}}\n</tool_call>'

    variants: list[tuple[str, Callable[[int], object]]] = [
        ("direct backend.search (baseline)", lambda i: backend.search(f"q{i}", 10)),
        ("executor, no cache, inline", lambda i: inline.search(f"q{i}", 10)),
        ("executor, no cache, timeout (thread)", lambda i: pooled.search(f"q{i}", 10)),
        ("executor, cache hit", lambda i: cached.search("warm", 10)),
        ("parse_action", lambda i: parse_action(turn)),
        ("parse_action + Toolbox.call (hit)", lambda i: toolbox.call(parse_action(turn))),
    ]
    for _, fn in variants:  # warm-up
        for i in range(min(50, n)):
            fn(i)
    timings = {name: per_call_us(fn, n) for name, fn in variants}
    base = statistics.median(timings[variants[0][0]])
    rows = []
    for name, ts in timings.items():
        med = statistics.median(ts)
        p90 = statistics.quantiles(ts, n=10)[-1]
        rows.append([name, f"{med:.1f}", f"{p90:.1f}", f"{med / base:.2f}x", f"{med - base:+.1f}"])
    print(f"tool-layer overhead, {n} calls per variant, median per call (baseline: direct backend.search)")
    print(table(["variant", "median us", "p90 us", "ratio vs baseline", "overhead us"], rows))
    pooled.close()
    cached.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
