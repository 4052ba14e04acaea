"""What a run's numbers depend on besides its settings: package versions, Python, the CPU and its cores.

``sim-web learn`` writes it with every sitting's settings (``invocations.jsonl``), so that two runs of one recipe
that score differently can be told apart by their machines, not only by their configs.

Example:
    >>> env = environment()
    >>> sorted(env)
    ['cores', 'cpu', 'cpu_flags', 'packages', 'python']
"""

from __future__ import annotations

import os
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

PACKAGES = ("torch", "transformers", "trl", "accelerate", "peft", "sim-web")
"""The installed distributions whose versions are recorded (None where one is not installed)."""

FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile")
"""CPU flags that change which kernels (and so which roundings) bf16 and float32 products use."""


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _cpuinfo() -> tuple[str, list[str]]:
    """The CPU's model name and the :data:`FLAGS` it has, from ``/proc/cpuinfo`` (Linux; elsewhere ``platform``)."""
    path = Path("/proc/cpuinfo")
    text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    flags = set(fields.get("flags", "").split())
    return fields.get("model name") or platform.processor() or platform.machine(), [f for f in FLAGS if f in flags]


def environment() -> dict[str, Any]:
    """The versions of :data:`PACKAGES`, the Python version, the CPU's model name and :data:`FLAGS`, and the cores.

    Returns:
        ``{"python", "packages", "cpu", "cpu_flags", "cores"}``, JSON-serialisable.
    """
    cpu, flags = _cpuinfo()
    return {
        "python": platform.python_version(),
        "packages": {name: _version(name) for name in PACKAGES},
        "cpu": cpu,
        "cpu_flags": flags,
        "cores": os.cpu_count(),
    }
