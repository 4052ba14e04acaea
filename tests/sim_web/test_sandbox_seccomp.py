"""The sandbox's seccomp filter (issue 26): the program itself, its syscall tables, and the real sandbox.

The first tests need no bubblewrap: they decode the BPF program and run it through a small
interpreter, and check the syscall numbers against the kernel headers and libseccomp where those
are installed. The others run hostile code in the real sandbox; where a control shows that an
attack is real, it runs the same sandbox with an allow-everything filter in place of the real one.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import re
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from sim_web.tools.python import _bwrap, _seccomp
from sim_web.tools.python.sandbox import ERROR_PREFIX, PythonConfig, run_python, sandbox_problem

NO_SANDBOX = pytest.mark.skipif(sandbox_problem() is not None, reason=f"no sandbox here: {sandbox_problem()}")
MACHINE = _seccomp.machine_name()
AUDIT_ARCH_I386 = 0x40000003
#: ``bwrap --seccomp`` with this program allows every call: the control of the attack tests.
ALLOW_ALL = _seccomp._INSTRUCTION.pack(0x06, 0, 0, _seccomp.SECCOMP_RET_ALLOW)


def _decode(program: bytes) -> list[tuple[int, int, int, int]]:
    size = _seccomp._INSTRUCTION.size
    assert len(program) % size == 0
    return [_seccomp._INSTRUCTION.unpack_from(program, i) for i in range(0, len(program), size)]


def _evaluate(program: bytes, arch: int, nr: int, args: tuple[int, ...] = ()) -> int:
    """What the kernel would do for a call ``nr`` of ABI ``arch`` with ``args``: a tiny classic-BPF interpreter."""
    data = {0: nr & 0xFFFFFFFF, 4: arch}
    for i, value in enumerate(args):
        data[16 + 8 * i] = value & 0xFFFFFFFF  # the low half of args[i] (little-endian)
        data[20 + 8 * i] = (value >> 32) & 0xFFFFFFFF
    ops, pc, acc = _decode(program), 0, 0
    while True:
        code, jt, jf, k = ops[pc]
        if code == 0x20:  # LD W ABS
            acc = data.get(k, 0)
        elif code in (0x15, 0x35):  # JEQ / JGE K
            pc += jt if (acc == k if code == 0x15 else acc >= k) else jf
        elif code == 0x06:  # RET K
            return k
        elif code == 0x54:  # ALU AND K
            acc &= k
        else:
            raise AssertionError(f"unexpected BPF instruction {code:#x} at {pc}")
        pc += 1


RULE_CALLS = {rule.call for rule in _seccomp.ARG_RULES} | {"futex"}
EAFNOSUPPORT = _seccomp.SECCOMP_RET_ERRNO | errno.EAFNOSUPPORT


@pytest.mark.parametrize("machine", sorted(_seccomp.SYSCALLS))
def test_program_structure_and_decisions(machine):
    program = _seccomp.filter_program(machine)
    ops, table = _decode(program), _seccomp.SYSCALLS[machine]
    denied = sorted({table[name] for name in _seccomp.DENIED if name in table})
    x32 = machine == "x86_64"
    rules = sum(4 + len(rule.values) for rule in _seccomp.ARG_RULES)  # JEQ nr, LD arg, JEQs, two RETs
    rules += len(_seccomp._futex_block(table["futex"]))
    assert len(ops) == 4 + x32 + len(denied) + rules + 2
    assert ops[0] == (0x20, 0, 0, 4)  # load seccomp_data.arch
    assert ops[1] == (0x15, 1, 0, _seccomp.AUDIT_ARCH[machine])  # this ABI: skip the next instruction
    assert ops[2] == (0x06, 0, 0, _seccomp.RET_EPERM)  # any other ABI: EPERM
    assert ops[3] == (0x20, 0, 0, 0)  # load seccomp_data.nr
    assert ops[-2] == (0x06, 0, 0, _seccomp.SECCOMP_RET_ALLOW) and ops[-1] == (0x06, 0, 0, _seccomp.RET_EPERM)
    checks = ops[4 : 4 + x32 + len(denied)]
    assert sorted(k for code, _, _, k in checks if code == 0x15) == denied
    for index, (code, jt, jf, _k) in enumerate(checks, start=4):
        assert code in (0x15, 0x35) and jf == 0 and index + 1 + jt == len(ops) - 1  # every match: the EPERM
    arch = _seccomp.AUDIT_ARCH[machine]
    for name in _seccomp.DENIED:
        if name in table:
            assert _evaluate(program, arch, table[name]) == _seccomp.RET_EPERM, name
    ruled = {table[call] for call in RULE_CALLS}
    for nr in set(range(0, 460)) - set(denied) - ruled:  # read, write, openat, clone, execve...: all allowed
        assert _evaluate(program, arch, nr) == _seccomp.SECCOMP_RET_ALLOW, nr
    assert _evaluate(program, AUDIT_ARCH_I386, 20) == _seccomp.RET_EPERM  # a foreign ABI, even getpid
    assert _evaluate(program, arch, -1) == (_seccomp.RET_EPERM if x32 else _seccomp.SECCOMP_RET_ALLOW)
    if x32:
        assert _evaluate(program, arch, 0x40000000 | 39) == _seccomp.RET_EPERM  # x32 getpid


@pytest.mark.parametrize("machine", sorted(_seccomp.SYSCALLS))
def test_argument_rules_decide_locks_socket_families_and_personality(machine):
    program, table = _seccomp.filter_program(machine), _seccomp.SYSCALLS[machine]
    arch = _seccomp.AUDIT_ARCH[machine]
    fcntl_, socket_, personality = table["fcntl"], table["socket"], table["personality"]
    for cmd in (5, 6, 7, 36, 37, 38, 1024, 1025, 1026, (1 << 32) | 6):  # a high half is ignored, as by the kernel
        assert _evaluate(program, arch, fcntl_, (3, cmd)) == _seccomp.RET_EPERM, cmd
    for cmd in (0, 1, 2, 3, 4, 1030, 1031):  # F_DUPFD, F_GETFD, F_SETFD, F_GETFL, F_SETFL, F_DUPFD_CLOEXEC, ...
        assert _evaluate(program, arch, fcntl_, (3, cmd)) == _seccomp.SECCOMP_RET_ALLOW, cmd
    for family in (1, 2, 10, 16):  # AF_UNIX, AF_INET, AF_INET6, AF_NETLINK
        assert _evaluate(program, arch, socket_, (family, 1, 0)) == _seccomp.SECCOMP_RET_ALLOW, family
    for family in (0, 3, 17, 31, 38, 40, 41, 44, 45):  # AF_PACKET, Bluetooth, ALG, AF_VSOCK (40), ...
        assert _evaluate(program, arch, socket_, (family, 1, 0)) == EAFNOSUPPORT, family
    assert _evaluate(program, arch, personality, (0,)) == _seccomp.SECCOMP_RET_ALLOW
    assert _evaluate(program, arch, personality, (0xFFFFFFFF,)) == _seccomp.SECCOMP_RET_ALLOW  # the query
    for persona in (0x0040000, 0x0400000, 0x0008, 0x0020000):  # ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC, ...
        assert _evaluate(program, arch, personality, (persona,)) == _seccomp.RET_EPERM, persona


FUTEX_CASES = (  # (op, timeout): what the filter answers
    *(((cmd | 128 | clock), t) for cmd in range(14) for clock in (0, 256) for t in (0, 1 << 40 | 8)),
)


@pytest.mark.parametrize("machine", sorted(_seccomp.SYSCALLS))
def test_futex_reaches_the_kernel_only_when_private(machine):
    """Issue 59, item 9: a shared futex (keyed by inode and offset) never waits nor wakes across processes."""
    program, table = _seccomp.filter_program(machine), _seccomp.SYSCALLS[machine]
    arch, futex = _seccomp.AUDIT_ARCH[machine], table["futex"]
    for op, timeout in FUTEX_CASES:  # private: the kernel decides, whatever the command, clock and timeout
        assert _evaluate(program, arch, futex, (0x1000, op, 0, timeout)) == _seccomp.SECCOMP_RET_ALLOW, op
    eagain, etimedout = _seccomp.RET_FUTEX_UNTIMED, _seccomp.RET_FUTEX_TIMED
    for wait in (0, 9, 9 | 256, (1 << 32) | 0):  # FUTEX_WAIT, FUTEX_WAIT_BITSET (realtime clock), a high half
        assert _evaluate(program, arch, futex, (0x1000, wait, 0, 0)) == eagain, wait  # no timeout: look again
        for timeout in (8, 1 << 40, (1 << 40) | 8):  # a timeout pointer in either half: timed out
            assert _evaluate(program, arch, futex, (0x1000, wait, 0, timeout)) == etimedout, (wait, timeout)
    for wake in (1, 3, 4, 10, 10 | 256):  # FUTEX_WAKE, FUTEX_REQUEUE, FUTEX_CMP_REQUEUE, FUTEX_WAKE_BITSET
        assert _evaluate(program, arch, futex, (0x1000, wake, 1, 0)) == _seccomp.RET_ZERO, wake
    for other in (2, 5, 6, 7, 8, 11, 12, 13):  # FUTEX_FD, FUTEX_WAKE_OP, the PI operations
        assert _evaluate(program, arch, futex, (0x1000, other, 1, 0)) == _seccomp.RET_FUTEX_OTHER, other
    for call in ("futex_waitv", "futex_wake", "futex_wait", "futex_requeue"):
        assert _evaluate(program, arch, table[call], (0, 0, 0, 0)) == _seccomp.RET_EPERM, call


def test_every_denied_call_has_a_number_on_each_machine():
    for machine, table in _seccomp.SYSCALLS.items():
        missing = (set(_seccomp.DENIED) | RULE_CALLS) - set(table)
        expected = {"iopl", "ioperm", "inotify_init"} if machine == "aarch64" else set()  # x86-only calls
        assert missing == expected, machine
        assert set(table) <= set(_seccomp.DENIED) | RULE_CALLS and len(set(table.values())) == len(table), machine


def _header_numbers(path: Path) -> dict[str, int]:
    text = path.read_text()
    return {m[1]: int(m[2]) for m in re.finditer(r"#define __NR(?:3264)?_(\w+)\s+(\d+)\b", text)}


def test_numbers_match_the_kernel_headers():
    headers = {
        "x86_64": [Path("/usr/include/asm/unistd_64.h"), Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h")],
        "aarch64": [Path("/usr/include/asm-generic/unistd.h")],
    }  # arm64's uapi header is the generic one
    checked = 0
    for machine, candidates in headers.items():
        found = next((p for p in candidates if p.is_file()), None)
        if found is None:
            continue
        numbers = _header_numbers(found)
        for name, nr in _seccomp.SYSCALLS[machine].items():
            if name in numbers:  # an older header may lack the newest calls
                assert numbers[name] == nr, (machine, name, numbers[name], nr)
                checked += 1
        assert {"add_key", "keyctl", "ptrace", "mount", "bpf"} <= set(numbers), found
    if not checked:
        pytest.skip("no kernel headers here (linux-libc-dev): nothing to compare the tables with")


def test_numbers_match_libseccomp():
    name = ctypes.util.find_library("seccomp")
    if name is None:
        pytest.skip("libseccomp is not installed here: nothing to compare the tables with")
    resolve = ctypes.CDLL(name).seccomp_syscall_resolve_name_arch
    resolve.argtypes, resolve.restype = [ctypes.c_uint32, ctypes.c_char_p], ctypes.c_int
    for machine, table in _seccomp.SYSCALLS.items():
        for call in (*_seccomp.DENIED, *RULE_CALLS):
            known = resolve(_seccomp.AUDIT_ARCH[machine], call.encode())  # its arch tokens are AUDIT_ARCH values
            if call in table:
                assert known in (table[call], -1), (machine, call, known)  # -1: an older libseccomp
            else:
                assert known < 0, (machine, call, known)  # no such call there


def test_an_unknown_machine_is_refused_with_the_fix():
    problem = _seccomp.seccomp_problem("riscv64")
    assert "'riscv64'" in problem and "x86_64, aarch64" in problem and "SYSCALLS" in problem
    assert "best-effort" in problem  # the documented fallback, for trusted code only
    with pytest.raises(ValueError, match="riscv64"):
        _seccomp.filter_program("riscv64")
    assert _seccomp.seccomp_problem("arm64") is None and _seccomp.machine_name("AMD64") == "x86_64"


def test_the_descriptor_holds_the_program_from_its_start():
    with _seccomp.program_fd() as fd:
        assert os.read(fd, 1 << 16) == _seccomp.filter_program()


@NO_SANDBOX
def test_the_sandbox_refuses_to_run_without_a_filter_for_its_machine(monkeypatch):
    monkeypatch.setattr(_seccomp.platform, "machine", lambda: "riscv64")
    _bwrap.bwrap_problem.cache_clear()
    try:
        out = run_python("print('ran')")
    finally:
        _bwrap.bwrap_problem.cache_clear()
    assert out.startswith(ERROR_PREFIX) and "seccomp" in out and "'riscv64'" in out and "ran" not in out


ERRNO_OF_EACH = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
for name, nr in {table!r}.items():
    ctypes.set_errno(0)
    rc = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(0)] * 5)
    print(name + ":", "ok" if rc != -1 else errno_name(ctypes.get_errno()))
"""
PRELUDE = "import errno\nerrno_name = lambda e: errno.errorcode.get(e, str(e))\n"
SECCOMP_MODE = "print('seccomp:', [l.split()[1] for l in open('/proc/self/status') if l.startswith('Seccomp:')][0])\n"


