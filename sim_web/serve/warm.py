"""A served worker's warm-up: open the local index, then run varied searches until Lucene's JIT has settled.

Why: a fresh worker's JVM keeps meeting query shapes its compiled Lucene code has not seen (e.g.
``DataInput.readVInt`` on a posting list longer than any before) long after its first calls. Each time, the JIT
throws its compiled search methods away and compiles them again (``-Xlog:deoptimization`` shows the trap), and a
C2 compiler thread takes a large share of a core meanwhile. Under load that leaves less CPU than the calls need,
calls queue, and the latency tail grows several-fold. Meeting those shapes before the worker takes
connections moves the recompilation out of served time (the effect on the tail is measured by
``benchmarks/bench_server.py``; results in docs/benchmarks.md).

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
        out += [" ".join(words[:25]), title, " ".join(words[middle : middle + 3])]
    return [q for q in out if q.strip()][:n]


def warm_index(backends: list[Any], searches: int = 0) -> None:
    """Open what the first search and visit of a local index would open (the JVM and Lucene searcher, the passage
    columns, the title lookup, the page store), so that a worker's first request does not pay for opening them;
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
