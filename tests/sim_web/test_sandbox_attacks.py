"""Attacks on the PythonInterpreter sandbox, each of which must fail (issue 16).

Every test runs real hostile code in the real bubblewrap sandbox and asserts the specific outcome:
the error the kernel answered and that nothing changed on the host. Tests that look for processes
left behind do so in a child subreaper (``sandbox_probe.py``), scoped to their own process tree.
Where a control shows the attack is real (the same code outside bubblewrap succeeds), it runs in the
best-effort mode for trusted code.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from sandbox_probe import BARE, probe

from sim_web.tools.python._cgroup import PREFIX as CGROUP_PREFIX
from sim_web.tools.python._cgroup import cgroup_roots
from sim_web.tools.python.sandbox import ERROR_PREFIX, PythonConfig, run_python, sandbox_problem

pytestmark = pytest.mark.skipif(sandbox_problem() is not None, reason=f"no sandbox here: {sandbox_problem()}")
TRUSTED = {"isolation": "best-effort", "use_namespaces": False}


def _lines(out: str) -> dict[str, str]:
    """``name: outcome`` lines printed by the attack code."""
    assert out.startswith("stdout:\n"), out
    return dict(line.split(": ", 1) for line in out.removeprefix("stdout:\n").splitlines() if ": " in line)


@pytest.fixture
def secret_task_file(tmp_path):
    """A task file of the test's own, named like the env's and with a unique answer, on the host."""
    answer = f"gold-{uuid.uuid4().hex}"
    path = tmp_path / "index" / "tasks" / "sailorfog_qa.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"id": "t1", "question": "What is the secret word?", "answer": answer}) + "\n")
    return path, answer


def test_searching_the_filesystem_for_task_files_finds_nothing(secret_task_file):
    path, answer = secret_task_file
    home = os.environ.get("SIM_WEB_HOME", "")
    code = f"""
import os
hits = []
for top, dirs, files in os.walk("/"):
    if top in ("/proc", "/sys"):
        dirs[:] = []
        continue
    hits += [os.path.join(top, f) for f in files if f in ("sailorfog_qa.jsonl", "store.duckdb")]
print("hits:", hits)
for name, target in (("own", {str(path)!r}), ("home", {home!r}), ("default", "/work/simhome/indexes/sample/tasks")):
    try:
        print(name + ":", os.listdir(target) if os.path.isdir(target) else open(target).read())
    except OSError as e:
        print(name + ":", type(e).__name__)
"""
    found = _lines(run_python(code, PythonConfig(timeout_s=300, cpu_s=300)))
    assert found["hits"] == "[]"
    assert found["own"] == "FileNotFoundError" and found["default"] == "FileNotFoundError"
    assert found["home"] in ("FileNotFoundError", "[]")  # SIM_WEB_HOME: absent, or an empty cover
    assert answer not in json.dumps(found)
    control = run_python(f"print('own:', open({str(path)!r}).read())", PythonConfig(**TRUSTED))
    assert answer in control  # the attack is real: outside bubblewrap the file is readable


def test_the_sample_corpus_in_site_packages_is_hidden(vital_leads, gensim_dump):
    leads, dump = vital_leads, gensim_dump.parent
    assert leads.is_file() and dump.is_dir()  # on the host they are there
    code = f"""
import os
for name, path in (("leads", {str(leads)!r}), ("dump", {str(dump)!r}), ("package", {str(leads.parent.parent)!r})):
    try:
        print(name + ":", sorted(os.listdir(path)) if os.path.isdir(path) else len(open(path).read()))
    except OSError as e:
        print(name + ":", type(e).__name__)