def _lines(out: str) -> dict[str, str]:
    assert out.startswith("stdout:\n"), out
    return dict(line.split(": ", 1) for line in out.removeprefix("stdout:\n").splitlines() if ": " in line)


@NO_SANDBOX
def test_every_denied_call_gets_eperm_inside(monkeypatch):
    table = {name: nr for name, nr in _seccomp.SYSCALLS[MACHINE].items() if name in _seccomp.DENIED}
    extra = {"x32 getpid": 0x40000000 | 39} if MACHINE == "x86_64" else {}  # the x32 ABI's getpid
    found = _lines(run_python(PRELUDE + ERRNO_OF_EACH.format(table={**table, **extra}) + SECCOMP_MODE))
    assert {name: found[name] for name in [*table, *extra]} == dict.fromkeys([*table, *extra], "EPERM")
    assert found["seccomp"] == "2"  # SECCOMP_MODE_FILTER
    # control: the same calls (ptrace aside: it would trace the sandbox) under an allow-everything filter
    monkeypatch.setattr(_seccomp, "filter_program", lambda machine=None: ALLOW_ALL)
    safe = {name: nr for name, nr in table.items() if name != "ptrace"}
    control = _lines(run_python(PRELUDE + ERRNO_OF_EACH.format(table=safe)))
    assert control["unshare"] == "ok", control  # unshare(0) succeeds: the EPERM above is the filter's
    if Path("/proc/keys").exists():  # a kernel with keyrings: the calls reach them without the filter
        assert all(control[name] != "EPERM" for name in ("add_key", "keyctl", "request_key")), control


