"""Per-call cgroups: one task cap and one memory budget for every process of a PythonInterpreter call.

A call gets a fresh cgroup in the ``pids`` and ``memory`` controllers (cgroup v1: one directory per
controller; v2: one directory with both), named ``simweb-py-<owner pid>-<n>``. The sandbox is started
by a tiny ``sh`` that writes its own pid into each ``cgroup.procs`` and then ``exec``\\ s the sandbox, so
every process of the call is a member from its first instruction on (no ``preexec_fn``, which is unsafe
in threaded callers). Afterwards every member is SIGKILLed and the directories removed. Cgroups left by
an owner that was killed (SIGKILL leaves no chance to clean up) are removed by the next process that
probes the roots.

Creating cgroups needs write access to a controller's directory (typically root, or a delegated v2
subtree); where there is none, :func:`cgroup_roots` reports none and the sandbox says so in its log.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import signal
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

log = logging.getLogger(__name__)
PREFIX = "simweb-py-"
_SEQ = itertools.count()
_V1 = "/sys/fs/cgroup"
_V2_CANDIDATES = ("/sys/fs/cgroup", "/sys/fs/cgroup/unified")


@dataclass(frozen=True)
class CgroupRoots:
    """Directories where this process may create per-call cgroups (``None``: that controller is unavailable).

    Attributes:
        pids: Where a ``pids.max`` cgroup can be made.
        memory: Where a memory cgroup can be made.
        memory_v2: Whether ``memory`` is cgroup v2 (``memory.max``) rather than v1 (``memory.limit_in_bytes``).
    """

    pids: str | None = None
    memory: str | None = None
    memory_v2: bool = False


def _usable(root: str, control_file: str) -> bool:
    probe = os.path.join(root, f"{PREFIX}probe-{os.getpid()}-{next(_SEQ)}")
    try:
        os.mkdir(probe)
    except OSError:
        return False
    try:
        return os.path.exists(os.path.join(probe, control_file))
    finally:
        with contextlib.suppress(OSError):
            os.rmdir(probe)


@cache
def cgroup_roots() -> CgroupRoots:
    """Probe (once per process) where per-call cgroups can be created, and sweep stale ones there.

    Returns:
        The usable roots; all ``None`` when this process may not create cgroups.
    """
    pids = memory = None
    memory_v2 = False
    if _usable(f"{_V1}/pids", "pids.max"):
        pids = f"{_V1}/pids"
    if _usable(f"{_V1}/memory", "memory.limit_in_bytes"):
        memory = f"{_V1}/memory"
    for root in _V2_CANDIDATES:
        try:
            enabled = Path(root, "cgroup.subtree_control").read_text().split()
        except OSError:
            continue
        if pids is None and "pids" in enabled and _usable(root, "pids.max"):
            pids = root
        if memory is None and "memory" in enabled and _usable(root, "memory.max"):
            memory, memory_v2 = root, True
    found = CgroupRoots(pids, memory, memory_v2)
    for root in {r for r in (pids, memory) if r}:
        _sweep(root)
    return found


def _sweep(root: str) -> None:
    """Remove the cgroups of owners that no longer run (killed before they could clean up)."""
    try:
        entries = list(os.scandir(root))
    except OSError:
        return
    for entry in entries:
        owner = entry.name[len(PREFIX) :].split("-")[0]
        if entry.name.startswith(PREFIX) and owner.isdigit() and not Path("/proc", owner).exists():
            log.info("removing the stale sandbox cgroup %s (owner %s is gone)", entry.path, owner)
            _kill_and_remove(entry.path)


class CallCgroup:
    """The cgroup(s) of one call: create with the limits, hand ``procs_files`` to the starter, then :meth:`close`.

    Args:
        roots: From :func:`cgroup_roots`.
        max_tasks: ``pids.max`` (processes and threads together).
        memory_mb: The memory budget of all members together, swap excluded.
    """

    def __init__(self, roots: CgroupRoots, max_tasks: int, memory_mb: int) -> None:
        name = f"{PREFIX}{os.getpid()}-{next(_SEQ)}"
        self.dirs: list[str] = []
        self.memory_dir: str | None = None
        self._memory_v2 = roots.memory_v2
        try:
            if roots.pids:
                self._make(os.path.join(roots.pids, name), {"pids.max": str(max_tasks)})
            if roots.memory:
                limit = str(memory_mb * 1024 * 1024)
                files = (
                    {"memory.max": limit, "memory.swap.max": "0"}
                    if roots.memory_v2
                    else {"memory.limit_in_bytes": limit, "memory.memsw.limit_in_bytes": limit}
                )
                self.memory_dir = self._make(os.path.join(roots.memory, name), files)
        except OSError:
            self.close()
            raise

    def _make(self, path: str, limits: dict[str, str]) -> str:
        if path not in self.dirs:
            os.mkdir(path)
            self.dirs.append(path)
        for control, value in limits.items():
            try:
                Path(path, control).write_text(value)
            except OSError:
                if control in ("memory.swap.max", "memory.memsw.limit_in_bytes"):
                    continue  # no swap accounting on this kernel: nothing to close off
                raise
        return path

    @property
    def procs_files(self) -> list[str]:
        """The ``cgroup.procs`` files the starter must write its pid into."""
        return [os.path.join(d, "cgroup.procs") for d in self.dirs]

    @property
    def limits_memory(self) -> bool:
        """Whether a memory cgroup enforces the budget of the whole call."""
        return self.memory_dir is not None

    def oom_killed(self) -> bool:
        """Whether the kernel killed a member for exceeding the memory budget."""
        if self.memory_dir is None:
            return False
        name = "memory.events" if self._memory_v2 else "memory.oom_control"
        try:
            for line in Path(self.memory_dir, name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and value.strip().isdigit():
                    return int(value) > 0
            return int(Path(self.memory_dir, "memory.failcnt").read_text()) > 0
        except (OSError, ValueError):
            return False

    def close(self) -> None:
        """SIGKILL every member (even ones that left the process group), then remove the cgroups."""
        for path in reversed(self.dirs):
            _kill_and_remove(path)
        self.dirs = []


def _kill_and_remove(path: str) -> None:
    deadline = time.monotonic() + 5.0
    while True:
        try:
            members = [int(p) for p in Path(path, "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            members = []
        for pid in members:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        try:
            if not members:
                os.rmdir(path)
                return
        except FileNotFoundError:
            return
        except OSError:
            pass  # members still dying
        if time.monotonic() > deadline:
            log.warning("could not remove cgroup %s (members: %s)", path, members)
            return
        time.sleep(0.01)


def starter_argv(procs_files: list[str]) -> list[str]:
    """An argv prefix that joins the cgroups, then ``exec``\\ s the rest of the command line.

    Args:
        procs_files: ``cgroup.procs`` files to write the starter's pid into (may be empty).

    Returns:
        ``["/bin/sh", "-c", script, "sh", *procs_files, "--"]``; append the command to run.
        The starter exits 125 when it cannot join a cgroup, before anything runs.
    """
    script = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'
    return ["/bin/sh", "-c", script, "sh", *procs_files, "--"]
