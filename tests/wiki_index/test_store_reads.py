"""The store's named read methods: exact values on a hand-made store, agreement with each other on the sample."""

from __future__ import annotations

import pytest

from wiki_index.parse.chunking import chunk_page
from wiki_index.store.store import PageInfo, Store, StoreWriter
from wiki_index.types import Page, Section


@pytest.fixture()
def small(tmp_path) -> Store:
    w = StoreWriter(tmp_path / "s.duckdb")
    alpha = Page(
        1,
        "Alpha",
        "Alpha links Beta twice and itself.",
        sections=(
            Section("", 0, "Alpha is the first letter of a famous alphabet."),
            Section("Use", 2, "Alpha links Beta."),
        ),
        links=("Beta", "Alpha", "B", "Gamma", "Nowhere"),
        categories=("Greek letters", "Vowels"),
        infobox={"born": "800 BC", "shape": "triangle"},
        description="First Letter",
    )
    beta = Page(
        2,
        "Beta",
        "Beta is second.",
        sections=(Section("", 0, "Beta is second."),),
        links=("Alpha",),
        categories=("Greek letters",),
        url="https://example.org/beta",
    )
    gamma = Page(5, "Gamma", "Gamma has no lead section.", links=("Beta",))
    for p in (alpha, beta, gamma):
        assert w.add_page(p, chunk_page(p))
    w.add_redirect("B", "Beta")
    w.add_redirect("Nowhere", "Missing")  # unresolved: left out of the resolved views
    w.finalize()
    store = Store(tmp_path / "s.duckdb")
    yield store
    store.close()


def test_page_level_reads(small):
    assert small.page_count() == 3 and small.page_ids() == [1, 2, 5]
    assert small.url(2) == "https://example.org/beta" and small.url(1) == "https://en.wikipedia.org/wiki/Alpha"
    assert small.url(99) is None
    assert small.page_leads() == [
        (1, "Alpha", "Alpha is the first letter of a famous alphabet."),
        (2, "Beta", "Beta is second."),
    ]
    alpha = PageInfo(
        1,
        "Alpha",
        "First Letter",
        "",
        len("Alpha links Beta twice and itself."),
        "Alpha is the first letter of a famous alphabet.",
    )
    assert small.page_info(1) == alpha and small.page_info(99) is None
    assert small.page_info(5).lead == "" and small.page_info(5).description == ""
    assert sorted(small.page_infos()) == [alpha, small.page_info(2), small.page_info(5)]


def test_phrase_search_covers_description_and_lead_start(small):
    assert small.pages_matching("first letter", limit=10) == [1]  # the description, case folded
    assert small.pages_matching("famous alphabet", limit=10) == [1]  # the lead
    assert small.pages_matching("famous alphabet", limit=10, lead_chars=20) == []  # past the lead's first 20 characters
    assert small.pages_matching("links beta", limit=10) == []  # the body is not searched
    assert sorted(small.pages_matching("is", limit=10)) == [1, 2] and len(small.pages_matching("is", limit=1)) == 1


def test_titles_redirects_and_links(small):
    assert small.redirect_targets() == [("B", 2)]  # "Nowhere" leads to no page
    assert sorted(small.title_ids()) == [("Alpha", 1), ("B", 2), ("Beta", 2), ("Gamma", 5)]
    # Alpha -> Beta twice (as "Beta" at 0, as "B" at 2): one edge with the first ordinal and anchor; no self-link
    assert small.link_edges() == [(1, 2, 0, "Beta"), (1, 5, 3, "Gamma"), (2, 1, 0, "Alpha"), (5, 2, 0, "Beta")]
    assert small.links_from(1) == [(2, 0, "Beta"), (5, 3, "Gamma")] and small.links_from(99) == []
    assert small.in_links(2) == [1, 5] and small.in_links(1) == [2] and small.in_links(5) == [1]


def test_infobox_and_categories(small):
    assert sorted(small.infobox_rows()) == [(1, "born", "800 BC"), (1, "shape", "triangle")]
    assert small.infobox_facts(1) == {"born": "800 BC", "shape": "triangle"} and small.infobox_facts(2) == {}
    assert small.categories(1) == ["Greek letters", "Vowels"] and small.categories(5) == []
    assert sorted(small.category_rows()) == [(1, "Greek letters"), (1, "Vowels"), (2, "Greek letters")]
    assert small.category_members() == {"greek letters": [1, 2], "vowels": [1]}


def test_iter_passages_streams_in_page_order(small):
    batches = list(small.iter_passages(batch=2))
    assert [len(b) for b in batches][:-1] == [2] * (len(batches) - 1)
    flat = [p for b in batches for p in b]
    assert flat == [p for pid in small.page_ids() for p in small.passages(pid)]
    it = small.iter_passages(batch=1)  # its own cursor: other reads in between do not disturb it
    first = next(it)
    assert small.page(2).title == "Beta" and [p.docid for p in first + [p for b in it for p in b]] == [
        p.docid for p in flat
    ]


def test_reads_agree_with_each_other_on_the_sample(sample_index):
    store = Store(sample_index / "store.duckdb")
    try:
        ids = store.page_ids()
        assert store.page_count() == len(ids) == store.counts()["pages"] > 10_000
        infos = {i.page_id: i for i in store.page_infos()}
        edges = store.link_edges()
        assert sorted(infos) == ids and edges == sorted(edges, key=lambda e: (e[0], e[2]))
        out: dict[int, list] = {}
        for src, dst, ordinal, anchor in edges:
            out.setdefault(src, []).append((dst, ordinal, anchor))
        cats: dict[int, list] = {}
        for pid, cat in store.category_rows():
            cats.setdefault(pid, []).append(cat)
        checked = [pid for pid in ids[::97] if out.get(pid)]
        assert len(checked) > 20
        for pid in ids[::97]:
            page = store.page(pid)
            assert store.page_info(pid) == infos[pid] and infos[pid].title == page.title and store.url(pid) == page.url
            assert infos[pid].lead == (page.sections[0].text if page.sections else "")
            assert store.links_from(pid) == out.get(pid, []) and store.categories(pid) == cats.get(pid, [])
            assert set(store.infobox_facts(pid)) == set(page.infobox)
            assert all(pid in store.in_links(dst) for dst, _, _ in out.get(pid, []))
        leads = store.page_leads()
        assert [r[0] for r in leads] == sorted(r[0] for r in leads) and len(leads) > 10_000
        redirects = store.redirect_targets()
        assert sorted(store.title_ids()) == sorted([(i.title, i.page_id) for i in infos.values()] + redirects)
        assert all(store.resolve(t) == dst for t, dst in redirects[:200])
        members = store.category_members()
        assert sum(map(len, members.values())) == len(store.category_rows())
        assert sum(len(b) for b in store.iter_passages()) == store.counts()["passages"]
    finally:
        store.close()


def test_the_columns_give_a_page_the_passages_the_store_gives(sample_index):
    from wiki_index.search.index import WikiIndex

    index = WikiIndex(sample_index)
    ids = index.store.page_ids()
    for pid in [*ids[::7], ids[-1], -1, ids[-1] + 1]:  # unknown ids on both sides of the column
        assert index.passages(pid) == index.store.passages(pid)
    assert sum(len(index.passages(pid)) for pid in ids) == index.store.counts()["passages"]
