"""The ``PythonInterpreter`` tool: run agent-written Python in a sandbox and return Tongyi's observation text.

The output format is upstream's (see :mod:`sim_web.tools.python._output`). The sandbox, by default,
is **bubblewrap** (:mod:`sim_web.tools.python._bwrap`): new user, mount, PID, network, IPC and UTS
namespaces, no capabilities, uid 65534, a cleared environment, ``--die-with-parent``, a read-only view
of only the interpreter, ``/usr`` and the allowed site-packages, a private size-capped tmpfs as the
working directory and ``/tmp``, its own ``/proc``, and a seccomp filter that answers the kernel
keyring, io_uring, BPF, ptrace, mount and module calls, file locks and inotify with ``EPERM``, and
non-namespaced socket families (``AF_VSOCK``) with ``EAFNOSUPPORT`` (:mod:`sim_web.tools.python._seccomp`;
it refuses to run on a machine it has no syscall table for). Nothing of ``SIM_WEB_HOME`` (indexes, task
files), the project tree or the home directory exists inside. Where ``bwrap`` is missing or cannot
create namespaces, the tool refuses to run (the observation says how to install it) unless the caller
opted in to the best-effort sandbox for trusted code (:mod:`sim_web.tools.python._best_effort`) with
``PythonConfig(isolation="best-effort")`` or ``SIM_WEB_PYTHON_SANDBOX=best-effort``.

Limits of one call, in both modes:

* memory: ``memory_mb`` is the budget of the **whole call** when a per-call memory cgroup can be
  created (:mod:`sim_web.tools.python._cgroup`; root, or a delegated cgroup v2 subtree): the kernel
  kills the call's processes beyond it. Without one, each process is capped at ``memory_mb`` of
  address space (``RLIMIT_AS``) and the call at most ``max_processes`` processes, so the bound is
  ``max_processes x memory_mb`` (logged once as a warning). In every case one process that
  allocates past ``memory_mb`` gets a ``MemoryError``;
* tasks: a per-call pids cgroup (``max_processes`` + the sandbox's own), else ``RLIMIT_NPROC`` for a
  non-root caller, and always a Python-level counter for a clear error;
* time: ``timeout_s`` of wall clock and ``cpu_s`` of CPU (``RLIMIT_CPU``) per process;
* output: ``max_output_chars``; files: ``max_file_mb`` per file, ``disk_mb`` per tmpfs.

Across calls: every call reserves its ``memory_mb`` from one budget of the whole process
(:mod:`sim_web.tools.python._budget`; half of the machine's memory unless
``$SIM_WEB_PYTHON_MEMORY_BUDGET_MB`` says otherwise), so concurrent calls beyond it wait for their turn.

When the caller is killed mid-call, ``--die-with-parent`` and the PID namespace end every process
of the sandbox; its tmpfs mounts vanish with it, and its cgroups are removed by the next process
that uses the tool.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import MISSING, dataclass, fields

from sim_web.tools.python import _best_effort, _bwrap, _seccomp
from sim_web.tools.python._budget import memory_budget
from sim_web.tools.python._cgroup import CallCgroup, CgroupRoots, cgroup_roots, starter_argv
from sim_web.tools.python._output import (
    ERROR_PREFIX,
    NO_OUTPUT_TEXT,
    TIMEOUT_TEXT,
    collect,
    format_observation,
    kill_group,
)
from simweb_core.fields import help_field

__all__ = [
    "ERROR_PREFIX",
    "ISOLATION_ENV",
    "NO_OUTPUT_TEXT",
    "TIMEOUT_TEXT",
    "PythonConfig",
    "run_python",
    "sandbox_problem",
]

logger = logging.getLogger(__name__)
ISOLATION_ENV = "SIM_WEB_PYTHON_SANDBOX"  #: "bwrap" (the default) or "best-effort" (trusted code only)
ISOLATIONS = ("bwrap", "best-effort")
_RUNNER = os.path.join(os.path.dirname(__file__), "_runner.py")
_warned: set[str] = set()


def _default_isolation() -> str:
    from simweb_core.settings import env

    return env(ISOLATION_ENV) or "bwrap"


@dataclass(frozen=True)
class PythonConfig:
    """Limits of one ``PythonInterpreter`` call."""

    timeout_s: float = help_field(10.0, "Wall-clock limit of one run, seconds.")
    cpu_s: int = help_field(10, "CPU-time limit per process (RLIMIT_CPU), seconds.")
    memory_mb: int = help_field(
        1024,
        "Memory budget, MiB: of the whole call with a memory cgroup, else per process "
        "(RLIMIT_AS; then the call's bound is max_processes x memory_mb).",
    )
    max_output_chars: int = help_field(10_000, "Most characters of stdout + stderr returned.")
    max_processes: int = help_field(64, "Most processes it may create (kernel caps count threads too).")
    allow_network: bool = help_field(False, "Allow the network (the host's network namespace, no guard).")
    max_file_mb: int = help_field(256, "Largest file it may write (RLIMIT_FSIZE), MiB.")
    disk_mb: int = help_field(256, "Size of each private tmpfs of the bwrap sandbox (/sandbox, /tmp, /dev/shm), MiB.")
    isolation: str = help_field(
        help=(
            "'bwrap' (default; refuses to run without bubblewrap) or 'best-effort' (process-level guards only: "
            f"for trusted code). The default comes from ${ISOLATION_ENV} when set."
        ),
        default_factory=_default_isolation,
    )
    use_namespaces: bool = help_field(True, "best-effort mode: use network/PID namespaces (unshare) when available.")
    use_cgroup: bool = help_field(True, "Use per-call pids and memory cgroups when they can be created.")
    hash_seed: int = help_field(0, "PYTHONHASHSEED of the child, so set order is reproducible.")
    python: str = help_field(sys.executable, "Interpreter that runs the code (Python 3.11+).")

    def __post_init__(self) -> None:
        for f in fields(self):
            value, kind = getattr(self, f.name), type(f.default)
            if f.default is MISSING or kind in (bool, str):
                continue
            allowed = (int, float) if kind is float else int
            low = 0 if f.name == "hash_seed" else 1e-9
            if isinstance(value, bool) or not isinstance(value, allowed) or value < low:
                what = "a non-negative int" if low == 0 else f"a positive {kind.__name__}"
                raise ValueError(
                    f"PythonConfig.{f.name} must be {what}, got {value!r}; "
                    f"use e.g. the default {f.default!r} ({f.metadata['help']})"
                )
        if self.memory_mb < 64:
            raise ValueError(
                f"PythonConfig.memory_mb={self.memory_mb} is too small to start "
                "Python; use at least 64 (the default is 1024)"
            )
        if self.hash_seed > 4_294_967_295:
            raise ValueError(f"PythonConfig.hash_seed must be <= 2**32-1, got {self.hash_seed}")
        if not os.access(self.python, os.X_OK):
            raise ValueError(
                f"PythonConfig.python={self.python!r} is not an executable file; "
                "point it at a Python 3.11+ interpreter (default: sys.executable)"
            )
        if self.isolation not in ISOLATIONS:
            raise ValueError(
                f"PythonConfig.isolation must be one of {ISOLATIONS}, got {self.isolation!r}; "
                f"check ${ISOLATION_ENV} (unset it for the default 'bwrap')"
            )


def sandbox_problem(config: PythonConfig | None = None) -> str | None:
    """Why ``run_python`` would refuse to run with ``config`` here, or ``None`` when it can run.

    Args:
        config: The configuration to check (only ``isolation`` and ``python`` matter); default
            ``PythonConfig()``, read at call time (so ``$SIM_WEB_PYTHON_SANDBOX`` applies).

    Returns:
        ``None``, or what is missing and how to install it.
    """
    config = config or PythonConfig()
    return _bwrap.bwrap_problem(config.python) if config.isolation == "bwrap" else None


def run_python(code: str, config: PythonConfig | None = None) -> str:
    """Run ``code`` in a sandbox and return the Tongyi-style observation text.

    Args:
        code: The program, as the agent wrote it inside ``<code>...</code>``.
        config: Limits of the run; default ``PythonConfig()``, built at call time (so
            ``$SIM_WEB_PYTHON_SANDBOX`` set after import applies).

    Returns:
        ``stdout:\\n...`` and/or ``stderr:\\n...`` (joined by a newline), then the timeout line
        when the run was stopped, or ``Finished execution.`` when there was no output. Never
        raises: a failure of the sandbox, or a machine without bubblewrap, becomes a
        ``[Python Interpreter Error]: ...`` text.
    """
    if not isinstance(code, str) or not code.strip():
        return ERROR_PREFIX + "Empty code."
    try:
        config = config or PythonConfig()
    except ValueError as exc:  # e.g. a bad $SIM_WEB_PYTHON_SANDBOX
        return f"{ERROR_PREFIX}{exc}"
    problem = sandbox_problem(config)
    if problem is not None:
        _warn_once(problem, logging.ERROR)
        return ERROR_PREFIX + problem
    try:
        return _run(code, config)
    except Exception as exc:  # the contract is a text answer, never an exception
        logger.exception("PythonInterpreter sandbox failure")
        return f"{ERROR_PREFIX}{type(exc).__name__}: {exc}"


def _warn_once(message: str, level: int = logging.WARNING) -> None:
    if message not in _warned:
        _warned.add(message)
        logger.log(level, "%s", message)


def _make_cgroup(config: PythonConfig, own_tasks: int) -> CallCgroup | None:
    """The call's cgroups: ``max_processes`` + the sandbox's ``own_tasks``, ``memory_mb`` in all."""
    roots = cgroup_roots() if config.use_cgroup else CgroupRoots()
    cgroup = None
    if roots.pids or roots.memory:
        try:
            cgroup = CallCgroup(roots, config.max_processes + own_tasks, config.memory_mb)
        except OSError as exc:
            logger.warning("no per-call cgroup for this call (%s); using the other limits", exc)
    if cgroup is None or not cgroup.limits_memory:
        _warn_once(
            f"PythonInterpreter: no memory cgroup can be created here, so memory_mb={config.memory_mb} "
            f"caps each process (RLIMIT_AS) and a call may use up to max_processes x memory_mb = "
            f"{config.max_processes * config.memory_mb} MiB"
        )
    return cgroup


def _settings(config: PythonConfig, workdir: str, writable: list[str], in_namespace: bool) -> list[str]:
    """The runner's ``name=value`` arguments (read by :func:`sim_web.tools.python._runner.main`)."""
    tasks = None if os.geteuid() == 0 else _best_effort.user_task_count()
    settings = {
        "workdir": workdir,
        "writable": os.pathsep.join(writable),
        "site_dirs": os.pathsep.join(_bwrap.site_dirs()),
        "cpu_s": config.cpu_s,
        "memory_mb": config.memory_mb,
        "max_file_mb": config.max_file_mb,
        "max_processes": config.max_processes,
        "allow_network": int(config.allow_network),
        "nproc": "" if tasks is None else tasks + config.max_processes + 4,
        "pid1": int(in_namespace),
    }
    return [f"{name}={value}" for name, value in settings.items()]


