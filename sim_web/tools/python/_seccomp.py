"""The seccomp filter of the bubblewrap sandbox: the system calls agent code may never make.

Namespaces and dropped capabilities already stop most of the kernel's privileged interfaces, but a
few are shared by every process of the machine whatever its namespaces: the kernel keyring
(``add_key`` plants a key that another sandbox, or the host, reads in ``/proc/keys`` until the kernel
collects it, so concurrent rollouts could pass answers to each other), io_uring, BPF and perf events,
userfaultfd, ptrace and the mount, module, kexec and swap calls. Like Docker's default profile, the
filter answers each of them with ``EPERM``. The same goes for what two sandboxes could otherwise share through
the read-only files they all see (``/usr``): ``flock``, the ``fcntl`` lock, lease and notify commands, and
inotify. A few calls are decided by an argument (:data:`ARG_RULES`): sockets only of the families the network
namespace isolates (not ``AF_VSOCK``, which reaches the host), and ``personality`` only to query or keep the
default. ``futex`` is decided by its operation (:func:`_futex_block`): a process-private one (``FUTEX_PRIVATE_FLAG``,
what threads use) goes to the kernel; a shared one is keyed by inode and offset, so two sandboxes waiting and waking
on a read-only mapping of a file they share would talk, and the filter answers it without the kernel: a wait
returns at once (``EAGAIN``, "the word changed"; ``ETIMEDOUT`` when it has a timeout), a wake or requeue wakes
nobody (0), any other shared operation (priority inheritance, ``FUTEX_WAKE_OP``) gets ``ENOSYS``. Process-shared
locks (``multiprocessing``'s) keep their atomics, so they still exclude; a contended waiter spins instead of
sleeping, and a timed wait on one times out at once. The futex2 calls (``futex_waitv`` and friends), which nothing
in glibc or CPython uses, are denied. Every other call is allowed.

The program is classic BPF, built here with :mod:`struct` (no libseccomp needed) and handed to
``bwrap --seccomp FD``, which installs it just before it ``exec``\\ s the interpreter, so bubblewrap
can still set up its namespaces and every process of the sandbox inherits it. It checks the calling
convention first: a call made through another ABI (32-bit ``int 0x80`` or x32 on x86_64) has other
numbers, so it gets ``EPERM`` whatever it is. Syscall numbers differ by architecture; this module
knows x86_64 and aarch64 (the numbers are checked against the kernel headers and libseccomp by
``tests/sim_web/test_sandbox_seccomp.py``). On any other machine :func:`seccomp_problem` says so
and the sandbox refuses to run, rather than run without the filter.
"""

from __future__ import annotations

import contextlib
import errno
import os
import platform
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache

SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
RET_EPERM = SECCOMP_RET_ERRNO | errno.EPERM
RET_EAFNOSUPPORT = SECCOMP_RET_ERRNO | errno.EAFNOSUPPORT
#: The call returns 0 without reaching the kernel (a shared futex wake: nobody woken).
RET_ZERO = SECCOMP_RET_ERRNO | 0

#: The calls the sandbox denies (``EPERM``), like Docker's default profile.
DENIED = (
    # kernel keyrings: shared across namespaces, a channel between sandboxes
    "add_key",
    "keyctl",
    "request_key",
    # locks and change notifications on files every sandbox shares read-only (/usr): channels between sandboxes
    "flock",
    "inotify_init",
    "inotify_init1",
    # kernel attack surface that ordinary Python never needs
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    # other processes' memory
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "pidfd_getfd",
    # namespaces and mounts (bubblewrap has set them up already)
    "unshare",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "open_by_handle_at",
    "name_to_handle_at",
    # the machine itself
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "swapon",
    "swapoff",
    "reboot",
    "acct",
    "quotactl",
    "syslog",
    "fanotify_init",
    "iopl",
    "ioperm",
    # futex2: a waiter list in memory (futex_waitv) the filter cannot read; the shared futex channel otherwise
    "futex_waitv",
    "futex_wake",
    "futex_wait",
    "futex_requeue",
)

#: ``fcntl`` commands that take, test or watch something other sandboxes can see: POSIX and open-file-description
#: locks (``F_GETLK`` 5, ``F_SETLK`` 6, ``F_SETLKW`` 7, ``F_OFD_GETLK`` 36, ``F_OFD_SETLK`` 37, ``F_OFD_SETLKW`` 38),
#: leases (``F_SETLEASE`` 1024, ``F_GETLEASE`` 1025) and directory notifications (``F_NOTIFY`` 1026).
LOCK_COMMANDS = (5, 6, 7, 36, 37, 38, 1024, 1025, 1026)
#: Address families a socket may have: those the network namespace isolates (``AF_UNIX`` 1, ``AF_INET`` 2,
#: ``AF_INET6`` 10, ``AF_NETLINK`` 16). Any other (``AF_VSOCK`` 40 reaches the host and its other guests
#: whatever the namespace; Bluetooth, ALG, ...) gets ``EAFNOSUPPORT``, as from a kernel without it.
SOCKET_FAMILIES = (1, 2, 10, 16)
#: ``personality`` values allowed: ``PER_LINUX`` (0) and the query ``0xffffffff``.
PERSONALITIES = (0, 0xFFFFFFFF)


