"""PythonInterpreter configuration and refusal: these run on every machine, bubblewrap or not."""

from __future__ import annotations

import pytest
from sandbox_probe import BARE

from sim_web.tools.python.sandbox import ERROR_PREFIX, PythonConfig, run_python


def test_missing_bubblewrap_refuses_with_install_hint(monkeypatch):
    from sim_web.tools.python import _bwrap

    _bwrap.bwrap_problem.cache_clear()
    monkeypatch.setenv("PATH", "/nonexistent")  # no bwrap on PATH
    try:
        out = run_python("print('ran')")
        assert out.startswith(ERROR_PREFIX) and "apt-get install bubblewrap" in out and "ran" not in out
        assert "SIM_WEB_PYTHON_SANDBOX=best-effort" in out  # the documented opt-in is named
        trusted = run_python("print('ran')", PythonConfig(**BARE))
        assert trusted == "stdout:\nran\n"  # the explicit opt-in still runs trusted code
    finally:
        _bwrap.bwrap_problem.cache_clear()


def test_isolation_opt_in_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("SIM_WEB_PYTHON_SANDBOX", "best-effort")
    assert PythonConfig().isolation == "best-effort"
    monkeypatch.setenv("SIM_WEB_PYTHON_SANDBOX", "none")
    with pytest.raises(ValueError, match="SIM_WEB_PYTHON_SANDBOX"):
        PythonConfig()
    monkeypatch.delenv("SIM_WEB_PYTHON_SANDBOX")
    assert PythonConfig().isolation == "bwrap"


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"timeout_s": 0}, "timeout_s"),
        ({"cpu_s": 1.5}, "cpu_s"),
        ({"memory_mb": 10}, "64"),
        ({"max_processes": True}, "max_processes"),
        ({"python": "/nonexistent"}, "python"),
    ],
)
def test_config_validation_names_the_field(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        PythonConfig(**kwargs)
