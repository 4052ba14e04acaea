"""No channel between concurrent sandboxes (issue 38, item 4), each next to a control that shows the probe works.

* ``flock`` on a file every sandbox shares read-only (the stdlib under ``/usr`` or the interpreter's prefix):
  one call holds the lock while a concurrent call tests it. The control runs the same two probes as plain
  subprocesses outside the sandbox, and in the sandbox with an allow-everything filter.
* A shared ``futex`` (no ``FUTEX_PRIVATE_FLAG``) on a read-only mapping of such a file (issue 59, item 9): the
  kernel keys it by inode and offset, so one call's wake reaches a concurrent call's wait. Same controls.
* ``AF_VSOCK`` sockets (not isolated by the network namespace) and a non-default ``personality``.
* What the lock rule costs ordinary code, measured: the stdlib imports, in-memory sqlite3, numpy, ``fork`` and
  ``multiprocessing`` work; a file-backed sqlite3 database needs ``?nolock=1`` (its locks are refused).
* What the futex rule costs: ``multiprocessing``'s locks, queues, pools and events still work (a contended waiter
  spins; a timed wait on a process-shared lock times out at once); ``threading`` is untouched.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from sim_web.tools.python import _seccomp
from sim_web.tools.python.sandbox import PythonConfig, run_python

pytestmark = pytest.mark.needs_sandbox
#: ``bwrap --seccomp`` with this program allows every call: the control of the attack tests.
ALLOW_ALL = _seccomp._INSTRUCTION.pack(0x06, 0, 0, _seccomp.SECCOMP_RET_ALLOW)
SHARED = os.__file__  # read-only in every sandbox, the same inode for all of them

HOLD = f"""
import errno, fcntl, os, time
fd = os.open({SHARED!r}, os.O_RDONLY)
try:
    fcntl.flock(fd, fcntl.LOCK_EX)
    print("hold: held", flush=True)
    time.sleep(8)  # keep it while the other call tests it
except OSError as e:
    print("hold:", errno.errorcode[e.errno], flush=True)
"""
TEST = f"""
import errno, fcntl, os, time
fd = os.open({SHARED!r}, os.O_RDONLY)
seen, deadline = "free", time.monotonic() + 6
while seen == "free" and time.monotonic() < deadline:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        time.sleep(0.05)
    except BlockingIOError:
        seen = "busy"  # the other side holds it: one bit passed
    except OSError as e:
        seen = errno.errorcode[e.errno]
print("seen:", seen)
"""


def _lines(out: str) -> dict[str, str]:
    assert out.startswith("stdout:\n"), out
    return dict(line.split(": ", 1) for line in out.removeprefix("stdout:\n").splitlines() if ": " in line)


def _in_sandboxes(first: str = HOLD, second: str = TEST) -> tuple[dict[str, str], dict[str, str]]:
    """Run two programs in two concurrent sandboxes; the key: value lines each printed."""
    config = PythonConfig(timeout_s=30)
    with ThreadPoolExecutor(2) as pool:
        a = pool.submit(run_python, first, config)
        b = pool.submit(run_python, second, config)
        return _lines(a.result()), _lines(b.result())


def test_flock_on_a_shared_file_passes_a_bit_between_plain_processes():
    """The control: the same probes as two ordinary processes (no sandbox) pass the bit."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "hold: held"
        tester = subprocess.run([sys.executable, "-c", TEST], capture_output=True, text=True, timeout=60)
    finally:
        holder.kill()
        holder.wait()
    assert tester.stdout.strip() == "seen: busy"


def test_flock_is_no_channel_between_sandboxes(monkeypatch):
    held, seen = _in_sandboxes()
    assert held["hold"] == "EPERM" and seen["seen"] == "EPERM"
    monkeypatch.setattr(_seccomp, "filter_program", lambda machine=None: ALLOW_ALL)
    held, seen = _in_sandboxes()  # control: without the filter, the sandboxes share the lock
    assert held["hold"] == "held" and seen["seen"] == "busy"


FUTEX_PRELUDE = f"""
import ctypes, errno, mmap, os, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.mmap.restype, libc.mmap.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t] + [ctypes.c_int] * 3 + [
    ctypes.c_long
]
NR = {_seccomp.SYSCALLS[_seccomp.machine_name()]["futex"]}
fd = os.open({SHARED!r}, os.O_RDONLY)
addr = libc.mmap(None, 4096, mmap.PROT_READ, int(os.environ.get("MAP", mmap.MAP_SHARED)), fd, 0)
word = ctypes.c_uint32.from_address(addr).value
class Timespec(ctypes.Structure):
    _fields_ = [("s", ctypes.c_long), ("ns", ctypes.c_long)]
def futex(op, val, timeout=None):
    ctypes.set_errno(0)
    rc = libc.syscall(ctypes.c_long(NR), ctypes.c_void_p(addr), ctypes.c_int(op), ctypes.c_uint32(val),
                      ctypes.byref(timeout) if timeout else None, None, ctypes.c_int(0))
    return rc if rc != -1 else errno.errorcode[ctypes.get_errno()]
"""
#: One side: a shared ``FUTEX_WAIT`` (op 0) with a 5 s timeout; 0 means the other side woke it.
FUTEX_WAIT = (
    FUTEX_PRELUDE
    + """
rc = futex(0, word, Timespec(5, 0))
print("wait:", "woken" if rc == 0 else rc, flush=True)
"""
)
#: The other: shared ``FUTEX_WAKE`` (op 1) until it wakes someone (one bit passed) or 3 s passed.
FUTEX_WAKE = (
    FUTEX_PRELUDE
    + """
woke, deadline = 0, time.monotonic() + 3
while not woke and time.monotonic() < deadline:
    woke = futex(1, 1)
    time.sleep(0.02)
print("woke:", woke)
if woke == 0:  # nothing passed: show what an untimed shared wait gets (it would sleep for ever in the kernel)
    print("untimed:", futex(0, word))
    print("private:", futex(128, word ^ 1))  # FUTEX_WAIT_PRIVATE on a changed word: the kernel's own answer
"""
)


