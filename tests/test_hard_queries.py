"""The hard retrieval query set of ``benchmarks/bench_hard_retrieval.py``: the hand-written lead paraphrases load,
hide their page's title, and every query falls into the same half on every run (fast; no index, no dense)."""

from __future__ import annotations

import json
import re

import pytest

from benchmarks.bench_hard_retrieval import load_hard_queries, load_leads, split_of
from simweb_core.errors import ConfigError
from wiki_index.search.hybrid import HybridSearcher, rrf
from wiki_index.types import Hit

STOP = {"the", "and", "of", "de", "la", "in", "a", "an"}


def _words(text: str) -> set[str]:
    """Lower-cased word stems (a trailing plural ``s`` dropped), short words and stopwords left out."""
    return {w.rstrip("s") for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2 and w not in STOP}


def test_fifty_lead_paraphrases_share_no_title_word() -> None:
    leads = load_leads()
    assert len(leads) == 50
    assert len({r["title"] for r in leads}) == 50
    for r in leads:
        assert set(r) == {"query", "title"} and r["query"].strip()
        assert not _words(r["title"]) & _words(r["query"]), r


def test_split_is_deterministic_and_roughly_half() -> None:
    rows = load_hard_queries(None)
    assert [r["source"] for r in rows] == ["lead"] * 50
    again = load_hard_queries(None)
    assert [r["split"] for r in rows] == [r["split"] for r in again] == [split_of(r["query"]) for r in rows]
    assert split_of("Denver") == split_of("Denver") and {split_of(f"q{i}") for i in range(20)} == {"tune", "report"}
    assert 15 <= sum(r["split"] == "tune" for r in rows) <= 35


def test_task_records_give_question_and_clue_queries(tmp_path) -> None:
    rec = {
        "question": "Name this  region.",
        "answer": "Korea",
        "answer_url": "https://en.wikipedia.org/wiki/South_Korea",
        "clues": [
            {"query": "region East Asia", "entity": "Korea"},
            {"query": "China", "entity": "China"},
            {"query": "region East Asia", "entity": "Korea"},
        ],
    }
    f = tmp_path / "t.jsonl"
    f.write_text(json.dumps(rec) + "\n")
    rows = load_hard_queries(f)
    assert [(r["source"], r["query"], r["title"]) for r in rows[:2]] == [
        ("question", "Name this region.", "South Korea"),
        ("clue", "region East Asia", "Korea"),
    ]
    assert len(rows) == 52  # the named clue ("China" -> China) and the duplicate are left out


def test_weighted_rrf_defaults_to_plain_rrf() -> None:
    a, b = [Hit("x", 1.0), Hit("y", 0.5)], [Hit("y", 1.0), Hit("z", 0.5)]
    assert rrf([a, b], 3, 60) == rrf([a, b], 3, 60, [1.0, 1.0])
    assert rrf([a, b], 3, 0, [1.0, 3.0])[0].docid == "y"
    assert rrf([a, b], 3, 0, [3.0, 0.0])[0].docid == "x"
    with pytest.raises(ConfigError):
        HybridSearcher(object(), object(), dense_weight=-1.0)  # type: ignore[arg-type]
