"""Deterministic, goal-conditioned extraction: the sim summariser behind ``visit`` and snippets.

Passages of a page are ranked against the goal with BM25 computed over the page's own passages
(so rare goal words weigh more); the summary is the best-matching sentences of the evidence,
kept in page order. No model, no randomness: the same page and goal always give the same text.
"""

from __future__ import annotations

import math
import re
from collections import _count_elements  # type: ignore[attr-defined]  # Counter's C counting loop, into a plain dict
from collections.abc import Sequence
from functools import lru_cache
from typing import NamedTuple

from wiki_index.parse.text import split_sentences, tokenize

STOPWORDS = frozenset(
    "a an the of in on at to for from by with and or is are was were be been being as that this these those it its "
    "what which who whom whose when where why how do does did find information about page user goal please "
    "i me my we you your he she they them his her their not no yes".split()
)


def terms(text: str) -> list[str]:
    """Content-word tokens of ``text`` (lower-cased, stopwords removed)."""
    return [t for t in tokenize(text) if t not in STOPWORDS]


def bm25_rank(query: str, docs: list[str], k1: float = 1.2, b: float = 0.75) -> list[float]:
    """BM25 scores of ``docs`` for ``query`` with statistics from ``docs`` themselves.

    Only the query's terms are counted (``list.count`` per term and document), which is what the
    formula reads; the sums run over the query terms in ``set`` order, as they always have, so
    the scores are the same floats bit for bit.
    """
    return _bm25(query, [terms(d) for d in docs], k1, b)


def _bm25(
    query: str, toks: list[list[str]] | tuple[tuple[str, ...], ...], k1: float = 1.2, b: float = 0.75
) -> list[float]:
    """:func:`bm25_rank` on documents already split into :func:`terms`."""
    q = _query_terms(query)
    if not q or not toks:
        return [0.0] * len(toks)
    n = len(toks)
    avg = sum(len(t) for t in toks) / n or 1.0
    tfs = [[t.count(w) for w in q] for t in toks]
    idf = []
    for j in range(len(q)):
        df = sum(1 for tf in tfs if tf[j])
        idf.append(math.log(1 + (n - df + 0.5) / (df + 0.5)))
    scores = []
    for t, tf in zip(toks, tfs):
        s = 0.0
        for j, c in enumerate(tf):
            if c:
                s += idf[j] * c * (k1 + 1) / (c + k1 * (1 - b + b * len(t) / avg))
        scores.append(s)
    return scores


@lru_cache(maxsize=1024)
def _query_terms(query: str) -> tuple[str, ...]:
    """The distinct :func:`terms` of a query, in ``set`` order: a search scores its 10 snippets with one query."""
    return tuple(set(terms(query)))


class _Sentences(NamedTuple):
    """A passage's sentences, each one's word counts and number of :func:`terms`, their mean (as :func:`_bm25`
    counts them), and the passage's vocabulary.

    The words are :func:`~wiki_index.parse.text.tokenize`'s, stopwords kept: a query's terms are never stopwords,
    so a word's count is its count among the sentence's terms, and a query word outside ``vocab`` scores nothing.
    Only tuples, strings, numbers and flat dicts: the garbage collector stops tracking a cached entry.
    """

    sents: tuple[str, ...]
    counts: tuple[dict[str, int], ...]
    lens: tuple[int, ...]
    avg: float
    vocab: dict[str, int]


#: UTF-8 bytes to what :func:`~wiki_index.parse.text.tokenize` reads: ASCII word characters lower-cased, other ASCII
#: a space, the bytes of non-ASCII characters as they are.
_WORD_BYTES = bytes(ord(chr(c).lower()) if chr(c).isalnum() or c == 95 else 32 for c in range(128)) + bytes(
    range(128, 256)
)
_NON_ASCII_NON_WORD = re.compile(r"[^\x00-\x7f\w]")


def _word_text(text: str) -> str | None:
    """``text`` lower-cased with every non-word character a space, character for character (so a sentence's words
    are its slice, split), or ``None`` where lower-casing changes the length (a dotted capital I, say).

    ASCII goes through one byte table; only the non-ASCII characters are left to a regex.
    """
    if text.isascii():
        return text.encode("ascii").translate(_WORD_BYTES).decode("ascii")
    low = text.lower()
    if len(low) != len(text):
        return None
    mapped = low.encode("utf-8", "surrogatepass").translate(_WORD_BYTES).decode("utf-8", "surrogatepass")
    return _NON_ASCII_NON_WORD.sub(" ", mapped)


