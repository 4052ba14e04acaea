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
    from sim_web.env.tasks import derive_tasks
    from sim_web.executor import ExecutorConfig
    from wiki_index.search._java import autoclass, import_pyserini_search

    ap = argparse.ArgumentParser()
    ap.add_argument("--index", default=None)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    path = str(ensure_sample_index(args.index))
    n = 30 if args.quick else 200

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
    # questions carrying a quoted description to search for: a warm-up set, then 10 sets of n, so that every
    # timed query is new to both sides (a repeated query finds its postings and passages in the CPU caches)
    all_tasks = derive_tasks(uenv.index.store, n=n_warm + 10 * n)
    if len(all_tasks) < n_warm + 10 * n:
        raise SystemExit(
            f"bench_env needs {n_warm + 10 * n} derived tasks, the index gives {len(all_tasks)}; use a bigger index or --quick"
        )
    tasks = all_tasks[n_warm : n_warm + n]
    queries = [t.question.split('"')[1] for t in tasks]
    sets = [[t.question.split('"')[1] for t in all_tasks[n_warm + i * n : n_warm + (i + 1) * n]] for i in range(10)]
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
    for i in range(5):  # each side on its own sets; which set a side gets alternates too
        raw_set, env_set = (sets[2 * i], sets[2 * i + 1]) if i % 2 == 0 else (sets[2 * i + 1], sets[2 * i])
        raw_runs.append(pass_ms(lambda q: raw.search(q, 30), raw_set))
        step_runs.append(
            pass_ms(
                step,
                [
                    f'<tool_call>{{"name": "search", "arguments": {{"query": [{json.dumps(q)}]}}}}</tool_call>'
                    for q in env_set
                ],
            )
        )
    raw_ms, step_ms = statistics.median(raw_runs), statistics.median(step_runs)
    urls = [
        f'<tool_call>{{"name": "visit", "arguments": {{"url": ["https://en.wikipedia.org/wiki/{t.answer.replace(" ", "_")}"], "goal": {json.dumps(q)}}}}}</tool_call>'
        for t, q in zip(tasks, queries)
    ]
    visit_ms = timed(step, urls)
    print(
        f"\nenv step latency (search: median of 5 alternating passes of {n} queries new to the process, a different set each "
        f"pass and side; visit: of 3 passes over {n} pages; cache off)"
    )
    print(
        table(
            ["operation", "ms", "ratio"],
            [
                [raw_name, f"{raw_ms:.3f}", "1.00x"],
                ["env.step(search tool call) incl. parse+format", f"{step_ms:.3f}", f"{step_ms / raw_ms:.2f}x"],
                ["env.step(visit tool call)", f"{visit_ms:.3f}", "-"],
            ],
        )
    )
    print(f"scripted search steps/s: {1000 / step_ms:.0f}; visit steps/s: {1000 / visit_ms:.0f}")
    print(
        f"cold `import sim_web; gym.make('WebResearch-v0'); env.reset()` in a new process: median {statistics.median(colds):.2f}s over {len(colds)} runs (target <= 3 s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