"""
    found = _lines(run_python(code))
    assert found["leads"] == "FileNotFoundError" and found["dump"] == "[]"  # an empty cover over the data
    assert "'data'" in found["package"]  # the package itself stays importable; only its data is covered
    base_site = (
        Path(os.path.realpath(sys.executable)).parents[1] / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    )
    base_site = base_site / "site-packages"
    allowed = [os.path.realpath(p) for p in __import__("site").getsitepackages()]
    if base_site.is_dir() and any(base_site.iterdir()) and str(base_site) not in allowed:
        out = run_python(f"import os; print(os.listdir({str(base_site)!r}))")
        assert out == "stdout:\n[]\n"  # the interpreter's own packages are not among the allowed ones


def test_another_process_environment_is_unreadable():
    secret = f"sk-{uuid.uuid4().hex}"
    victim = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"],
        stdin=subprocess.PIPE,
        env={**os.environ, "SIMWEB_ATTACK_API_KEY": secret},
    )  # the caller's kind of secret
    try:
        code = f"""
import os
for name, pid in (("victim", {victim.pid}), ("parent", {os.getpid()})):
    try:
        print(name + ":", open(f"/proc/{{pid}}/environ", "rb").read())
    except OSError as e:
        print(name + ":", type(e).__name__)
seen = []
for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
    try:
        seen.append(open(f"/proc/{{pid}}/environ", "rb").read())
    except OSError:
        pass
