"""Run PythonInterpreter calls in a child subreaper process and report what they leave behind.

A process with ``PR_SET_CHILD_SUBREAPER`` adopts every orphaned descendant, so after the calls
returned, ``waitpid(-1)`` sees exactly the processes of *this* probe that are still alive, whatever
else runs on the machine: the check is scoped to the test's own process tree without reading the
process table. Used as ``python sandbox_probe.py`` with a JSON request on stdin:

* ``{"mode": "run", "code": ..., "config": {...}}``: one call; reports ``out``;
* ``{"mode": "kill-caller", "code": ..., "config": {...}}``: starts a *caller* process that makes the
  call, SIGKILLs the caller while its sandbox runs, and reports ``caller_pid``.

Both report ``leftover`` (descendants still alive ``settle_s`` after the end) and ``reaped`` (how many
descendants were collected, the caller and the sandbox's orphans included).
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36

#: The caller: makes one call, printing ``started`` once the sandbox process has been spawned.
CALLER = """
import json, subprocess, sys
real = subprocess.Popen
class Spy(real):
    def __init__(self, args, *a, **k):
        super().__init__(args, *a, **k)
        if any(str(x).startswith("workdir=") for x in args):  # the runner's settings: not bwrap's probe
            print("started", flush=True)
subprocess.Popen = Spy
from sim_web.tools.python.sandbox import PythonConfig, run_python
req = json.loads(sys.argv[1])
run_python(req["code"], PythonConfig(**req["config"]))
print("finished", flush=True)
"""


#: The best-effort sandbox with nothing but the process group and the Python-level guards (what a
#: machine without unshare or a writable cgroup gets); used to test that those layers hold alone.
BARE = {"isolation": "best-effort", "use_namespaces": False, "use_cgroup": False}


def probe(request: dict) -> dict:
    """Run one request in a child ``sandbox_probe.py`` (``request["env"]``: extra environment); its report."""
    done = subprocess.run(
        [sys.executable, __file__],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **request.get("env", {})},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def run_contained(code: str, **config: object) -> str:
    """One call in a child subreaper: its output, after asserting it left no process behind."""
    report = probe({"mode": "run", "code": code, "config": config})
    assert report["leftover"] is False, report
    return report["out"]


def _settle(limit_s: float) -> tuple[bool, int]:
    """Reap descendants until none is left or ``limit_s`` passed; ``(leftover, reaped)``."""
    deadline, reaped = time.monotonic() + limit_s, 0
    while time.monotonic() < deadline:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False, reaped
        if pid:
            reaped += 1
        else:
            time.sleep(0.02)
    return True, reaped


def main() -> None:
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")
    req = json.load(sys.stdin)
    report: dict[str, object] = {}
    if req["mode"] == "run":
        from sim_web.tools.python.sandbox import PythonConfig, run_python

        report["out"] = run_python(req["code"], PythonConfig(**req["config"]))
    else:
        caller = subprocess.Popen([sys.executable, "-c", CALLER, json.dumps(req)], stdout=subprocess.PIPE, text=True)
        assert caller.stdout is not None
        report["caller_line"] = caller.stdout.readline().strip()
        time.sleep(req.get("run_s", 1.5))  # let the sandbox start the program (nothing depends on how long)
        report["caller_pid"] = caller.pid
        os.kill(caller.pid, signal.SIGKILL)
        report["caller_rest"] = caller.stdout.read()
    report["leftover"], report["reaped"] = _settle(req.get("settle_s", 15.0))
    json.dump(report, sys.stdout)


if __name__ == "__main__":
    main()
