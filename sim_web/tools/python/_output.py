"""Reading a sandboxed program's output and turning it into the Tongyi observation text.

The observation matches the Tongyi DeepResearch tool (Alibaba-NLP/DeepResearch,
``inference/tool_python.py``, which runs the code on SandboxFusion): a ``stdout:\\n...`` part
and a ``stderr:\\n...`` part joined by a newline, then :data:`TIMEOUT_TEXT` when the run timed
out, and :data:`NO_OUTPUT_TEXT` when all of that is empty. Failures of the sandbox itself read
``[Python Interpreter Error]: {reason}`` (:data:`ERROR_PREFIX`) as there. Output over the bound is
cut with a marker.
"""

from __future__ import annotations

import codecs
import contextlib
import logging
import os
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

TIMEOUT_TEXT = "[PythonInterpreter Error] TimeoutError: Execution timed out."
NO_OUTPUT_TEXT = "Finished execution."
ERROR_PREFIX = "[Python Interpreter Error]: "
DRAIN_S = 0.2  # after the program exits, how long background children may hold the pipes
FLOOD_FACTOR = 16  # read (and discard) up to this many times the kept bytes, then kill


@dataclass
class Capture:
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


def collect(proc: subprocess.Popen[bytes], max_output_chars: int, deadline: float) -> tuple[Capture, Capture, bool]:
    """Read both pipes incrementally until EOF, the ``deadline`` (monotonic) or a flood.

    Args:
        proc: The running program, stdout and stderr piped.
        max_output_chars: The character bound of the observation.
        deadline: ``time.monotonic()`` value at which the run times out.

    Returns:
        ``(stdout, stderr, timed_out)``.

    At most ``4 * max_output_chars`` bytes are kept per stream (UTF-8: enough characters);
    past that, reading continues and discards (so a traceback after a long print still
    shows) until ``FLOOD_FACTOR`` times that much was read, then we stop and kill.
    """
    assert proc.stdout is not None and proc.stderr is not None  # both are PIPEs
    budget = 4 * max_output_chars + 4
    out, err = Capture(budget), Capture(budget)
    captures = {proc.stdout: out, proc.stderr: err}
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
            if exited_at is not None and now - exited_at > DRAIN_S:
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
                if capture.read > FLOOD_FACTOR * budget:
                    capture.stopped = True  # the caller kills the program
                    return out, err, False
    return out, err, False


def _has_exited(proc: subprocess.Popen[bytes]) -> bool:
    """Whether the child exited, without reaping it (so its pid stays ours until killpg)."""
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child's whole process group (it leads its own session), then reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL does not fail in practice
        log.warning("PythonInterpreter child %d did not die after SIGKILL", proc.pid)
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()


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


def _cut(text: str, keep: int, capture: Capture) -> str:
    """``text`` cut to ``keep`` characters with a marker, or unchanged when it was complete."""
    if capture.chars <= keep and not capture.stopped:
        return text
    if capture.stopped:
        note = (
            f"showing the first {keep} of more than {capture.chars} characters; the program "
            "was stopped because its output exceeded the limit"
        )
    else:
        note = f"showing the first {keep} of {capture.chars} characters"
    return f"{text[:keep]}\n...[output truncated: {note}]"


def format_observation(
    out: Capture,
    err: Capture,
    timed_out: bool,
    returncode: int | None,
    in_namespace: bool,
    max_output_chars: int,
    oom_note: str | None = None,
) -> str:
    """Assemble the observation like Tongyi's tool does, plus our truncation markers.

    Args:
        out: The captured stdout.
        err: The captured stderr.
        timed_out: Whether the wall-clock limit stopped the run.
        returncode: The program's exit status (``-n`` or ``128 + n`` for signal ``n``).
        in_namespace: Whether a PID-namespace init reported the status (``128 + n`` convention).
        max_output_chars: The character bound of the observation.
        oom_note: Set when the memory cgroup killed a process: the error line to report for a
            SIGKILL instead of the timeout text.

    Returns:
        The observation text.
    """
    stdout, stderr = out.text(), err.text()
    limit, flooded = max_output_chars, out.stopped or err.stopped
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
    if sig == signal.SIGKILL and oom_note:
        parts.append(ERROR_PREFIX + oom_note)
    elif timed_out or sig in (signal.SIGXCPU, signal.SIGKILL):
        parts.append(TIMEOUT_TEXT)  # wall clock, or RLIMIT_CPU (SIGXCPU, then SIGKILL)
    elif sig is not None:
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = str(sig)
        parts.append(f"{ERROR_PREFIX}the program was terminated by signal {name}.")
    result = "\n".join(parts)
    return result if result.strip() else NO_OUTPUT_TEXT