def _sentence_words(text: str, sents: list[str]) -> list[list[str]]:
    """Each sentence's :func:`~wiki_index.parse.text.tokenize` words, from one pass over the whole passage.

    The sentences are consecutive pieces of ``text`` with only whitespace between them, so each is found after
    the one before and its words are its slice of :func:`_word_text` (lower-casing has no context across
    whitespace); a passage that lower-casing lengthens is tokenised sentence by sentence.
    """
    flat = _word_text(text)
    if flat is None:
        return [tokenize(s) for s in sents]
    out, end = [], 0
    for s in sents:
        start = text.find(s, end)
        if start < 0:  # a splitter that rewrote a sentence: its words from the sentence itself
            out.append(tokenize(s))
            continue
        end = start + len(s)
        out.append(flat[start:end].split())
    return out


@lru_cache(maxsize=8192)
def _sentence_terms(text: str) -> _Sentences:
    """A passage's sentences and their word counts, kept for the passages searched most (keyed by the text).

    Tokenising the 10 result passages would be most of a search step's cost beyond Lucene, and the same passages
    come back across a rollout group's queries and across rollouts, so many lookups hit (the search step against
    a raw pyserini search: ``benchmarks/bench_env.py``). Full, the cache holds some tens of MiB (one per process,
    shared by its envs); on a big corpus its hits come mostly from repeated passages.
    """
    sents = split_sentences(text) or [text]
    counts, lens, vocab = [], [], {}
    for words in _sentence_words(text, sents):
        count: dict[str, int] = {}
        _count_elements(count, words)
        counts.append(count)
        lens.append(len(words) - sum(map(STOPWORDS.__contains__, words)))
        vocab.update(count)
    return _Sentences(tuple(sents), tuple(counts), tuple(lens), sum(lens) / len(lens) or 1.0, vocab)


def _sentence_scores(query: str, p: _Sentences, k1: float = 1.2, b: float = 0.75) -> list[float]:
    """:func:`_bm25` of ``query`` over ``p``'s sentences, the same floats: each sentence adds its terms in the
    query's ``set`` order, and a query word that is not in the passage adds nothing."""
    _, counts, lens, avg, vocab = p
    n = len(counts)
    scores = [0.0] * n
    for w in _query_terms(query):
        if w in vocab:
            hits = [(i, count[w]) for i, count in enumerate(counts) if w in count]
            idf = math.log(1 + (n - len(hits) + 0.5) / (len(hits) + 0.5))
            for i, c in hits:
                scores[i] += idf * c * (k1 + 1) / (c + k1 * (1 - b + b * lens[i] / avg))
    return scores


def top_indices(scores: list[float], n: int) -> list[int]:
    """Indices of the ``n`` best scores (ties to the earlier index), returned in ascending index order."""
    best = sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:n]
    return sorted(best)


def snippet(text: str, query: str, max_chars: int = 240) -> str:
    """A search-result snippet: the window of sentences of ``text`` that best matches ``query``."""
    p = _sentence_terms(text)
    return window(p.sents, _sentence_scores(query, p), max_chars)


def window(sents: Sequence[str], scores: Sequence[float], max_chars: int) -> str:
    """The best-scoring sentence (the earlier on ties) and those after it that fit in ``max_chars``, cut at a word
    with " ..." when the first sentence alone is longer."""
    start = max(range(len(sents)), key=lambda i: (scores[i], -i))
    out = sents[start]
    for s in sents[start + 1 :]:
        if len(out) + 1 + len(s) > max_chars:
            break
        out = f"{out} {s}"
    if len(out) > max_chars:
        out = out[:max_chars].rsplit(" ", 1)[0] + " ..."
    return out


def summarize(sentences: list[str], goal: str, n: int = 3) -> str:
    """The ``n`` sentences that best match ``goal``, in their original order."""
    if not sentences:
        return ""
    scores = bm25_rank(goal, sentences)
    if not any(scores):
        return " ".join(sentences[:n])
    return " ".join(sentences[i] for i in top_indices(scores, n) if scores[i] > 0)
