"""What the machine can compute fast: native bfloat16 on this CPU.

A CPU with ``avx512_bf16`` or ``amx_bf16`` runs bfloat16 matrix products natively, faster than float32; elsewhere
torch emulates them, slower than float32. The dense encoder's ``auto`` dtype, ``sim-web learn``'s ``auto`` precision
(which asks torch about a GPU first) and the trainers' bf16 warnings ask here.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

#: /proc/cpuinfo flags of native bfloat16 arithmetic.
BF16_FLAGS = ("avx512_bf16", "amx_bf16")


def _cpuinfo() -> str:
    """The text of ``/proc/cpuinfo`` (``""`` where it cannot be read, e.g. off Linux)."""
    try:
        return Path("/proc/cpuinfo").read_text(encoding="ascii", errors="ignore")
    except OSError:
        return ""


@cache
def cpu_has_native_bf16() -> bool:
    """Whether ``/proc/cpuinfo`` lists a native bfloat16 flag (False where it cannot be read, e.g. off Linux)."""
    flags = set(_cpuinfo().split())
    return any(f in flags for f in BF16_FLAGS)


def cpu_model_and_flags(wanted: tuple[str, ...]) -> tuple[str, list[str]]:
    """The CPU's model name and which of the ``wanted`` flags it has, from ``/proc/cpuinfo`` (off Linux: the model
    ``platform`` gives, and no flags)."""
    import platform

    fields = {k.strip(): v.strip() for k, v in (line.split(":", 1) for line in _cpuinfo().splitlines() if ":" in line)}
    flags = set(fields.get("flags", "").split())
    return fields.get("model name") or platform.processor() or platform.machine(), [f for f in wanted if f in flags]


def emulated_bf16_warning(bf16: bool, cuda: bool, fix: str) -> str | None:
    """The warning to log when bfloat16 was asked for on a CPU that would emulate it, else ``None``.

    Args:
        bf16: Whether the run asked for bfloat16.
        cuda: Whether it runs on a CUDA GPU (bf16 is native there).
        fix: The setting that turns bf16 off, named in the warning.
    """
    if not bf16 or cuda or cpu_has_native_bf16():
        return None
    return (
        f"bf16 on this CPU is emulated (no {' or '.join(BF16_FLAGS)} in /proc/cpuinfo) and slower than float32; "
        f"fix: {fix}"
    )
