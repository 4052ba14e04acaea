"""Tool server capacity: many keep-alive clients from a second process on loopback, phase by phase.

Run: ``python -m benchmarks.bench_server [--index DIR] [--workers 2] [--clients 200] [--seconds 20]
[--routes search|mixed] [--load-fraction 0.8] [--think-ms 2000] [--python-clients] [--no-fast-routes]
[--warm-searches N] [--quick]``; ``--side-by-side [--batch 256] [--topk 3] [--rounds 3]`` for the many-query routes.

Starts ``sim-web serve`` in a subprocess (server cache off unless ``--server-cache``: every call is computed) and
runs these phases, each printed with its requests, errors, req/s, p50, p99 and p99 / single-request p50:

1. warm-up: 32 connections, closed loop (each worker's JVM needs a few thousand searches before Lucene runs at
   full speed, so every worker must get some); bodies that are not measured later;
2. single request: one connection, one request at a time: the latency of a quiet server (its p50 is the yardstick);
3. closed loop: ``--clients`` connections, each sending its next request as soon as the last is answered: the
   capacity (by Little's law its latency is clients / throughput, whatever the server does);
4. open loop at ``--load-fraction`` (80%) of that capacity: requests on a fixed schedule, each one's latency
   counted from when it was due (no coordinated omission), so the p99 shows the queueing a fleet of rollout
   workers meets at that load; the target is p99 <= 20x the single-request p50 here;
5. rollout-like, one phase per ``--think-ms``: each client pauses (exponentially, mean ``think``) between calls,
   standing for an LLM turn.

With ``--side-by-side`` it runs none of these: instead, in alternating rounds (after a warm-up), the same queries go
one per request to ``/tools/search`` (``--clients`` connections, closed loop, as in phase 3), and in batches of
``--batch`` to bulk ``/backend/search`` (``k=10``, the tool's results) and to Search-R1's ``/retrieve`` (``--topk``
passages with scores, as their client asks), over ``--batch-connections`` connections (default: one per worker, as a
trainer sends one request per turn for its whole batch). It prints each route's queries/s (median and range over the
rounds) and server CPU per query. The routes do different work per query: a ``/tools/search`` query reads ~30
passages to fill 10 result pages with snippets and formats the text; a ``/retrieve`` query reads ``topk`` passages.
Batch requests always come from asyncio httpx clients (a batch's reply is larger than the C generator's buffer; one
request per batch makes the client's cost small).

Each phase also gets the CPU time of the server's processes per request (Linux ``/proc``): on a machine shared
with other jobs it varies less than req/s, and ``cores / CPU per request`` bounds what idle cores would serve.

The load generator is ``benchmarks/loadgen.c``, compiled on first use (``cc -O2``, about a second) into a
directory under the system temp dir keyed by the source's hash. Why C: on a 2-core machine the generator shares
the CPU with the server it measures, and Python clients spend more CPU per request than the server itself
(docs/benchmarks.md has the comparison). ``wrk`` is not installed on most machines, needs a
Lua script to send varied bodies, and has no open-loop mode for phase 4. The C generator needs libc only (one
thread, epoll, keep-alive HTTP/1.1) and reports exact percentiles. Without a C compiler the phases fall back to
asyncio httpx clients (``--python-clients`` forces them), and the table says so: their numbers understate the
server's capacity. The load only targets 127.0.0.1 and stops by itself.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from benchmarks.common import ensure_sample_index, table
from benchmarks.loadgen import Phase, compile_loadgen, httpx_phase
from benchmarks.server_harness import Bodies, cpu_seconds, phase_runner, running_server


def _bodies(path: str, n: int, routes: str = "search") -> Bodies:
    """Request bodies from ``n`` derived tasks: a search per task, and a visit per task for ``routes="mixed"``."""
    from sim_web.env.tasks import derive_tasks
    from wiki_index.search.index import WikiIndex

    out: Bodies = []
    for t in derive_tasks(WikiIndex.from_dir(path).store, n=n):
        q = t.question.split('"')[1]
        out.append(("/tools/search", {"arguments": {"query": [q]}}))
        if routes == "mixed":
            out.append(
                (
                    "/tools/visit",
                    {"arguments": {"url": [f"https://en.wikipedia.org/wiki/{t.answer.replace(' ', '_')}"], "goal": q}},
                )
            )
    return out


def split_bodies(bodies: Bodies, phases: int, min_per_phase: int = 50) -> tuple[Bodies, Bodies, Bodies]:
    """Split the request bodies into warm-up, single-request and load parts, the load part at least
    ``min_per_phase`` bodies per phase (fewer bodies than that: an error, not a run of failed requests).

    Warm-up takes a fifth (at most 400) and the single-request pass a tenth (at most 200), so that a
    ``--quick`` run with a few hundred bodies still leaves most of them to the load phases.

    Raises:
        ValueError: Too few bodies for the phases.
    """
    n_warm, n_single = min(400, len(bodies) // 5), min(200, len(bodies) // 10)
    warm, single, load = bodies[:n_warm], bodies[n_warm : n_warm + n_single], bodies[n_warm + n_single :]
    if not warm or not single or len(load) < phases * min_per_phase:
        raise ValueError(
            f"{len(bodies)} request bodies are too few for warm-up, the single-request pass and "
            f"{phases} load phases of {min_per_phase}; the index yields too few tasks"
        )
    return warm, single, load


def run_phases(run: Callable[..., Phase], bodies: Bodies, args: argparse.Namespace) -> tuple[dict[str, Phase], float]:
    """Warm-up, single request, closed loop, open loop at ``load_fraction`` of its rate, think-time phases.

    Returns:
        The phases by name, and the closed-loop capacity in req/s.
    """
    warm, single, load = split_bodies(bodies, 2 + len(args.think_ms))
    chunk = len(load) // (2 + len(args.think_ms))
    parts = [load[i * chunk : (i + 1) * chunk] for i in range(2 + len(args.think_ms))]  # distinct calls per phase
    short = args.quick
    warm_connections = min(32, args.clients)  # enough for every worker to get some (each JVM warms its own JIT)
    phases = {
        f"warm-up ({warm_connections} connections, closed loop)": run(warm, warm_connections, 2 if short else 10),
        "single request (1 connection)": run(single, 1, 2 if short else 5),
    }
    closed = run(parts[0], args.clients, args.seconds)
    phases[f"closed loop ({args.clients} connections): capacity"] = closed
    capacity = closed.rate
    target = max(1.0, args.load_fraction * capacity)
    phases[f"open loop at {args.load_fraction:.0%} of capacity ({target:.0f} req/s)"] = run(
        parts[1], args.clients, args.seconds, target
    )
    for think, part in zip(args.think_ms, parts[2:]):
        phases[f"rollout-like ({args.clients} connections, {think} ms pauses)"] = run(
            part, args.clients, args.seconds, 0, think
        )
    return phases, capacity


def report(phases: dict[str, Phase], capacity: float, args: argparse.Namespace, generator: str) -> int:
    """Print the table and a JSON summary; the number of failed requests over all phases."""
    p50_single = next(p for name, p in phases.items() if name.startswith("single")).p50
    print(
        f"\ntool server ({args.workers} uvicorn workers, fast routes {'off' if args.no_fast_routes else 'on'}, server cache "
        f"{'on' if args.server_cache else 'off'}), {args.routes} requests, load from {generator}, {args.seconds:.0f} s per "
        f"load phase, loopback; machine load {os.getloadavg()[0]:.2f} (1-min average, {os.cpu_count()} cores)"
    )
    rows, summary = [], {}
    for name, r in phases.items():
        server_ms = r.server_cpu_s / r.requests * 1000 if r.server_cpu_s is not None and r.requests else None
        rows.append(
            [
                name,
                r.requests,
                r.errors,
                f"{r.rate:.0f}",
                f"{r.p50 * 1000:.2f}",
                f"{r.p99 * 1000:.2f}",
                f"{r.p99 / p50_single:.1f}x",
                "?" if server_ms is None else f"{server_ms:.2f}",
                f"{r.client_cpu_s:.2f}" if r.client_cpu_s is not None else "?",
            ]
        )
        summary[name] = {
            "requests": r.requests,
            "errors": r.errors,
            "req_per_s": round(r.rate, 1),
            "p50_ms": round(r.p50 * 1000, 2),
            "p99_ms": round(r.p99 * 1000, 2),
            "p99_over_single_p50": round(r.p99 / p50_single, 2),
            "server_cpu_ms_per_req": None if server_ms is None else round(server_ms, 3),
        }
    print(
        table(
            [
                "phase",
                "requests",
                "errors",
                "req/s",
                "p50 ms",
                "p99 ms",
                "p99 / single p50",
                "server CPU ms/req",
                "client CPU s",
            ],
            rows,
        )
    )
    at_load = next(p for name, p in phases.items() if name.startswith("open loop"))
    print(
        f"capacity {capacity:.0f} req/s (target >= 500); at {args.load_fraction:.0%} of it p99 = "
        f"{at_load.p99 / p50_single:.1f}x the single-request p50 of {p50_single * 1000:.2f} ms (target <= 20x)"
    )
    closed = next(p for name, p in phases.items() if name.startswith("closed loop"))
    if closed.server_cpu_s and closed.requests:
        per_request = closed.server_cpu_s / closed.requests
        print(
            f"server CPU {per_request * 1000:.2f} ms per request at capacity: at most {os.cpu_count() / per_request:.0f} "
            f"req/s on {os.cpu_count()} idle cores (neighbours on this machine take the rest)"
        )
    print(
        json.dumps(
            {"capacity_req_per_s": round(capacity, 1), "single_p50_ms": round(p50_single * 1000, 3), "phases": summary}
        )
    )
    return sum(r.errors for r in phases.values())


def _batches(queries: list[str], size: int, path: str, extra: dict) -> Bodies:
    """``queries`` cut into request bodies of ``size`` queries each (a short last part is dropped)."""
    return [(path, {"queries": queries[i : i + size], **extra}) for i in range(0, len(queries) - size + 1, size)]


def side_by_side(
    server: tuple[int, int], run: Callable[..., Phase], queries: list[str], args: argparse.Namespace
) -> dict[str, list[tuple[float, float | None, int]]]:
    """Alternating rounds of the same queries on the one-query tool route and the two batch routes.

    Returns:
        Per route, one ``(queries/s, server CPU s per query or None, errors)`` per round.
    """
    port, pid = server
    size = min(args.batch, len(queries))
    single = [("/tools/search", {"arguments": {"query": [q]}}) for q in queries]
    routes = {
        f"/tools/search, 1 query per request, {args.clients} connections": (single, args.clients, 1),
        f"/backend/search bulk, {size} per request, k=10": (
            _batches(queries, size, "/backend/search", {"k": 10}),
            args.batch_connections,
            size,
        ),
        f"/retrieve, {size} per request, topk={args.topk}, scores": (
            _batches(queries, size, "/retrieve", {"topk": args.topk, "return_scores": True}),
            args.batch_connections,
            size,
        ),
    }
    run(single, min(32, args.clients), 2 if args.quick else 10)  # warm-up: every worker's JIT
    for bodies, _, _ in list(routes.values())[1:]:
        httpx_phase(port, bodies[:1], 1, 0.01)  # one batch each, before anything is measured
    out: dict[str, list[tuple[float, float | None, int]]] = {name: [] for name in routes}
    for _ in range(args.rounds):
        for name, (bodies, connections, per_request) in routes.items():
            if per_request == 1:
                phase = run(bodies, connections, args.seconds)
            else:
                before = cpu_seconds(pid)
                phase = httpx_phase(port, bodies, connections, args.seconds)
                after = cpu_seconds(pid)
                phase = replace(phase, server_cpu_s=None if before is None or after is None else after - before)
            answered = (phase.requests - phase.errors) * per_request
            cpu = phase.server_cpu_s / answered if phase.server_cpu_s is not None and answered else None
            out[name].append((answered / phase.seconds if phase.seconds else 0.0, cpu, phase.errors))
    return out


def report_side_by_side(
    rounds: dict[str, list[tuple[float, float | None, int]]], args: argparse.Namespace, generator: str
) -> int:
    """Print the side-by-side table and a JSON summary; the number of failed requests."""
    import statistics

    print(
        f"\nqueries/s by route ({args.workers} uvicorn workers, server cache {'on' if args.server_cache else 'off'}, {args.rounds} alternating rounds of "
        f"{args.seconds:.0f} s per route; one-query load from {generator}, batches from asyncio httpx over "
        f"{args.batch_connections} connections); machine load {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)"
    )
    rows, summary = [], {}
    for name, runs in rounds.items():
        qps = [r[0] for r in runs]
        cpus = [r[1] * 1000 for r in runs if r[1] is not None]
        cpu = statistics.median(cpus) if cpus else None
        rows.append(
            [
                name,
                f"{statistics.median(qps):.0f}",
                f"{min(qps):.0f}-{max(qps):.0f}",
                "?" if cpu is None else f"{cpu:.2f}",
                sum(r[2] for r in runs),
            ]
        )
        summary[name] = {
            "queries_per_s_median": round(statistics.median(qps), 1),
            "queries_per_s": [round(q, 1) for q in qps],
            "server_cpu_ms_per_query": None if cpu is None else round(cpu, 3),
            "errors": sum(r[2] for r in runs),
        }
    print(table(["route", "queries/s (median)", "range", "server CPU ms/query", "errors"], rows))
    print(json.dumps({"side_by_side": summary}))
    return sum(r[2] for runs in rounds.values() for r in runs)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table; non-zero exit if any request failed."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--index", default=None)
    ap.add_argument(
        "--clients", type=int, default=200, help="connections of the closed-loop, open-loop and think phases"
    )
    ap.add_argument("--seconds", type=float, default=20, help="length of each load phase")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument(
        "--routes", choices=["search", "mixed"], default="search", help="search calls only, or searches and visits"
    )
    ap.add_argument(
        "--load-fraction", type=float, default=0.8, help="open-loop rate as a fraction of the measured capacity"
    )
    ap.add_argument(
        "--think-ms",
        type=int,
        nargs="*",
        default=[2000],
        help="pause of each client between its calls, one rollout-like phase per value (LLM generation time)",
    )
    ap.add_argument(
        "--server-cache",
        action="store_true",
        help="keep the server's result cache (default off: every call is computed)",
    )
    ap.add_argument(
        "--python-clients", action="store_true", help="asyncio httpx clients even when a C compiler is present"
    )
    ap.add_argument(
        "--no-fast-routes", action="store_true", help="serve every request through FastAPI (sim_web.serve.fast off)"
    )
    ap.add_argument(
        "--warm-searches",
        type=int,
        default=None,
        help="warm-up searches per server worker (default: the server's own; 0: none, to measure the warm-up)",
    )
    ap.add_argument("--quick", action="store_true", help="20 clients, 3 s phases, one 500 ms think phase: a smoke test")
    ap.add_argument(
        "--side-by-side",
        action="store_true",
        help="instead of the phases: queries/s of /tools/search vs batches on bulk /backend/search and /retrieve",
    )
    ap.add_argument("--batch", type=int, default=256, help="queries per batch request (--side-by-side; at most 512)")
    ap.add_argument(
        "--batch-connections", type=int, default=None, help="connections sending batches (default: --workers)"
    )
    ap.add_argument(
        "--topk", type=int, default=3, help="/retrieve passages per query (--side-by-side; Search-R1's default 3)"
    )
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds of the routes (--side-by-side)")
    args = ap.parse_args(argv)
    if args.quick:
        args.clients, args.seconds, args.think_ms = 20, 3, [500]
        args.batch, args.rounds = min(args.batch, 64), 1
    args.batch_connections = args.batch_connections or args.workers
    path = str(ensure_sample_index(args.index))
    bodies = _bodies(path, 300 if args.quick else 2000, args.routes)
    binary = None if args.python_clients else compile_loadgen()
    generator = "benchmarks/loadgen.c" if binary else "asyncio httpx clients (no C compiler: capacity understated)"
    if args.side_by_side:
        queries = [b["arguments"]["query"][0] for p, b in bodies if p == "/tools/search"]
        with (
            running_server(
                path, args.workers, args.server_cache, not args.no_fast_routes, warm_searches=args.warm_searches
            ) as server,
            tempfile.TemporaryDirectory(prefix="bench-server-") as tmp,
        ):
            rounds = side_by_side(server, phase_runner(server, binary, Path(tmp)), queries, args)
        return 0 if report_side_by_side(rounds, args, generator) == 0 else 1
    with (
        running_server(
            path, args.workers, args.server_cache, not args.no_fast_routes, warm_searches=args.warm_searches
        ) as server,
        tempfile.TemporaryDirectory(prefix="bench-server-") as tmp,
    ):
        phases, capacity = run_phases(phase_runner(server, binary, Path(tmp)), bodies, args)
    return 0 if report(phases, capacity, args, generator) == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
