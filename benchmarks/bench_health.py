"""``/health`` latency while 64 clients hammer one tool route, before and after every route went through the pool.

Run: ``python -m benchmarks.bench_health [--index DIR] [--clients 64] [--seconds 10] [--before REV]
[--ws-before REV] [--routes search,visit,scholar,backend,retrieve,ws-open,ws-step,ws-refused] [--rounds 1]
[--burn N]``.

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

The ``ws-*`` rows load OpenEnv's ``/ws`` instead (:mod:`benchmarks.ws_load`, a process of its own): ``ws-open`` a
session opened, reset and closed per operation, ``ws-step`` a tool-call turn per operation on one session per
client, ``ws-refused`` handshakes refused while held sockets take every slot (issue 59). Their "before" tree is
``--ws-before`` (default: the last commit before issue 59's server fixes); the "after" server gives one client every
slot (``--max-sessions-per-client 64``), since all the load comes from loopback.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from benchmarks.common import ensure_sample_index, table
from benchmarks.loadgen import compile_loadgen
from benchmarks.server_harness import Bodies, cpu_seconds, phase_runner, running_server

log = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[1]
BEFORE = "676774c"  #: the last commit that answered local-index tool calls on the event loop
WS_BEFORE = "51d61f0"  #: the last commit before issue 59's server fixes (the "before" tree of the ws-* rows)
WS_ROUTES = ("ws-open", "ws-step", "ws-refused")
AFTER_ARGS = ("--max-sessions", "64", "--max-sessions-per-client", "64")


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
    ap.add_argument("--ws-before", default=WS_BEFORE, help="git revision of the ws-* rows' 'before' tree ('': skip)")
    ap.add_argument(
        "--routes", default="search,visit,scholar,backend,retrieve," + ",".join(WS_ROUTES), help="comma-separated"
    )
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
        table(
            [
                "tree",
                "route",
                "route req/s",
                "errors",
                "server CPU ms/op",
                "/health probes",
                "/health p50 ms",
                "/health p99 ms",
            ],
            rows,
        ),  # fmt: skip
    )


def measure(args: argparse.Namespace, index: str, bodies: dict[str, Bodies], binary: Path, rows: list[list]) -> None:
    """One row per tree and route into ``rows``: the route's load and ``/health``'s latency meanwhile."""
    routes = args.routes.split(",")
    http, ws = [r for r in routes if r not in WS_ROUTES], [r for r in routes if r in WS_ROUTES]
    plans = [("before", args.before, http), ("before", args.ws_before, ws), ("after", None, http + ws)]
    for label, rev, chosen in plans:
        if not chosen or (label == "before" and not rev):
            continue
        with source_tree(rev) as tree, tempfile.TemporaryDirectory() as work:
            env = {**os.environ, "PYTHONPATH": str(tree)}
            extra = AFTER_ARGS if label == "after" and ws else ()
            with running_server(index, 1, False, True, env=env, cwd=tree, extra_args=extra) as server:
                run = phase_runner(server, binary, Path(work))
                for route in chosen:
                    stop = threading.Event()
                    probes: list[float] = []
                    prober = threading.Thread(target=health_probe, args=(server[0], stop, probes))
                    prober.start()
                    rate, errors, cpu_ms = load_route(route, server, run, bodies, args)
                    stop.set()
                    prober.join()
                    p50, p99 = pct(probes, 0.5) * 1000, pct(probes, 0.99) * 1000
                    row = [
                        label,
                        route,
                        f"{rate:.0f}",
                        errors,
                        f"{cpu_ms:.2f}",
                        len(probes),
                        f"{p50:.1f}",
                        f"{p99:.1f}",
                    ]
                    rows.append(row)
                    log.info("%s %s: /health p50 %s ms, p99 %s ms", *row[:2], *row[6:])


def load_route(
    route: str, server: tuple[int, int], run: Callable[..., Any], bodies: dict[str, Bodies], args: argparse.Namespace
) -> tuple[float, int, float]:
    """Load one route for ``args.seconds``: its operations per second, its errors, and the server's CPU milliseconds
    per operation (steadier than latency on a shared machine: the work the server did, not how long it waited)."""
    if route not in WS_ROUTES:
        phase = run(bodies[route], args.clients, args.seconds)
        ops = phase.rate * args.seconds
        return phase.rate, phase.errors, (phase.server_cpu_s or float("nan")) * 1000 / max(ops, 1)
    port, pid = server
    mode, before = route.removeprefix("ws-"), cpu_seconds(pid)
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.ws_load", "--port", str(port), "--clients", str(args.clients),
         "--seconds", str(args.seconds), "--mode", mode, "--hold", "64"],
        capture_output=True, text=True, cwd=ROOT, check=True,
    ).stdout  # fmt: skip
    after, result = cpu_seconds(pid), json.loads(out.strip().splitlines()[-1])
    cpu = float("nan") if before is None or after is None else after - before
    return result["ops"] / max(result["seconds"], 1e-9), int(result["errors"]), cpu * 1000 / max(result["ops"], 1)


if __name__ == "__main__":
    main()
