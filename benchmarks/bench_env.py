"""Env performance: search-step latency vs raw pyserini, cold ``gym.make`` + ``reset``, steps/s, visit latency.

Run: ``python -m benchmarks.bench_env [--index DIR] [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

from benchmarks.common import ensure_sample_index, table

COLD = """
import time; t = time.perf_counter()
import gymnasium as gym, sim_web
from sim_web.env import EnvConfig
env = gym.make("WebResearch-v0", config=EnvConfig(index_dir={path!r}, executor=__import__("sim_web.executor", fromlist=["x"]).ExecutorConfig(cache=False)))
env.reset(seed=0)
print(time.perf_counter() - t)
"""


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the tables."""
    import gymnasium as gym

    import sim_web  # noqa: F401
    from sim_web.env import EnvConfig
    from sim_web.executor import ExecutorConfig
    from sim_web.env.tasks import derive_tasks
    from wiki_index._java import autoclass, import_pyserini_search

    ap = argparse.ArgumentParser()
    ap.add_argument("--index", default=None)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    path = str(ensure_sample_index(args.index))
    n = 30 if args.quick else 200

    colds = [float(subprocess.run([sys.executable, "-c", COLD.format(path=path)], capture_output=True, text=True, check=True).stdout.split()[-1])
             for _ in range(1 if args.quick else 3)]
    env = gym.make("WebResearch-v0", config=EnvConfig(index_dir=path, executor=ExecutorConfig(cache=False), max_obs_chars=10**12))
    uenv = env.unwrapped
    tasks = derive_tasks(uenv.index.store, n=n)  # questions carrying a quoted description to search for
    queries = [t.question.split('"')[1] for t in tasks]
    if args.quick:  # the Java object under pyserini's LuceneSearcher: skips pyserini.search's torch import (10-30 s)
        raw = autoclass("io.anserini.search.SimpleSearcher")(str(uenv.index.path / "bm25"))
        raw_name = "raw Anserini SimpleSearcher.search(q, k=30)"
    else:
        raw = import_pyserini_search().LuceneSearcher(str(uenv.index.path / "bm25"))
        raw_name = "raw pyserini LuceneSearcher.search(q, k=30)"
    raw.set_bm25(float(uenv.index.bm25.k1), float(uenv.index.bm25.b))
    actions = [f'<tool_call>{{"name": "search", "arguments": {{"query": [{json.dumps(q)}]}}}}</tool_call>' for q in queries]
    warm = [t.question.split('"')[1] for t in derive_tasks(uenv.index.store, n=200 if args.quick else 1000)]  # JIT warm-up
    turns = [0]

    def step(action: str) -> None:
        """One env step inside episodes of the default length (``info`` copies the chat so far, so a
        single endless episode would measure an ever longer copy instead of the tool)."""
        if turns[0] % env.unwrapped.config.max_turns == 0:
            env.reset(seed=turns[0])
        turns[0] += 1
        env.step(action)

    for q in warm:  # Lucene's JIT warms up over ~1000 searches, and both sides share the JVM
        raw.search(q, 30)
        step(f'<tool_call>{{"name": "search", "arguments": {{"query": [{json.dumps(q)}]}}}}</tool_call>')

    def pass_ms(fn, items) -> float:
        t = time.perf_counter()
        for x in items:
            fn(x)
        return (time.perf_counter() - t) * 1000 / len(items)

    def timed(fn, items) -> float:
        return statistics.median(pass_ms(fn, items) for _ in range(3))

    # the env asks for 3 passages per result page (10 pages), i.e. k=30 from Lucene; the two are
    # measured in alternating passes so that a slow spell of the machine hits both alike
    raw_runs, step_runs = [], []
    for _ in range(5):
        raw_runs.append(pass_ms(lambda q: raw.search(q, 30), queries))
        step_runs.append(pass_ms(step, actions))
    raw_ms, step_ms = statistics.median(raw_runs), statistics.median(step_runs)
    urls = [f'<tool_call>{{"name": "visit", "arguments": {{"url": ["https://en.wikipedia.org/wiki/{t.answer.replace(" ", "_")}"], "goal": {json.dumps(q)}}}}}</tool_call>' for t, q in zip(tasks, queries)]
    visit_ms = timed(step, urls)
    print(f"\nenv step latency over {len(queries)} queries (search: median of 5 alternating passes, visit: of 3; cache off)")
    print(table(["operation", "ms", "ratio"], [
        [raw_name, f"{raw_ms:.3f}", "1.00x"],
        ["env.step(search tool call) incl. parse+format", f"{step_ms:.3f}", f"{step_ms / raw_ms:.2f}x"],
        ["env.step(visit tool call)", f"{visit_ms:.3f}", "-"],
    ]))
    print(f"scripted search steps/s: {1000 / step_ms:.0f}; visit steps/s: {1000 / visit_ms:.0f}")
    print(f"cold `import sim_web; gym.make('WebResearch-v0'); env.reset()` in a new process: median {statistics.median(colds):.2f}s over {len(colds)} runs (target <= 3 s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
