"""The ``PythonInterpreter`` tool: run agent-written Python in a sandboxed child process.

The observation matches the Tongyi DeepResearch tool (Alibaba-NLP/DeepResearch,
``inference/tool_python.py``, which runs the code on SandboxFusion): a ``stdout:\\n...`` part
and a ``stderr:\\n...`` part joined by a newline, then
``[PythonInterpreter Error] TimeoutError: Execution timed out.`` when the run timed out, and
``Finished execution.`` when all of that is empty. Failures of the sandbox itself read
``[Python Interpreter Error]: {reason}`` as there. Output over the bound is cut with a marker.

Containment, strongest layer first (each used when the machine allows it, probed once):

* a network + PID namespace (``unshare --net --pid --fork --kill-child``; as root, or with
  ``--user --map-root-user`` where unprivileged user namespaces are allowed): no network
  but a down loopback, and every process of the run dies with the namespace;
* a per-call pids cgroup (root with a writable pids controller): a kernel cap on tasks, and
  every member is killed afterwards. ``RLIMIT_NPROC`` counts per user and the kernel does not
  apply it to root, so root without a cgroup relies on the layers below; a normal user's
  child gets ``RLIMIT_NPROC`` = the user's current task count + ``max_processes``;
* always: a new session (process group) killed as a whole on exit, timeout or output
  overflow; ``RLIMIT_CPU``/``RLIMIT_AS``/``RLIMIT_FSIZE``; a fresh private working directory,
  deleted afterwards; an environment with nothing inherited; Python-level guards
  (:mod:`sim_web.tools.python._runner`) against sockets, writes outside the working directory,
  leaving the process group and creating more than ``max_processes`` processes.

The Python-level guards are best effort and **not** a security boundary (``ctypes`` or a
shell get around them), and nothing here stops the code from reading files we can read.
"""

from __future__ import annotations

import codecs
import contextlib
import itertools
import logging
import os
import selectors
import shutil
import signal
import site
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field, fields
from functools import cache
from pathlib import Path
from typing import TypeVar

__all__ = ["PythonConfig", "run_python"]

logger = logging.getLogger(__name__)

TIMEOUT_TEXT = "[PythonInterpreter Error] TimeoutError: Execution timed out."
NO_OUTPUT_TEXT = "Finished execution."
ERROR_PREFIX = "[Python Interpreter Error]: "
_RUNNER = Path(__file__).with_name("_runner.py")
_DRAIN_S = 0.2  # after the program exits, how long background children may hold the pipes
_FLOOD_FACTOR = 16  # read (and discard) up to this many times the kept bytes, then kill
_SEQ = itertools.count()


_T = TypeVar("_T")


def _opt(default: _T, help_text: str) -> _T:
    """A dataclass field with a help text (TRL-style configs)."""
    return field(default=default, metadata={"help": help_text})


@dataclass(frozen=True)
class PythonConfig:
    """Limits of one ``PythonInterpreter`` call."""

    timeout_s: float = _opt(10.0, "Wall-clock limit of one run, seconds.")
    cpu_s: int = _opt(10, "CPU-time limit (RLIMIT_CPU), seconds.")
    memory_mb: int = _opt(1024, "Address-space limit (RLIMIT_AS), MiB.")
    max_output_chars: int = _opt(10_000, "Most characters of stdout + stderr returned.")
    max_processes: int = _opt(64, "Most processes it may create (kernel caps count threads too).")
    allow_network: bool = _opt(False, "Allow the network (no network namespace, no guard).")
    max_file_mb: int = _opt(256, "Largest file it may write (RLIMIT_FSIZE), MiB.")
    use_namespaces: bool = _opt(True, "Use network/PID namespaces (unshare) when available.")
    use_cgroup: bool = _opt(True, "Use a per-call pids cgroup when one can be created.")
    hash_seed: int = _opt(0, "PYTHONHASHSEED of the child, so set order is reproducible.")
    python: str = _opt(sys.executable, "Interpreter that runs the code (Python 3.11+).")

    def __post_init__(self) -> None:
        for f in fields(self):
            value, kind = getattr(self, f.name), type(f.default)
            if kind in (bool, str):
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
            raise ValueError(f"PythonConfig.memory_mb={self.memory_mb} is too small to start "
                             "Python; use at least 64 (the default is 1024)")
        if self.hash_seed > 4_294_967_295:
            raise ValueError(f"PythonConfig.hash_seed must be <= 2**32-1, got {self.hash_seed}")
        if not os.access(self.python, os.X_OK):
            raise ValueError(f"PythonConfig.python={self.python!r} is not an executable file; "
                             "point it at a Python 3.11+ interpreter (default: sys.executable)")


