"""A venv of its own for a released client whose pins cannot share the project's venv, made once and reused.

A stamp file in the venv records what it was made with (pins and anything else its maker names), so a changed pin
makes it again and an unchanged one costs nothing.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path


def stamped_venv(venv: Path, base: str, want: str, install: Callable[[Path, list[str]], None]) -> Path:
    """The interpreter of ``venv``, made first with ``base`` (``venv --clear``, then ``install(python, pip)``) when
    it is missing or its stamp is not ``want``.

    Args:
        venv: The venv's folder.
        base: The interpreter that makes it.
        want: What the stamp must say (the pins, ...).
        install: Called with the venv's interpreter and its quiet ``pip install`` command line.
    """
    python, stamp = venv / "bin" / "python", venv / ".sim-web-installed"
    if stamp.is_file() and stamp.read_text() == want and python.exists():
        return python
    subprocess.run([base, "-m", "venv", "--clear", str(venv)], check=True)
    install(python, [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
    stamp.write_text(want)
    return python