@dataclass(frozen=True)
class ArgRule:
    """A call allowed or refused by the low 32 bits of one argument (the kernel reads these arguments as ``int``).

    Args:
        call: The syscall's name (a key of :data:`SYSCALLS`).
        arg: Which argument (0-based).
        values: The values the rule lists.
        listed: What a listed value gets (a ``SECCOMP_RET_*`` action).
        other: What any other value gets.
    """

    call: str
    arg: int
    values: tuple[int, ...]
    listed: int
    other: int


#: The calls decided by an argument (issue 38): lock commands refused, only namespaced socket families and the
#: default personality allowed.
ARG_RULES = (
    ArgRule("fcntl", 1, LOCK_COMMANDS, listed=RET_EPERM, other=SECCOMP_RET_ALLOW),
    ArgRule("socket", 0, SOCKET_FAMILIES, listed=SECCOMP_RET_ALLOW, other=RET_EAFNOSUPPORT),
    ArgRule("personality", 0, PERSONALITIES, listed=SECCOMP_RET_ALLOW, other=RET_EPERM),
)

#: ``futex`` operations (``op & 0x7f``) answered without the kernel when shared (no ``FUTEX_PRIVATE_FLAG``, 128):
#: waits (``FUTEX_WAIT`` 0, ``FUTEX_WAIT_BITSET`` 9) return at once; wakes and requeues (``FUTEX_WAKE`` 1,
#: ``FUTEX_REQUEUE`` 3, ``FUTEX_CMP_REQUEUE`` 4, ``FUTEX_WAKE_BITSET`` 10) wake nobody; any other gets ``ENOSYS``.
FUTEX_PRIVATE_FLAG = 128
FUTEX_WAITS = (0, 9)
FUTEX_WAKES = (1, 3, 4, 10)
RET_FUTEX_UNTIMED = SECCOMP_RET_ERRNO | errno.EAGAIN  # as if the word had changed: the caller looks again
RET_FUTEX_TIMED = SECCOMP_RET_ERRNO | errno.ETIMEDOUT  # a wait with a timeout: timed out
RET_FUTEX_OTHER = SECCOMP_RET_ERRNO | errno.ENOSYS

#: Syscall numbers of the denied calls (x86_64: ``asm/unistd_64.h``; aarch64: ``asm-generic/unistd.h``).
SYSCALLS: dict[str, dict[str, int]] = {
    "x86_64": {
        "add_key": 248,
        "keyctl": 250,
        "request_key": 249,
        "flock": 73,
        "inotify_init": 253,
        "inotify_init1": 294,
        "fcntl": 72,
        "socket": 41,
        "personality": 135,
        "io_uring_setup": 425,
        "io_uring_enter": 426,
        "io_uring_register": 427,
        "bpf": 321,
        "perf_event_open": 298,
        "userfaultfd": 323,
        "ptrace": 101,
        "process_vm_readv": 310,
        "process_vm_writev": 311,
        "kcmp": 312,
        "pidfd_getfd": 438,
        "unshare": 272,
        "setns": 308,
        "mount": 165,
        "umount2": 166,
        "pivot_root": 155,
        "open_tree": 428,
        "move_mount": 429,
        "fsopen": 430,
        "fsconfig": 431,
        "fsmount": 432,
        "fspick": 433,
        "mount_setattr": 442,
        "open_by_handle_at": 304,
        "name_to_handle_at": 303,
        "kexec_load": 246,
        "kexec_file_load": 320,
        "init_module": 175,
        "finit_module": 313,
        "delete_module": 176,
        "swapon": 167,
        "swapoff": 168,
        "reboot": 169,
        "acct": 163,
        "quotactl": 179,
        "syslog": 103,
        "fanotify_init": 300,
        "iopl": 172,
        "ioperm": 173,
        "futex": 202,
        "futex_waitv": 449,
        "futex_wake": 454,
        "futex_wait": 455,
        "futex_requeue": 456,
    },
    "aarch64": {
        "add_key": 217,
        "keyctl": 219,
        "request_key": 218,
        "flock": 32,
        "inotify_init1": 26,  # no inotify_init on aarch64
        "fcntl": 25,
        "socket": 198,
        "personality": 92,
        "io_uring_setup": 425,
        "io_uring_enter": 426,
        "io_uring_register": 427,
        "bpf": 280,
        "perf_event_open": 241,
        "userfaultfd": 282,
        "ptrace": 117,
        "process_vm_readv": 270,
        "process_vm_writev": 271,
        "kcmp": 272,
        "pidfd_getfd": 438,
        "unshare": 97,
        "setns": 268,
        "mount": 40,
        "umount2": 39,
        "pivot_root": 41,
        "open_tree": 428,
        "move_mount": 429,
        "fsopen": 430,
        "fsconfig": 431,
        "fsmount": 432,
        "fspick": 433,
        "mount_setattr": 442,
        "open_by_handle_at": 265,
        "name_to_handle_at": 264,
        "kexec_load": 104,
        "kexec_file_load": 294,
        "init_module": 105,
        "finit_module": 273,
        "delete_module": 106,
        "swapon": 224,
        "swapoff": 225,
        "reboot": 142,
        "acct": 89,
        "quotactl": 60,
        "syslog": 116,
        "fanotify_init": 262,  # no iopl / ioperm on aarch64
        "futex": 98,
        "futex_waitv": 449,
        "futex_wake": 454,
        "futex_wait": 455,
        "futex_requeue": 456,
    },
}
#: ``seccomp_data.arch`` of each known machine (``AUDIT_ARCH_*``).
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_ALIASES = {"amd64": "x86_64", "arm64": "aarch64"}
X32_SYSCALL_BIT = 0x40000000  #: x86_64: a syscall number with this bit set uses the x32 ABI

