"""Native bfloat16 detection and the warning for emulated bf16."""

from pathlib import Path

import simweb_core.hardware as hw


def test_native_bf16_is_read_from_the_cpu_flags(monkeypatch):
    for flags, native in (("fpu avx2 avx512f", False), ("fpu avx512_bf16 avx2", True), ("amx_bf16 amx_tile", True)):
        hw.cpu_has_native_bf16.cache_clear()
        monkeypatch.setattr(Path, "read_text", lambda self, flags=flags, **kw: f"flags\t\t: {flags}\n")
        assert hw.cpu_has_native_bf16() is native
    hw.cpu_has_native_bf16.cache_clear()


def test_the_warning_names_the_fix_only_where_bf16_would_be_emulated(monkeypatch):
    monkeypatch.setattr(hw, "cpu_has_native_bf16", lambda: False)
    note = hw.emulated_bf16_warning(True, cuda=False, fix="--set trainer.bf16=false")
    assert note and "emulated" in note and note.endswith("fix: --set trainer.bf16=false")
    assert hw.emulated_bf16_warning(False, cuda=False, fix="x") is None
    assert hw.emulated_bf16_warning(True, cuda=True, fix="x") is None
    monkeypatch.setattr(hw, "cpu_has_native_bf16", lambda: True)
    assert hw.emulated_bf16_warning(True, cuda=False, fix="x") is None
