"""Opening indexes, the three search modes, the manifest checks and the ``wiki-index`` CLI."""

import json
import shutil
import subprocess
import sys

import pytest

from simweb_core.errors import ConfigError, IndexMismatchError, IndexNotFoundError
from wiki_index import Hit
from wiki_index.search.hybrid import rrf
from wiki_index.search.index import WikiIndex


def titles(results) -> list[str]:
    return [p.title for _, p in results]


def test_bm25_finds_known_articles_on_the_sample(sample_index):
    ix = WikiIndex.from_dir(sample_index)
    assert ix.manifest["counts"]["pages"] > 10_000 and not ix.has_dense
    assert "Albert Einstein" in titles(ix.search("Einstein theory of relativity physicist", 5))
    assert titles(ix.search("Anarchism political philosophy", 3))[0] == "Anarchism"  # a full article of the dump
    # the one Searcher protocol: search, batch_search, doc agree with each other
    hits = ix.bm25.search("Mount Everest highest mountain", 5)
    batch = ix.bm25.batch_search(["Mount Everest highest mountain", "", "Danube river"], 5, threads=2)
    assert [h.docid for h in batch[0]] == [h.docid for h in hits] and batch[1] == [] and batch[2]
    p = ix.bm25.doc(hits[0].docid)
    assert p is not None and p == ix.store.passage(hits[0].docid)
    assert ix.bm25.doc("no-such-docid") is None and ix.bm25.search("   ", 5) == []


def test_dense_and_hybrid_find_a_known_article(tiny_dense_index):
    ix = WikiIndex.from_dir(tiny_dense_index)
    assert ix.has_dense and ix.manifest["dense"]["count"] == ix.manifest["counts"]["passages"]
    target = ix.store.page_info(ix.store.page_ids()[40]).title
    lead = ix.store.page_by_title(target).first_sentence
    query = lead.replace(target, "").strip()[:200]  # a paraphrase-free but title-free description
    for mode in ("bm25", "dense", "hybrid"):
        got = titles(ix.search(query, 10, mode))
        assert target in got, (mode, query, got)
    # dense scores are cosine similarities, best first
    hits = ix.dense.search(query, 5)
    assert all(-1.0001 <= h.score <= 1.0001 for h in hits) and hits == sorted(hits, key=lambda h: -h.score)
    assert ix.dense.batch_search(["", query], 3)[0] == []
    assert ix.hybrid.doc(hits[0].docid).docid == hits[0].docid


def test_dense_is_encoded_on_first_dense_use_and_recorded(vital_leads, tmp_path, monkeypatch, capsys):
    from wiki_index.build import BuildConfig, build_index

    monkeypatch.setenv("SIM_WEB_HOME", str(tmp_path / "home"))
    data = json.loads(vital_leads.read_text(encoding="utf-8"))
    corpus = tmp_path / "small.jsonl"
    with corpus.open("w", encoding="utf-8") as f:
        for i, (_, rec) in enumerate(sorted(data.items())[:30]):
            f.write(json.dumps({"id": f"d{i}", "title": rec["title"], "text": rec["extract"]}) + "\n")
    path = build_index(corpus, tmp_path / "ix", BuildConfig(dense=False))
    ix = WikiIndex.from_dir(path)
    assert not ix.has_dense and ix.manifest["dense"] is None
    target = ix.store.page_info(ix.store.page_ids()[7]).title
    assert target in titles(ix.search(target, 5, "hybrid"))  # encodes now, once
    assert "no dense index yet" in capsys.readouterr().err
    again = WikiIndex.from_dir(path)  # the manifest records it: the next process reuses it
    assert again.has_dense and again.manifest["dense"]["count"] == again.manifest["counts"]["passages"]
    stamp = (path / "dense" / "index.faiss").stat().st_mtime_ns
    assert titles(again.search(target, 5, "dense")) and (path / "dense" / "index.faiss").stat().st_mtime_ns == stamp


