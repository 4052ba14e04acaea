"""Fixtures shared by the training tests: one small template run on the sample index, reused; an autocast spy."""

from __future__ import annotations

import pytest

_SMALL = dict(max_nodes=500, n_seeds=12, oversample=4.0, test_fraction=0.5)


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


@pytest.fixture(scope="module")
def checker(src):
    """The clue check over the sample's pages (its drop counts are the module's own)."""
    from training.synth.verify.clue_check import ClueChecker

    return ClueChecker(src)


def sentence_with(src, title: str, words: str) -> str:
    """The first sentence of ``title``'s page that holds ``words``."""
    from wiki_index.parse.text import split_sentences

    return next(s for _, t in src.passages(src.resolve(title)) for s in split_sentences(t) if words in s)


def mention_edge(checker, page: str, other: str, relation: str, sentence: str) -> str:
    """The checker's reason for a relation ``page``'s ``sentence`` states about ``other`` (``""``: kept)."""
    data = {"relation": relation, "kind": "mention", "evidence": sentence, "page": page, "source_page": page}
    return checker.relation({**data, "target_page": other, "anchor": other})


def number_reason(src, checker, title: str, text: str) -> str:
    """The checker's reason for the number of ``title`` written ``text`` (``""``: kept)."""
    ent = src.entity(title)
    return checker.number(ent, next(n for n in ent.numbers if n.text == text))[0]


def date_reason(src, checker, title: str, text: str) -> str:
    """The checker's reason for the date of ``title`` written ``text`` (``""``: kept)."""
    ent = src.entity(title)
    return checker.date(ent, next(d for d in ent.dates if d.text == text))[0]


def ulm_draft():
    """``(draft, entities)``: the template question about Ulm on a three-page graph (Einstein was born there, general
    relativity was developed by him), with no name given: one relation of the answer's own."""
    import random

    import networkx as nx

    from training.synth.compose.templates import generate_question
    from training.synth.graph.kg import Entity

    g = nx.Graph()
    g.add_edge(
        "Ulm",
        "Albert Einstein",
        source_page="Albert Einstein",
        target_page="Ulm",
        kind="link",
        relation="{src} was born in {dst}",
    )
    g.add_edge(
        "Albert Einstein",
        "General relativity",
        source_page="General relativity",
        target_page="Albert Einstein",
        kind="mention",
        relation="{src} was developed by {dst}",
    )
    ents = {
        "Ulm": Entity("Ulm", description="City in Germany"),
        "Albert Einstein": Entity(
            "Albert Einstein", description="German-born theoretical physicist", categories=("People",)
        ),
        "General relativity": Entity("General relativity", description="Theory of gravitation"),
    }
    return generate_question(g, "Ulm", ents, random.Random(0), kg=g, named_prob=0.0), ents


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
