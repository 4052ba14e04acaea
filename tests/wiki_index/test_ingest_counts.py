"""Ingestion counts reconcile: every input record is kept, a redirect, or a skip with a reason; killed builds are cleaned up."""

from __future__ import annotations

import fcntl
import json
import logging
import os
import subprocess
import sys

import pytest

from simweb_core.errors import CorpusError
from wiki_index.build import BuildConfig, build_index, remove_stale_builds
from wiki_index.manifest import read_manifest
from wiki_index.sources.dump import DumpSource
from wiki_index.sources.jsonl import JsonlSource
from wiki_index.store.store import Store

EXPORT_NS = "http://www.mediawiki.org/xml/export-0.10/"


def _page(i: int, *, ns: str = "0", page_id: str | None = None, xmlns: str | None = None) -> str:
    attr = f' xmlns="{xmlns}"' if xmlns else ""
    return (
        f"<page{attr}><title>Page {i}</title><ns>{ns}</ns><id>{page_id or i}</id><revision><id>{1000 + i}</id>"
        f"<text>Page {i} is a test page about [[Page {i + 1}]], number {i} of the hand-made dump.</text>"
        "</revision></page>"
    )


def _dump(tmp_path, pages: list[str], name: str = "hand.xml", namespaces: str = '<namespace key="0" />'):
    path = tmp_path / name
    path.write_text(
        f'<mediawiki xmlns="{EXPORT_NS}" version="0.10"><siteinfo><sitename>Test</sitename>'
        f"<namespaces>{namespaces}</namespaces></siteinfo>" + "".join(pages) + "</mediawiki>",
        encoding="utf-8",
    )
    return path


def _reconciles(stats) -> bool:
    return stats.read == stats.kept + stats.redirects + stats.skipped and stats.skipped == sum(
        stats.skipped_reasons.values()
    )


def test_pages_in_a_foreign_xml_namespace_are_counted_skips(tmp_path, caplog):
    foreign = "http://www.mediawiki.org/xml/export-0.11/"
    pages = [_page(i, xmlns=foreign if i in (4, 13) else None) for i in range(1, 21)]
    src = DumpSource(_dump(tmp_path, pages))
    with caplog.at_level(logging.WARNING):
        titles = [r.title for r in src.records()]
    assert titles == [f"Page {i}" for i in range(1, 21) if i not in (4, 13)]
    assert src.stats.as_dict() == {
        "read": 20,
        "kept": 18,
        "redirects": 0,
        "skipped": 2,
        "skipped_reasons": {"xml_namespace": 2},
    }
    assert _reconciles(src.stats)
    assert "'Page 4' (xml_namespace)" in caplog.text and foreign in caplog.text


def test_bad_ids_and_namespaces_are_counted_skips_and_the_read_goes_on(tmp_path, caplog):
    pages = [
        _page(1),
        _page(2, page_id="abc"),
        _page(3, page_id=str(10**30)),
        _page(4, ns="main"),
        _page(5, page_id="-7"),
        _page(6, ns="4"),
        _page(7, page_id=str(2**63 - 1)),
    ]
    bad_key = '<namespace key="0" /><namespace key="x">Broken</namespace><namespace key="4">Wikipedia</namespace>'
    src = DumpSource(_dump(tmp_path, pages, namespaces=bad_key))
    with caplog.at_level(logging.WARNING):
        kept = {r.title: r.page_id for r in src.records()}
    assert kept == {"Page 1": 1, "Page 7": 2**63 - 1}
    assert src.stats.skipped_reasons == {"bad_id": 3, "bad_ns": 1, "namespace": 1} and _reconciles(src.stats)
    assert "<id> is 'abc', expected an integer" in caplog.text and "<ns> is 'main'" in caplog.text
    assert "namespace key='x'" in caplog.text  # a bad <siteinfo> entry is ignored with a warning, not fatal


