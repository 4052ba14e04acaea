"""Tool server under load: many concurrent clients from a second process on loopback.

Run: ``python -m benchmarks.bench_server [--index DIR] [--clients 200] [--seconds 20] [--workers 2]
[--think-ms 0 500 2000] [--quick]``.

Starts ``sim-web serve`` in a subprocess, warms it (the JVM's JIT needs a few thousand
searches before Lucene runs at full speed), measures the single-request p50 on a quiet server,
then runs ``--clients`` concurrent clients (search and visit calls on distinct queries) for
``--seconds`` per phase, one phase per ``--think-ms`` value: the mean pause each client takes
between its calls (exponentially distributed, so clients are independent like asynchronous
rollout workers), standing for the LLM's generation time in an RL rollout (0 = closed loop,
which measures capacity). It prints errors, throughput, p50/p99 and p99 / single-request p50.

The load comes from ``wrk`` (C, from Debian's ``wrk`` package) when installed, so that the load
generator does not eat the CPU the server needs on a small machine; else from asyncio httpx
clients. The load only targets 127.0.0.1 and stops by itself.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import ensure_sample_index, table

_LUA = """
bodies = {%s}
paths = {%s}
counter = 0
request = function()
  counter = counter + 1
  local i = (counter * 7919 + math.random(1, #bodies)) %% #bodies + 1
  return wrk.format("POST", paths[i], {["Content-Type"] = "application/json"}, bodies[i])
end
think = %d
delay = function()  -- exponential pauses: independent rollout workers, not one synchronised batch
  if think == 0 then return 0 end
  return math.floor(-think * math.log(1 - math.random()))
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT %%d %%d %%d %%d %%d %%d %%d %%d\\n", summary.requests, e.connect + e.read + e.write + e.timeout,
           e.status, latency:percentile(50), latency:percentile(99), summary.duration, latency.max, 0))
