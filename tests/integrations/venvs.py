"""A venv of its own for a released client whose pins cannot share the project's venv, made once and reused.

A stamp file in the venv records what it was made with (pins and anything else its maker names), so a changed pin
makes it again and an unchanged one costs nothing.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path


def stamped_venv(
    venv: Path, base: str, want: str, install: Callable[[Path, list[str]], None], legacy_stamp: str | None = None
) -> Path:
    """The interpreter of ``venv``, made first with ``base`` (``venv --clear``, then ``install(python, pip)``) when
    it is missing or its stamp is not ``want``.

    Args:
        venv: The venv's folder.
        base: The interpreter that makes it.
        want: What the stamp must say (the pins, ...).
        install: Called with the venv's interpreter and its quiet ``pip install`` command line.
        legacy_stamp: The stamp's file name before this helper (same content): a venv it marks is current, not made
            again (a cached ``.venv`` whose ``make install`` is not rerun kept making it again inside ``make test``).
    """
    python, stamp = venv / "bin" / "python", venv / ".sim-web-installed"
    old = venv / legacy_stamp if legacy_stamp else None
    if old is not None and not stamp.is_file() and old.is_file() and old.read_text() == want:
        stamp.write_text(want)
    if stamp.is_file() and stamp.read_text() == want and python.exists():
        return python
    subprocess.run([base, "-m", "venv", "--clear", str(venv)], check=True)
    install(python, [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
    stamp.write_text(want)
    return python