# classic BPF (linux/filter.h, linux/bpf_common.h) and seccomp (linux/seccomp.h)
_LD_W_ABS = 0x00 | 0x00 | 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x05 | 0x10 | 0x00  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x05 | 0x30 | 0x00  # BPF_JMP | BPF_JGE | BPF_K
_RET_K = 0x06 | 0x00  # BPF_RET | BPF_K
_AND_K = 0x04 | 0x50 | 0x00  # BPF_ALU | BPF_AND | BPF_K
_OFFSET_NR, _OFFSET_ARCH = 0, 4  # struct seccomp_data {int nr; __u32 arch; __u64 ip; __u64 args[6];}
_OFFSET_ARGS = 16  # args[i]'s low 32 bits at 16 + 8 * i (x86_64 and aarch64 are little-endian)
_INSTRUCTION = struct.Struct("=HBBI")  # struct sock_filter {__u16 code; __u8 jt; __u8 jf; __u32 k;}


def machine_name(machine: str | None = None) -> str:
    """The table key of ``machine`` (default: this one, ``platform.machine()``), aliases resolved."""
    name = (machine or platform.machine()).lower()
    return _ALIASES.get(name, name)


def seccomp_problem(machine: str | None = None) -> str | None:
    """Why no filter can be built for ``machine`` (default: this one), or ``None`` when one can.

    Args:
        machine: A ``platform.machine()`` value.

    Returns:
        ``None``, or a sentence naming the machine, the known ones and the fix.
    """
    name = machine_name(machine)
    if name in SYSCALLS:
        return None
    return (
        f"the PythonInterpreter sandbox has no seccomp syscall table for this machine ({name!r}; known: "
        f"{', '.join(SYSCALLS)}), and it does not run without its filter: add the machine's numbers of "
        f"DENIED to SYSCALLS and its AUDIT_ARCH in {__name__}, or, for trusted code only, use "
        "PythonConfig(isolation='best-effort') / SIM_WEB_PYTHON_SANDBOX=best-effort"
    )


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    if not (0 <= jt < 256 and 0 <= jf < 256):
        raise ValueError(
            f"a BPF jump offset must fit in a byte (0..255), got jt={jt} jf={jf}; "
            "the denied list is too long for a linear filter"
        )
    return _INSTRUCTION.pack(code, jt, jf, k)


