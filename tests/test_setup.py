"""`make install` / `.ci/run` set up the system side (scripts/setup.sh), and sandbox tests skip where it cannot run.

The script is run against a PATH of fakes (``id``, ``apt-get``, ``bwrap``) in a temp folder, so no case touches
the machine's packages: a machine with bubblewrap, one without it as root, and one without it and without root.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "setup.sh"
FAKE_APT = """#!/bin/sh
echo "$*" >> "{calls}"
case "$*" in *install*bubblewrap*) printf '#!/bin/sh\\nexit 0\\n' > "{bin}/bwrap"; "{chmod}" +x "{bin}/bwrap";; esac
"""


def _fake_bin(tmp_path: Path, uid: int, bwrap: bool) -> Path:
    """A PATH folder with a fake ``id -u``, a fake ``apt-get`` that logs its calls, and a fake ``bwrap`` if asked."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    scripts = {
        "id": f'#!/bin/sh\n[ "$1" = -u ] && echo {uid}\n',
        "apt-get": FAKE_APT.format(calls=tmp_path / "apt-calls", bin=bin_dir, chmod=shutil.which("chmod")),
    }
    if bwrap:
        scripts["bwrap"] = "#!/bin/sh\nexit 0\n"
    for name, text in scripts.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return bin_dir


def _setup(bin_dir: Path) -> subprocess.CompletedProcess:
    env = {"PATH": str(bin_dir), "HOME": os.environ.get("HOME", "/")}
    return subprocess.run([shutil.which("bash"), str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)


def test_make_install_and_ci_run_use_the_one_setup_script():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    install = makefile.split("$(STAMP): pyproject.toml", 1)[1].split("\n\n", 1)[0]
    assert "bash scripts/setup.sh $(BIN)/python" in install
    assert "bash scripts/setup.sh" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_setup_does_nothing_where_bubblewrap_works(tmp_path):
    out = _setup(_fake_bin(tmp_path, uid=1000, bwrap=True))
    assert out.returncode == 0 and out.stderr == "" and not (tmp_path / "apt-calls").exists()


def test_setup_installs_bubblewrap_with_apt_as_root_once(tmp_path):
    bin_dir = _fake_bin(tmp_path, uid=0, bwrap=False)
    out = _setup(bin_dir)
    assert out.returncode == 0 and "installing bubblewrap" in out.stderr and "WARNING" not in out.stderr
    assert (tmp_path / "apt-calls").read_text().splitlines() == ["update -qq", "install -y -qq bubblewrap"]
    assert _setup(bin_dir).returncode == 0 and len((tmp_path / "apt-calls").read_text().splitlines()) == 2  # idempotent


def test_setup_without_root_says_what_to_run_and_does_not_fail(tmp_path):
    out = _setup(_fake_bin(tmp_path, uid=1000, bwrap=False))
    assert out.returncode == 0 and not (tmp_path / "apt-calls").exists()
    assert "sudo apt-get install bubblewrap" in out.stderr and "tests are skipped" in out.stderr


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="this machine has no bubblewrap: the skip is seen elsewhere")
def test_sandbox_tests_skip_with_the_reason_where_bwrap_is_missing(tmp_path):
    test = "tests/sim_web/test_tools.py::test_default_python_runner_is_the_sandbox"
    env = {**os.environ, "PATH": str(tmp_path)}  # no bwrap on PATH (the interpreter is called by its full path)
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", test],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-2000:]
    assert "1 skipped" in out.stdout and "no sandbox here: the PythonInterpreter sandbox needs bubblewrap" in out.stdout
