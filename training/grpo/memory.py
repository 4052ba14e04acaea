"""The training process's memory: what it holds now and at most, and how glibc's heap is told to give memory back.

A GRPO step allocates and frees tensors of many sizes (rollout caches, activations, gradients). glibc keeps freed
memory in its heap for reuse, so a step's resident peak holds much that is already free, and with its default settings
the peak creeps up step after step while the memory in use does not. :func:`trim_heap` hands the free pages back after
each step; :func:`return_large_frees` makes large buffers go back to the system as soon as they are freed, which
lowers the peak within a step.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from pathlib import Path
from typing import Any

from simweb_core.settings import env

log = logging.getLogger(__name__)

#: glibc's ``mallopt`` parameters (malloc.h): the size from which a block is its own mapping, and the heaps' count.
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8
#: Environment variables through which a user sets the same glibc tunables; where one is set, theirs wins.
ALLOCATOR_ENV = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_ARENA_MAX")


def peak_rss_gb() -> float | None:
    """The process's peak resident memory so far in GB (None where ``resource`` does not report it, e.g. Windows): a run
    whose memory grows step by step shows it in ``metrics.jsonl`` before the machine runs out."""
    try:
        import resource
    except ImportError:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1e9 if sys.platform == "darwin" else 1e6), 3)  # bytes on macOS, kilobytes on Linux


def rss_gb() -> float | None:
    """The process's resident memory now in GB, from ``/proc/self/statm`` (None where there is none: not Linux)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e9


@functools.cache
def _libc_function(name: str) -> Any:
    """A glibc function (``malloc_trim``, ``mallopt``) from the C library already loaded in the process, looked up
    once (None without one: musl, macOS, Windows)."""
    import ctypes

    try:
        return getattr(ctypes.CDLL(None), name, None)
    except (OSError, TypeError):  # Windows: no handle for the process itself
        return None


def trim_heap() -> float | None:
    """Hand the C heap's free pages back to the system (glibc's ``malloc_trim``); returns the GB it gave back, or None
    where the C library has no ``malloc_trim`` (musl, macOS, Windows).

    A training step frees tensors of many sizes; glibc keeps the freed pages in its heap, so a long run's resident
    memory grows step after step while little of it is in use. Trimming after each step keeps it near what is.
    """
    trim = _libc_function("malloc_trim")
    before = rss_gb()
    if trim is None or before is None:
        return None
    trim(0)
    after = rss_gb()
    return None if after is None else round(before - after, 3)


def return_large_frees(threshold_mib: int, arenas: int = 2) -> bool:
    """Make glibc give every block of ``threshold_mib`` MiB or more back to the system as soon as it is freed, and keep
    at most ``arenas`` heaps; returns whether the settings were applied.

    By default glibc raises its mapping threshold each time a large block is freed (up to 32 MiB), after which large
    tensors come from the heap and their pages stay with the process until a trim. A fixed threshold keeps them
    separate mappings; fewer arenas keep the threads' frees in one heap where they can be reused.

    Args:
        threshold_mib: Blocks of at least this many MiB are their own mapping; 0 leaves glibc's defaults.
        arenas: The most heaps glibc may keep (one per thread otherwise, up to eight per core).

    Returns:
        False where ``threshold_mib`` is 0, the C library is not glibc, or the user set the allocator through
        :data:`ALLOCATOR_ENV` or a ``glibc.malloc`` tunable (their settings stand); else True.
    """
    mallopt = _libc_function("mallopt")
    if threshold_mib <= 0 or mallopt is None:
        return False
    chosen = [k for k in ALLOCATOR_ENV if env(k)]
    if "glibc.malloc." in (env("GLIBC_TUNABLES") or ""):
        chosen.append("GLIBC_TUNABLES")
    if chosen:
        log.info("glibc's allocator is set by %s; leaving it as set", ", ".join(chosen))
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, threshold_mib << 20)) and bool(mallopt(_M_ARENA_MAX, arenas))
