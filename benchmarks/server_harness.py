"""The server side of the tool-server benchmarks: ``sim-web serve`` in a subprocess, its CPU time, phases of load.

Split from :mod:`benchmarks.bench_server` (which chooses the phases and prints the tables) because
:mod:`benchmarks.bench_growth` measures the server the same way: :func:`running_server` starts it on a free loopback
port and waits for ``/health``; :func:`phase_runner` sends a phase of requests with the C generator
(``benchmarks/loadgen.c``) or httpx clients, and adds the server's CPU time (:func:`cpu_seconds`) to its result.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from benchmarks.loadgen import Phase, httpx_phase, loadgen_phase

#: Request bodies: ``(path, JSON body)`` pairs.
Bodies = list[tuple[str, dict]]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` and all its descendants (Linux ``/proc``; ``None`` elsewhere).

    On a shared machine this is the steadier cost measure: neighbours slow the server down, but add little to the
    CPU time it needs per request.
    """
    total, todo, tick = 0.0, [pid], os.sysconf("SC_CLK_TCK")
    try:
        while todo:
            p = todo.pop()
            stat = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(stat[11]) + int(stat[12])) / tick  # utime, stime
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
    except (OSError, ValueError, IndexError):
        return None
    return total


@contextlib.contextmanager
def running_server(
    index: str,
    workers: int,
    cache: bool,
    fast_routes: bool,
    env: Mapping[str, str] | None = None,
    ready_s: float = 180,
    warm_searches: int | None = None,
    cwd: Path | None = None,
    extra_args: Sequence[str] = (),
) -> Iterator[tuple[int, int]]:
    """``sim-web serve`` on a free loopback port, ready (``/health`` answers); yields the port and the process id.

    Args:
        index: The index folder to serve.
        workers: Server worker processes.
        cache: Whether the server caches tool results.
        fast_routes: Whether the hot routes skip FastAPI's layers (``SIM_WEB_SERVER_FAST_ROUTES``).
        env: The server's environment (default: this process's).
        ready_s: How long to wait for ``/health`` (a big index takes a while to open).
        warm_searches: Warm-up searches per worker (``None``: the server's default).
        cwd: The server's working folder. ``python -m`` puts it first on ``sys.path``, ahead of ``PYTHONPATH``, so a
            server of another source tree must start in that tree (default: this process's folder).
    """
    import httpx

    port = _free_port()
    env = {**(os.environ if env is None else env), **({} if fast_routes else {"SIM_WEB_SERVER_FAST_ROUTES": "0"})}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sim_web.cli",
            "serve",
            "--index",
            index,
            "--port",
            str(port),
            "--workers",
            str(workers),
            "--cache" if cache else "--no-cache",
            *([] if warm_searches is None else ["--warm-searches", str(warm_searches)]),
            *extra_args,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
    )
    try:
        end = time.time() + ready_s
        while time.time() < end:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"server exited with {proc.returncode}: {proc.stderr.read().decode()[-2000:] if proc.stderr else ''}"
                )
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        else:
            raise RuntimeError(f"server did not become ready in {ready_s:.0f} s")
        yield port, proc.pid
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def phase_runner(server: tuple[int, int], binary: Path | None, workdir: Path) -> Callable[..., Phase]:
    """``run(bodies, clients, seconds, rate=0, think_ms=0) -> Phase`` with the C generator, or httpx without one;
    the server's CPU time over the phase goes into the result."""
    port, pid = server
    counter = iter(range(1_000_000))

    def load(bodies: Bodies, clients: int, seconds: float, rate: float, think_ms: float) -> Phase:
        if binary is None:
            return httpx_phase(port, bodies, clients, seconds, rate, think_ms)
        file = workdir / f"bodies-{next(counter)}.tsv"
        file.write_text("".join(f"{p}\t{json.dumps(b)}\n" for p, b in bodies))
        return loadgen_phase(binary, port, file, clients, seconds, rate, think_ms)

    def run(bodies: Bodies, clients: int, seconds: float, rate: float = 0, think_ms: float = 0) -> Phase:
        before = cpu_seconds(pid)
        phase = load(bodies, clients, seconds, rate, think_ms)
        after = cpu_seconds(pid)
        return replace(phase, server_cpu_s=None if before is None or after is None else after - before)

    return run