end
"""


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


def _wrk(url: str, bodies: list[tuple[str, dict]], clients: int, seconds: float, think_ms: int) -> dict[str, float]:
    """One wrk phase; returns requests, errors, p50/p99 (s) and the measured duration."""
    lua_str = lambda s: "[==[" + s + "]==]"  # noqa: E731 (Lua long strings need no escaping)
    script = _LUA % (", ".join(lua_str(json.dumps(b)) for _, b in bodies), ", ".join(lua_str(p) for p, _ in bodies), think_ms)
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(script)
    threads = max(1, min(2, clients))  # wrk needs connections >= threads
    out = subprocess.run(["wrk", f"-t{threads}", f"-c{clients}", f"-d{seconds:.0f}s", "--timeout", "60s", "-s", f.name, url],
                         capture_output=True, text=True, check=True).stdout
    Path(f.name).unlink()
    n, io_err, status_err, p50, p99, dur_us, _mx, _ = (int(x) for x in out.split("RESULT", 1)[1].split())
    return {"requests": n, "errors": io_err + status_err, "p50": p50 / 1e6, "p99": p99 / 1e6, "seconds": dur_us / 1e6}


async def _httpx_load(url: str, bodies: list[tuple[str, dict]], clients: int, seconds: float, think_ms: int) -> dict[str, float]:
    """The same phase with asyncio httpx clients (when wrk is not installed)."""
    import httpx

    import random

    rng = random.Random(0)
    lat: list[float] = []
    errors = 0
    t0 = time.perf_counter()
    stop = t0 + seconds
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
                    if (await client.post(path, json=body)).status_code != 200:
                        errors += 1
                except httpx.HTTPError:
                    errors += 1
                lat.append(time.perf_counter() - t)
                if think_ms:
                    await asyncio.sleep(rng.expovariate(1000 / think_ms))

        await asyncio.gather(*(worker(i) for i in range(clients)))
    lat.sort()
    return {"requests": len(lat), "errors": errors, "p50": lat[len(lat) // 2], "p99": lat[max(0, int(len(lat) * 0.99) - 1)],
            "seconds": time.perf_counter() - t0}


def _bodies(path: str, n: int) -> list[tuple[str, dict]]:
    from sim_web.env.tasks import derive_tasks
    from wiki_index.index import WikiIndex

    out: list[tuple[str, dict]] = []
    for t in derive_tasks(WikiIndex.from_dir(path).store, n=n):
        q = t.question.split('"')[1]
        out.append(("/tools/search", {"arguments": {"query": [q]}}))
        out.append(("/tools/visit", {"arguments": {"url": [f"https://en.wikipedia.org/wiki/{t.answer.replace(' ', '_')}"], "goal": q}}))
    return out


def split_bodies(bodies: list[tuple[str, dict]], phases: int, min_per_phase: int = 50) -> tuple[list, list, list]:
    """Split the request bodies into warm-up, single-request and load parts, the load part at least
    ``min_per_phase`` bodies per phase (fewer bodies than that: an error, not a run of failed requests).

    Warm-up takes a fifth (at most 400) and the single-request pass a tenth (at most 200), so that a
    ``--quick`` run with a few hundred bodies still leaves most of them to the load phases.

    Raises:
        ValueError: Too few bodies for the phases.
    """
    n_warm, n_single = min(400, len(bodies) // 5), min(200, len(bodies) // 10)
    warm, single, load = bodies[:n_warm], bodies[n_warm:n_warm + n_single], bodies[n_warm + n_single:]
    if not warm or not single or len(load) < phases * min_per_phase:
        raise ValueError(f"{len(bodies)} request bodies are too few for warm-up, the single-request pass and "
                         f"{phases} load phases of {min_per_phase}; the index yields too few tasks")
    return warm, single, load


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table; non-zero exit if any request failed."""
    import httpx

    ap = argparse.ArgumentParser()
    ap.add_argument("--index", default=None)
    ap.add_argument("--clients", type=int, default=200)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--think-ms", type=int, nargs="+", default=[0, 500, 2000],
                    help="pause of each client between its calls, one load phase per value (LLM generation time)")
    ap.add_argument("--server-cache", action="store_true", help="keep the server's result cache (default off: every call is computed)")
    ap.add_argument("--no-wrk", action="store_true", help="use asyncio httpx clients even when wrk is installed")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    if args.quick:
        args.clients, args.seconds, args.think_ms = 20, 3, [0, 500]
    use_wrk = shutil.which("wrk") is not None and not args.no_wrk
    path = str(ensure_sample_index(args.index))
    warm, single_bodies, load_bodies = split_bodies(_bodies(path, 2000 if not args.quick else 300), len(args.think_ms))
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([sys.executable, "-m", "sim_web.cli", "serve", "--index", path, "--port", str(port), "--workers", str(args.workers),
                             "--cache" if args.server_cache else "--no-cache"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    phases: dict[str, dict[str, float]] = {}
    try:
        _wait_ready(url, proc)
        # JIT warm-up on every worker with bodies that are not measured later (no cache hits)
        warm_load = (lambda: _wrk(url, warm, 8, 5 if not args.quick else 2, 0)) if use_wrk else \
            (lambda: asyncio.run(_httpx_load(url, warm, 8, 5 if not args.quick else 2, 0)))
        warm_load()
        if use_wrk:  # the same client as the load phases: one connection, one request at a time
            p50_single = _wrk(url, single_bodies, 1, 5 if not args.quick else 2, 0)["p50"]
        else:
            with httpx.Client(base_url=url, timeout=60) as c:
                single = []
                for p, b in single_bodies:
                    t = time.perf_counter()
                    c.post(p, json=b).raise_for_status()
                    single.append(time.perf_counter() - t)
            p50_single = statistics.median(single)
        chunk = len(load_bodies) // len(args.think_ms)  # split_bodies makes sure that each phase gets some
        for i, think in enumerate(args.think_ms):
            part = load_bodies[i * chunk:(i + 1) * chunk]  # distinct calls per phase: cache misses
            name = "closed loop (no pause)" if think == 0 else f"rollout-like ({think} ms pause)"
            phases[name] = _wrk(url, part, args.clients, args.seconds, think) if use_wrk else \
                asyncio.run(_httpx_load(url, part, args.clients, args.seconds, think))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print(f"\ntool server ({args.workers} uvicorn workers), {args.clients} concurrent clients ({'wrk' if use_wrk else 'httpx asyncio'}), "
          f"{args.seconds:.0f}s per phase, loopback, server cache {'on' if args.server_cache else 'off'}; single-request p50 {p50_single * 1000:.2f} ms after warm-up")
    rows, total_errors, summary = [], 0, {}
    for name, r in phases.items():
        total_errors += r["errors"]
        rows.append([name, r["requests"], r["errors"], f"{r['requests'] / r['seconds']:.0f}", f"{r['p50'] * 1000:.1f}",
                     f"{r['p99'] * 1000:.1f}", f"{r['p99'] / p50_single:.1f}x"])
        summary[name] = {"errors": r["errors"], "requests": r["requests"], "p99_over_single_p50": round(r["p99"] / p50_single, 2)}
    print(table(["phase", "requests", "errors", "req/s", "p50 ms", "p99 ms", "p99 / single p50 (target <= 20x)"], rows))
    print("closed loop = capacity: by Little's law its latency is clients / throughput, whatever the server does.")
    print(json.dumps(summary))
    return 0 if total_errors == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
