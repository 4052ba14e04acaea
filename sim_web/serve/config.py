"""``ServeConfig``: the settings of ``sim-web serve``, one field each; the CLI's flags are generated from them.

The token is not a field: it is a secret, read from ``--token`` or ``$SIM_WEB_SERVER_TOKEN`` at the moment of use
and never written into a config that could be printed, logged or handed to the worker processes as JSON.

How many tool threads a worker runs depends on what its calls wait for. Calls answered in process (the ``sim``
backend: a Lucene or FAISS search, a page rendered from the store) hold the GIL for most of their time, so more
threads than a few add no throughput; they only queue for the GIL, and the event loop that answers ``/health`` queues
behind all of them. Calls that wait on the network (the ``real`` backend) or on a sandboxed program
(``PythonInterpreter``) hold a thread while the GIL is free, so they need many. The bound on calls in progress
(running and waiting) is a setting of its own, so that fewer threads do not mean more 503s.
"""

from __future__ import annotations

from dataclasses import dataclass

from sim_web.serve.conn import ConnectionLimits
from sim_web.serve.openenv.sessions import OpenEnvLimits
from sim_web.serve.warm import DEFAULT_WARM_SEARCHES
from simweb_core.fields import help_field

DEFAULT_MAX_BODY = 1024 * 1024
#: Tool threads per worker when every call is computed in process (the sim backend without PythonInterpreter).
LOCAL_TOOL_THREADS = 4
#: Tool threads per worker when calls wait on the network or a sandbox.
WAITING_TOOL_THREADS = 32
#: Calls in progress (running or waiting) per worker past which the server answers 503.
DEFAULT_MAX_IN_PROGRESS = 128


def default_tool_threads(backend: str, enable_python: bool) -> int:
    """Tool threads per worker for a server of ``backend`` (see the module docstring for why they differ)."""
    return LOCAL_TOOL_THREADS if backend == "sim" and not enable_python else WAITING_TOOL_THREADS


@dataclass(frozen=True)
class ServeConfig:
    """Everything ``sim-web serve`` is told, but the token.

    Raises:
        ConfigError: A value out of range, naming the field and what it takes.
    """

    index: str | None = help_field(None, "index directory (default: the sample index)")
    host: str = help_field(
        "127.0.0.1", "bind address; anything but loopback needs a token (--token or $SIM_WEB_SERVER_TOKEN)"
    )
    port: int = help_field(8000, "TCP port")
    workers: int = help_field(1, "uvicorn worker processes")
    mode: str = help_field("bm25", "retrieval mode", choices=("bm25", "dense", "hybrid"))
    backend: str = help_field(
        "sim",
        "sim: the index; real: Serper + Jina (keys from $SERPER_KEY_ID, $JINA_API_KEYS), the index as fallback",
        choices=("sim", "real"),
    )
    cache: bool = help_field(True, "content-keyed result cache")
    enable_python: bool = help_field(
        False, "also serve PythonInterpreter (runs client code in the bubblewrap sandbox; off by default)"
    )
    max_body_bytes: int = help_field(DEFAULT_MAX_BODY, "request body limit; larger bodies get 413")
    tool_threads: int | None = help_field(
        None,
        f"threads per worker that run tool calls (default: {LOCAL_TOOL_THREADS} with the sim backend and no "
        f"PythonInterpreter, whose calls hold the GIL, else {WAITING_TOOL_THREADS}, for calls that wait)",
    )
    max_in_progress: int = help_field(
        DEFAULT_MAX_IN_PROGRESS,
        "tool calls in progress (running or waiting) per worker; past it calls are answered 503 with Retry-After",
    )
    max_calls_per_client: int = help_field(
        0,
        "calls one client (peer address) may have in progress per worker; more are answered 429 (0: no cap; the "
        "threads are shared between clients in round robin either way). Set it on a server many trainers share; "
        "behind a load balancer every call comes from one address, so cap clients there, or name it in "
        "--trusted-proxies",
    )
    trusted_proxies: str = help_field(
        "",
        "comma-separated addresses of the proxies whose X-Forwarded-For names the client (default: none; the "
        "client is the connection's peer, and the header is ignored)",
    )
    warm_searches: int = help_field(
        DEFAULT_WARM_SEARCHES,
        "varied searches each worker runs before it takes connections, so that Lucene's JIT has settled (0: none; "
        "a worker then runs slower, with latency spikes, for its first minute)",
    )
    limits: ConnectionLimits = help_field(
        help="per-worker request deadline, keep-alive and connection cap", default_factory=ConnectionLimits
    )
    openenv: OpenEnvLimits = help_field(
        help="per-worker OpenEnv sessions (/ws, /mcp): cap, each client's share, message size, idle time",
        default_factory=OpenEnvLimits,
    )

    def __post_init__(self) -> None:
        from simweb_core.errors import ConfigError

        bad = [
            f"{name} must be {rule}, got {value!r}"
            for name, value, ok, rule in (
                ("port", self.port, 0 <= self.port <= 65535, "0-65535"),
                ("workers", self.workers, self.workers >= 1, ">= 1"),
                ("max_body_bytes", self.max_body_bytes, self.max_body_bytes >= 1, ">= 1"),
                ("tool_threads", self.tool_threads, self.tool_threads is None or self.tool_threads >= 1, ">= 1"),
                ("max_in_progress", self.max_in_progress, self.max_in_progress >= 1, ">= 1"),
                ("max_calls_per_client", self.max_calls_per_client, self.max_calls_per_client >= 0, ">= 0 (0: no cap)"),
                ("warm_searches", self.warm_searches, self.warm_searches >= 0, ">= 0 (0: no warm-up)"),
            )
            if not ok
        ]
        if bad:
            raise ConfigError(f"serve settings: {'; '.join(bad)}")