@pytest.mark.parametrize("mapping", ["MAP_SHARED", "MAP_PRIVATE"])
def test_a_shared_futex_on_a_shared_file_passes_a_bit_between_plain_processes(mapping):
    """The control: two ordinary processes; a private read-only mapping is keyed by the file too."""
    env = {**os.environ, "MAP": str(getattr(__import__("mmap"), mapping))}
    waiter = subprocess.Popen([sys.executable, "-c", FUTEX_WAIT], stdout=subprocess.PIPE, text=True, env=env)
    try:
        waker = subprocess.run([sys.executable, "-c", FUTEX_WAKE], capture_output=True, text=True, timeout=60, env=env)
        waited = waiter.communicate(timeout=60)[0]
    finally:
        waiter.kill()
        waiter.wait()
    assert _lines("stdout:\n" + waker.stdout)["woke"] == "1", waker.stdout + waker.stderr
    assert _lines("stdout:\n" + waited)["wait"] == "woken"


def test_a_shared_futex_is_no_channel_between_sandboxes(monkeypatch):
    waited, woke = _in_sandboxes(FUTEX_WAIT, FUTEX_WAKE)
    assert waited["wait"] == "ETIMEDOUT" and woke["woke"] == "0"  # nobody slept, nobody was woken
    assert woke["untimed"] == "EAGAIN" and woke["private"] == "EAGAIN"  # returned at once; private reaches the kernel
    monkeypatch.setattr(_seccomp, "filter_program", lambda machine=None: ALLOW_ALL)
    waited, woke = _in_sandboxes(FUTEX_WAIT, FUTEX_WAKE)  # control: without the filter, one sandbox wakes the other
    assert waited["wait"] == "woken" and woke["woke"] == "1"


VSOCK_AND_PERSONALITY = """
import ctypes, errno, socket
libc = ctypes.CDLL(None, use_errno=True)
try:
    s = socket.socket(40, socket.SOCK_STREAM)  # AF_VSOCK
    try:
        s.bind((0xFFFFFFFF, 0xFFFFFFFF))  # VMADDR_CID_ANY, VMADDR_PORT_ANY
        print("vsock: bound")
    except OSError as e:
        print("vsock: created, bind", errno.errorcode.get(e.errno, e.errno))
except OSError as e:
    print("vsock:", errno.errorcode.get(e.errno, e.errno))
for label, value in (("query", 0xFFFFFFFF), ("default", 0), ("no_randomize", 0x0040000), ("exec", 0x0400000)):
    ctypes.set_errno(0)
    rc = libc.personality(ctypes.c_ulong(value))
    print("personality " + label + ":", "ok" if rc != -1 else errno.errorcode.get(ctypes.get_errno()))
"""


def test_vsock_and_personality_are_refused(monkeypatch):
    found = _lines(run_python(VSOCK_AND_PERSONALITY))
    assert found["vsock"] == "EAFNOSUPPORT"
    assert found["personality query"] == found["personality default"] == "ok"
    assert found["personality no_randomize"] == found["personality exec"] == "EPERM"
    monkeypatch.setattr(_seccomp, "filter_program", lambda machine=None: ALLOW_ALL)
    control = _lines(run_python(VSOCK_AND_PERSONALITY))
    assert control["personality no_randomize"] == "ok"  # the sandbox alone does not stop it
    if control["vsock"] == "EAFNOSUPPORT":
        pytest.skip("this kernel has no vsock (the family is unsupported even without the filter)")
    assert control["vsock"].startswith(("bound", "created"))  # without the filter the family reaches the kernel


ORDINARY = """
import importlib, os, sqlite3, sys, multiprocessing
bad = []
for name in sorted(sys.stdlib_module_names):
    if name.startswith("_") or name in ("antigravity", "this", "idlelib", "turtledemo", "tkinter", "turtle"):
        continue
    try:
        importlib.import_module(name)
    except ImportError:
        pass  # not built here (e.g. no Tk)
    except Exception as e:
        bad.append(name + ":" + type(e).__name__)
print("stdlib:", bad)
db = sqlite3.connect(":memory:")
db.execute("create table t(x)"); db.execute("insert into t values (1)")
print("sqlite memory:", db.execute("select count(*) from t").fetchone()[0])
try:
    db = sqlite3.connect("f.db"); db.execute("create table t(x)"); db.commit()
    print("sqlite file: ok")
except sqlite3.OperationalError as e:
    print("sqlite file:", e)
db = sqlite3.connect("file:g.db?nolock=1", uri=True); db.execute("create table t(x)"); db.commit()
print("sqlite nolock: ok")
with multiprocessing.Pool(2) as pool:
    print("pool:", sum(pool.map(abs, range(-5, 5))))
try:
    import numpy
    print("numpy:", int(numpy.arange(10).dot(numpy.arange(10))))
except ImportError:
    print("numpy: absent")
"""


def test_what_the_lock_rule_costs_ordinary_code():
    found = _lines(run_python(ORDINARY, PythonConfig(timeout_s=120, cpu_s=120)))
    assert found["stdlib"] == "[]" and found["sqlite memory"] == "1" and found["pool"] == "25"
    assert found["numpy"] in ("285", "absent")
    assert found["sqlite file"] == "access permission denied"  # its POSIX locks are refused ...
    assert found["sqlite nolock"] == "ok"  # ... and ?nolock=1 (or ':memory:') is the way round
