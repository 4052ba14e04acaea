"""Fixtures shared by the test suite (``tests/``) and the doctests in the packages' docstrings."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def sample_index(tmp_path_factory) -> Path:
    """The bundled sample built BM25-only (store + Lucene), once per test session.

    It lives at ``<tmp>/indexes/sample``, so pointing ``SIM_WEB_HOME`` at ``<tmp>`` makes it the default index.
    """
    from wiki_index.build import BuildConfig, build_index

    return build_index("sample", tmp_path_factory.mktemp("home") / "indexes" / "sample", BuildConfig(dense=False))


@pytest.fixture(autouse=True)
def _doctests_use_the_sample_index(request, monkeypatch) -> None:
    """Docstring examples call ``gym.make("WebResearch-v0")`` with defaults: give them the session's sample index."""
    if isinstance(request.node, pytest.DoctestItem):
        home = request.getfixturevalue("sample_index").parents[1]
        monkeypatch.setenv("SIM_WEB_HOME", str(home))
