"""The passage columns and the direct Lucene path: the same passages, ranking and scores as Lucene's stored JSON."""

from __future__ import annotations

import json
import math
import shutil

import numpy as np

from wiki_index.search.bm25 import adjust_ties, passage_from_raw
from wiki_index.search.index import WikiIndex


def _java_adjust(scores: list[float]) -> list[float]:
    """A line-by-line float32 port of Anserini's ScoreTiesAdjusterReranker loop (the reference)."""
    out = [np.float32(math.floor(s * 1e4 + 0.5) / 1e4) for s in scores]  # Java Math.round: half up
    dup = 0
    for i in range(len(out)):
        if i == 0 or out[i - 1] - out[i] > np.float32(1e-4):
            dup = 0
        else:
            dup += 1
            out[i] = np.float32(out[i] - np.float32(1e-6) * np.float32(dup))
    return [float(x) for x in out]


def test_adjust_ties_matches_anserini_rounding_and_tie_breaking() -> None:
    cases = [
        [],
        [3.5],
        [23.439316, 22.087432, 22.087432, 22.087432, 21.602508],
        [5.00001, 5.00002, 4.9],
        [1.23456789] * 4,
    ]
    for scores in cases:
        assert adjust_ties(scores) == _java_adjust(scores)


def test_columns_hold_exactly_the_passages_lucene_stores(sample_index) -> None:
    index = WikiIndex.from_dir(sample_index)
    reader = index.bm25._direct()[0]
    stored = reader.storedFields()
    assert len(index.columns) == reader.maxDoc() == index.manifest["bm25"]["count"]
    docs = list(range(0, reader.maxDoc(), 7)) + [reader.maxDoc() - 1]
    assert index.columns.passages(docs) == [passage_from_raw(stored.document(d).get("raw")) for d in docs]


def test_bm25_search_through_columns_equals_the_stored_json_path(sample_index) -> None:
    index = WikiIndex.from_dir(sample_index)
    passages = [p for batch in index.store.iter_passages() for p in batch][::60]
    queries = [p.title for p in passages] + [" ".join(p.text.split()[:6]) for p in passages]
    queries += ["", "   ", "the of and", "Religion", "einstein relativity", "a b c d e f g"]
    for q in queries:
        assert index.search(q, 30) == index.bm25.search_passages(q, 30), q


def test_missing_or_stale_columns_are_rebuilt_on_first_search(sample_index, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SIM_WEB_HOME", str(tmp_path / "home"))
    copy = tmp_path / "old"
    shutil.copytree(sample_index, copy, ignore=shutil.ignore_patterns("columns"))
    expected = WikiIndex.from_dir(sample_index).search("theory of relativity", 30)
    assert WikiIndex.from_dir(copy).search("theory of relativity", 30) == expected
    meta = json.loads((copy / "columns" / "meta.json").read_text())
    assert meta["content_sha256"] == WikiIndex.from_dir(copy).manifest["content_sha256"]
    meta["content_sha256"] = "0" * 64  # columns of another build of the index
    (copy / "columns" / "meta.json").write_text(json.dumps(meta))
    assert WikiIndex.from_dir(copy).search("theory of relativity", 30) == expected
    assert json.loads((copy / "columns" / "meta.json").read_text())["content_sha256"] != "0" * 64


def test_an_opt_in_title_field_ranks_the_same_on_both_paths(vital_leads, tmp_path) -> None:
    from wiki_index.build import BuildConfig, build_index

    data = json.loads(vital_leads.read_text(encoding="utf-8"))
    corpus = tmp_path / "small.jsonl"
    with corpus.open("w", encoding="utf-8") as f:
        for i, (_, rec) in enumerate(sorted(data.items())[:40]):
            f.write(json.dumps({"id": f"d{i}", "title": rec["title"], "text": rec["extract"]}) + "\n")
    index = WikiIndex.from_dir(build_index(corpus, tmp_path / "ix", BuildConfig(dense=False, title_boost=2.0)))
    assert index.manifest["bm25"]["title_boost"] == 2.0 and index.bm25.title_boost == 2.0
    titles = [index.store.page_info(pid).title for pid in index.store.page_ids()]
    for q in titles + [f"{t.split()[-1]} history" for t in titles]:
        assert index.search(q, 10) == index.bm25.search_passages(q, 10), q
        assert [h.docid for h, _ in index.search(q, 10)] == [h.docid for h in index.bm25.search(q, 10)]
    assert index.search(titles[3], 1)[0][1].title == titles[3]