def run_python(code: str, config: PythonConfig = PythonConfig()) -> str:
    """Run ``code`` in a sandbox and return the Tongyi-style observation text.

    Args:
        code: The program, as the agent wrote it inside ``<code>...</code>``.
        config: Limits of the run.

    Returns:
        ``stdout:\\n...`` and/or ``stderr:\\n...`` (joined by a newline), then the timeout line
        when the run was stopped, or ``Finished execution.`` when there was no output. Never
        raises: a failure of the sandbox becomes a ``[Python Interpreter Error]: ...`` text.
    """
    if not isinstance(code, str) or not code.strip():
        return ERROR_PREFIX + "Empty code."
    try:
        return _run(code, config)
    except Exception as exc:  # the contract is a text answer, never an exception
        logger.exception("PythonInterpreter sandbox failure")
        return f"{ERROR_PREFIX}{type(exc).__name__}: {exc}"


# ---------------------------------------------------------------- what the machine allows


@dataclass(frozen=True)
class _Isolation:
    net_pid_prefix: tuple[str, ...]  # unshare argv for a network + PID namespace, or ()
    pid_prefix: tuple[str, ...]  # unshare argv for a PID namespace only (allow_network), or ()
    cgroup_root: str | None  # a pids-controller directory where we may create cgroups


@cache
def _isolation() -> _Isolation:
    found = _Isolation(_unshare_prefix("--net"), _unshare_prefix(), _cgroup_root())
    logger.info("PythonInterpreter isolation: network+PID namespace %s, PID namespace %s, "
                "pids cgroup %s", bool(found.net_pid_prefix), bool(found.pid_prefix),
                found.cgroup_root)
    return found


