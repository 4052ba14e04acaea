"""Deterministic, goal-conditioned extraction: the sim summariser behind ``visit`` and snippets.

Passages of a page are ranked against the goal with BM25 computed over the page's own passages
(so rare goal words weigh more); the summary is the best-matching sentences of the evidence,
kept in page order. No model, no randomness: the same page and goal always give the same text.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

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


@dataclass(frozen=True)
class _Sentences:
    """A passage's sentences, their :func:`terms`, each one's set of terms and the terms' mean count per sentence (as
    :func:`_bm25` computes it): a snippet counts a query word only in the sentences whose set has it."""

    sents: tuple[str, ...]
    toks: tuple[tuple[str, ...], ...]
    sets: tuple[frozenset[str], ...]
    avg: float


@lru_cache(maxsize=8192)
def _sentence_terms(text: str) -> _Sentences:
    """A passage's sentences and their :func:`terms`, kept for the passages searched most (keyed by the text).

    Tokenising the 10 result passages would be most of a search step's cost beyond Lucene, and the same passages
    come back across a rollout group's queries and across rollouts, so many lookups hit (the search step against
    a raw pyserini search: ``benchmarks/bench_env.py``). Full, the cache holds some tens of MiB (one per
    process, shared by its envs); on a big corpus its hits come mostly from repeated passages.
    """
    sents = tuple(split_sentences(text) or [text])
    toks = tuple(tuple(terms(s)) for s in sents)
    avg = sum(len(t) for t in toks) / len(toks) or 1.0
    return _Sentences(sents, toks, tuple(map(frozenset, toks)), avg)


def _sentence_scores(query: str, p: _Sentences, k1: float = 1.2, b: float = 0.75) -> list[float]:
    """:func:`_bm25` of ``query`` over ``p``'s sentences, the same floats (each sentence adds its terms in the
    query's ``set`` order), counting a term only where the sentence's set has it."""
    q = _query_terms(query)
    n = len(p.toks)
    rows = [[(j, t.count(w)) for j, w in enumerate(q) if w in s] for t, s in zip(p.toks, p.sets)]
    df = [0] * len(q)
    for row in rows:
        for j, _ in row:
            df[j] += 1
    idf = [math.log(1 + (n - d + 0.5) / (d + 0.5)) for d in df]
    scores = []
    for t, row in zip(p.toks, rows):
        s = 0.0
        for j, c in row:
            s += idf[j] * c * (k1 + 1) / (c + k1 * (1 - b + b * len(t) / p.avg))
        scores.append(s)
    return scores


def top_indices(scores: list[float], n: int) -> list[int]:
    """Indices of the ``n`` best scores (ties to the earlier index), returned in ascending index order."""
    best = sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:n]
    return sorted(best)


def snippet(text: str, query: str, max_chars: int = 240) -> str:
    """A search-result snippet: the window of sentences of ``text`` that best matches ``query``."""
    p = _sentence_terms(text)
    sents, scores = p.sents, _sentence_scores(query, p)
    start = max(range(len(sents)), key=lambda i: (scores[i], -i))
    out = sents[start]
    for s in sents[start + 1 :]:
        if len(out) + 1 + len(s) > max_chars:
            break
        out = f"{out} {s}"
    if len(out) > max_chars:
        cut = out[:max_chars].rsplit(" ", 1)[0]
        out = cut + " ..."
    return out


def summarize(sentences: list[str], goal: str, n: int = 3) -> str:
    """The ``n`` sentences that best match ``goal``, in their original order."""
    if not sentences:
        return ""
    scores = bm25_rank(goal, sentences)
    if not any(scores):
        return " ".join(sentences[:n])
    return " ".join(sentences[i] for i in top_indices(scores, n) if scores[i] > 0)
