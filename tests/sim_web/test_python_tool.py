"""The sandboxed PythonInterpreter tool: Tongyi output format and containment.

Every containment test runs the real sandbox on real code. The ones that check that nothing is
left behind run the call in a child subreaper (``sandbox_probe.py``), so the check covers exactly
this test's own process tree, whatever else runs on the machine.
"""

from __future__ import annotations

import os
import socket
import stat
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from sandbox_probe import BARE, run_contained

from sim_web.tools.python._cgroup import cgroup_roots
from sim_web.tools.python.sandbox import (
    ERROR_PREFIX,
    NO_OUTPUT_TEXT,
    TIMEOUT_TEXT,
    PythonConfig,
    run_python,
    sandbox_problem,
)

pytestmark = pytest.mark.skipif(sandbox_problem() is not None, reason=f"no sandbox here: {sandbox_problem()}")
KERNEL_PIDS_CAP = cgroup_roots().pids is not None


def _assert_still_works() -> None:
    assert run_python("print(6 * 7)") == "stdout:\n42\n"


def test_print_and_math_match_tongyi_format():
    assert run_python("print('hello')") == "stdout:\nhello\n"
    assert run_python("import math; print(math.factorial(20))") == "stdout:\n2432902008176640000\n"


def test_stdout_stderr_and_traceback():
    out = run_python("import sys\nprint('before')\nprint('warn', file=sys.stderr)\n1/0")
    assert out.startswith("stdout:\nbefore\n\nstderr:\nwarn\nTraceback (most recent call last):\n")
    assert '  File "main.py", line 4, in <module>\n' in out
    assert out.endswith("ZeroDivisionError: division by zero\n")
    assert "_runner" not in out  # our frames are not shown
    syntax = run_python("def f(:\n    pass")
    assert syntax.startswith('stderr:\n  File "main.py", line 1\n') and "SyntaxError" in syntax
    assert run_python("import sys; sys.exit('bye')") == "stderr:\nbye\n"


def test_no_output_and_empty_code():
    assert run_python("x = 1") == NO_OUTPUT_TEXT == "Finished execution."
    assert run_python("   \n") == ERROR_PREFIX + "Empty code."


def test_infinite_loop_times_out():
    out = run_contained("print('start', flush=False)\nwhile True: pass", timeout_s=1.5)
    assert out == "stdout:\nstart\n\n" + TIMEOUT_TEXT  # output printed before the kill is kept
    _assert_still_works()


def test_cpu_limit_reads_as_timeout():
    out = run_contained("while True: pass", cpu_s=1, timeout_s=60)
    assert out == TIMEOUT_TEXT
    _assert_still_works()


@pytest.mark.parametrize("code", ["x = bytearray(10**11)", "x = []\nwhile True: x.append([1] * 100)"])
def test_memory_bomb_is_a_memory_error(code):
    out = run_python(code, PythonConfig(memory_mb=256, timeout_s=60))  # the memory limit ends it (60 s: under load)
    assert out.startswith("stderr:\nTraceback (most recent call last):\n")
    assert out.endswith("MemoryError\n")
    _assert_still_works()


@pytest.mark.parametrize("layers", [{}, BARE], ids=["bwrap", "process-group-only"])
def test_fork_bomb_is_capped_and_nothing_survives(layers):
    out = run_contained("import os\nwhile True: os.fork()", max_processes=8, timeout_s=5, **layers)
    assert "BlockingIOError" in out and "at most 8 child processes" in out
    _assert_still_works()


def test_kernel_layers_cap_and_kill_what_the_guards_miss():
    # ctypes bypasses the Python-level counter and setsid guard: only the kernel layers hold.
    code = (
        "import ctypes, time\nlibc = ctypes.CDLL(None)\nn = 0\n"
        "while n < 1000:\n    pid = libc.fork()\n    if pid == 0:\n"
        "        libc.setsid(); time.sleep(60)\n    if pid < 0:\n        break\n    n += 1\n"
        "print('forked', n)"
    )
    out = run_contained(code, max_processes=8, timeout_s=5)  # the sleeping escapees are gone too
    if KERNEL_PIDS_CAP:
        assert out == "stdout:\nforked 8\n"
    assert out.startswith("stdout:\nforked ")


@pytest.mark.parametrize("layers", [{}, BARE], ids=["bwrap", "guard-only"])
def test_network_is_blocked(layers):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(0.3)
        port = server.getsockname()[1]
        code = f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)"
        out = run_python(code, PythonConfig(**layers))
        assert "PermissionError" in out and "network access is disabled" in out
        with pytest.raises(TimeoutError):
            server.accept()
        allowed = run_python(code + "\nprint('connected')", PythonConfig(allow_network=True))
        assert allowed == "stdout:\nconnected\n"  # the same code does reach the listener
        server.accept()[0].close()
    _assert_still_works()