I386_GETPID = """
import ctypes, mmap, os
pid = os.fork()
if pid == 0:  # in a child: a kernel without 32-bit emulation answers int 0x80 with SIGSEGV
    page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(bytes([0xB8, 20, 0, 0, 0, 0xCD, 0x80, 0xC3]))  # mov eax, 20 (i386 getpid); int 0x80; ret
    call = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(page)))
    print("i386 getpid:", call(), flush=True)
    os._exit(0)
print("child:", os.waitpid(pid, 0)[1])
"""


@NO_SANDBOX
@pytest.mark.skipif(MACHINE != "x86_64", reason="the 32-bit int 0x80 ABI exists on x86_64 only")
def test_the_32_bit_abi_cannot_go_around_the_filter(monkeypatch):
    found = _lines(run_python(I386_GETPID))
    monkeypatch.setattr(_seccomp, "filter_program", lambda machine=None: ALLOW_ALL)
    control = _lines(run_python(I386_GETPID))
    if "i386 getpid" not in control:
        pytest.skip(f"this kernel has no 32-bit emulation (int 0x80 ended the child: {control})")
    assert int(control["i386 getpid"]) > 0  # the attack is real: the i386 ABI reaches the kernel
    assert found["i386 getpid"] == str(-errno.EPERM)  # every call of a foreign ABI: EPERM


