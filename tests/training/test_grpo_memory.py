"""glibc's allocator settings a GRPO run applies (:func:`training.grpo.memory.return_large_frees`), checked in a fresh
interpreter each so that no other test's allocations, nor these settings, leak between tests."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Frees a 20 MiB mapped block (which raises glibc's default threshold past 8 MiB), then counts the mapped blocks an
# 8 MiB and a 1 MiB allocation add; prints whether the settings applied and the two counts.
PROBE = """
import ctypes, sys
from training.grpo.memory import return_large_frees

class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
applied = return_large_frees(int(sys.argv[1]))
libc.free(libc.malloc(20 << 20))

def mapped(mib):
    before = libc.mallinfo2().hblks
    block = libc.malloc(mib << 20)
    added = libc.mallinfo2().hblks - before
    libc.free(block)
    return added

print(applied, mapped(8), mapped(1))
"""


def _probe(threshold_mib: int, **env: str) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_ARENA_MAX")}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(threshold_mib)],
        cwd=ROOT,
        env={**clean, "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.split()


needs_glibc = pytest.mark.skipif(
    not hasattr(ctypes.CDLL(None), "mallinfo2"), reason="glibc >= 2.33 only (mallinfo2 counts mapped blocks)"
)


@needs_glibc
def test_large_frees_stay_their_own_mappings():
    assert _probe(0) == ["False", "0", "0"]  # glibc's default: after a 20 MiB free, 8 MiB comes from the heap
    assert _probe(4) == ["True", "1", "0"]  # at 4 MiB: the 8 MiB block is mapped (and unmapped on free), 1 MiB is not


@needs_glibc
def test_the_users_allocator_settings_win():
    assert _probe(4, MALLOC_ARENA_MAX="4") == ["False", "0", "0"]
    assert _probe(4, GLIBC_TUNABLES="glibc.malloc.trim_threshold=1000000")[0] == "False"
    assert _probe(4, GLIBC_TUNABLES="glibc.cpu.hwcaps=-AVX512F")[0] == "True"  # a tunable of something else


@pytest.mark.parametrize("mib", [-1, 33])
def test_a_threshold_glibc_would_refuse_is_an_error(mib):
    from simweb_core.errors import ConfigError
    from training.grpo.config import GRPORecipe

    with pytest.raises(ConfigError, match=f"heap_return_mib must be 0 .* to 32, got {mib}"):
        GRPORecipe(heap_return_mib=mib)