@cache
def filter_program(machine: str | None = None) -> bytes:
    """The compiled filter: an array of ``struct sock_filter``, as ``bwrap --seccomp`` reads it.

    Layout: load ``arch``, anything but this machine's ABI gets ``EPERM``; load ``nr``, (x86_64) an x32
    number gets ``EPERM``; one ``JEQ`` per denied number jumping to the final ``EPERM``; then one block per
    :data:`ARG_RULES` entry (skipped unless ``nr`` matches: load the argument, one ``JEQ`` per listed value,
    the decision for other values, the decision for listed ones); else allow.

    Args:
        machine: A ``platform.machine()`` value (default: this machine).

    Returns:
        The program's bytes (8 per instruction, native byte order).

    Raises:
        ValueError: For a machine without a syscall table (see :func:`seccomp_problem`).
    """
    problem = seccomp_problem(machine)
    if problem is not None:
        raise ValueError(problem)
    name = machine_name(machine)
    numbers = sorted({SYSCALLS[name][call] for call in DENIED if call in SYSCALLS[name]})
    head = [
        _op(_LD_W_ABS, _OFFSET_ARCH),
        _op(_JEQ_K, AUDIT_ARCH[name], jt=1),
        _op(_RET_K, RET_EPERM),
        _op(_LD_W_ABS, _OFFSET_NR),
    ]
    checks = [X32_SYSCALL_BIT] if name == "x86_64" else []
    blocks = [_rule_block(SYSCALLS[name][rule.call], rule) for rule in ARG_RULES]
    blocks.append(_futex_block(SYSCALLS[name]["futex"]))
    tail = sum(len(b) for b in blocks) + 1  # the blocks and the ALLOW, between the checks and the final EPERM
    body = []
    for index, number in enumerate(checks + numbers):
        to_deny = len(checks) + len(numbers) - index - 1 + tail  # past the remaining checks, the blocks, the ALLOW
        body.append(_op(_JGE_K if index < len(checks) else _JEQ_K, number, jt=to_deny))
    rules = [op for block in blocks for op in block]
    return b"".join([*head, *body, *rules, _op(_RET_K, SECCOMP_RET_ALLOW), _op(_RET_K, RET_EPERM)])


def _rule_block(number: int, rule: ArgRule) -> list[bytes]:
    """The instructions of one :class:`ArgRule` for the call ``number`` (the accumulator holds ``nr``)."""
    n = len(rule.values)
    block = [_op(_JEQ_K, number, jf=n + 3), _op(_LD_W_ABS, _OFFSET_ARGS + 8 * rule.arg)]
    block += [_op(_JEQ_K, value, jt=n - i) for i, value in enumerate(rule.values)]
    return [*block, _op(_RET_K, rule.other), _op(_RET_K, rule.listed)]


def _futex_block(number: int) -> list[bytes]:
    """The instructions deciding ``futex`` (the call ``number``; the accumulator holds ``nr``).

    Private operations reach the kernel; shared ones are answered here (see the module's docstring): a wait by
    whether its timeout (argument 3) is ``NULL``, a wake or requeue with 0, anything else with ``ENOSYS``.
    """
    waits, wakes = len(FUTEX_WAITS), len(FUTEX_WAKES)
    decide = [_op(_LD_W_ABS, _OFFSET_ARGS + 8), _op(_AND_K, 0x7F)]  # the command, without the clock flag
    # after the JEQs: ENOSYS, ZERO (wakes), then the wait block: its timeout's two halves, EAGAIN, ETIMEDOUT
    for i in range(waits):
        decide.append(_op(_JEQ_K, FUTEX_WAITS[i], jt=waits - i - 1 + wakes + 2))
    for i in range(wakes):
        decide.append(_op(_JEQ_K, FUTEX_WAKES[i], jt=wakes - i))
    wait = [
        _op(_LD_W_ABS, _OFFSET_ARGS + 24),
        _op(_JEQ_K, 0, jf=3),
        _op(_LD_W_ABS, _OFFSET_ARGS + 28),
        _op(_JEQ_K, 0, jf=1),
        _op(_RET_K, RET_FUTEX_UNTIMED),
        _op(_RET_K, RET_FUTEX_TIMED),
    ]
    tail = [*decide, _op(_RET_K, RET_FUTEX_OTHER), _op(_RET_K, RET_ZERO), *wait]
    head = [
        _op(_LD_W_ABS, _OFFSET_ARGS + 8),
        _op(_AND_K, FUTEX_PRIVATE_FLAG),
        _op(_JEQ_K, FUTEX_PRIVATE_FLAG, jf=1),
        _op(_RET_K, SECCOMP_RET_ALLOW),
    ]
    body = [*head, *tail]
    return [_op(_JEQ_K, number, jf=len(body)), *body]


@contextlib.contextmanager
def program_fd(machine: str | None = None) -> Iterator[int]:
    """A readable descriptor holding :func:`filter_program`, for ``bwrap --seccomp FD`` and ``pass_fds``.

    An anonymous memory file (``memfd``), one per call: bubblewrap reads it from the current offset,
    so concurrent calls must not share one.

    Args:
        machine: As for :func:`filter_program`.

    Yields:
        The descriptor (close-on-exec here; ``pass_fds`` makes the child inherit it); closed afterwards.
    """
    program = filter_program(machine)
    fd = os.memfd_create("sim-web-seccomp", os.MFD_CLOEXEC)
    try:
        os.write(fd, program)
        os.lseek(fd, 0, os.SEEK_SET)
        yield fd
    finally:
        os.close(fd)
