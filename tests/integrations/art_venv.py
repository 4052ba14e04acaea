"""The OpenPipe ART venv of the ART example's test: Python >= 3.12, made once (by ``make install``, else on first use).

openpipe-art 0.5.23 needs Python >= 3.12 (``type`` statements in ``art.trajectories``) and its declared dependencies
include a GPU training stack; what ``import art`` and its ``Trajectory`` / ``TrajectoryGroup`` types need is small.
So the venv (``.venv/art``; ``$SIM_WEB_ART_VENV`` names another) holds ART itself without its dependencies and the
packages its top-level import reads, pinned. The interpreter is the first Python >= 3.12 found: ``$SIM_WEB_PYTHON312``,
``python3.13`` / ``python3.12`` on ``PATH``, or pyenv's versions; without one the venv is not made and the test that
needs it skips with the reason.

    python -m tests.integrations.art_venv     # what ``make install`` runs
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests.integrations.venvs import stamped_venv

ROOT = Path(__file__).resolve().parents[2]
ART = "openpipe-art==0.5.23"
#: What ``import art`` reads at the top level (its other dependencies are for training), at versions that work.
IMPORT_DEPS = (
    "python-dotenv==1.2.4",
    "polars==2.1.0",
    "anthropic==2.15.0",
    "numpy==2.5.5",
    "pydantic==2.14.4",
    "openai==2.54.0",
    "httpx==0.28.1",
)


def python312() -> str | None:
    """A Python >= 3.12 interpreter of this machine that runs (a pyenv shim of an unselected version does not), or
    ``None``."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates = [os.environ.get("SIM_WEB_PYTHON312")]
    candidates += sorted(str(p) for p in pyenv.glob("3.1[2-9]*/bin/python")) if pyenv.is_dir() else []
    candidates += [shutil.which("python3.12"), shutil.which("python3.13")]
    check = "import sys; assert sys.version_info >= (3, 12)"
    for c in filter(None, candidates):
        if subprocess.run([c, "-c", check], capture_output=True).returncode == 0:
            return c
    return None


def ensure_venv() -> Path | None:
    """The ART venv's interpreter, made first when missing or its pins changed; ``None`` without a Python >= 3.12."""
    venv = Path(os.environ.get("SIM_WEB_ART_VENV") or ROOT / ".venv" / "art")
    base = python312()
    if base is None:
        return None

    def install(python: Path, pip: list[str]) -> None:
        subprocess.run([*pip, "--no-deps", ART], check=True)
        subprocess.run([*pip, *IMPORT_DEPS], check=True)

    return stamped_venv(venv, base, "\n".join((ART, *IMPORT_DEPS)), install)


if __name__ == "__main__":
    print(ensure_venv() or "no Python >= 3.12 here: the ART venv is not made (its test skips)")
