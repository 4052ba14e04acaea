"""A served worker's warm-up: open the local index, then run varied searches until Lucene's JIT has settled.

Measured with ``benchmarks/bench_server.py`` (issue 14): after 10 s of warm-up load and 25,000 calls, a worker's
JVM still met query shapes its compiled Lucene code had not seen. The JIT then threw away its compiled search
methods and recompiled them (``-Xlog:deoptimization`` shows the trap, e.g. ``DataInput.readVInt`` on a posting
list larger than any before), and a C2 compiler thread took 35-65% of a core for about a second. At 80% of
capacity that left less CPU than the calls needed, and calls queued for 1-5 s: 100-140 ms latencies. Full
``bench_server`` runs, alternating: p99 at 80% of capacity 10.2x and 6.1x the single-request p50 with 3,000
warm-up searches, 36.4x without (a first version that warmed up through the sim backend's search: 6.5x, 6.8x and
10.4x against 50.7x, 28.1x and 42.0x); the warm-up takes ~6.5 s with 2 workers on 2 cores.

:func:`warm_index` runs ``searches`` BM25 searches built from the corpus itself (page leads, titles and word spans
of the first passages, so rare and common terms, short and long queries) on the index, whatever the served
retrieval mode (a dense or hybrid index is not made to encode its passages at start-up), before the worker
takes connections.
"""

from __future__ import annotations

import logging
import time
from typing import Any

log = logging.getLogger(__name__)
#: Searches a served worker runs before it takes connections (``sim-web serve --warm-searches``).
DEFAULT_WARM_SEARCHES = 3000


def warm_queries(store: Any, n: int) -> list[str]:
    """``n`` varied queries from the corpus: in turn a page lead (up to 25 words), a title and a 3-word span.

    Args:
        store: The index's page store (:class:`wiki_index.store.store.Store`).
        n: How many queries.
    """
    out: list[str] = []
    for title, text in store.first_passages((n + 2) // 3):
        words = text.split()
        middle = len(words) // 2
        out += [" ".join(words[:25]), title, " ".join(words[middle:middle + 3])]
    return [q for q in out if q.strip()][:n]


def warm_index(backends: list[Any], searches: int = 0) -> None:
    """Open what the first search and visit of a local index would open (the JVM and Lucene searcher, the passage
    columns, the title lookup, the page store), so that a worker's first request is not ~1.5 s slower than the rest;
    then run ``searches`` varied searches, so that its JIT has compiled the search paths before the first client.

    Only BM25 is touched: a dense or hybrid index may still have to encode its passages, and that happens on first
    use, with its own message. Remote and real-web backends are left alone (nothing is sent anywhere).

    Args:
        backends: The executor's backends; the sim backend, or the real backends' Wikipedia fallback, holds the index.
        searches: Varied BM25 searches to run on the index (0: only open the index).
    """
    for backend in backends:
        index = getattr(getattr(backend, "sim", backend), "index", None)  # SimBackend, or WikipediaFallback(sim)
        if index is None or not hasattr(index, "search"):
            continue
        index.search("warm up", 1, "bm25")
        index.titles.lookup("warm up")
        index.store.resolve("warm up")
        index.passages(0)
        if searches > 0:
            start = time.perf_counter()
            queries = warm_queries(index.store, searches)
            for q in queries:  # BM25 whatever the served mode, at the depth of a 10-result page (3 passages a page)
                index.search(q, 30, "bm25")
            log.info("warmed up with %d searches in %.1f s", len(queries), time.perf_counter() - start)