PLANT = """
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
key = libc.syscall(ctypes.c_long({nr}), b"user", {mark!r}, b"the answer is 42", ctypes.c_long(16),
                   ctypes.c_long(-2))  # KEY_SPEC_PROCESS_KEYRING: gone with this process
print("add_key:", "planted" if key > 0 else os.strerror(ctypes.get_errno()), flush=True)
if key > 0:
    time.sleep({hold_s})  # keep it there while the other call looks
"""
LOOK = """
import os, time
deadline = time.monotonic() + {window_s}
seen = "no /proc/keys" if not os.path.exists("/proc/keys") else "nothing"
while seen == "nothing" and time.monotonic() < deadline:
    seen = "found" if {mark!r} in open("/proc/keys").read() else "nothing"
    time.sleep(0.05)
print("seen:", seen)
"""


def _plant_and_look(mark: str) -> tuple[dict[str, str], dict[str, str]]:
    """One call plants a key named ``mark`` while a concurrent call watches ``/proc/keys`` for it."""
    config = PythonConfig(timeout_s=30)
    plant = PLANT.format(nr=_seccomp.SYSCALLS[MACHINE]["add_key"], mark=mark.encode(), hold_s=8)
    with ThreadPoolExecutor(2) as pool:
        planted = pool.submit(run_python, plant, config)
        seen = pool.submit(run_python, LOOK.format(mark=mark, window_s=6), config)
        return _lines(planted.result()), _lines(seen.result())