def test_rrf_fuses_and_breaks_ties_by_docid():
    a = [Hit("x", 9.0), Hit("y", 8.0), Hit("z", 7.0)]
    b = [Hit("y", 0.9), Hit("w", 0.8)]
    fused = rrf([a, b], k=3, rrf_k=60)
    assert [h.docid for h in fused] == ["y", "x", "w"]  # y: 1/62 + 1/61 beats x: 1/61; w and z tie at 1/62, 1/63
    assert fused[0].score == pytest.approx(1 / 62 + 1 / 61)
    assert [h.docid for h in rrf([[Hit("b", 1)], [Hit("a", 1)]], k=2)] == ["a", "b"]


def test_missing_incomplete_and_mismatched_indexes_say_how_to_rebuild(sample_index, tmp_path):
    with pytest.raises(IndexNotFoundError, match="wiki-index build sample --out"):
        WikiIndex.from_dir(tmp_path / "nope")
    half = tmp_path / "half"
    half.mkdir()
    with pytest.raises(IndexNotFoundError, match="interrupted build"):
        WikiIndex.from_dir(half)
    copy = tmp_path / "copy"
    shutil.copytree(sample_index, copy, ignore=shutil.ignore_patterns("bm25", "store.duckdb"))
    m = json.loads((copy / "manifest.json").read_text())
    (copy / "manifest.json").write_text(json.dumps({**m, "format": "sim-web-index/0"}))
    with pytest.raises(IndexMismatchError, match="rebuild|Rebuild"):
        WikiIndex.from_dir(copy)
    (copy / "manifest.json").write_text(json.dumps({**m, "complete": False}))
    with pytest.raises(IndexNotFoundError, match="incomplete"):
        WikiIndex.from_dir(copy)
    ix = WikiIndex.from_dir(sample_index)
    with pytest.raises(ConfigError, match="bm25"):
        ix.searcher("splade")


