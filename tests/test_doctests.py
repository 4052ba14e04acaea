"""Every example in the packages' docstrings runs (Gymnasium's envs do this) against the session's sample index."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("simweb_core", "wiki_index", "sim_web", "agents", "training")


def _modules_with_examples() -> list[str]:
    names = []
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            if path.name != "__main__.py" and ">>> " in path.read_text(encoding="utf-8"):
                parts = path.relative_to(ROOT).with_suffix("").parts
                names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def test_there_are_examples_to_run() -> None:
    assert "sim_web.env.research_env" in _modules_with_examples()


@pytest.mark.parametrize("module", _modules_with_examples())
def test_docstring_examples_run(module: str, sample_index: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIM_WEB_HOME", str(sample_index.parents[1]))  # gym.make("WebResearch-v0") opens the sample
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.attempted > 0 and result.failed == 0, (
        f"{result.failed} of {result.attempted} examples of {module} failed"
    )
