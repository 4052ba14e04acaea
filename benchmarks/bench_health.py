"""``/health`` latency while 64 clients hammer one tool route, before and after every route went through the pool.

Run: ``python -m benchmarks.bench_health [--index DIR] [--clients 64] [--seconds 10] [--before REV]
[--routes search,visit,scholar,backend,retrieve] [--rounds 1] [--burn N]``.

Issue 38 found ``/tools/search|visit|google_scholar`` and single-query ``/backend/*`` answered on the event loop when
the index is local: 32 clients searching pushed ``/health`` to a median 1.37 s. This starts ``sim-web serve`` (one
worker, cache off) twice in one run: from the source tree at git revision ``--before`` (default: the commit before
the fix, extracted with ``git archive`` into a temporary folder) and from this checkout. For each route, the C load
generator (``benchmarks/loadgen.c``; httpx clients without a compiler) keeps ``--clients`` connections busy on it,
closed loop, while this process sends one ``GET /health`` at a time on its own connection and records each
latency. It prints, per tree and route, the route's requests/s and errors and ``/health``'s p50 and p99 (target:
p99 under 50 ms). On a shared machine the numbers move with the other jobs; compare rows of one run. ``--burn N``
runs N busy-looping processes (at this process's priority) for the whole run, as the trainer and rollout workers
that share a training machine with its tool server would: the server then competes for the cores, as it does there.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from benchmarks.common import ensure_sample_index, table
from benchmarks.loadgen import compile_loadgen
from benchmarks.server_harness import Bodies, phase_runner, running_server

log = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[1]
BEFORE = "676774c"  #: the last commit that answered local-index tool calls on the event loop


def route_bodies(index: str, n: int = 200) -> dict[str, Bodies]:
    """Request bodies per route, from ``n`` derived tasks of the index."""
    from sim_web.env.tasks import derive_tasks
    from wiki_index.search.index import WikiIndex

    tasks = derive_tasks(WikiIndex.from_dir(index).store, n=n)
    qs = [t.question.split('"')[1] for t in tasks]
    urls = [f"https://en.wikipedia.org/wiki/{t.answer.replace(' ', '_')}" for t in tasks]
    return {
        "search": [("/tools/search", {"arguments": {"query": [q]}}) for q in qs],
        "visit": [("/tools/visit", {"arguments": {"url": [u], "goal": q}}) for u, q in zip(urls, qs)],
        "scholar": [("/tools/google_scholar", {"arguments": {"query": [q]}}) for q in qs],
        "backend": [("/backend/search", {"query": q, "k": 10}) for q in qs],
        "retrieve": [("/retrieve", {"queries": [q], "topk": 3, "return_scores": True}) for q in qs],
    }


@contextlib.contextmanager
def source_tree(rev: str | None) -> Iterator[Path]:
    """This checkout (``rev`` ``None``), or the files of git revision ``rev`` in a temporary folder."""
    if rev is None:
        yield ROOT
        return
    with tempfile.TemporaryDirectory(prefix="sim-web-before-") as tmp:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        yield Path(tmp)


def health_probe(port: int, stop: threading.Event, out: list[float]) -> None:
    """``GET /health`` latencies (seconds) into ``out``, one request at a time on one keep-alive connection, until
    ``stop``."""
    import httpx

    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as c:
        while not stop.is_set():
            start = time.perf_counter()
            c.get("/health").raise_for_status()
            out.append(time.perf_counter() - start)
            stop.wait(0.01)


@contextlib.contextmanager
def burners(n: int) -> Iterator[None]:
    """``n`` processes that keep a core busy each, until the block ends."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile (nearest rank) of ``values``."""
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--index", default=None, help="index folder (default: the sample, built if missing)")
    ap.add_argument("--clients", type=int, default=64, help="connections hammering the route")
    ap.add_argument("--seconds", type=float, default=10, help="load per route")
    ap.add_argument("--before", default=BEFORE, help="git revision of the 'before' tree ('' to skip it)")
    ap.add_argument("--routes", default="search,visit,scholar,backend,retrieve", help="comma-separated")
    ap.add_argument("--rounds", type=int, default=1, help="before/after pairs, run in turn (one server each)")
    ap.add_argument("--burn", type=int, default=0, help="busy-looping processes beside the server (other work)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per /health probe otherwise
    index = args.index or str(ensure_sample_index())
    bodies, binary = route_bodies(index), compile_loadgen()
    rows: list[list] = []
    with burners(args.burn):
        for _ in range(args.rounds):
            measure(args, index, bodies, binary, rows)
    log.info(
        "\n%s",
        table(["tree", "route", "route req/s", "errors", "/health probes", "/health p50 ms", "/health p99 ms"], rows),
    )


def measure(args: argparse.Namespace, index: str, bodies: dict[str, Bodies], binary: Path, rows: list[list]) -> None:
    """One row per tree and route into ``rows``: the route's load and ``/health``'s latency meanwhile."""
    for label, rev in [("before", args.before or None), ("after", None)]:
        if label == "before" and not args.before:
            continue
        with source_tree(rev) as tree, tempfile.TemporaryDirectory() as work:
            env = {**os.environ, "PYTHONPATH": str(tree)}
            with running_server(index, workers=1, cache=False, fast_routes=True, env=env, cwd=tree) as server:
                run = phase_runner(server, binary, Path(work))
                for route in args.routes.split(","):
                    stop = threading.Event()
                    probes: list[float] = []
                    prober = threading.Thread(target=health_probe, args=(server[0], stop, probes))
                    prober.start()
                    phase = run(bodies[route], args.clients, args.seconds)
                    stop.set()
                    prober.join()
                    rows.append(
                        [
                            label,
                            route,
                            f"{phase.rate:.0f}",
                            phase.errors,
                            len(probes),
                            f"{pct(probes, 0.5) * 1000:.1f}",
                            f"{pct(probes, 0.99) * 1000:.1f}",
                        ]
                    )
                    log.info("%s %s: /health p50 %s ms, p99 %s ms", *rows[-1][:2], *rows[-1][5:])


if __name__ == "__main__":
    main()