print("pids:", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
print("all:", b"".join(seen))
"""
        found = _lines(run_python(code))
        control = run_python(f"print(open('/proc/{victim.pid}/environ').read())", PythonConfig(**TRUSTED))
    finally:
        victim.communicate(b"")
    # the host's pids do not exist in the sandbox's /proc
    assert found["victim"] == "FileNotFoundError" and found["parent"] == "FileNotFoundError"
    assert secret not in found["all"] and "SIMWEB_ATTACK_API_KEY" not in found["all"]
    assert max(json.loads(found["pids"])) < 50  # only the sandbox's own few processes are visible
    assert secret in control  # the attack is real without bubblewrap


WRITE_ROUTES = {
    "open": "open(T, 'w').write('x')",
    "FileIO": "import _io; _io.FileIO(T, 'w').write(b'x')",
    "posix": "import posix; posix.close(posix.open(T, posix.O_CREAT | posix.O_WRONLY, 0o644))",
    "shell": (
        "import subprocess\nr = subprocess.run(['sh', '-c', 'echo x > \"$0\"', T], capture_output=True, text=True)\n"
        "assert r.returncode != 0, r\nraise OSError(r.stderr.strip())"
    ),
    "ctypes": (
        "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "fd = libc.open(T.encode(), os.O_CREAT | os.O_WRONLY, 0o644)\n"
        "assert fd < 0, fd\ne = ctypes.get_errno()\nraise OSError(e, os.strerror(e))"
    ),
}


@pytest.mark.parametrize("route", sorted(WRITE_ROUTES))
def test_writing_outside_the_work_dir_fails_by_every_route(route, tmp_path):
    site = [p for p in __import__("site").getsitepackages() if os.path.isdir(p)][0]
    targets = {  # invisible host paths, and read-only trees that are visible
        "host_tmp": str(tmp_path / "evil.txt"),
        "project": str(Path(__file__).resolve().parents[2] / f"evil_{uuid.uuid4().hex}.py"),
        "usr": f"/usr/evil_{uuid.uuid4().hex}",
        "site": os.path.join(site, f"evil_{uuid.uuid4().hex}.py"),
        "root": f"/evil_{uuid.uuid4().hex}",
    }
    body = WRITE_ROUTES[route].replace("\n", "\n    ")
    code = f"""
import os
for name, T in {targets!r}.items():
  try:
    {body}
    print(name + ": WROTE")
  except BaseException as e:
    print(name + ":", type(e).__name__, e)
"""
    found = _lines(run_python(code))
    assert set(found) == set(targets)
    for name, outcome in found.items():
        assert "WROTE" not in outcome
        # the kernel answers (the Python guard only covers open/os.open, with its own message)
        expected = [
            "No such file or directory",
            "Read-only file system",
            "Permission denied",
            "cannot create",
            "writing outside",
        ]
        assert any(e in outcome for e in expected), (name, outcome)
    for target in targets.values():
        assert not os.path.exists(target)
    assert "Read-only file system" in found["usr"] or "writing outside" in found["usr"]


def test_host_loopback_listener_is_unreachable_even_with_setns():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        code = f"""
import ctypes, os, socket, struct
libc = ctypes.CDLL(None, use_errno=True)
def raw_connect():  # around the Python-level guard: the C library directly
    fd = libc.socket(socket.AF_INET, socket.SOCK_STREAM, 0)
    addr = struct.pack("<HH4s8x", socket.AF_INET, socket.htons({port}), socket.inet_aton("127.0.0.1"))
    rc = libc.connect(fd, addr, len(addr))
    return "connected" if rc == 0 else os.strerror(ctypes.get_errno())
print("direct:", raw_connect())
for pid in ["{os.getpid()}", "1"]:
    try:
        fd = os.open(f"/proc/{{pid}}/ns/net", os.O_RDONLY)
    except OSError as e:
        print("setns " + pid + ":", type(e).__name__)
        continue
    rc = libc.setns(fd, 0x40000000)  # CLONE_NEWNET
    print("setns " + pid + ":", "joined" if rc == 0 else os.strerror(ctypes.get_errno()), raw_connect())
"""
        found = _lines(run_python(code))
        assert found["direct"] == "Connection refused"  # a private namespace: its own loopback, nobody listening
        assert found[f"setns {os.getpid()}"] == "FileNotFoundError"  # host processes are not in its /proc
        assert found["setns 1"].startswith("Operation not permitted")  # no CAP_SYS_ADMIN to switch namespaces
        assert "connected" not in json.dumps(found)
        server.setblocking(False)
        with pytest.raises(BlockingIOError):  # nothing ever completed a handshake with the listener
            server.accept()


MEMORY_HOG = """
import os, select, time
r, w = os.pipe()
kids = []
for i in range({n}):
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            data = bytearray(b"x") * ({mb} * 2**20)  # every page touched
        except MemoryError:
            os._exit(3)
        os.write(w, bytes([i]))
        select.select([], [], [])  # hold the memory until killed
    kids.append(pid)
os.close(w)
holders, ended = set(), set()

def reap():
    for i, pid in enumerate(kids):
        if i not in ended and os.waitpid(pid, os.WNOHANG)[0]:
            ended.add(i)

while len(holders | ended) < len(kids):
    if select.select([r], [], [], 0.05)[0]:
        holders.update(os.read(r, 64))
    reap()
time.sleep(1.0)  # a holder the OOM killer chose may still be exiting: let it be reaped
reap()
held = len(holders - ended)  # children holding their memory at the same time
print("held:", held)
for pid in kids:
    try:
        os.kill(pid, 9)
    except ProcessLookupError:
        pass
"""


def test_several_children_cannot_exceed_the_memory_budget():
    if cgroup_roots().memory is not None:  # one budget for the whole call: 4 x 200 MiB under 512 MiB
        out = run_python(MEMORY_HOG.format(n=4, mb=200), PythonConfig(memory_mb=512, timeout_s=60))
        if out.startswith("stdout:"):
            assert int(_lines(out)["held"]) <= 2  # at most two 200 MiB children fit at once
        else:  # the kernel's OOM killer chose the parent itself
            assert out == ERROR_PREFIX + (
                "MemoryError: the program used more than its memory budget of 512 MiB "
                "(all its processes together) and was killed."
            )
        assert run_python(MEMORY_HOG.format(n=2, mb=150), PythonConfig(memory_mb=512)) == "stdout:\nheld: 2\n"
    else:  # documented fallback: RLIMIT_AS caps each process, so no child gets past memory_mb
        out = run_python(MEMORY_HOG.format(n=4, mb=300), PythonConfig(memory_mb=256, timeout_s=60))
        assert out == "stdout:\nheld: 0\n"


def test_sandbox_dies_with_its_killed_caller_and_leaves_nothing(tmp_path):
    config = {"timeout_s": 120, "cpu_s": 120}
    env = {"TMPDIR": str(tmp_path)}
    report = probe({"mode": "kill-caller", "code": "while True: pass", "config": config, "env": env})
    assert report["caller_line"] == "started" and "finished" not in report["caller_rest"]
    assert report["leftover"] is False  # every process of the sandbox died with the caller
    assert report["reaped"] >= 2  # the caller and at least its orphaned bwrap were collected
    after = probe({"mode": "run", "code": "print(1)", "config": {}, "env": env})  # a later process sweeps stale cgroups
    assert after["out"] == "stdout:\n1\n" and after["leftover"] is False
    roots = {r for r in (cgroup_roots().pids, cgroup_roots().memory) if r}
    stale = [e for r in roots for e in os.listdir(r) if e.startswith(f"{CGROUP_PREFIX}{report['caller_pid']}-")]
    assert stale == [] and os.listdir(tmp_path) == []  # no cgroup, no directory left


@pytest.mark.parametrize("layers", [{}, BARE], ids=["bwrap", "best-effort"])
def test_calls_leave_no_directories_behind(layers, tmp_path):
    report = probe(
        {
            "mode": "run",
            "code": "open('x', 'w').write('y'); import os; os.mkdir('d'); os.chmod('d', 0)",
            "config": layers,
            "env": {"TMPDIR": str(tmp_path)},
        }
    )
    assert report["out"] == "Finished execution." and report["leftover"] is False
    assert os.listdir(tmp_path) == []


HACK = """
import json, os
question = {question!r}

def scan(path):
    try:
        for line in open(path, encoding="utf-8"):
            if question in line:
                return json.loads(line)["answer"]
    except (OSError, ValueError, KeyError):
        return None

found = scan({task_file!r}) or scan(os.path.expanduser("~/.cache/sim-web/indexes/sample/tasks/sailorfog_qa.jsonl"))
for top, dirs, files in os.walk("/"):  # the guess failed: search the whole filesystem
    if found or top in ("/proc", "/sys", "/usr"):
        dirs[:] = []
        continue
    for name in files:
        found = found or (name.endswith(".jsonl") and scan(os.path.join(top, name)))
print(found or "nothing")
"""


def _hack_episode(sample_index, task_file, question) -> tuple[str, float]:
    """One episode where the agent looks for the gold answer on disk and answers with what it printed."""
    from sim_web.env import EnvConfig, WebResearchEnv

    env = WebResearchEnv(
        EnvConfig(index_dir=str(sample_index), tasks=str(task_file), tools=("search", "visit", "PythonInterpreter"))
    )
    env.reset(seed=0)
    code = HACK.format(question=question, task_file=str(task_file))
    obs, *_ = env.step(
        '<tool_call>\n{"name": "PythonInterpreter", "arguments": {}}\n<code>\n' + code + "\n</code>\n</tool_call>"
    )
    printed = obs.removeprefix("<tool_response>\n").removesuffix("\n</tool_response>").removeprefix("stdout:\n").strip()
    _obs, reward, terminated, _truncated, info = env.step(f"<answer>{printed}</answer>")
    assert terminated and info["tool_calls"] == {"PythonInterpreter": 1}
    return printed, reward


def test_reward_hacking_through_the_python_tool_gets_nothing(sample_index, secret_task_file, monkeypatch):
    task_file, answer = secret_task_file
    printed, reward = _hack_episode(sample_index, task_file, "What is the secret word?")
    assert printed == "nothing" and reward == 0.0
    monkeypatch.setenv("SIM_WEB_PYTHON_SANDBOX", "best-effort")  # control: the trusted-code mode
    printed, reward = _hack_episode(sample_index, task_file, "What is the secret word?")
    assert printed == answer and reward == 1.0  # the same agent wins there: the attack is real