def _child_env(home: str, tmp: str, python: str, config: PythonConfig) -> dict[str, str]:
    return {
        "PATH": f"{os.path.dirname(python)}:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": home,
        "TMPDIR": tmp,
        "PYTHONHASHSEED": str(config.hash_seed),
        "PYTHONDONTWRITEBYTECODE": "1",
        # One thread per BLAS/OpenMP pool: pools reserve address space that RLIMIT_AS counts,
        # and threads count against the kernel's process caps.
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }


def _run(code: str, config: PythonConfig) -> str:
    """One call within this process's memory budget: waits while concurrent calls hold all of it."""
    with memory_budget().reserve(config.memory_mb):
        return _run_isolated(code, config)


def _run_isolated(code: str, config: PythonConfig) -> str:
    if config.isolation == "bwrap":
        cgroup = _make_cgroup(config, 3)  # bwrap, the namespace's init, the runner
        try:
            return _run_bwrap(code, config, cgroup)
        finally:
            if cgroup is not None:
                cgroup.close()
    prefix = _best_effort.unshare_prefix(not config.allow_network) if config.use_namespaces else ()
    cgroup = _make_cgroup(config, 3 if prefix else 1)  # unshare, PID 1 and the worker; or the runner
    try:
        return _run_best_effort(code, config, cgroup, prefix)
    finally:
        if cgroup is not None:
            cgroup.close()


