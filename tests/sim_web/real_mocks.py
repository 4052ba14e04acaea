"""Fixtures over the local Serper / Jina stand-ins (the servers live in :mod:`sim_web.backends.mocks`).

Import them into a test module: ``from tests.sim_web.real_mocks import sim_backend, serper, jina``.
The mock classes are re-exported here, so ``from tests.sim_web.real_mocks import Fault, MockSerper`` still works.
"""

from __future__ import annotations

import pytest

from sim_web.backends.mocks import ERROR_MESSAGES, Fault, MockJina, MockSerper, MockServer

__all__ = [
    "ERROR_MESSAGES",
    "KEY",
    "Fault",
    "MockJina",
    "MockSerper",
    "MockServer",
    "jina",
    "real_keys",
    "serper",
    "sim_backend",
]

KEY = "test-key"


@pytest.fixture(scope="module")
def sim_backend(sample_index):
    """The sim backend over the session's sample index (the mocks' content and the fallback)."""
    from sim_web.backends.sim import SimBackend
    from wiki_index.search.index import WikiIndex

    backend = SimBackend(WikiIndex.from_dir(sample_index))
    backend.search("warm up the searcher", 10)  # a cold JVM takes longer than the short client timeouts of the tests
    return backend


@pytest.fixture()
def serper(sim_backend):
    """A running :class:`MockSerper` accepting ``KEY``."""
    server = MockSerper(sim_backend, KEY)
    yield server
    server.close()


@pytest.fixture()
def jina(sim_backend):
    """A running :class:`MockJina` accepting ``KEY``."""
    server = MockJina(sim_backend, KEY)
    yield server
    server.close()


@pytest.fixture()
def real_keys(monkeypatch):
    """The Tongyi key variables set to ``KEY``; the summariser variables and the endpoint overrides unset."""
    monkeypatch.setenv("SERPER_KEY_ID", KEY)
    monkeypatch.setenv("JINA_API_KEYS", KEY)
    for name in ("JINA_API_KEY", "API_KEY", "API_BASE", "SUMMARY_MODEL_NAME", "SERPER_BASE_URL", "JINA_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
