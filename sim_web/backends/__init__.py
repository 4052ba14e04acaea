"""Backends: where search / scholar / visit results come from (the sim index, a remote tool server).

Each implements :class:`sim_web.protocol.Backend`; the executor does not know which one it talks to.
"""

from sim_web.backends.remote import RemoteBackend
from sim_web.backends.sim import SimBackend, SimConfig

__all__ = ["RemoteBackend", "SimBackend", "SimConfig"]
