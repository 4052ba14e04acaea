"""The best-effort sandbox for *trusted* code, used only when asked for (``isolation="best-effort"``).

Without bubblewrap this is what remains, each layer used when the machine allows it (probed once):

* a network + PID namespace (``unshare --net --pid --fork --kill-child``; as root, or with
  ``--user --map-root-user`` where unprivileged user namespaces are allowed): no network but a down
  loopback, and every process of the run dies with the namespace;
* the per-call cgroups of :mod:`sim_web.tools.python._cgroup` (tasks and memory), when creatable;
* ``RLIMIT_NPROC`` = the user's current task count + ``max_processes`` for a non-root user (the
  kernel does not apply it to root);
* always: a new process group killed as a whole, ``RLIMIT_CPU``/``RLIMIT_AS``/``RLIMIT_FSIZE``, a
  fresh private working directory deleted afterwards, a cleared environment, and the Python-level
  guards of :mod:`sim_web.tools.python._runner`.

This is **not** a security boundary: the code sees the whole filesystem with the caller's rights,
and ``ctypes``, ``_io.FileIO``, ``posix`` or a shell get around the Python-level guards.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import subprocess
import tempfile
from functools import cache

log = logging.getLogger(__name__)


@cache
def unshare_prefix(network: bool) -> tuple[str, ...]:
    """An ``unshare`` argv prefix for a PID (and, with ``network``, network) namespace, or ``()``.

    Args:
        network: Also unshare the network.

    Returns:
        The prefix, tried once with ``true``; ``()`` when ``unshare`` is missing or not permitted.
    """
    unshare = shutil.which("unshare")
    if unshare is None:
        return ()
    user = () if os.geteuid() == 0 else ("--user", "--map-root-user")
    prefix = (unshare, *user, *(("--net",) if network else ()), "--pid", "--fork", "--kill-child")
    try:
        ok = subprocess.run([*prefix, "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        ok = False
    log.info(
        "PythonInterpreter best-effort sandbox: %s namespace %s",
        "network+PID" if network else "PID",
        "available" if ok else "unavailable",
    )
    return prefix if ok else ()


def user_task_count() -> int | None:
    """Tasks (processes and threads) of this user, as ``RLIMIT_NPROC`` counts; ``None`` without /proc."""
    uid, count = os.getuid(), 0
    try:
        entries = list(os.scandir("/proc"))
    except OSError:
        return None
    for entry in entries:
        try:
            if entry.name.isdigit() and entry.stat().st_uid == uid:
                count += len(os.listdir(f"/proc/{entry.name}/task"))
        except OSError:
            continue
    return count


def make_workdir() -> str:
    """A fresh private working directory for one call (delete it with :func:`remove_tree`).

    Its name carries this process's pid, so the first call of a later process removes the
    directories of owners that were killed before they could (:func:`_sweep_stale`).
    """
    _sweep_stale(tempfile.gettempdir())
    return os.path.realpath(tempfile.mkdtemp(prefix=f"simweb-py-{os.getpid()}-"))


@cache
def _sweep_stale(parent: str) -> None:
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return
    for entry in entries:
        owner = entry.name.split("-")[2:3]
        if (
            entry.name.startswith("simweb-py-")
            and owner
            and owner[0].isdigit()
            and entry.is_dir(follow_symlinks=False)
            and not os.path.exists(f"/proc/{owner[0]}")
        ):
            log.info(
                "removing the stale PythonInterpreter working directory %s (owner %s is gone)", entry.path, owner[0]
            )
            remove_tree(entry.path)


def remove_tree(path: str) -> None:
    """Delete a working directory, first unlocking directories the program made unreadable."""
    try:
        shutil.rmtree(path)
        return
    except OSError:
        pass
    with contextlib.suppress(OSError):
        os.chmod(path, 0o700)
    for top, dirs, _files in os.walk(path):  # top-down: each directory is unlocked before entry
        for name in dirs:
            with contextlib.suppress(OSError):
                os.chmod(os.path.join(top, name), 0o700)
    try:
        shutil.rmtree(path)
    except OSError as exc:
        log.warning("could not delete PythonInterpreter working directory %s: %s", path, exc)