def test_jsonl_page_id_out_of_range_is_a_bad_line(tmp_path, caplog):
    rows = [
        {"id": "a", "title": "A", "text": "First."},
        {"id": "b", "title": "B", "text": "Second.", "page_id": 10**30},
        {"id": "c", "title": "C", "text": "Third.", "wikipedia_id": str(2**63 - 2)},
        {"id": "d", "title": "D", "text": "Fourth."},
        {"id": "e", "title": "E", "text": "Fifth.", "wiki_id": "9" * 5000},  # past int()'s digit limit
        {"id": "f", "title": "F", "text": "Sixth.", "page_id": "\u00b2"},
    ]  # isdigit() but not a number: not an id
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    src = JsonlSource(path)
    with caplog.at_level(logging.WARNING):
        pages = [(p.title, p.page_id) for p in src.records()]
    # the bad lines are skipped (the default policy for bad lines) and counted
    # F has no usable id and the next free one, 2^63, does not fit either
    assert pages == [("A", 1), ("C", 2**63 - 2), ("D", 2**63 - 1)]
    assert src.stats.skipped_reasons == {"bad_page_id": 3} and src.stats.read == 6
    assert f"{path}:6: skipped (bad_page_id): the page has no page id and the next free one, {2**63}" in caplog.text
    assert f"{path}:2: skipped (bad_page_id): page_id {10**30} is out of range" in caplog.text
    with pytest.raises(CorpusError, match=rf"c\.jsonl:2: page_id {10**30} is out of range; expected an integer"):
        list(JsonlSource(path, strict=True).records())


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # exited and reaped: the PID names no process (until the system reuses it)
    return child.pid


def test_remove_stale_builds_keeps_live_and_locked_ones(tmp_path):
    live = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        dead = _dead_pid()
        stale = tmp_path / f".sample.building-{dead}"
        other = tmp_path / f".wiki18.building-{dead}"
        running = tmp_path / f".sample.building-{live.pid}"
        mine = tmp_path / f".sample.building-{os.getpid()}"
        locked = tmp_path / f".shared.building-{dead}"  # a build in another PID namespace holds its lock
        index = tmp_path / "sample"
        for d in (stale, other, running, mine, locked, index):
            d.mkdir()
            (d / "store.duckdb").write_bytes(b"x")
        (tmp_path / f".notes.building-{dead}").write_text("a file, not a build directory")
        fd = os.open(locked / ".build.lock", os.O_CREAT | os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        try:
            assert remove_stale_builds(tmp_path) == [stale, other]
        finally:
            os.close(fd)
        assert not stale.exists() and not other.exists()
        assert (
            running.is_dir() and mine.is_dir() and index.is_dir() and (tmp_path / f".notes.building-{dead}").is_file()
        )
        assert remove_stale_builds(tmp_path) == [locked]  # its lock is free now
        assert remove_stale_builds(tmp_path / "missing") == []
    finally:
        live.stdin.close()
        live.wait()


def test_build_keeps_going_records_skip_reasons_and_clears_a_killed_build(tmp_path):
    pages = [_page(i, page_id="x" if i == 3 else None, xmlns="urn:other" if i == 5 else None) for i in range(1, 11)]
    dump = _dump(tmp_path, pages, "enwiki-hand.xml")
    out = tmp_path / "indexes" / "hand"
    leftover = out.parent / f".hand.building-{_dead_pid()}"
    leftover.mkdir(parents=True)
    (leftover / "store.duckdb").write_bytes(b"half a store")
    built = build_index(dump, out, BuildConfig(dense=False, threads=1))
    stats = read_manifest(built)["stats"]
    assert stats == {
        "read": 10,
        "kept": 8,
        "redirects": 0,
        "skipped": 2,
        "skipped_reasons": {"bad_id": 1, "xml_namespace": 1},
    }
    assert not leftover.exists() and sorted(p.name for p in out.parent.iterdir()) == ["hand"]
    assert not (built / ".build.lock").exists()
    store = Store(built / "store.duckdb")
    try:
        assert store.page_count() == 8 and store.resolve("Page 3") is None and store.out_links(1) == [2]
    finally:
        store.close()
