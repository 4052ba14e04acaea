"""The synthetic corpus generator of ``benchmarks.bench_growth``: distinct pages, new names per copy, real words kept."""

from __future__ import annotations

import json

import pytest

from benchmarks.bench_growth import (
    Renamer,
    _repeat_copy,
    leads,
    pages,
    pseudo_name,
    write_corpus,
)


@pytest.fixture(scope="module")
def base() -> list[tuple[str, str]]:
    return leads()


@pytest.fixture(scope="module")
def three_copies(base) -> list[tuple[str, str]]:
    return list(pages(3 * len(base)))


def test_copy_zero_is_the_lead_and_later_copies_rename_proper_nouns_only(base, three_copies) -> None:
    n, got = len(base), three_copies
    assert got[:n] == base
    renamer = Renamer([t for _, t in base] + [t for t, _ in base])
    for i in (n, n + 1, 2 * n + 3):
        (title, text), (orig_title, orig_text) = got[i], base[i % n]
        r = i // n
        assert title == f"{renamer.text(orig_title, r)} ({r})"
        words, orig_words = text.split(), orig_text.split()
        assert len(words) == len(orig_words)
        kept = [w == o for w, o in zip(words, orig_words)]
        assert all(k for w, k in zip(orig_words, kept) if w[:1].islower())  # lower-case words stay
    einstein = next(i for i, (t, _) in enumerate(base) if t == "Albert Einstein")
    copy = got[n + einstein]
    assert "Einstein" not in copy[0] + copy[1] and "theory of relativity" in copy[1]


def test_titles_are_unique_and_the_vocabulary_grows_with_copies(base, three_copies) -> None:
    n, got = len(base), three_copies
    assert len({t for t, _ in got}) == len(got)
    vocab = [set(), set(), set()]
    for i, (_, text) in enumerate(got):
        vocab[i // n].update(text.split())
    assert len(vocab[1] - vocab[0]) > 10_000 and len(vocab[2] - vocab[1] - vocab[0]) > 10_000


def test_the_generators_are_deterministic_and_the_repeat_one_is_kept(tmp_path, base) -> None:
    assert pseudo_name("Paris", 3) == pseudo_name("Paris", 3) != pseudo_name("Paris", 4)
    assert Renamer([base[0][1]]).text("Paris is big", 5) == f"{pseudo_name('Paris', 5)} is big"
    title, text = _repeat_copy(*base[1], 1)
    assert title == f"{base[1][0]} (1)" and text != base[1][1]
    passages = write_corpus(tmp_path / "c.jsonl", 20)
    lines = [json.loads(line) for line in (tmp_path / "c.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(lines) == passages and {rec["title"] for rec in lines} == {t for t, _ in base[:20]}
    with pytest.raises(ValueError, match="generator must be one of"):
        next(pages(1, "other"))
