"""One memory budget for all the PythonInterpreter calls of a process.

Each call may use ``memory_mb`` (1 GiB by default), and a server with ``--enable-python`` runs up to
``tool_threads`` calls at once, so without a shared bound 32 threads could ask for 32 GiB, more than many hosts have.
Every call therefore reserves its ``memory_mb`` from this process's :class:`MemoryBudget` before its
sandbox starts and gives it back when the sandbox is gone; a call that does not fit waits, first come
first served, until earlier calls end (each is bounded by its ``timeout_s``). A call larger than the
whole budget runs alone. The budget counts ``memory_mb`` per call, which is the call's bound where a
memory cgroup enforces it; without one, ``memory_mb`` caps each process of the call (see
:mod:`sim_web.tools.python.sandbox`), so the budget is then a reservation rather than a hard bound.

The budget is ``$SIM_WEB_PYTHON_MEMORY_BUDGET_MB`` MiB when set, else half of the memory this process
may use (``MemTotal``, or the container's memory limit when lower); :func:`set_memory_budget` replaces it.
It is per process: the workers of ``sim-web serve --workers N`` each have one, so set the variable to
the machine's budget divided by ``N`` there.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from pathlib import Path

log = logging.getLogger(__name__)
BUDGET_ENV = "SIM_WEB_PYTHON_MEMORY_BUDGET_MB"  #: the process's budget for all concurrent calls, MiB
_LIMIT_FILES = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")


class MemoryBudget:
    """A first-come-first-served weighted semaphore in MiB.

    Args:
        total_mb: The budget of all reservations held at once.

    Raises:
        ValueError: For a budget below 1 MiB.
    """

    def __init__(self, total_mb: int) -> None:
        if isinstance(total_mb, bool) or not isinstance(total_mb, int) or total_mb < 1:
            raise ValueError(
                f"the PythonInterpreter memory budget must be a positive number of MiB, got "
                f"{total_mb!r}; e.g. {BUDGET_ENV}=8192 for 8 calls of 1024 MiB at once"
            )
        self.total_mb = total_mb
        self._cond = threading.Condition()
        self._used = 0
        self._tickets = 0  # handed out, in arrival order
        self._serving = 0  # the ticket whose turn it is
        self._abandoned: set[int] = set()  # tickets whose caller stopped waiting (an exception)
        self.holders = 0  #: calls holding a reservation now
        self.peak_holders = 0  #: most calls that held one at the same time
        self.waiting = 0  #: calls waiting for their turn now
        self.waits = 0  #: calls that had to wait, in all

    @contextlib.contextmanager
    def reserve(self, memory_mb: int) -> Iterator[None]:
        """Hold ``memory_mb`` (at most the whole budget) for the ``with`` block; wait until it fits.

        Args:
            memory_mb: The call's memory limit.
        """
        need = min(memory_mb, self.total_mb)
        with self._cond:
            ticket = self._tickets
            self._tickets += 1
            if not self._fits(ticket, need):
                self._wait(ticket, need)
            self._serving += 1
            self._skip_abandoned()
            self._used += need
            self.holders += 1
            self.peak_holders = max(self.peak_holders, self.holders)
            self._cond.notify_all()  # the next ticket may fit as well
        try:
            yield
        finally:
            with self._cond:
                self._used -= need
                self.holders -= 1
                self._cond.notify_all()

    def _wait(self, ticket: int, need: int) -> None:
        """Wait (holding the condition's lock) until ``ticket`` is served and ``need`` fits."""
        self.waiting += 1
        self.waits += 1
        try:
            self._cond.wait_for(lambda: self._fits(ticket, need))
        except BaseException:  # e.g. KeyboardInterrupt: give the turn away, or every later call waits forever
            self._abandoned.add(ticket)
            self._skip_abandoned()
            self._cond.notify_all()
            raise
        finally:
            self.waiting -= 1

    def _fits(self, ticket: int, need: int) -> bool:
        return ticket == self._serving and self._used + need <= self.total_mb

    def _skip_abandoned(self) -> None:
        while self._serving in self._abandoned:
            self._abandoned.discard(self._serving)
            self._serving += 1


def available_memory_mb() -> int:
    """The memory this process may use, MiB: ``MemTotal``, or the cgroup's memory limit when lower."""
    total = 0
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                total = int(line.split()[1]) // 1024
    for path in _LIMIT_FILES:
        with contextlib.suppress(OSError, ValueError):
            limit = int(Path(path).read_text().strip()) // (1024 * 1024)  # "max" (no limit) is a ValueError
            total = min(total, limit) if total else limit
    return total or 4096  # no /proc: a small machine's worth


def _default_budget() -> MemoryBudget:
    from simweb_core.settings import env

    raw = env(BUDGET_ENV)
    if raw:
        try:
            total = int(raw)
        except ValueError:
            raise ValueError(
                f"${BUDGET_ENV} must be a whole number of MiB, got {raw!r}; e.g. 8192, or unset it "
                "for half of this machine's memory"
            ) from None
        source = f"${BUDGET_ENV}"
    else:
        total, source = max(1, available_memory_mb() // 2), "half of this machine's memory"
    log.info("PythonInterpreter: %d MiB of memory for all concurrent calls of this process (%s)", total, source)
    return MemoryBudget(total)


_lock = threading.Lock()
_budget: MemoryBudget | None = None


def memory_budget() -> MemoryBudget:
    """This process's budget, made on first use (see the module docstring for its size).

    Raises:
        ValueError: For a malformed ``$SIM_WEB_PYTHON_MEMORY_BUDGET_MB``.
    """
    global _budget
    with _lock:
        if _budget is None:
            _budget = _default_budget()
        return _budget


def set_memory_budget(total_mb: int | None) -> MemoryBudget | None:
    """Replace this process's budget (calls that hold a reservation keep it until they end).

    Args:
        total_mb: The new budget in MiB; ``None`` goes back to the default on next use.

    Returns:
        The new budget (``None`` for the default, made on next use).
    """
    global _budget
    with _lock:
        _budget = None if total_mb is None else MemoryBudget(total_mb)
        return _budget