@NO_SANDBOX
def test_the_keyring_is_no_channel_between_calls():
    mark = f"simweb-{uuid.uuid4().hex}"
    planted, seen = _plant_and_look(mark)
    assert planted["add_key"] == os.strerror(errno.EPERM)
    assert seen["seen"] in ("nothing", "no /proc/keys")
    assert not Path("/proc/keys").exists() or mark not in Path("/proc/keys").read_text()  # nor on the host


@NO_SANDBOX
def test_the_keyring_channel_is_real_without_the_filter(monkeypatch):
    if not Path("/proc/keys").exists():
        pytest.skip("this kernel has no keyrings (no /proc/keys): there is no channel to show")
    monkeypatch.setattr(_seccomp, "filter_program", lambda machine=None: ALLOW_ALL)
    planted, seen = _plant_and_look(f"simweb-{uuid.uuid4().hex}")
    assert planted["add_key"] == "planted" and seen["seen"] == "found"  # one sandbox read the other's message


ORDINARY = """
import math, os, subprocess, sys, tempfile, threading, asyncio, json
from concurrent.futures import ThreadPoolExecutor
print("math:", math.factorial(12), round(math.sqrt(2), 6))
print("status:", [l.split(":")[0] for l in open("/proc/self/status") if l.startswith(("Name:", "Seccomp:"))])
with ThreadPoolExecutor(4) as pool:
    print("threads:", sum(pool.map(lambda i: i * i, range(100))), threading.active_count() >= 1)
print("subprocess:", subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True).stdout.strip())
print("shell:", subprocess.run(["sh", "-c", "echo $((2 + 3))"], capture_output=True, text=True).stdout.strip())
pid = os.fork()
if pid == 0:
    os._exit(7)
print("fork:", os.WEXITSTATUS(os.waitpid(pid, 0)[1]))
with tempfile.NamedTemporaryFile("w+", dir=".") as f:
    f.write(json.dumps({"a": 1})); f.flush(); f.seek(0)
    print("file:", json.load(f)["a"])
async def main():
    await asyncio.sleep(0.01)
    return "done"
print("asyncio:", asyncio.run(main()))
try:
    import numpy
    print("numpy:", int(numpy.arange(10).dot(numpy.arange(10))))
except ImportError:
    print("numpy: absent")
"""


@NO_SANDBOX
def test_ordinary_code_still_works():
    found = _lines(run_python(ORDINARY, PythonConfig(timeout_s=60, cpu_s=60)))
    assert found["math"] == "479001600 1.414214"
    assert found["status"] == "['Name', 'Seccomp']"
    assert found["threads"] == "328350 True"
    assert found["subprocess"] == "42" and found["shell"] == "5" and found["fork"] == "7"
    assert found["file"] == "1" and found["asyncio"] == "done"
    assert found["numpy"] in ("285", "absent")
