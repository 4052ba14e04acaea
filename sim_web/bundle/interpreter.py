"""The Python that runs pip for a bundle: one of the target's version (pip evaluates environment markers with the
Python that runs it), with a pip that reads metadata alone.

Split from :mod:`sim_web.bundle.wheels` (which resolves and downloads with it): finding that interpreter on this
machine and, when its pip is old, a venv of it with a current one.
"""

from __future__ import annotations

import glob
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from sim_web.bundle.wheels import BundleError, _tail, pip


def find_interpreter(version: str) -> str:
    """A working Python ``version`` (X.Y) with pip: this one, ``pythonX.Y`` on PATH, pyenv's, or the system's.

    Raises:
        BundleError: When none is found, naming where it looked and how to get one.
    """
    if version == f"{sys.version_info.major}.{sys.version_info.minor}":
        return sys.executable
    pyenv = sorted(glob.glob(str(Path.home() / f".pyenv/versions/{version}.*/bin/python")))
    candidates = [
        shutil.which(f"python{version}"),
        *pyenv,
        f"/usr/local/bin/python{version}",
        f"/usr/bin/python{version}",
    ]
    probe = "import sys, pip; print('%d.%d' % sys.version_info[:2])"
    for cand in filter(None, candidates):
        try:
            r = subprocess.run([cand, "-c", probe], capture_output=True, text=True, timeout=60, check=False)
        except OSError:
            continue
        if r.returncode == 0 and r.stdout.strip() == version:
            return cand
    raise BundleError(
        f"resolving for Python {version} needs a Python {version} with pip on this machine (pip reads "
        f"environment markers with the Python that runs it); found none (looked for python{version} on "
        f"PATH, ~/.pyenv/versions/{version}.*, /usr/bin): install one (pyenv install {version}, "
        f"`uv python install {version}`, apt) and try again"
    )


def resolver_python(version: str, cache: Path, progress: Callable[[str], None] = print) -> str:
    """A Python ``version`` whose pip reads metadata alone (pip >= 24.1; older ones fetch whole wheels, vLLM's and
    torch's included, to learn their dependencies): :func:`find_interpreter`'s, or a venv of it in ``cache`` with a
    current pip (made once)."""
    python = find_interpreter(version)
    if _pip_version(python) >= (24, 1):
        return python
    venv = cache / f"pip-python{version}"
    exe = venv / "bin" / "python"
    if not exe.is_file() or _pip_version(str(exe)) < (24, 1):
        progress(f"[bundle] the pip of {python} is old; setting up a current one in {venv} (once)")
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([python, "-m", "venv", str(venv)], check=True, capture_output=True)
        r = pip(str(exe), ["install", "--quiet", "--upgrade", "pip"])
        if r.returncode:
            raise BundleError(f"upgrading pip in {venv} failed:\n{_tail(r)}")
    return str(exe)


def _pip_version(python: str) -> tuple[int, ...]:
    r = subprocess.run(
        [python, "-c", "import pip; print(pip.__version__)"], capture_output=True, text=True, check=False
    )
    return tuple(int(x) for x in re.findall(r"\d+", r.stdout)[:2]) if r.returncode == 0 else (0,)
