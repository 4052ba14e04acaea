import pytest

from simweb_core.errors import ConfigError, IndexNotFoundError
from wiki_index.parse.chunking import ChunkConfig, chunk_page
from wiki_index.store.store import Store, StoreWriter
from wiki_index.types import Page, Passage, Section


def _long(n: int, word: str = "word") -> str:
    return " ".join(f"Sentence {i} has {word} number {i}." for i in range(n))


def test_chunking_respects_sections_and_length():
    page = Page(7, "X", "", sections=(Section("", 0, _long(50)), Section("History", 2, "Short one.")))
    ps = chunk_page(page)
    assert [p.docid for p in ps] == ["7-0", "7-1", "7-2", "7-3"]
    assert all(len(p.text.split()) <= 100 + 20 for p in ps)  # a short tail merges into the last passage
    assert ps[-1].section == "History" and ps[-1].text == "Short one."
    assert " ".join(p.text for p in ps[:3]) == _long(50)  # no word lost or duplicated
    assert chunk_page(Page(1, "Y", "")) == []


def test_chunking_merges_short_tail_and_keeps_prechunked():
    page = Page(1, "X", "", sections=(Section("", 0, _long(18)),))  # 108 words: a 12-word tail is merged
    ps = chunk_page(page, ChunkConfig(words=100, min_words=20))
    assert len(ps) == 1
    pre = (Passage("wiki-18:1", 1, "X", "given text"),)
    assert chunk_page(Page(1, "X", "given text", passages=pre)) == list(pre)
    with pytest.raises(ConfigError):
        ChunkConfig(words=5)


def test_store_round_trip_with_redirect_chains(tmp_path):
    w = StoreWriter(tmp_path / "s.duckdb")
    a = Page(
        1,
        "Alpha",
        "Alpha links Beta.",
        sections=(Section("", 0, "Alpha links Beta."),),
        links=("Beta", "B", "Missing page"),
        categories=("Letters",),
        infobox={"born": "1900"},
        infobox_type="Infobox person",
    )
    b = Page(2, "Beta", "Beta is second.", links=("Alpha",), description="second letter")
    assert w.add_page(a, chunk_page(a)) and w.add_page(b, chunk_page(b))
    assert not w.add_page(a, [])  # duplicate title: refused and counted
    w.add_redirect("B", "Bee")
    w.add_redirect("Bee", "Beta")  # chain B -> Bee -> Beta
    w.add_redirect("Alpha", "Beta")  # a real page is never a redirect
    counts = w.finalize()
    assert counts["pages"] == 2 and counts["duplicate_titles"] == 1 and counts["links_resolved"] == 3
    s = Store(tmp_path / "s.duckdb")
    assert s.resolve("b") == 2 and s.resolve("alpha") == 1 and s.resolve("BETA") == 2 and s.resolve("Nope") is None
    page = s.page(1)
    assert page.links == ("Beta", "Missing page") and page.categories == ("Letters",)
    assert page.infobox == {"born": "1900"} and page.infobox_type == "Infobox person"
    assert s.page_by_title("Bee").description == "second letter"
    assert s.aliases(2) == ["B", "Bee"] and s.out_links(1) == [2]
    assert [p.docid for p in s.passages_by_id(["2-0", "nope", "1-0"])] == ["2-0", "1-0"]
    assert s.passage("1-0").text == "Alpha links Beta."


def test_missing_store_is_a_clear_error(tmp_path):
    with pytest.raises(IndexNotFoundError, match="wiki-index build"):
        Store(tmp_path / "none.duckdb")
