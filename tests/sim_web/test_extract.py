"""Search snippets: the one-pass tokenisation gives the same bytes as the per-sentence algorithm it replaced."""

from __future__ import annotations

import pytest

from sim_web.backends import extract
from wiki_index.parse.text import split_sentences


def reference_snippet(text: str, query: str, max_chars: int = 240) -> str:
    """The snippet as the per-sentence algorithm made it: every sentence tokenised on its own, BM25 over them."""
    sents = split_sentences(text) or [text]
    return extract.window(sents, extract.bm25_rank(query, sents), max_chars)


def sample_pairs(sample_index, n: int = 300) -> list[tuple[str, str]]:
    """``n`` passages spread over the sample (non-ASCII ones included), each with three queries: another page's
    title with words of the passage, a run of the passage's own words, and a sentence of another passage."""
    from wiki_index.search.index import WikiIndex

    passages = [p for batch in WikiIndex.from_dir(sample_index).store.iter_passages(batch=5000) for p in batch]
    picked = passages[:: len(passages) // n][:n]
    pairs = []
    for i, p in enumerate(picked):
        other = picked[(i * 7 + 3) % len(picked)]
        words = p.text.split()
        pairs += [
            (p.text, f"{other.title} {' '.join(words[2:4])}"),
            (p.text, " ".join(words[len(words) // 2 : len(words) // 2 + 6])),
            (p.text, (split_sentences(other.text) or [other.text])[0]),
        ]
    return pairs


def test_snippets_match_the_per_sentence_algorithm_on_sample_pairs(sample_index) -> None:
    extract._sentence_terms.cache_clear()
    pairs = sample_pairs(sample_index)
    assert len(pairs) == 900 and sum(not t.isascii() for t, _ in pairs) >= 30  # both tokenising paths are exercised
    for text, query in pairs:
        assert extract.snippet(text, query) == reference_snippet(text, query), (text, query)
        assert extract.snippet(text, query, 120) == reference_snippet(text, query, 120)
    assert extract._sentence_terms.cache_info().hits > 0  # the second call per pair read the cache


@pytest.mark.parametrize(
    "text",
    [
        "İstanbul is a city. İİ and ΟΔΟΣ ΣΟΦΟΣ. Straße ǅemal ran.",  # lower-casing lengthens: per-sentence path
        "ΟΔΟΣ ΣΟΦΟΣ went home. Σίσυφος—the king’s “stone” rolled… back.",  # final sigma, non-ASCII punctuation
        "Mr. Smith went to Washington D.C. in 1990. He was (briefly) a U.S. senator! Was he? Yes.",
        "a lone \ud800 surrogate. Then words words words.",
        "no sentence end here at all",
        "   ",
        "",
    ],
)
def test_snippets_match_on_hard_text(text: str) -> None:
    for query in ("istanbul city", "σοφοσ stone king", "smith senator he", "words surrogate", "end", "nothing"):
        assert extract.snippet(text, query) == reference_snippet(text, query)


def test_word_text_keeps_positions_or_declines() -> None:
    assert extract._word_text("Hello, World_2!") == "hello  world_2 "
    assert extract._word_text("Café – Ünïcode’s") == "café   ünïcode s"
    assert extract._word_text("İzmir") is None  # "İ".lower() is two characters


def test_a_sentence_not_found_verbatim_is_tokenised_on_its_own():
    from sim_web.backends.extract import _sentence_words

    text = "Alpha beta.  Gamma delta."
    assert _sentence_words(text, ["Alpha beta.", "Gamma  DELTA."]) == [["alpha", "beta"], ["gamma", "delta"]]