def test_cli_build_search_info_end_to_end(vital_leads, tmp_path):
    data = json.loads(vital_leads.read_text(encoding="utf-8"))
    corpus = tmp_path / "small.jsonl"
    with corpus.open("w", encoding="utf-8") as f:
        for i, (_, rec) in enumerate(sorted(data.items())[:60]):
            f.write(json.dumps({"id": f"d{i}", "title": rec["title"], "text": rec["extract"]}) + "\n")
        f.write("{not json\n")
    out = tmp_path / "ix"
    cli = [sys.executable, "-m", "wiki_index.cli"]
    r = subprocess.run([*cli, "build", str(corpus), "--out", str(out), "--no-dense"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "index ready" in r.stdout and "skipped 1" in r.stdout
    first = sorted(data.values(), key=lambda rec: rec["title"])[0]["title"]
    r = subprocess.run(
        [*cli, "search", str(out), first, "-k", "3", "--json"], capture_output=True, text=True, check=True
    )
    got = json.loads(r.stdout)
    assert got[0]["title"] == first and got[0]["url"].startswith("https://en.wikipedia.org/wiki/")
    r = subprocess.run([*cli, "info", str(out), "--json"], capture_output=True, text=True, check=True)
    m = json.loads(r.stdout)
    assert m["stats"]["skipped_reasons"] == {"bad_json": 1} and m["counts"]["pages"] == 60
    r = subprocess.run([*cli, "search", str(tmp_path / "missing"), "x"], capture_output=True, text=True)
    assert r.returncode == 2 and "wiki-index build" in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run([*cli, "build", str(tmp_path / "corpus.txt")], capture_output=True, text=True)
    assert r.returncode == 2 and "unknown corpus" in r.stderr


def test_cli_build_passes_the_faiss_knobs_to_the_dense_config(monkeypatch, tmp_path, capsys):
    from wiki_index import build, cli

    seen = []
    monkeypatch.setattr(build, "build_index", lambda source, out, cfg: seen.append(cfg.dense_config) or out)
    monkeypatch.setattr(cli, "_info", lambda args: 0)
    argv = [
        "build",
        "--out",
        str(tmp_path),
        "--index-type",
        "ivfpq",
        "--pq-m",
        "96",
        "--nprobe",
        "64",
        "--hnsw-ef-search",
        "200",
    ]
    assert cli.main(argv) == 0
    got = seen[0]
    assert (got.index_type, got.pq_m, got.nprobe, got.hnsw_ef_search, got.hnsw_m) == ("ivfpq", 96, 64, 200, 32)
    assert cli.main(["build", "--out", str(tmp_path), "--nprobe", "0"]) == 2  # DenseConfig's own check, as an error
    assert "must be >= 1" in capsys.readouterr().err


def test_cli_build_flags_take_their_help_and_default_from_the_config_fields():
    from dataclasses import replace

    from simweb_core.cli import field_help
    from wiki_index import cli
    from wiki_index.build import BuildConfig
    from wiki_index.search.dense import DenseConfig

    build = next(a for a in cli.make_parser()._actions if a.dest == "cmd").choices["build"]
    helps = {opt: a.help for a in build._actions for opt in a.option_strings}
    # no flag given: BuildConfig's defaults, but for the dense index, encoded on first use
    assert cli.build_config(build.parse_args([])) == replace(BuildConfig(), dense=False) == cli.cli_base()
    assert helps["--nprobe"] == f"{field_help(DenseConfig, 'nprobe')} (default: {DenseConfig().nprobe})"
    assert helps["--chunk-words"].endswith(f"(default: {BuildConfig().chunk.words})")
    assert helps["--dense"].endswith("(default: False)")
    for flag, spec in cli.BUILD_FLAGS.items():
        path = spec if isinstance(spec, str) else spec[0]
        value = cli.cli_base()
        for part in path.split("."):
            value = getattr(value, part)
        assert helps[flag].endswith(f"(default: {value})"), flag
    assert cli.build_config(build.parse_args(["--title-boost", "0.5", "--dense"])) == replace(
        BuildConfig(), title_boost=0.5
    )


def test_concurrent_searches_from_many_threads_are_safe_and_identical(sample_index):
    """Regression: unserialised pyjnius calls from server threads crashed the JVM (SIGSEGV in Document.get)."""
    from concurrent.futures import ThreadPoolExecutor

    ix = WikiIndex.from_dir(sample_index)
    queries = [p.title for p in next(ix.store.iter_passages(300))]
    expected = [[(h.docid, p.text) for h, p in ix.bm25.search_passages(q, 10)] for q in queries]
    with ThreadPoolExecutor(16) as pool:
        got = list(pool.map(lambda q: [(h.docid, p.text) for h, p in ix.bm25.search_passages(q, 10)], queries * 3))
        firsts = [r[0][0] for r in expected if r]
        docs = list(pool.map(lambda d: ix.bm25.doc(d).docid, firsts * 2))
    assert got == expected * 3 and len(firsts) > 250 and docs == firsts * 2


def test_title_lookup_agrees_with_the_store_and_is_cached(sample_index, tmp_path):
    from wiki_index.store.titles import TitleLookup, title_key

    ix = WikiIndex.from_dir(sample_index)
    st = ix.store
    cache = tmp_path / "titles.npz"
    tl = TitleLookup(st, cache)
    assert cache.is_file() and len(tl) >= st.counts()["pages"]
    redirect, target = min(st.redirect_targets())
    cases = [
        "Albert Einstein",
        "albert einstein",
        "ALBERT EINSTEIN",
        "Albert_Einstein",
        redirect,
        "no such page at all",
        "",
        "x" * 300,
        "Einstein theory of relativity",
    ]
    for text in cases:
        assert tl.lookup(text) == (
            st.resolve(text) if text.lower() != "albert einstein" else st.resolve("Albert Einstein")
        ), text
    assert tl.lookup(redirect) == target and tl.lookup("x" * 300) is None
    again = TitleLookup(st, cache)  # read back from the cache file
    assert (again.keys == tl.keys).all() and (again.ids == tl.ids).all()
    assert title_key("paris") == title_key("Paris") != title_key("Paris, Texas")
