"""StoreSource reads a page the same way whether the store was preloaded or is read lazily, page by page."""

from __future__ import annotations

from training.synth.graph.store_source import StoreSource
from training.synth.verify.uniqueness import Verifier
from wiki_index.store.store import Store


def test_lazy_and_preloaded_sources_agree(sample_index):
    store = Store(sample_index / "store.duckdb")
    try:
        full, lazy = StoreSource(store), StoreSource(store, preload=False)
        assert full.preloaded and not lazy.preloaded and full.n_pages == lazy.n_pages == store.page_count()
        assert lazy.page_ids() == full.page_ids()
        ids = full.page_ids()[::211]
        assert sum(1 for pid in ids if full.out_ids(pid)) > 10
        for pid in ids:
            assert lazy.row(pid) == full.row(pid)
            assert lazy.out_ids(pid) == full.out_ids(pid) and lazy.in_ids(pid) == full.in_ids(pid)
            assert lazy.categories(pid) == full.categories(pid) and lazy.passages(pid) == full.passages(pid)
            assert lazy.aliases(pid) == full.aliases(pid) and lazy.resolve(full.title(pid)) == pid
            assert set(lazy._box[pid]) == set(full._box[pid])  # one value per key either way
        assert lazy.row(-1) is None and lazy.out_ids(-1) == []
        # the verifier's pools: the lazy source asks the store, the preloaded one scans its rows
        v_full, v_lazy = Verifier(full), Verifier(lazy)
        pid = next(pid for pid in ids if full.categories(pid) and len(full.row(pid).description) > 15)
        cat = full.categories(pid)[0]
        assert pid in v_lazy._category_pool(cat.upper()) and v_lazy._category_pool(cat) == v_full._category_pool(cat)
        phrase = full.row(pid).description
        assert pid in v_lazy._phrase_pool(phrase) and pid in v_full._phrase_pool(phrase)
    finally:
        store.close()
