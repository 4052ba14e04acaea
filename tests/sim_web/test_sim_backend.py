"""The sim backend's ranking: one result per page, navigational queries first, deterministic."""

from sim_web.backends.sim import SimBackend, SimConfig
from wiki_index.search.index import WikiIndex


def test_navigational_queries_put_the_named_page_first(sample_index):
    b = SimBackend(WikiIndex.from_dir(sample_index))
    for query, title in [
        ("Religion", "Religion"),
        ("paris", "Paris"),
        ("Albert Einstein", "Albert Einstein"),
        ("Anarchism", "Anarchism"),
    ]:
        res = b.search(query, 10)
        assert res[0].title == title and res[0].link.startswith("https://en.wikipedia.org/wiki/")
        assert len({r.title for r in res}) == len(res)  # one result per page
    # a long article fills the first k * depth passages; the backend reads deeper to fill the page
    assert len(b.search("Albert Einstein", 10)) == 10
    # a redirect title leads to its target page; a query naming no page keeps the plain BM25 ranking
    store = WikiIndex.from_dir(sample_index).store
    redirect, dst = min(store.redirect_targets())
    target = store.page_info(dst).title
    assert b.search(redirect, 5)[0].title == target
    plain = b.search("capital city on the Seine", 10)
    assert [p.title for p in b.result_pages("capital city on the Seine", 10)] == [r.title for r in plain]
    assert b.search("Religion", 10) == b.search("Religion", 10)


def test_top_pages_reads_only_the_kept_passages(sample_index, monkeypatch):
    """``top_pages`` keeps what grouping ``search``'s hits by page keeps, and reads only those passages."""
    ix = WikiIndex.from_dir(sample_index)
    read: list[int] = []
    rows = ix.columns.rows
    monkeypatch.setattr(ix.columns, "rows", lambda r: read.extend(r) or rows(r))
    for query in ("river in Europe", "Albert Einstein", "capital city on the Seine"):
        hits = [p for _, p in ix.search(query, 30)]
        grouped: dict[int, object] = {}
        for p in hits:
            grouped.setdefault(p.page_id, p)
        first = hits[-1].page_id  # a page ranked last is put first when asked
        want = [grouped[first]] + [p for i, p in grouped.items() if i != first][:4]
        read.clear()
        found = ix.top_pages(query, 30, 5, first=first)
        assert found.passages == want and found.hits == len(hits) and found.pages == len(grouped)
        assert len(read) == len(want) <= 5  # the kept passages read, not thirty


def test_every_mode_is_one_result_per_page(sample_index):
    ix = WikiIndex.from_dir(sample_index)
    res = SimBackend(ix, SimConfig(depth=1)).search("river in Europe", 5)
    assert 0 < len(res) <= 5 and len({r.title for r in res}) == len(res)


# -- shared format checks: the sim backend and the real ones (Serper + Jina on the wire mocks) print one grammar --

import re  # noqa: E402

import pytest  # noqa: E402

from tests.sim_web.real_mocks import KEY, jina, serper, sim_backend  # noqa: E402,F401 - fixtures

SEARCH_HEAD = re.compile(r"A Google search for '(?P<q>.+)' found (?P<n>\d+) results:\n\n## Web Results\n")
SCHOLAR_HEAD = re.compile(r"A Google scholar for '(?P<q>.+)' found (?P<n>\d+) results:\n\n## Scholar Results\n")
SEARCH_ITEM = re.compile(
    r"(?P<i>\d+)\. \[[^\n]*\]\(https?://\S+\)(\nDate published: [^\n]+)?(\nSource: [^\n]+)?\n(\n[^\n]+)?"
)
SCHOLAR_ITEM = re.compile(
    r"(?P<i>\d+)\. \[[^\n]*\]\((pdfUrl: \S+|no available link)\)(\npublicationInfo: [^\n]+)?"
    r"(\nDate published: [^\n]+)?(\ncitedBy: \d+)?\n(\n[^\n]+)?"
)
VISIT = re.compile(
    r"The useful information in (?P<url>\S+) for user goal (?P<goal>.+) as follows: \n\n"
    r"Evidence in page: \n(?P<evidence>.+)\n\nSummary: \n(?P<summary>.+)",
    re.DOTALL,
)


@pytest.fixture(params=["sim", "real"])
def toolbox(request, sim_backend):
    """A toolbox over the sim backend, or over Serper + Jina talking to the wire mocks."""
    from sim_web.backends.jina import JinaBackend, JinaConfig
    from sim_web.backends.serper import SerperBackend, SerperConfig
    from sim_web.executor import ExecutorConfig, ToolExecutor
    from sim_web.tools import Toolbox

    if request.param == "sim":
        backends = [sim_backend]
    else:
        s, j = request.getfixturevalue("serper"), request.getfixturevalue("jina")
        backends = [
            SerperBackend(KEY, SerperConfig(base_url=s.base_url)),
            JinaBackend(KEY, JinaConfig(base_url=j.base_url)),
        ]
    return Toolbox(ToolExecutor(backends, ExecutorConfig(max_retries=0)), max_chars=100_000)


def _items(text: str, head: re.Pattern[str], item: re.Pattern[str], query: str) -> int:
    m = head.match(text)
    assert m and m["q"] == query, text[:200]
    joined = re.split(r"\n\n(?=\d+\. \[)", text[m.end() :])
    assert all(item.fullmatch(p) for p in joined), joined
    assert [int(item.fullmatch(p)["i"]) for p in joined] == list(range(1, int(m["n"]) + 1))
    return int(m["n"])


def test_search_observations_follow_the_tongyi_grammar(toolbox) -> None:
    text = toolbox.search(query=["Danube", "theory of relativity"])
    a, b = text.split("\n=======\n")
    assert _items(a, SEARCH_HEAD, SEARCH_ITEM, "Danube") == 10
    assert _items(b, SEARCH_HEAD, SEARCH_ITEM, "theory of relativity") == 10


def test_scholar_observations_follow_the_tongyi_grammar(toolbox) -> None:
    assert _items(toolbox.google_scholar(query=["relativity"]), SCHOLAR_HEAD, SCHOLAR_ITEM, "relativity") == 10


def test_visit_observations_follow_the_tongyi_grammar(toolbox) -> None:
    url = "https://en.wikipedia.org/wiki/Albert_Einstein"
    pages = toolbox.visit(url=[url, "https://example.invalid/nothing"], goal="theory of relativity").split(
        "\n=======\n"
    )
    m = VISIT.fullmatch(pages[0].strip())
    assert m and (m["url"], m["goal"]) == (url, "theory of relativity") and "relativity" in m["evidence"].lower()
    assert m["summary"].startswith("Albert Einstein: ")
    bad = VISIT.fullmatch(pages[1])
    assert bad and bad["evidence"].startswith("The provided webpage content could not be accessed.")
