"""Bounded-memory build pieces: streamed passage columns (hash match, checked id by id) and DuckDB's memory limit."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from simweb_core.errors import IndexMismatchError
from wiki_index.store import columns
from wiki_index.store.columns import PassageColumns, write_columns
from wiki_index.store.store import Store, StoreWriter, memory_limit
from wiki_index.types import Page, Passage, Section


def _passages(n: int) -> list[Passage]:
    return [
        Passage(f"p{i}-{i % 3}", i // 3, f"Title é{i // 3}", f"text {i} ünï", f"sec{i % 2}", i % 3) for i in range(n)
    ]


def _batches(ps: list[Passage], size: int = 4) -> Iterator[list[Passage]]:
    for i in range(0, len(ps), size):
        yield ps[i : i + size]


def test_streamed_columns_map_each_lucene_doc_to_its_passage(tmp_path) -> None:
    ps = _passages(23)
    order = np.random.default_rng(0).permutation(len(ps))  # Lucene's document order differs from the store's
    out = write_columns(tmp_path / "columns", _batches(ps), (ps[i].docid for i in order), "sha", "segments_1")
    cols = PassageColumns(out)
    assert len(cols) == 23
    assert cols.passages(list(range(23))) == [ps[i] for i in order]
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["meta.json", "row_of_doc.npy", "page_id.npy", "ordinal.npy"]
        + [f"{s}{x}" for s in columns.STRINGS for x in (".bin", ".off.npy")]
    )


def test_a_hash_collision_falls_back_to_matching_the_ids_themselves(tmp_path, monkeypatch, caplog) -> None:
    ps = _passages(10)
    monkeypatch.setattr(columns, "_hashes", lambda ids: np.zeros(len(ids), dtype=np.int64))  # every id collides
    lucene = [p.docid for p in reversed(ps)]
    with caplog.at_level(logging.WARNING, logger="wiki_index.store.columns"):
        cols = PassageColumns(write_columns(tmp_path / "columns", _batches(ps), lucene, "sha", "segments_1"))
    assert "share a 64-bit hash" in caplog.text
    assert cols.passages(list(range(10))) == list(reversed(ps))


@pytest.mark.parametrize("lucene", [["p0-0", "p1-1", "nope"], ["p0-0", "p1-1"], ["p0-0", "p1-1", "p2-2", "p3-0"]])
def test_different_ids_are_a_mismatch(tmp_path, lucene) -> None:
    with pytest.raises(IndexMismatchError, match="rebuild the index"):
        write_columns(tmp_path / "columns", _batches(_passages(3)), lucene, "sha", "segments_1")
    assert not list(tmp_path.iterdir())  # the temporary folder is gone


def test_empty_columns(tmp_path) -> None:
    cols = PassageColumns(write_columns(tmp_path / "columns", iter([]), [], "sha", "segments_1"))
    assert len(cols) == 0 and cols.passages([]) == []


def test_npy_stream_writes_a_normal_npy(tmp_path) -> None:
    stream = columns._NpyStream(tmp_path / "x.npy", np.int32)
    for part in ([1, 2, 3], [], [-4]):
        stream.append(np.asarray(part))
    stream.close()
    got = np.load(tmp_path / "x.npy", mmap_mode="r")
    assert got.dtype == np.int32 and got.tolist() == [1, 2, 3, -4]
    assert [p.name for p in tmp_path.iterdir()] == ["x.npy"]


def test_store_writer_ingests_and_finalizes_under_its_memory_limit_with_no_in_memory_index(tmp_path) -> None:
    import duckdb

    default = memory_limit(duckdb.connect())
    writer = StoreWriter(tmp_path / "s.duckdb", memory_limit="64MB")
    assert memory_limit(writer.con) != default and "MiB" in memory_limit(writer.con)
    text = "word " * 50
    for i in range(3):
        page = Page(i + 1, f"T{i}", text, sections=(Section("", 0, text),))
        assert writer.add_page(page, [Passage(f"{i}-0", i + 1, f"T{i}", text, "", 0)])
    writer.flush()  # DuckDB reads the Arrow batch from the caller's frame: flush before the spy stands in between
    seen: list[str] = []
    writer.con = _Spy(writer.con, seen)
    limit = memory_limit(writer.con)
    counts = writer.finalize()
    assert counts["pages"] == 3 and counts["passages"] == 3
    assert seen[-1] == f"closed under {limit}"  # finalize never lifts the limit: its joins and sorts spill
    assert not [
        s for s in seen if "INDEX" in s.upper() or "RESET" in s.upper()
    ]  # an ART index is built whole in memory
    store = Store(tmp_path / "s.duckdb", memory_limit="32MB")
    assert "MiB" in memory_limit(store._con)
    assert [p.docid for b in store.iter_passages(2) for p in b] == ["0-0", "1-0", "2-0"]
    store.close()


class _Spy:
    """Records the SQL run through a DuckDB connection."""

    def __init__(self, con: Any, seen: list[str]) -> None:
        self._con, self._seen = con, seen

    def execute(self, sql: str, *args: Any) -> Any:
        self._seen.append(sql)
        return self._con.execute(sql, *args)

    def close(self) -> None:
        self._seen.append(f"closed under {memory_limit(self._con)}")
        self._con.close()


def test_title_set_finds_duplicates_across_growth() -> None:
    from wiki_index.store.titleset import TitleSet

    titles = TitleSet(capacity=4)
    assert all(titles.add(f"Title {i}") for i in range(5000))
    assert len(titles) == 5000 and len(titles._hi) >= 10_000  # grew, load <= 1/2
    assert not any(titles.add(f"Title {i}") for i in range(0, 5000, 7))
    assert titles.add("title 1") and titles.add("Title 1 ") and not titles.add("Title 4999")
    assert len(titles) == 5002


def test_store_writer_keeps_the_first_page_of_a_title(tmp_path) -> None:
    writer = StoreWriter(tmp_path / "s.duckdb")
    for pid, title in [(1, "A"), (2, "B"), (3, "A"), (4, "Ä"), (5, "B")]:
        writer.add_page(Page(pid, title, "x y z"), [Passage(f"{pid}-0", pid, title, "x y z", "", 0)])
    counts = writer.finalize()
    assert counts["duplicate_titles"] == 2 and counts["pages"] == 3
    store = Store(tmp_path / "s.duckdb")
    assert store.page_ids() == [1, 2, 4]
    store.close()


def test_lucene_indexing_buffer_is_capped(tmp_path) -> None:
    """Anserini's SimpleIndexer asks Lucene for a 2 GB indexing buffer; the writer lowers it so the Java heap stays flat."""
    from wiki_index.search import _java
    from wiki_index.search.bm25 import RAM_BUFFER_MB, BM25Writer

    w = BM25Writer(tmp_path / "bm25", threads=1)  # starts the JVM with Anserini's classpath before jnius is imported
    from jnius import cast

    fields = _java.autoclass("org.apache.commons.lang3.reflect.FieldUtils")
    writer = cast("org.apache.lucene.index.IndexWriter", fields.readField(w._ix, "writer", True))
    assert writer.getConfig().getRAMBufferSizeMB() == RAM_BUFFER_MB < 2048
    w.add(_passages(5))
    assert w.close() == 5


def test_jvm_heap_comes_from_the_environment_and_a_bad_size_is_named(monkeypatch) -> None:
    from simweb_core.errors import ConfigError
    from wiki_index.search._java import HEAP_ENV, heap_option

    monkeypatch.delenv(HEAP_ENV, raising=False)
    assert heap_option() == "-Xmx1g"
    monkeypatch.setenv(HEAP_ENV, " 4g ")
    assert heap_option() == "-Xmx4g"
    for bad in ("lots", "0g", "1.5g", "-1g"):
        monkeypatch.setenv(HEAP_ENV, bad)
        with pytest.raises(ConfigError) as err:
            heap_option()
        assert "$WIKI_INDEX_JVM_HEAP must be a JVM heap size such as 512m" in str(err.value) and repr(bad) in str(
            err.value
        )
