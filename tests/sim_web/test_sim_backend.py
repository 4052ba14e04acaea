"""The sim backend's ranking: one result per page, navigational queries first, deterministic."""

from sim_web.backends.sim import SimBackend, SimConfig
from wiki_index.index import WikiIndex


def test_navigational_queries_put_the_named_page_first(sample_index):
    b = SimBackend(WikiIndex.from_dir(sample_index))
    for query, title in [("Religion", "Religion"), ("paris", "Paris"), ("Albert Einstein", "Albert Einstein"),
                         ("Anarchism", "Anarchism")]:
        res = b.search(query, 10)
        assert res[0].title == title and res[0].link.startswith("https://en.wikipedia.org/wiki/")
        assert len({r.title for r in res}) == len(res)  # one result per page
    # a long article fills the first k * depth passages; the backend reads deeper to fill the page
    assert len(b.search("Albert Einstein", 10)) == 10
    # a redirect title leads to its target page; a query naming no page keeps the plain BM25 ranking
    redirect, target = WikiIndex.from_dir(sample_index).store.query(
        "SELECT r.title, p.title FROM redirects r JOIN pages p ON p.page_id = r.dst ORDER BY r.title LIMIT 1")[0]
    assert b.search(redirect, 5)[0].title == target
    plain = b.search("capital city on the Seine", 10)
    assert [p.title for p in b.result_pages("capital city on the Seine", 10)] == [r.title for r in plain]
    assert b.search("Religion", 10) == b.search("Religion", 10)


def test_every_mode_is_one_result_per_page(sample_index):
    ix = WikiIndex.from_dir(sample_index)
    res = SimBackend(ix, SimConfig(depth=1)).search("river in Europe", 5)
    assert 0 < len(res) <= 5 and len({r.title for r in res}) == len(res)
