"""The made-once venv helper: a current stamp (or its name before the helper) is reused, any other is made again."""

from __future__ import annotations

import subprocess

import pytest

from tests.integrations.venvs import stamped_venv


def _never(python, pip):
    raise AssertionError("the venv was made again")


def test_a_current_stamp_or_its_legacy_name_is_reused_and_a_changed_one_is_not(tmp_path):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    (venv / ".sim-web-tasks-installed").write_text("pins")  # made by the helper's predecessor
    assert stamped_venv(venv, "/bin/false", "pins", _never, legacy_stamp=".sim-web-tasks-installed").exists()
    assert (venv / ".sim-web-installed").read_text() == "pins"
    assert stamped_venv(venv, "/bin/false", "pins", _never).exists()  # now current under its own name
    (venv / ".sim-web-installed").unlink()
    (venv / ".sim-web-tasks-installed").write_text("older pins")
    with pytest.raises(subprocess.CalledProcessError):  # made again: the (stand-in) interpreter is asked to
        stamped_venv(venv, "/bin/false", "pins", _never, legacy_stamp=".sim-web-tasks-installed")