def _run_bwrap(code: str, config: PythonConfig, cgroup: CallCgroup | None) -> str:
    workdir = _bwrap.WORKDIR
    real_python = os.path.realpath(config.python)
    env = _child_env(workdir, "/tmp", real_python, config)
    runner_args = _settings(config, workdir, [workdir, "/tmp", "/dev/shm"], in_namespace=False)
    with tempfile.TemporaryFile() as source, _seccomp.program_fd() as seccomp_fd:
        source.write(code.encode("utf-8", "surrogatepass"))
        source.flush()
        source.seek(0)
        argv = _bwrap.bwrap_argv(
            _bwrap.bwrap_path(),
            config.python,
            code_fd=source.fileno(),
            seccomp_fd=seccomp_fd,
            allow_network=config.allow_network,
            disk_mb=config.disk_mb,
            env=env,
            runner_args=runner_args,
        )
        # bwrap's init reports a killed program as 128 + signal, like the best-effort PID 1
        return _execute(
            argv,
            config,
            cgroup,
            cwd="/",
            env={"PATH": "/usr/bin:/bin"},
            pass_fds=(source.fileno(), seccomp_fd),
            in_namespace=True,
        )


def _run_best_effort(code: str, config: PythonConfig, cgroup: CallCgroup | None, prefix: tuple[str, ...]) -> str:
    workdir = _best_effort.make_workdir()
    try:
        with open(os.path.join(workdir, "main.py"), "w", encoding="utf-8", errors="surrogatepass") as handle:
            handle.write(code)
        runner_args = _settings(config, workdir, [workdir], in_namespace=bool(prefix))
        argv = [*prefix, config.python, "-s", "-S", "-P", "-B", _RUNNER, *runner_args]
        return _execute(
            argv,
            config,
            cgroup,
            cwd=workdir,
            env=_child_env(workdir, workdir, config.python, config),
            pass_fds=(),
            in_namespace=bool(prefix),
        )
    finally:
        _best_effort.remove_tree(workdir)


def _execute(
    argv: list[str],
    config: PythonConfig,
    cgroup: CallCgroup | None,
    *,
    cwd: str,
    env: dict[str, str],
    pass_fds: tuple[int, ...],
    in_namespace: bool,
) -> str:
    """Start ``argv`` (inside the call's cgroups), collect its output, kill what is left, format."""
    if cgroup is not None and cgroup.dirs:
        argv = [*starter_argv(cgroup.procs_files), *argv]
    deadline = time.monotonic() + config.timeout_s
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=env,
        start_new_session=True,
        pass_fds=pass_fds,
    )
    try:
        out, err, timed_out = collect(proc, config.max_output_chars, deadline)
    finally:
        kill_group(proc)
    oom_note = None
    if cgroup is not None and cgroup.oom_killed():
        oom_note = (
            f"MemoryError: the program used more than its memory budget of {config.memory_mb} MiB "
            "(all its processes together) and was killed."
        )
    return format_observation(out, err, timed_out, proc.returncode, in_namespace, config.max_output_chars, oom_note)
