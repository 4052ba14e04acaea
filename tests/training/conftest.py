"""Fixtures shared by the training tests: one small template run on the sample index, reused; an autocast spy."""

from __future__ import annotations

import pytest

_SMALL = dict(max_nodes=500, n_seeds=12, oversample=3.0, test_fraction=0.5)


@pytest.fixture(scope="session")
def small_config():
    """A small, fast configuration: a 500-entity graph from 12 seeds, half the ids held out."""
    from training.synth.config import SynthConfig

    return SynthConfig(**_SMALL)


@pytest.fixture(scope="session")
def synth_run(sample_index, small_config):
    """``(records, report)`` of 12 template questions from the sample index (seed 0)."""
    from training.synth.pipeline import generate_with_report

    return generate_with_report(sample_index, n=12, seed=0, config=small_config)


@pytest.fixture(scope="session")
def src(sample_index):
    """The sample's page store as the synthesiser's knowledge source, built once per worker for the clue-check and
    audit-reading tests (a module that needs another defines its own ``src``)."""
    from training.synth.graph.store_source import StoreSource
    from wiki_index.search.index import WikiIndex

    return StoreSource(WikiIndex.from_dir(sample_index).store)


@pytest.fixture
def autocasts(monkeypatch):
    """The dtypes of the enabled ``torch.autocast`` contexts opened while the test runs (accelerate's and ours)."""
    torch = pytest.importorskip("torch")
    entered: list = []

    class Spy(torch.autocast):
        def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
            super().__init__(device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)
            if enabled:
                entered.append(self.fast_dtype)

    monkeypatch.setattr(torch, "autocast", Spy)
    return entered