def _unshare_prefix(*flags: str) -> tuple[str, ...]:
    """An ``unshare`` argv prefix that works here (tried with ``true``), or ``()``."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return ()
    user = () if os.geteuid() == 0 else ("--user", "--map-root-user")
    prefix = (unshare, *user, *flags, "--pid", "--fork", "--kill-child")
    try:
        ok = subprocess.run([*prefix, "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        ok = False
    return prefix if ok else ()


def _cgroup_root() -> str | None:
    """A pids-controller directory (cgroup v1 or v2) where we can create cgroups, or None."""
    if os.geteuid() != 0:
        return None
    candidates = ["/sys/fs/cgroup/pids"]
    for v2 in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        try:
            if "pids" in Path(v2, "cgroup.subtree_control").read_text().split():
                candidates.append(v2)
        except OSError:
            continue
    for root in candidates:
        probe = os.path.join(root, f"simweb-probe-{os.getpid()}")
        try:
            os.mkdir(probe)
        except OSError:
            continue
        usable = os.path.exists(os.path.join(probe, "pids.max"))
        os.rmdir(probe)
        if usable:
            for entry in os.scandir(root):  # cgroups left by a process of ours that was killed
                owner = entry.name.split("-")[2:3]
                if entry.name.startswith("simweb-py-") and not Path("/proc", *owner).exists():
                    try:
                        os.rmdir(entry.path)  # succeeds only for an empty cgroup
                    except OSError:
                        continue
            return root
    return None


def _user_task_count() -> int | None:
    """Tasks (processes and threads) of this user, as RLIMIT_NPROC counts; None without /proc."""
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


# ---------------------------------------------------------------- one run


def _run(code: str, config: PythonConfig) -> str:
    use_any = config.use_namespaces or config.use_cgroup
    found = _isolation() if use_any else _Isolation((), (), None)
    prefix = found.pid_prefix if config.allow_network else found.net_pid_prefix
    prefix = prefix if config.use_namespaces else ()
    tasks = None if os.geteuid() == 0 else _user_task_count()
    workdir = os.path.realpath(tempfile.mkdtemp(prefix="simweb-py-"))
    cgroup = None
    try:
        Path(workdir, "main.py").write_text(code, encoding="utf-8")
        if config.use_cgroup and found.cgroup_root is not None:
            try:
                cgroup = os.path.join(found.cgroup_root, f"simweb-py-{os.getpid()}-{next(_SEQ)}")
                os.mkdir(cgroup)
                Path(cgroup, "pids.max").write_text(str(config.max_processes + 2))  # + PID 1, main
            except OSError as exc:
                logger.warning("no pids cgroup for this call (%s); using the other layers", exc)
                cgroup = None
        settings = {  # read by _runner.main
            "workdir": workdir,
            "site_dirs": os.pathsep.join(_site_dirs()),
            "cpu_s": config.cpu_s,
            "memory_mb": config.memory_mb,
            "max_file_mb": config.max_file_mb,
            "max_processes": config.max_processes,
            "allow_network": int(config.allow_network),
            "nproc": "" if tasks is None else tasks + config.max_processes + 4,
            "pid1": int(bool(prefix)),
            "cgroup_procs": os.path.join(cgroup, "cgroup.procs") if cgroup else "",
        }
        argv = [*prefix, config.python, "-s", "-S", "-P", "-B", str(_RUNNER)]
        argv += [f"{name}={value}" for name, value in settings.items()]
        started = time.monotonic()
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=workdir, env=_child_env(workdir, config), start_new_session=True,
        )
        try:
            out, err, timed_out = _collect(proc, config, started)
        finally:
            _kill_group(proc)
            if cgroup is not None:
                _remove_cgroup(cgroup)
        return _format(out, err, timed_out, proc.returncode, bool(prefix), config)
    finally:
        _remove_tree(workdir)


@cache
def _site_dirs() -> tuple[str, ...]:
    """Our site-packages: the child runs with ``-S`` (no .pth processing) and adds them."""
    return tuple(d for d in site.getsitepackages() if os.path.isdir(d))


def _child_env(workdir: str, config: PythonConfig) -> dict[str, str]:
    return {
        "PATH": f"{os.path.dirname(config.python)}:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": workdir,
        "TMPDIR": workdir,
        "PYTHONHASHSEED": str(config.hash_seed),
        "PYTHONDONTWRITEBYTECODE": "1",
        # One thread per BLAS/OpenMP pool: pools reserve address space that RLIMIT_AS counts,
        # and threads count against the kernel's process caps.
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }


@dataclass
class _Capture:
    """One pipe: the first ``budget`` bytes kept, every character counted."""

    budget: int
    data: bytearray = field(default_factory=bytearray)
    read: int = 0  # bytes read in all
    chars: int = 0  # characters read in all
    stopped: bool = False  # the program was killed because this stream kept flooding
    decoder: codecs.IncrementalDecoder = field(
        default_factory=lambda: codecs.getincrementaldecoder("utf-8")(errors="replace")
    )

    def add(self, chunk: bytes) -> None:
        self.read += len(chunk)
        self.chars += len(self.decoder.decode(chunk))
        self.data += chunk[: max(0, self.budget - len(self.data))]

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


def _collect(
    proc: subprocess.Popen[bytes], config: PythonConfig, started: float
) -> tuple[_Capture, _Capture, bool]:
    """Read both pipes incrementally until EOF, timeout or a flood; ``timed_out`` comes last.

    At most ``4 * max_output_chars`` bytes are kept per stream (UTF-8: enough characters);
    past that, reading continues and discards (so a traceback after a long print still
    shows) until ``_FLOOD_FACTOR`` times that much was read, then we stop and kill.
    """
    assert proc.stdout is not None and proc.stderr is not None  # both are PIPEs
    budget = 4 * config.max_output_chars + 4
    out, err = _Capture(budget), _Capture(budget)
    captures = {proc.stdout: out, proc.stderr: err}
    deadline = started + config.timeout_s
    exited_at = None
    with selectors.DefaultSelector() as selector:
        for pipe in captures:
            os.set_blocking(pipe.fileno(), False)
            selector.register(pipe, selectors.EVENT_READ)
        while selector.get_map():
            now = time.monotonic()
            if now >= deadline:
                return out, err, True
            if exited_at is None and _has_exited(proc):
                exited_at = now
            if exited_at is not None and now - exited_at > _DRAIN_S:
                break  # background processes still hold the pipes; they are killed next
            for key, _ in selector.select(min(deadline - now, 0.05 if exited_at else 0.5)):
                capture = captures[key.fileobj]  # type: ignore[index]
                try:
                    chunk = os.read(key.fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    selector.unregister(key.fileobj)
                    continue
                capture.add(chunk)
                if capture.read > _FLOOD_FACTOR * budget:
                    capture.stopped = True  # the caller kills the program
                    return out, err, False
    return out, err, False


def _has_exited(proc: subprocess.Popen[bytes]) -> bool:
    """Whether the child exited, without reaping it (so its pid stays ours until killpg)."""
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child's whole process group (it leads its own session), then reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL does not fail in practice
        logger.warning("PythonInterpreter child %d did not die after SIGKILL", proc.pid)
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()


def _remove_cgroup(path: str) -> None:
    """SIGKILL every member of the cgroup (even ones that left the session), then remove it."""
    deadline = time.monotonic() + 3.0
    while True:
        try:
            members = [int(p) for p in Path(path, "cgroup.procs").read_text().split()]
        except OSError:
            members = []
        for pid in members:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        try:
            if not members:
                os.rmdir(path)
                return
        except OSError:
            pass  # tasks still dying
        if time.monotonic() > deadline:
            logger.warning("could not remove cgroup %s (members: %s)", path, members)
            return
        time.sleep(0.01)


def _remove_tree(path: str) -> None:
    """Delete the working directory, first unlocking directories the program made unreadable."""
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
        logger.warning("could not delete PythonInterpreter working directory %s: %s", path, exc)


# ---------------------------------------------------------------- the observation text


def _signal_of(returncode: int | None, in_namespace: bool) -> int | None:
    """The signal that ended the program: Popen's ``-n``, or ``128 + n`` from our PID 1.

    In a namespace, a program that calls ``sys.exit(128 + n)`` itself reads the same.
    """
    if returncode is None:
        return None
    if returncode < 0:
        return -returncode
    if in_namespace and 128 < returncode < 128 + 65:
        return returncode - 128
    return None


def _cut(text: str, keep: int, capture: _Capture) -> str:
    """``text`` cut to ``keep`` characters with a marker, or unchanged when it was complete."""
    if capture.chars <= keep and not capture.stopped:
        return text
    if capture.stopped:
        note = (f"showing the first {keep} of more than {capture.chars} characters; the program "
                "was stopped because its output exceeded the limit")
    else:
        note = f"showing the first {keep} of {capture.chars} characters"
    return f"{text[:keep]}\n...[output truncated: {note}]"


def _format(
    out: _Capture, err: _Capture, timed_out: bool, returncode: int | None, in_namespace: bool,
    config: PythonConfig,
) -> str:
    """Assemble the observation like Tongyi's tool does, plus our truncation markers."""
    stdout, stderr = out.text(), err.text()
    limit, flooded = config.max_output_chars, out.stopped or err.stopped
    if out.chars + err.chars > limit or flooded:
        # stderr (tracebacks) keeps at least half the budget; each gets what the other leaves
        keep_err = min(err.chars, max(limit - out.chars, limit // 2))
        keep_out = min(out.chars, limit - keep_err)
        stdout, stderr = _cut(stdout, keep_out, out), _cut(stderr, keep_err, err)
    parts = []
    if stdout:
        parts.append(f"stdout:\n{stdout}")
    if stderr:
        parts.append(f"stderr:\n{stderr}")
    sig = None if (timed_out or flooded) else _signal_of(returncode, in_namespace)
    if timed_out or sig in (signal.SIGXCPU, signal.SIGKILL):
        parts.append(TIMEOUT_TEXT)  # wall clock, or RLIMIT_CPU (SIGXCPU, then SIGKILL)
    elif sig is not None:
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = str(sig)
        parts.append(f"{ERROR_PREFIX}the program was terminated by signal {name}.")
    result = "\n".join(parts)
    return result if result.strip() else NO_OUTPUT_TEXT
