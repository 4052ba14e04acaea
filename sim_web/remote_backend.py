"""Kept for the import path the README documents: the code lives in :mod:`sim_web.backends.remote`."""

from sim_web.backends.remote import RemoteBackend

__all__ = ["RemoteBackend"]
