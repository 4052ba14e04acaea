"""Tool server under load: many concurrent clients from a second process on loopback.

Run: ``python -m benchmarks.bench_server [--index DIR] [--clients 200] [--seconds 20] [--workers 2] [--quick]``.
Starts ``sim-web serve`` in a subprocess, measures a single-request p50 first, then runs
``--clients`` concurrent asyncio clients (search and visit calls on distinct queries) for a
bounded time, and prints errors, throughput, p50/p99 and p99 / single-request p50 (target <= 20x).
The load only targets 127.0.0.1 and stops by itself.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import time

from benchmarks.common import ensure_sample_index, table


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_ready(url: str, proc: subprocess.Popen, timeout: float = 120) -> None:
    import httpx

    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}: {proc.stderr.read().decode()[-2000:] if proc.stderr else ''}")
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.3)
    raise RuntimeError("server did not become ready")


async def _load(url: str, bodies: list[tuple[str, dict]], clients: int, seconds: float, think_s: float = 0.0) -> tuple[list[float], int, int]:
    import httpx

    lat: list[float] = []
    errors = 0
    stop = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:

        async def worker(i: int) -> None:
            nonlocal errors
            j = i
            while time.perf_counter() < stop:
                path, body = bodies[j % len(bodies)]
                j += clients
                t = time.perf_counter()
                try:
                    r = await client.post(path, json=body)
                    if r.status_code != 200:
                        errors += 1
                except httpx.HTTPError:
                    errors += 1
                lat.append(time.perf_counter() - t)
                if think_s:  # a rollout worker generates between tool calls
                    await asyncio.sleep(think_s)

        await asyncio.gather(*(worker(i) for i in range(clients)))
    return lat, errors, len(lat)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table."""
    import httpx

    from sim_web.tasks import derive_tasks
    from wiki_index.index import WikiIndex

    ap = argparse.ArgumentParser()
    ap.add_argument("--index", default=None)
    ap.add_argument("--clients", type=int, default=200)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--think-ms", type=float, default=500, help="pause between a client's calls in the second phase (LLM generation time)")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    if args.quick:
        args.clients, args.seconds = 20, 3
    path = str(ensure_sample_index(args.index))
    tasks = derive_tasks(WikiIndex.from_dir(path).store, n=500)
    bodies: list[tuple[str, dict]] = []
    for t in tasks:
        q = t.question.split('"')[1]
        bodies.append(("/tools/search", {"arguments": {"query": [q]}}))
        bodies.append(("/tools/visit", {"arguments": {"url": [f"https://en.wikipedia.org/wiki/{t.answer.replace(' ', '_')}"], "goal": q}}))
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([sys.executable, "-m", "sim_web.cli", "serve", "--index", path, "--port", str(port), "--workers", str(args.workers)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_ready(url, proc)
        with httpx.Client(base_url=url, timeout=60) as c:
            for p, b in bodies[:20]:  # warm every worker's JVM and caches on other bodies
                c.post(p, json=b)
            single = []
            for p, b in bodies[20:120]:
                t = time.perf_counter()
                c.post(p, json=b).raise_for_status()
                single.append(time.perf_counter() - t)
        p50_single = statistics.median(single)
        half = len(bodies[120:]) // 2
        phases = {"closed loop (no pause)": asyncio.run(_load(url, bodies[120:120 + half], args.clients, args.seconds)),
                  f"rollout-like ({args.think_ms:.0f} ms pause)": asyncio.run(_load(url, bodies[120 + half:], args.clients, args.seconds, args.think_ms / 1000))}
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print(f"\ntool server ({args.workers} uvicorn workers), {args.clients} concurrent clients, {args.seconds:.0f}s per phase, loopback;"
          f" single-request p50 {p50_single * 1000:.1f} ms")
    rows, total_errors, summary = [], 0, {}
    for name, (lat, errors, n) in phases.items():
        lat.sort()
        p50, p99 = lat[len(lat) // 2], lat[max(0, int(len(lat) * 0.99) - 1)]
        total_errors += errors
        rows.append([name, n, errors, f"{n / args.seconds:.0f}", f"{p50 * 1000:.1f}", f"{p99 * 1000:.1f}", f"{p99 / p50_single:.1f}x"])
        summary[name] = {"errors": errors, "requests": n, "p99_over_single_p50": round(p99 / p50_single, 2)}
    print(table(["phase", "requests", "errors", "req/s", "p50 ms", "p99 ms", "p99 / single p50 (target <= 20x)"], rows))
    print(json.dumps(summary))
    return 0 if total_errors == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
