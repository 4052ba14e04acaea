"""The store's on-disk layout: no in-memory index, tables in lookup order whatever the source's order; a store in an
older layout is refused with the command that rebuilds it."""

from __future__ import annotations

import json

import duckdb
import pytest

from simweb_core.errors import IndexMismatchError
from wiki_index.parse.chunking import chunk_page
from wiki_index.store.store import Store, StoreWriter
from wiki_index.store.titleset import title_key
from wiki_index.types import Page, Section


def _page(pid: int, title: str, links: tuple[str, ...] = ()) -> Page:
    text = f"{title} is page {pid}."
    return Page(
        pid,
        title,
        text,
        sections=(Section("", 0, text), Section("More", 2, f"More on {title}.")),
        links=links,
        categories=(f"Cat {pid}",),
        infobox={"id": str(pid)},
    )


def test_pages_given_out_of_id_order_are_stored_in_id_order(tmp_path) -> None:
    w = StoreWriter(tmp_path / "s.duckdb", batch_rows=2)  # several flushes
    for pid, title, links in [
        (30, "Gamma", ("Alpha",)),
        (10, "Alpha", ("Beta", "Gamma")),
        (20, "Beta", ("Alpha", "Z")),
    ]:
        assert w.add_page(_page(pid, title, links), chunk_page(_page(pid, title, links)))
    w.add_redirect("Z", "Gamma")
    w.finalize()
    s = Store(tmp_path / "s.duckdb")
    assert [t for t, _ in s.first_passages(10)] == ["Alpha", "Beta", "Gamma"]  # storage order: rewritten by page id
    assert s.page(20).sections[1].text == "More on Beta." and s.page(20).links == ("Alpha", "Gamma")
    assert [p.ordinal for p in s.passages(30)] == list(range(len(s.passages(30))))
    assert s.in_links(10) == [20, 30] and s.in_links(30) == [10, 20] and s.out_links(20) == [10, 30]
    assert s.categories(10) == ["Cat 10"] and s.infobox_facts(30) == {"id": "30"}
    assert [s.resolve(t) for t in ("Alpha", "beta", "Z", "Nope")] == [10, 20, 30, None]
    s.close()


def test_long_chains_are_followed_and_a_redirect_loop_resolves_to_nothing(tmp_path) -> None:
    w = StoreWriter(tmp_path / "s.duckdb")
    w.add_page(_page(1, "Target"), [])
    for a, b in [
        ("R1", "R2"),
        ("R2", "R3"),
        ("R3", "R4"),
        ("R4", "Target"),
        ("Loop A", "Loop B"),
        ("Loop B", "Loop A"),
    ]:
        w.add_redirect(a, b)
    counts = w.finalize()
    s = Store(tmp_path / "s.duckdb")
    assert [s.resolve(t) for t in ("R1", "R2", "R4", "Loop A", "Loop B")] == [1, 1, 1, None, None]
    assert counts["redirects"] == 6 and counts["redirects_resolved"] == 4 and s.aliases(1) == ["R1", "R2", "R3", "R4"]
    s.close()


def _older_layout_store(path) -> None:
    """A store as builds wrote it before the ``titles`` and ``backlinks`` tables (ART indexes on titles and links)."""
    con = duckdb.connect(str(path))
    con.execute("""
        CREATE TABLE pages (page_id BIGINT PRIMARY KEY, title VARCHAR NOT NULL, url VARCHAR, text VARCHAR,
                            description VARCHAR, infobox_type VARCHAR, source VARCHAR, n_words INTEGER);
        CREATE TABLE sections (page_id BIGINT, ordinal INTEGER, title VARCHAR, level INTEGER, text VARCHAR);
        CREATE TABLE passages (docid VARCHAR PRIMARY KEY, page_id BIGINT, ordinal INTEGER, section VARCHAR, title VARCHAR, text VARCHAR);
        CREATE TABLE links (src BIGINT, ordinal INTEGER, target VARCHAR, dst BIGINT);
        CREATE TABLE redirects (title VARCHAR, target VARCHAR, dst BIGINT);
        CREATE TABLE categories (page_id BIGINT, category VARCHAR);
        CREATE TABLE infobox (page_id BIGINT, key VARCHAR, value VARCHAR);
        INSERT INTO pages VALUES (1, 'Alpha', NULL, 'a', NULL, NULL, 'dump', 1), (2, 'Beta', NULL, 'b', NULL, NULL, 'dump', 1);
        CREATE UNIQUE INDEX pages_title ON pages(title);
        CREATE INDEX links_dst ON links(dst);
    """)
    con.close()


def test_a_store_in_an_older_layout_is_refused_with_the_rebuild_command(tmp_path) -> None:
    index = tmp_path / "idx"
    index.mkdir()
    _older_layout_store(index / "store.duckdb")
    (index / "manifest.json").write_text(json.dumps({"source": {"spec": "jsonl:/data/pages.jsonl"}}), encoding="utf-8")
    with pytest.raises(IndexMismatchError) as e:
        Store(index / "store.duckdb")
    msg = str(e.value)
    assert "no table backlinks, titles" in msg and str(index / "store.duckdb") in msg
    assert f"Rebuild the index with:\n    wiki-index build jsonl:/data/pages.jsonl --out {index}" in msg


def test_without_a_manifest_the_rebuild_command_names_a_placeholder_source(tmp_path) -> None:
    _older_layout_store(tmp_path / "store.duckdb")
    with pytest.raises(IndexMismatchError, match=r"wiki-index build SOURCE --out "):
        Store(tmp_path / "store.duckdb")


def test_the_title_key_is_a_signed_64_bit_integer() -> None:
    keys = [title_key(f"Title {i}") for i in range(2000)]
    assert all(-(1 << 63) <= k < 1 << 63 for k in keys) and min(keys) < 0 < max(keys) and len(set(keys)) == 2000