@pytest.mark.parametrize("layers", [{}, BARE], ids=["bwrap", "guard-only"])
def test_writing_outside_the_directory_is_blocked(layers):
    # bwrap's /tmp is private and writable, so aim at a read-only tree there; the guard answers first
    target = f"/tmp/evil_{uuid.uuid4().hex}" if layers else f"/usr/evil_{uuid.uuid4().hex}"
    for code in (
        f"open({target!r}, 'w').write('x')",
        f"import pathlib; pathlib.Path({target!r}).write_text('x')",
        f"import os; os.close(os.open({target!r}, os.O_CREAT | os.O_WRONLY))",
    ):
        out = run_python(code, PythonConfig(**layers))
        assert "PermissionError" in out and "writing outside the working directory" in out
        assert not os.path.exists(target)
    _assert_still_works()


@pytest.mark.parametrize("layers", [{}, BARE], ids=["bwrap", "best-effort"])
def test_working_directory_is_private_writable_and_deleted(layers):
    code = (
        "import os, tempfile\nprint(os.path.exists('notes.txt'))\nopen('notes.txt', 'w').write('kept')\n"
        "with tempfile.NamedTemporaryFile(dir=None) as f: pass\n"
        "os.mkdir('locked'); os.chmod('locked', 0)\n"
        "print(os.getcwd()); print(open('notes.txt').read()); print(os.environ['HOME'])"
    )
    out = run_python(code, PythonConfig(**layers))
    existed, workdir, content, home = out.removeprefix("stdout:\n").splitlines()
    assert existed == "False" and content == "kept" and home == workdir
    if layers:  # best effort: a host directory, deleted even with an unreadable directory inside
        assert not os.path.exists(workdir)
    else:  # bwrap: the same private tmpfs path in every call, and the next call starts empty
        assert workdir == "/sandbox" and run_python(code).startswith("stdout:\nFalse\n/sandbox\n")


def test_environment_has_no_secrets_and_hashing_is_reproducible(monkeypatch):
    monkeypatch.setenv("SIMWEB_FAKE_API_KEY", "sk-should-not-leak")
    out = run_python("import os; print(sorted(os.environ))")
    assert "SIMWEB_FAKE_API_KEY" not in out and "sk-should" not in out
    code = "print({'alpha', 'beta', 'gamma', 'delta', 'epsilon'})"
    assert run_python(code) == run_python(code)
    seeded = [run_python(code, PythonConfig(hash_seed=seed)) for seed in (1, 2)]
    assert seeded[0] != seeded[1]  # the order really depends on the seed we pass


def test_huge_output_is_truncated():
    out = run_python("print('x' * 10**8)", PythonConfig(max_output_chars=1000))
    head = "stdout:\n" + "x" * 1000 + "\n...[output truncated: showing the first 1000 of more than"
    assert out.startswith(head)
    assert "the program was stopped" in out and len(out) < 1200
    moderate = run_python("print('y' * 1500)", PythonConfig(max_output_chars=1000))
    assert moderate.endswith("[output truncated: showing the first 1000 of 1501 characters]")
    _assert_still_works()


def test_stderr_keeps_room_when_stdout_floods():
    code = "import sys\nprint('o' * 5000)\nprint('E' * 300, file=sys.stderr)"
    out = run_python(code, PythonConfig(max_output_chars=1000))
    # stderr is 301 characters with its newline; stdout gets the other 699 of the 1000
    assert out == (
        "stdout:\n" + "o" * 699 + "\n...[output truncated: showing the first 699 of "
        "5001 characters]\nstderr:\n" + "E" * 300 + "\n"
    )


def test_unicode_round_trips():
    assert run_python("print('héllo 世界 🌍')") == "stdout:\nhéllo 世界 🌍\n"
    assert run_python("print('\\ud800')") == "stdout:\n\\ud800\n"  # lone surrogate, escaped


def test_crash_signal_is_reported():
    out = run_python("import ctypes; ctypes.string_at(0)")
    assert out == ERROR_PREFIX + "the program was terminated by signal SIGSEGV."
    _assert_still_works()


def test_concurrent_calls_are_independent():
    codes = [f"print({i} ** 2)" for i in range(6)]
    with ThreadPoolExecutor(3) as pool:
        outs = list(pool.map(run_python, codes))
    assert outs == [f"stdout:\n{i**2}\n" for i in range(6)]


def test_sandbox_failure_becomes_error_text(tmp_path):
    not_python = tmp_path / "not-python"
    not_python.write_bytes(b"\x00\x01 not an executable format")
    not_python.chmod(not_python.stat().st_mode | stat.S_IXUSR)
    out = run_python("print(1)", PythonConfig(python=str(not_python), **BARE))
    assert out.startswith(ERROR_PREFIX) and "Exec format error" in out
