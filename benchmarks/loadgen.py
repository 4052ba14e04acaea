"""HTTP load for the server benchmark: the C generator of ``loadgen.c`` (compiled on first use), or asyncio httpx clients.

Both run one phase: ``clients`` keep-alive connections to ``127.0.0.1:port`` sending POST bodies in turn for
``seconds``, closed loop (``rate=0``; optional exponential ``think_ms`` pauses) or open loop (``rate`` requests/s
on a fixed schedule, latency counted from each request's due time). See ``benchmarks/bench_server.py`` for why C.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import random
import shutil
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)
SOURCE = Path(__file__).with_name("loadgen.c")
Call = Callable[[float], Awaitable[None]]  # one request, its latency counted from the given due time


@dataclass(frozen=True)
class Phase:
    """What one load phase measured (latencies in seconds).

    Attributes:
        requests: Answered requests (any status).
        errors: Refused or broken connections, malformed answers, non-2xx statuses, timeouts.
        seconds: Wall time of the phase, the last answers included.
        p50: Median latency.
        p99: 99th-percentile latency.
        client_cpu_s: CPU seconds the load generator itself used (``None``: not measured).
        server_cpu_s: CPU seconds the server's processes used during the phase (``None``: not measured).
    """

    requests: int
    errors: int
    seconds: float
    p50: float
    p99: float
    client_cpu_s: float | None = None
    server_cpu_s: float | None = None

    @property
    def rate(self) -> float:
        """Answered requests per second."""
        return self.requests / self.seconds if self.seconds > 0 else 0.0


def compile_loadgen(source: Path = SOURCE) -> Path | None:
    """The compiled generator (built once per source version under the temp dir), or ``None`` without a C compiler.

    Returns:
        The executable's path, or ``None`` (no ``cc``/``gcc``/``clang`` on ``PATH``, or the build failed: logged).
    """
    compiler = next((c for c in ("cc", "gcc", "clang") if shutil.which(c)), None)
    if compiler is None:
        log.warning("no C compiler on PATH: the load comes from Python clients, which understate the capacity")
        return None
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    target = Path(tempfile.gettempdir()) / f"sim-web-loadgen-{digest}" / "loadgen"
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"loadgen.{os.getpid()}.tmp")
    r = subprocess.run(
        [compiler, "-O2", "-o", str(partial), str(source), "-lm"], capture_output=True, text=True, check=False
    )
    if r.returncode != 0:
        log.warning("could not compile %s with %s (Python clients instead):\n%s", source, compiler, r.stderr[-2000:])
        return None
    partial.replace(target)  # atomic: concurrent benchmarks never run a half-written binary
    return target


def loadgen_phase(
    binary: Path, port: int, bodies_file: Path, clients: int, seconds: float, rate: float = 0, think_ms: float = 0
) -> Phase:
    """One phase with the C generator; ``bodies_file`` holds ``PATH<TAB>JSON`` lines.

    Raises:
        RuntimeError: The generator failed (its stderr is in the message).
    """
    cmd = [
        str(binary),
        "127.0.0.1",
        str(port),
        str(bodies_file),
        str(clients),
        f"{seconds:g}",
        f"{rate:g}",
        f"{think_ms:g}",
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 180, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"loadgen exited with {r.returncode}: {r.stderr[-2000:]}")
    d = json.loads(r.stdout)
    return Phase(d["requests"], d["errors"], d["seconds"], d["p50"], d["p99"], d["loadgen_cpu_s"])


def httpx_phase(
    port: int, bodies: list[tuple[str, dict]], clients: int, seconds: float, rate: float = 0, think_ms: float = 0
) -> Phase:
    """The same phase with asyncio httpx clients (when no C compiler is available)."""
    cpu0 = time.process_time()
    lat, errors, wall = asyncio.run(_httpx_load(port, bodies, clients, seconds, rate, think_ms))
    lat.sort()

    def pick(q: float) -> float:
        return lat[max(0, int(len(lat) * q + 0.999999) - 1)] if lat else 0.0

    return Phase(len(lat), errors, wall, pick(0.5), pick(0.99), time.process_time() - cpu0)


async def _httpx_load(
    port: int, bodies: list[tuple[str, dict]], clients: int, seconds: float, rate: float, think_ms: float
) -> tuple[list[float], int, float]:
    import httpx

    rng, lat, errors, counter = random.Random(0), [], [0], iter(range(10**9))
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60, limits=limits) as client:

        async def one(due: float) -> None:
            path, body = bodies[next(counter) % len(bodies)]
            try:
                if (await client.post(path, json=body)).status_code // 100 != 2:
                    errors[0] += 1
            except httpx.HTTPError:
                errors[0] += 1
            lat.append(time.perf_counter() - due)

        t0 = time.perf_counter()
        stop = t0 + seconds
        if rate > 0:
            await _open_loop(one, rate, clients, t0, stop)
        else:
            await asyncio.gather(*(_closed_loop(one, stop, think_ms, rng) for _ in range(clients)))
        return lat, errors[0], time.perf_counter() - t0


async def _closed_loop(one: Call, stop: float, think_ms: float, rng: random.Random) -> None:
    if think_ms:  # staggered starts, as in loadgen.c: no opening burst of one request per client
        await asyncio.sleep(rng.expovariate(1000 / think_ms))
    while time.perf_counter() < stop:
        await one(time.perf_counter())
        if think_ms:
            await asyncio.sleep(rng.expovariate(1000 / think_ms))


async def _open_loop(one: Call, rate: float, clients: int, t0: float, stop: float) -> None:
    gate, tasks, i = asyncio.Semaphore(clients), [], 0

    async def gated(due: float) -> None:
        async with gate:
            await one(due)

    while (due := t0 + i / rate) < stop:
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        tasks.append(asyncio.create_task(gated(due)))
        i += 1
    await asyncio.gather(*tasks)
