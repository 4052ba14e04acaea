"""Corpus sources on real data: the gensim enwiki dump, JSONL corpora, the bundled sample; bad inputs."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import json
import logging
import subprocess
import sys
import time

import pytest

from simweb_core.errors import CorpusError
from wiki_index.parse.wikitext import ParseConfig
from wiki_index.sources import open_source
from wiki_index.sources.base import CorpusSource, Redirect
from wiki_index.sources.dump import DumpSource
from wiki_index.sources.jsonl import JsonlSource
from wiki_index.sources.mentions import MentionLinker
from wiki_index.sources.sample import LEAD_ID_BASE, SampleSource
from wiki_index.types import Page


def _split(records):
    pages = [r for r in records if isinstance(r, Page)]
    return pages, [r for r in records if isinstance(r, Redirect)]


@pytest.fixture(scope="module")
def dump_records(gensim_dump):
    src = open_source(gensim_dump)
    return src, list(src.records())


# ---- MediaWiki XML dump -------------------------------------------------------------------------


def test_dump_counts(dump_records, gensim_dump):
    src, recs = dump_records
    pages, redirects = _split(recs)
    assert isinstance(src, DumpSource) and isinstance(src, CorpusSource)
    # 206 <page>s: 106 articles, 100 redirects of which one is in namespace 4 (Wikipedia:)
    assert (len(pages), len(redirects)) == (106, 99)
    assert src.stats.as_dict() == {
        "read": 206,
        "kept": 106,
        "redirects": 99,
        "skipped": 1,
        "skipped_reasons": {"namespace": 1},
    }
    assert src.name == "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened"
    assert not [p for p in pages if p.title.startswith("Wikipedia:")]
    desc = src.describe()
    assert desc["kind"] == "dump" and desc["bytes"] == gensim_dump.stat().st_size
    assert desc["sha256"] == hashlib.sha256(gensim_dump.read_bytes()).hexdigest()


def test_dump_real_pages(dump_records):
    pages, redirects = _split(dump_records[1])
    by_title = {p.title: p for p in pages}
    assert Redirect("AccessibleComputing", "Computer accessibility") in redirects  # <redirect title=...>
    anarchism = by_title["Anarchism"]
    assert (anarchism.page_id, anarchism.source) == (12, "dump")
    assert anarchism.url == "https://en.wikipedia.org/wiki/Anarchism"
    assert anarchism.links[:2] == ("Political philosophy", "Self-governance")
    assert "Political ideologies" in anarchism.categories
    alabama = by_title["Alabama"]
    assert alabama.page_id == 303 and alabama.infobox["Capital"] == "Montgomery"
    assert all(p.text and p.sections[0].title == "" for p in pages)


def test_dump_workers_give_the_same_records(gensim_dump, dump_records):
    src = DumpSource(gensim_dump, workers=2, batch_pages=16)
    assert list(src.records()) == dump_records[1]
    assert src.stats == dump_records[0].stats


def test_plain_xml_dump(tmp_path, gensim_dump, dump_records):
    xml = tmp_path / "enwiki-small.xml"
    xml.write_bytes(bz2.decompress(gensim_dump.read_bytes()))
    src = open_source(xml)
    assert [r.title for r in src.records()] == [r.title for r in dump_records[1]]
    assert src.name == "enwiki-small"


def test_parse_timeout_is_skipped_and_counted(gensim_dump, caplog):
    src = DumpSource(gensim_dump, config=ParseConfig(time_limit_s=1e-9))
    with caplog.at_level(logging.WARNING):
        pages, redirects = _split(list(src.records()))
    assert (len(pages), len(redirects)) == (0, 99)
    assert src.stats.skipped_reasons == {"namespace": 1, "parse_timeout": 106}
    assert "'Anarchism' (parse_timeout)" in caplog.text


def test_truncated_bz2(tmp_path, gensim_dump):
    cut = tmp_path / "truncated.xml.bz2"
    data = gensim_dump.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    got = []
    with pytest.raises(CorpusError) as err:
        for rec in DumpSource(cut).records():
            got.append(rec)
    msg = str(err.value)
    assert str(cut) in msg and "truncated or corrupt" in msg and "last good page" in msg
    assert 50 < len(got) < 206  # what came before the cut was yielded (documented)
    assert f"after {len(got) + 1} pages" in msg or f"after {len(got)} pages" in msg


@pytest.mark.parametrize(
    "name,content",
    [
        ("notxml.xml", b"this is not XML at all\n"),
        ("garbage.xml.bz2", bytes(range(256)) * 40),
        ("html.xml", b"<html><body>hello</body></html>"),
        ("empty.xml", b""),
    ],
)
def test_bad_dump_files(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(CorpusError) as err:
        list(open_source(path).records())
    assert name in str(err.value)


def test_open_source_errors(tmp_path):
    with pytest.raises(CorpusError, match="expected 'sample', a MediaWiki XML dump"):
        open_source(tmp_path / "corpus.txt")
    with pytest.raises(CorpusError, match="does not exist"):
        open_source(tmp_path / "missing.xml.bz2")
    assert isinstance(open_source("sample"), SampleSource)


# ---- JSONL passage corpora ----------------------------------------------------------------------

DPR = [
    {"id": "1", "contents": '"Aaron"\nAaron is a prophet, high priest, and the brother of Moses.'},
    {"id": "2", "contents": '"Aaron"\nKnowledge of Aaron comes exclusively from religious texts.'},
    {"id": "3", "contents": '"Moses"\nMoses is considered the most important prophet in Judaism.'},
]
TITLED = [
    {"id": "d1", "title": "Aaron", "text": "First.", "page_id": 7},
    {"id": "d2", "title": "Aaron", "text": "Second."},
    {"id": "d3", "title": "Moses", "text": "Third."},
]


def _write(path, rows, gz=False):
    data = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


@pytest.mark.parametrize("gz", [False, True])
def test_jsonl_dpr_format(tmp_path, gz):
    path = _write(tmp_path / ("wiki.jsonl.gz" if gz else "wiki.jsonl"), DPR, gz)
    src = open_source(path)
    pages = list(src.records())
    assert isinstance(src, JsonlSource) and src.name == "wiki"
    assert [(p.title, p.page_id, p.source) for p in pages] == [("Aaron", 1, "jsonl"), ("Moses", 2, "jsonl")]
    aaron = pages[0]
    assert [(q.docid, q.ordinal, q.page_id) for q in aaron.passages] == [("1", 0, 1), ("2", 1, 1)]
    assert (
        aaron.text
        == "Aaron is a prophet, high priest, and the brother of Moses. Knowledge of Aaron comes exclusively from religious texts."
    )
    assert aaron.passages[0].contents == "Aaron\nAaron is a prophet, high priest, and the brother of Moses."
    assert src.stats.as_dict() == {"read": 3, "kept": 2, "redirects": 0, "skipped": 0, "skipped_reasons": {}}
    assert src.describe()["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()


def test_jsonl_title_text_format_with_page_ids(tmp_path):
    pages = list(open_source(_write(tmp_path / "c.json.gz", TITLED, gz=True)).records())
    assert [(p.title, p.page_id, [q.docid for q in p.passages]) for p in pages] == [
        ("Aaron", 7, ["d1", "d2"]),
        ("Moses", 8, ["d3"]),
    ]


def test_jsonl_bad_lines_are_skipped_and_counted(tmp_path, caplog):
    rows = [DPR[0], "{not json", {"id": "9"}, "[1, 2]", {"id": "8", "title": "X", "text": "  "}, DPR[2]]
    path = _write(tmp_path / "bad.jsonl", rows)
    src = JsonlSource(path)
    with caplog.at_level(logging.WARNING):
        pages = list(src.records())
    assert [p.title for p in pages] == ["Aaron", "Moses"]
    assert src.stats.skipped_reasons == {"bad_json": 2, "missing_field": 1, "empty": 1}
    assert f"{path}:2:" in caplog.text and f"{path}:3:" in caplog.text
    with pytest.raises(CorpusError, match=r"bad\.jsonl:2: "):
        list(JsonlSource(path, strict=True).records())


def test_jsonl_empty_and_truncated(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"\n\n")
    with pytest.raises(CorpusError, match="empty"):
        list(open_source(empty).records())
    whole = gzip.compress(("".join(json.dumps(r) + "\n" for r in DPR * 200)).encode())
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(CorpusError, match="truncated"):
        list(open_source(cut).records())


# ---- mentions and the bundled sample -----------------------------------------------------------


def test_mention_linker_rules():
    linker = MentionLinker(["New York", "New York City", "Inca", "Apple", "Rain", "France", "1"])
    text = "New York City is big. The Incan empire. Apple's phone. Douglas Rain acted. In France, 1 day. New York City."
    assert linker.links(text) == ("New York City", "Apple", "France")
    assert linker.links("France and New York", exclude="France") == ("New York",)
    assert linker.links("Rain fell on France.") == ("Rain", "France")  # sentence-initial is fine


@pytest.fixture(scope="module")
def sample():
    t0 = time.perf_counter()
    src = SampleSource()
    recs = list(src.records())
    return src, recs, time.perf_counter() - t0


def test_sample_counts_and_speed(sample, vital_leads):
    src, recs, seconds = sample
    pages, redirects = _split(recs)
    leads = json.loads(vital_leads.read_bytes())
    assert seconds < 30
    assert len(leads) == 10_033
    # 106 full articles, 46 of which have a lead; the other 9,987 leads become lead-only pages
    assert len(pages) == 10_033 + 106 - 46 and len(redirects) == 99
    assert len({p.title for p in pages}) == len(pages) and len({p.page_id for p in pages}) == len(pages)
    st = src.stats
    assert st.read == 206 + 10_033 and st.read == st.kept + st.redirects + st.skipped
    assert st.skipped_reasons == {"merged_into_article": 46, "namespace": 1}
    d = src.describe()
    assert d["kind"] == "sample" and len(d["files"]) == 2 and str(vital_leads.resolve()) in d["paths"]


def test_sample_article_wins_over_lead(sample):
    pages = {p.title: p for p in _split(sample[1])[0]}
    anarchism = pages["Anarchism"]
    assert anarchism.source == "dump" and anarchism.page_id == 12 and len(anarchism.sections) > 10
    assert anarchism.description == "Political philosophy and movement"  # from the lead: the 2016 article has none
    assert "Political ideologies" in anarchism.categories


def test_sample_lead_pages(sample, vital_leads):
    pages = {p.title: p for p in _split(sample[1])[0]}
    france = pages["France"]
    keys = sorted(json.loads(vital_leads.read_bytes()))
    assert france.source == "lead" and france.page_id == LEAD_ID_BASE + keys.index("France")
    assert france.description == "Country primarily in Western Europe"
    assert france.text.startswith("France, officially the French Republic, is a country")
    # "... shares borders with Belgium and Luxembourg to the north, Germany to the northeast ..."
    assert {"Belgium", "Luxembourg", "Germany", "Western Europe"} <= set(france.links)
    assert "Atlantic Ocean" in france.links  # a full-article title of the sample
    assert "France" not in france.links
    odyssey = pages["2001: A Space Odyssey"]
    assert {"Stanley Kubrick", "Arthur C. Clarke"} <= set(odyssey.links)
    assert "Rain" not in odyssey.links  # "Douglas Rain" is a person, not the weather
    assert odyssey.categories == ("Arts",)


def test_bench_ingest_quick_runs():
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_ingest", "--quick"], capture_output=True, text=True, timeout=900
    )
    assert out.returncode == 0, out.stderr
    assert "ours / wikiextractor" in out.stdout and "peak RSS MB" in out.stdout
