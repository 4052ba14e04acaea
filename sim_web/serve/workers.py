"""Worker processes of ``sim-web serve --workers N``, each accepting on a listening socket of its own (SO_REUSEPORT).

Why not uvicorn's ``Multiprocess``: its workers share one listening socket, and asyncio accepts every pending
connection at once in whichever worker wakes first. A fleet of rollout workers that connects together then lands
unevenly (``benchmarks/bench_server.py`` shows it: connections opened together can split far enough from even
that one worker goes past its ``4 x tool_threads`` calls in progress and answers 503s while the other has spare
CPU; at a fixed request rate the fuller worker is overloaded long before the server is). With one
SO_REUSEPORT socket per worker, Linux spreads the connections over the workers by a hash of the address pair.

The supervisor holds the port with a bound socket that never listens (so it takes no connections, and a port
in use fails at once), starts the workers with the ``spawn`` method (each builds its app with
:func:`sim_web.serve.http.app_factory`), restarts a worker that dies, and stops them all on SIGINT or SIGTERM.
"""

from __future__ import annotations

import logging
import multiprocessing
import signal
import socket
import threading
import time
from multiprocessing.process import BaseProcess
from typing import Any

from sim_web.serve.conn import ConnectionLimits, uvicorn_config

log = logging.getLogger(__name__)
APP = "sim_web.serve.http:app_factory"
_STOP_S = 30  # how long a worker may take to finish its requests before it is killed


def reuse_port_socket(host: str, port: int, listen: bool, backlog: int = 2048) -> socket.socket:
    """A TCP socket bound to ``host:port`` with SO_REUSEPORT (and TCP_NODELAY, copied to accepted connections).

    Args:
        host: The bind address (IPv4 or IPv6).
        port: The port (0: any free one).
        listen: Start listening (a worker's socket) or only hold the port (the supervisor's).
        backlog: The accept queue length.

    Raises:
        ConfigError: The address cannot be bound (e.g. in use by a socket without SO_REUSEPORT), or the
            platform has no SO_REUSEPORT.
    """
    from simweb_core.errors import ConfigError

    if not hasattr(socket, "SO_REUSEPORT"):
        raise ConfigError(
            "sim-web serve --workers N needs SO_REUSEPORT (Linux, macOS); run one worker per process "
            "behind a load balancer here, or --workers 1"
        )
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        # Linux copies TCP_NODELAY from the listening socket to accepted ones; without it every keep-alive
        # response waits ~40 ms for a delayed ACK (Nagle).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host.strip("[]"), port))
        if listen:
            sock.listen(backlog)
    except OSError as e:
        sock.close()
        raise ConfigError(f"cannot serve on {host}:{port}: {e}; pick another --port or stop what holds it") from e
    return sock


def run_workers(host: str, port: int, workers: int, limits: ConnectionLimits, trusted_proxies: str = "") -> None:
    """Run ``workers`` uvicorn processes on ``host:port`` until SIGINT or SIGTERM (blocking).

    Args:
        host: The bind address.
        port: The port.
        workers: Worker processes (each opens the index itself).
        limits: Each worker's request deadline, keep-alive and connection cap (:mod:`sim_web.serve.conn`).
        trusted_proxies: The proxies whose ``X-Forwarded-For`` is believed (:func:`~sim_web.serve.conn.uvicorn_config`).

    Raises:
        ConfigError: The address cannot be bound.
    """
    holder = reuse_port_socket(host, port, listen=False)
    port = holder.getsockname()[1]
    stop = threading.Event()
    previous = {s: signal.signal(s, lambda *_: stop.set()) for s in (signal.SIGINT, signal.SIGTERM)}
    ctx = multiprocessing.get_context("spawn")
    procs = [_start(ctx, host, port, limits, trusted_proxies) for _ in range(workers)]
    try:
        while not stop.wait(0.5):
            for i, p in enumerate(procs):
                if not p.is_alive() and not stop.is_set():
                    log.warning("tool server worker %s exited with %s; starting another", p.pid, p.exitcode)
                    time.sleep(1)  # a worker that dies at start-up is not restarted in a tight loop
                    procs[i] = _start(ctx, host, port, limits, trusted_proxies)
    finally:
        _stop_all(procs)
        holder.close()
        for s, handler in previous.items():
            signal.signal(s, handler)


def _start(ctx: Any, host: str, port: int, limits: ConnectionLimits, trusted_proxies: str) -> BaseProcess:
    args = (host, port, limits, trusted_proxies)
    p = ctx.Process(target=_worker, args=args, name="sim-web-serve-worker", daemon=False)
    p.start()
    return p


def _stop_all(procs: list[BaseProcess]) -> None:
    """SIGTERM to every worker (uvicorn finishes the requests in flight), then SIGKILL to any still running after 30 s."""
    for p in procs:
        if p.is_alive():
            p.terminate()
    deadline = time.monotonic() + _STOP_S
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
        if p.is_alive():
            log.warning("tool server worker %s did not stop in %d s; killing it", p.pid, _STOP_S)
            p.kill()
            p.join()


def _worker(host: str, port: int, limits: ConnectionLimits, trusted_proxies: str = "") -> None:
    """One worker: its own listening socket, the app from :func:`sim_web.serve.http.app_factory`."""
    import uvicorn

    sock = reuse_port_socket(host, port, listen=True, backlog=limits.backlog)
    uvicorn.Server(uvicorn_config(APP, host, port, limits, trusted_proxies, factory=True)).run(sockets=[sock])
