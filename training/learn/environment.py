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
from typing import Any

from simweb_core.hardware import BF16_FLAGS, cpu_model_and_flags
from wiki_index.manifest import package_version

PACKAGES = ("torch", "transformers", "trl", "accelerate", "peft", "sim-web")
"""The installed distributions whose versions are recorded (None where one is not installed)."""

FLAGS = ("avx2", "avx512f", *BF16_FLAGS, "amx_tile")
"""CPU flags that change which kernels (and so which roundings) bf16 and float32 products use."""


def environment() -> dict[str, Any]:
    """The versions of :data:`PACKAGES`, the Python version, the CPU's model name and :data:`FLAGS`, and the cores.

    Returns:
        ``{"python", "packages", "cpu", "cpu_flags", "cores"}``, JSON-serialisable.
    """
    cpu, flags = cpu_model_and_flags(FLAGS)
    return {
        "python": platform.python_version(),
        "packages": {name: package_version(name) for name in PACKAGES},
        "cpu": cpu,
        "cpu_flags": flags,
        "cores": os.cpu_count(),
    }
