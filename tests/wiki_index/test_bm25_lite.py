"""The Java-free BM25 (SIM_WEB_BM25=lite): Anserini's analyzer, Lucene's length norms, and the same top 5 as Lucene."""

import json

import pytest

from wiki_index.search.bm25_lite import LENGTH_TABLE, LiteBM25Searcher, analyze, build_lite, norm_byte


def test_the_analyzer_does_what_anserinis_default_english_analyzer_does():
    # each expected list is what Anserini's DEFAULT_ANALYZER (pyserini 1.6.0) makes of the same text
    cases = {
        "The Technologies of John's U.S. possibly us 7s": ["technolog", "john", "u.", "possibl", "us", "7s"],
        "3.14 and 1,000 but a.1": ["3.14", "1,000", "1"],  # digits join over "." and ","; "a" is a stop word
        "東京タワー": ["東", "京", "タワー"],  # each Han ideograph its own word, Katakana as one
        "apple apple's rock'n'roll foo_bar x86-64 e-mail": [
            *("appl", "appl", "rock'n'rol", "foo_bar", "x86", "64", "e", "mail")
        ],
        "the of and": [],
    }
    for text, terms in cases.items():
        assert analyze(text) == terms, text


def test_lengths_are_stored_as_lucene_stores_its_norms():
    assert [norm_byte(i) for i in range(24)] == list(range(24))  # exact below 24
    assert LENGTH_TABLE[norm_byte(100)] == 96 and LENGTH_TABLE[norm_byte(24)] == 24
    lengths = [int(LENGTH_TABLE[norm_byte(n)]) for n in range(1, 5000)]
    assert lengths == sorted(lengths) and all(x <= n for x, n in zip(lengths, range(1, 5000)))


def test_ties_are_broken_by_passage_id_and_blank_queries_find_nothing(tmp_path):
    texts = ["apple pie", "apple pie", "banana split", "apple apple apple pie"]
    lite = LiteBM25Searcher(build_lite(texts, ["d", "b", "c", "a"], tmp_path / "lite"))
    ranked = lite.search_docs("apple", 10)
    assert [d for d, _ in ranked] == [3, 1, 0]  # the most apples first, then the tie by id: "b" before "d"
    assert ranked[1][1] > ranked[2][1]  # Anserini's tie adjustment lowers the second of a tie
    assert lite.search_docs("   ", 5) == [] and lite.search_docs("durian", 5) == []


@pytest.fixture(scope="module")
def lead_index(tmp_path_factory, vital_leads):
    """150 real Wikipedia leads indexed BM25-only with Lucene (store, Lucene, columns)."""
    from wiki_index.build import BuildConfig, build_index

    data = json.loads(vital_leads.read_text(encoding="utf-8"))
    d = tmp_path_factory.mktemp("leads")
    with (d / "leads.jsonl").open("w", encoding="utf-8") as f:
        for i, (_title, rec) in enumerate(sorted(data.items())[:150]):
            f.write(json.dumps({"id": f"lead{i}", "title": rec["title"], "text": rec["extract"]}) + "\n")
    return build_index(d / "leads.jsonl", d / "index", BuildConfig(dense=False)), data


def test_the_lite_engine_ranks_as_lucene_does(lead_index, monkeypatch):
    from wiki_index.search.bm25_lite import LiteBM25Searcher, lite_stamp
    from wiki_index.search.index import WikiIndex

    path, data = lead_index
    lucene = WikiIndex.from_dir(path)
    monkeypatch.setenv("SIM_WEB_BM25", "lite")
    lite = WikiIndex.from_dir(path)
    assert isinstance(lite.bm25, LiteBM25Searcher)
    stamp = lite_stamp(path / "bm25-lite")  # the postings say which index and columns they were built from
    assert stamp == {
        "content_sha256": lucene.manifest["content_sha256"],
        "columns_commit": lucene.columns.meta["commit"],
    }
    leads = [rec["extract"] for _, rec in sorted(data.items())[:150]]
    queries = [" ".join(text.split()[3:12]) for text in leads[::5]] + ["history of the world", "river in Europe"]
    same = [lucene.bm25.search_docs(q, 5) == lite.bm25.search_docs(q, 5) for q in queries]
    assert sum(same) >= 0.95 * len(queries), [q for q, ok in zip(queries, same) if not ok]
    hits = lite.search("river in Europe", 3)  # through the columns, as the sim backend reads them
    assert [h.docid for h, _ in hits] == [h.docid for h, _ in lucene.search("river in Europe", 3)]


def test_an_unknown_engine_is_a_clear_error(lead_index, monkeypatch):
    from simweb_core.errors import ConfigError
    from wiki_index.search.index import WikiIndex

    monkeypatch.setenv("SIM_WEB_BM25", "elastic")
    with pytest.raises(ConfigError, match="SIM_WEB_BM25 must be one of"):
        _ = WikiIndex.from_dir(lead_index[0]).bm25
