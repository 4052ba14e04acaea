"""Helpers shared by the benchmarks: the sample index, a call in a fresh process, per-call timing and a plain-text table."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any


def ensure_sample_index(path: str | None = None) -> Path:
    """Return the index directory, building the sample index there first if it is absent (BM25 only: a
    benchmark that needs dense retrieval gets it encoded on first use)."""
    from simweb_core.settings import default_index_dir
    from wiki_index.manifest import MANIFEST

    target = Path(path) if path else default_index_dir()
    if not (target / MANIFEST).is_file():
        from wiki_index.build import BuildConfig, build_index

        print(f"building the sample index at {target} ...", flush=True)
        build_index("sample", target, BuildConfig(dense=False))
    return target


def in_fresh_process(module: str, fn: str, *args: object, env: Mapping[str, str] | None = None) -> Any:
    """Run ``<module>.<fn>(*args)`` in a new Python process and return its JSON result (a cold JVM and JIT, and a
    peak RSS of its own).

    Raises:
        RuntimeError: The call failed (with the end of its stderr).
    """
    code = f"import json; from {module} import {fn}; print('RESULT', json.dumps({fn}(*{args!r})))"
    r = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, env=env)
    if r.returncode:
        raise RuntimeError(f"{module}.{fn}{args} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.split("RESULT", 1)[1])


def per_call_us(fn: Callable[[int], object], n: int) -> list[float]:
    """Microseconds of each of ``n`` calls ``fn(0) ... fn(n - 1)``."""
    out = []
    for i in range(n):
        t0 = time.perf_counter_ns()
        fn(i)
        out.append((time.perf_counter_ns() - t0) / 1000)
    return out


def query_latency_ms(fn: Callable[[str], object], queries: list[str], reps: int = 3) -> float:
    """Median over ``reps`` runs of the mean per-query latency of ``fn`` in ms."""
    import statistics

    runs = []
    for _ in range(reps):
        t = time.perf_counter()
        for q in queries:
            fn(q)
        runs.append((time.perf_counter() - t) * 1000 / len(queries))
    return statistics.median(runs)


def table(header: list[str], rows: list[list[object]]) -> str:
    """Format rows as an aligned plain-text table."""
    cells = [header] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    line = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths))  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in cells[1:]])
