"""Backends: where search / scholar / visit results come from (the sim index, a remote tool server, the real web).

Each implements :class:`sim_web.protocol.Backend`; the executor does not know which one it talks to.
The real web is :class:`SerperBackend` (search, google_scholar) and :class:`JinaBackend` (visit).
"""

from typing import Any

from sim_web.backends.jina import JinaBackend, JinaConfig
from sim_web.backends.real import WikipediaFallback, build_real_backends
from sim_web.backends.remote import RemoteBackend
from sim_web.backends.serper import SerperBackend, SerperConfig
from sim_web.backends.sim import SimBackend, SimConfig
from sim_web.backends.upstream import UpstreamError

__all__ = [
    "JinaBackend",
    "JinaConfig",
    "RecordingTransport",
    "RemoteBackend",
    "ReplayTransport",
    "SerperBackend",
    "SerperConfig",
    "SimBackend",
    "SimConfig",
    "UpstreamError",
    "WikipediaFallback",
    "build_real_backends",
]


def __getattr__(name: str) -> Any:  # the record / replay transports subclass httpx's: import them on first use
    if name in ("RecordingTransport", "ReplayTransport"):
        from sim_web.backends import recording

        return getattr(recording, name)
    raise AttributeError(f"module 'sim_web.backends' has no attribute {name!r}")
