"""Env performance: search-step latency vs raw pyserini, cold ``gym.make`` + ``reset``, steps/s, visit latency.

Run: ``python -m benchmarks.bench_env [--index DIR] [--quick] [--snippet-impl old,new] [--clock wall|cpu]``.

``--snippet-impl old,new`` times the search step once per snippet implementation in the same alternating passes
as the raw search: ``new`` is ``sim_web.backends.extract.snippet``, ``old`` the per-sentence tokenisation it
replaced (kept here only, as the baseline), each with a cache of its own.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from benchmarks.common import ensure_sample_index, table
from sim_web.backends.extract import _query_terms, terms
from wiki_index.parse.text import split_sentences

COLD = """
import time; t = time.perf_counter()
import gymnasium as gym, sim_web
from sim_web.env import EnvConfig
env = gym.make("WebResearch-v0", config=EnvConfig(index_dir={path!r}, executor=__import__("sim_web.executor", fromlist=["x"]).ExecutorConfig(cache=False)))
env.reset(seed=0)
print(time.perf_counter() - t)
"""


@dataclass(frozen=True)
class _OldSentences:
    """The old snippet cache entry: a passage's sentences, their terms, each one's term set and the mean length."""

    sents: tuple[str, ...]
    toks: tuple[tuple[str, ...], ...]
    sets: tuple[frozenset[str], ...]
    avg: float


@lru_cache(maxsize=8192)
def _old_sentence_terms(text: str) -> _OldSentences:
    """The old cache fill: every sentence tokenised on its own (regex and stopword filter)."""
    sents = tuple(split_sentences(text) or [text])
    toks = tuple(tuple(terms(s)) for s in sents)
    avg = sum(len(t) for t in toks) / len(toks) or 1.0
    return _OldSentences(sents, toks, tuple(map(frozenset, toks)), avg)


def _old_scores(query: str, p: _OldSentences, k1: float = 1.2, b: float = 0.75) -> list[float]:
    """The old sentence BM25: a query word counted in the sentences whose set has it."""
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
        sc = 0.0
        for j, c in row:
            sc += idf[j] * c * (k1 + 1) / (c + k1 * (1 - b + b * len(t) / p.avg))
        scores.append(sc)
    return scores


def old_snippet(text: str, query: str, max_chars: int = 240) -> str:
    """``extract.snippet`` as it was before one-pass tokenisation (commit 05047ba): the ``old`` side of an A/B."""
    from sim_web.backends.extract import window

    p = _old_sentence_terms(text)
    return window(p.sents, _old_scores(query, p), max_chars)


def snippet_impls(names: str) -> dict[str, Callable[[str, str, int], str]]:
    """The snippet functions named in ``--snippet-impl`` (``old``, ``new``), in that order.

    Raises:
        SystemExit: An unknown name.
    """
    from sim_web.backends.extract import snippet

    known = {"old": old_snippet, "new": snippet}
    out = {}
    for name in filter(None, names.split(",")):
        if name not in known:
            raise SystemExit(f"--snippet-impl: unknown {name!r} (known: old, new)")
        out[name] = known[name]
    return out


def alternating_ms(
    sides: list[Callable[[str], object]],
    sets: list[list[str]],
    passes: int,
    clock: Callable[[], float] = time.perf_counter,
) -> list[list[float]]:
    """Mean ms per query of each side in each of ``passes`` passes: pass ``i`` runs the sides in turn, starting
    with side ``i % k``, and side ``s`` on its own set ``i * k + (s + i) % k`` (``k`` sides), so that a slow spell
    of the machine, an order or a set hits every side alike. ``clock``: ``time.thread_time`` counts only this
    thread's CPU (Lucene runs on it through JNI), which other processes on busy cores do not inflate."""
    k = len(sides)
    runs: list[list[float]] = [[] for _ in sides]
    for i in range(passes):
        for s in [(i + j) % k for j in range(k)]:
            items = sets[i * k + (s + i) % k]
            t = clock()
            for x in items:
                sides[s](x)
            runs[s].append((clock() - t) * 1000 / len(items))
    return runs


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the tables."""
    import gymnasium as gym

    import sim_web  # noqa: F401
    import sim_web.backends.sim as sim
    from sim_web.env import EnvConfig
    from sim_web.env.tasks import derive_tasks
    from sim_web.executor import ExecutorConfig
    from wiki_index.search._java import autoclass, import_pyserini_search

    ap = argparse.ArgumentParser()
    ap.add_argument("--index", default=None)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--snippet-impl", default="", help="comma-separated snippet implementations to A/B: old,new")
    ap.add_argument(
        "--clock", choices=["wall", "cpu"], default="wall", help="search passes: wall time or thread CPU time"
    )
    args = ap.parse_args(argv)
    impls = snippet_impls(args.snippet_impl)
    # many short passes: sides timed back to back share the machine's current load, and the paired ratio is a
    # median over many such pairs
    passes, n_sides = (5, 1 + max(1, len(impls))) if args.quick else (20, 1 + max(1, len(impls)))
    path = str(ensure_sample_index(args.index))
    n, n_visit = (30, 30) if args.quick else (50, 200)

    colds = [
        float(
            subprocess.run(
                [sys.executable, "-c", COLD.format(path=path)], capture_output=True, text=True, check=True
            ).stdout.split()[-1]
        )
        for _ in range(1 if args.quick else 3)
    ]
    env = gym.make(
        "WebResearch-v0", config=EnvConfig(index_dir=path, executor=ExecutorConfig(cache=False), max_obs_chars=10**12)
    )
    uenv = env.unwrapped
    n_warm = 200 if args.quick else 1000
    # questions carrying a quoted description to search for: a warm-up set, then a set of n per pass and side, so
    # that every timed query is new to every side (a repeated query finds its postings and passages in the CPU caches)
    n_sets = passes * n_sides
    all_tasks = derive_tasks(uenv.index.store, n=n_warm + n_sets * n)
    if len(all_tasks) < n_warm + n_sets * n:
        raise SystemExit(
            f"bench_env needs {n_warm + n_sets * n} derived tasks, the index gives {len(all_tasks)}; use a bigger index or --quick"
        )
    tasks = all_tasks[n_warm : n_warm + n_visit]
    queries = [t.question.split('"')[1] for t in tasks]
    sets = [[t.question.split('"')[1] for t in all_tasks[n_warm + i * n : n_warm + (i + 1) * n]] for i in range(n_sets)]
    if args.quick:  # the Java object under pyserini's LuceneSearcher: skips pyserini.search's torch import (10-30 s)
        raw = autoclass("io.anserini.search.SimpleSearcher")(str(uenv.index.path / "bm25"))
        raw_name = "raw Anserini SimpleSearcher.search(q, k=30)"
    else:
        raw = import_pyserini_search().LuceneSearcher(str(uenv.index.path / "bm25"))
        raw_name = "raw pyserini LuceneSearcher.search(q, k=30)"
    raw.set_bm25(float(uenv.index.bm25.k1), float(uenv.index.bm25.b))
    warm = [t.question.split('"')[1] for t in all_tasks[:n_warm]]  # JIT warm-up
    turns = [0]

    def step(action: str) -> None:
        """One env step inside episodes of the default length (``info`` copies the chat so far, so a
        single endless episode would measure an ever longer copy instead of the tool)."""
        if turns[0] % env.unwrapped.config.max_turns == 0:
            env.reset(seed=turns[0])
        turns[0] += 1
        env.step(action)

    def search_step(q: str) -> None:
        step(f'<tool_call>{{"name": "search", "arguments": {{"query": [{json.dumps(q)}]}}}}</tool_call>')

    def with_snippet(fn: Callable[[str, str, int], str]) -> Callable[[str], None]:
        def run(q: str) -> None:
            sim.snippet = fn
            search_step(q)

        return run

    env_sides = {name: with_snippet(fn) for name, fn in impls.items()} or {"": search_step}
    for q in warm:  # Lucene's JIT warms up over ~1000 searches, and both sides share the JVM
        raw.search(q, 30)
        for side in env_sides.values():
            side(q)

    def pass_ms(fn, items) -> float:
        t = time.perf_counter()
        for x in items:
            fn(x)
        return (time.perf_counter() - t) * 1000 / len(items)

    def timed(fn, items) -> float:
        return statistics.median(pass_ms(fn, items) for _ in range(3))

    # the env asks for 3 passages per result page (10 pages), i.e. k=30 from Lucene; the sides are measured in
    # alternating passes so that a slow spell of the machine hits them alike
    clock = time.thread_time if args.clock == "cpu" else time.perf_counter
    runs = alternating_ms([lambda q: raw.search(q, 30), *env_sides.values()], sets, passes, clock)
    raw_ms = statistics.median(runs[0])
    step_rows = []
    for name, r in zip(env_sides, runs[1:]):
        label = "env.step(search tool call) incl. parse+format" + (f", {name} snippet" if name else "")
        ms = statistics.median(r)
        paired = statistics.median(e / w for e, w in zip(r, runs[0]))
        step_rows.append([label, f"{ms:.3f}", f"{ms / raw_ms:.2f}x", f"{paired:.3f}x"])
    step_ms = statistics.median(runs[-1])
    urls = [
        f'<tool_call>{{"name": "visit", "arguments": {{"url": ["https://en.wikipedia.org/wiki/{t.answer.replace(" ", "_")}"], "goal": {json.dumps(q)}}}}}</tool_call>'
        for t, q in zip(tasks, queries)
    ]
    visit_ms = timed(step, urls)
    print(
        f"\nenv step latency (search: median of {passes} alternating passes of {n} queries new to the process, a different "
        f"set each pass and side; {args.clock} clock; paired: median over passes of the step/raw ratio within a pass; visit: of 3 passes over "
        f"{n_visit} pages; cache off)"
    )
    print(
        table(
            ["operation", "ms", "ratio", "paired"],
            [
                [raw_name, f"{raw_ms:.3f}", "1.00x", "1.000x"],
                *step_rows,
                ["env.step(visit tool call)", f"{visit_ms:.3f}", "-", "-"],
            ],
        )
    )
    if len(impls) == 2:
        (a, ra), (b, rb) = zip(impls, runs[1:])
        q1, pair, q3 = statistics.quantiles([y / x for x, y in zip(ra, rb)], n=4)
        print(f"{b} snippet step / {a} snippet step, median over passes: {pair:.3f}x (quartiles {q1:.3f}-{q3:.3f})")
    print(f"scripted search steps/s: {1000 / step_ms:.0f}; visit steps/s: {1000 / visit_ms:.0f}")
    print(
        f"cold `import sim_web; gym.make('WebResearch-v0'); env.reset()` in a new process: median {statistics.median(colds):.2f}s over {len(colds)} runs (target <= 3 s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
