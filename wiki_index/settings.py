"""Environment variables, read in this one module.

``SIM_WEB_HOME``: where indexes and task sets live (default ``~/.cache/sim-web``).
"""

from __future__ import annotations

import os
from pathlib import Path

SAMPLE_NAME = "sample"


def sim_web_home() -> Path:
    """Return the data root: ``$SIM_WEB_HOME`` or ``~/.cache/sim-web``."""
    return Path(os.environ.get("SIM_WEB_HOME") or Path.home() / ".cache" / "sim-web").expanduser()


def default_index_dir(name: str = SAMPLE_NAME) -> Path:
    """Return the default directory of the index called ``name``."""
    return sim_web_home() / "indexes" / name


def env(name: str, default: str | None = None) -> str | None:
    """Read one environment variable (the only place the package reads them)."""
    return os.environ.get(name, default)
