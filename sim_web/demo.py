"""``make run``: build the sample index if absent, search it in every mode, play one scripted episode."""

from __future__ import annotations

import argparse
import json
import logging
import time

from simweb_core.settings import default_index_dir

QUERIES = ["theory of relativity", "largest desert in Africa", "who painted the Mona Lisa"]


def main(argv: list[str] | None = None) -> int:
    """Run the demo; returns the exit status."""
    import gymnasium as gym

    import sim_web  # noqa: F401  (registers WebResearch-v0)
    from sim_web.env import EnvConfig
    from sim_web.env.tasks import derive_tasks
    from wiki_index.manifest import MANIFEST
    from wiki_index.search.index import WikiIndex

    p = argparse.ArgumentParser(prog="sim-web demo")
    p.add_argument("--index", default=None)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    path = args.index or default_index_dir()
    from pathlib import Path

    if not (Path(path) / MANIFEST).is_file():
        from wiki_index.build import build_index

        print(f"building the sample index at {path} (first run only)...", flush=True)
        t = time.perf_counter()
        build_index("sample", path)
        print(f"built in {time.perf_counter() - t:.0f} s", flush=True)
    index = WikiIndex.from_dir(path)
    for mode in ("bm25", "dense", "hybrid") if index.has_dense else ("bm25",):
        for q in QUERIES:
            hits = index.search(q, 3, mode)
            print(f"[{mode}] {q!r}: " + "; ".join(f"{p.title} ({h.score:.3f})" for h, p in hits))
    # a simple "identify the subject" question, so that a three-step scripted policy can answer it
    # (agents.demo then shows the oracle agent on a synthesized multi-hop question)
    derived = [t for t in derive_tasks(index.store) if t.metadata["split"] == "test"]
    env = gym.make("WebResearch-v0", config=EnvConfig(index_dir=str(path)), tasks=derived, render_mode="ansi")
    obs, info = env.reset(seed=0)
    task = env.unwrapped.task
    print(f"\n=== episode on task {task.id} ===\nQUESTION: {obs}\n")
    search = f'<think>I will search for the description.</think>\n<tool_call>{{"name": "search", "arguments": {{"query": [{json.dumps(obs)}]}}}}</tool_call>'
    obs, r, term, trunc, info = env.step(search)
    print(f"[assistant]\n{search}\n\n[tool]\n{obs[:1500]}\n")
    import re

    link = re.search(r"\]\((https://en\.wikipedia\.org/wiki/[^)]+)\)", obs)
    url = link.group(1) if link else "https://en.wikipedia.org/wiki/Main_Page"
    visit = f'<think>The top result looks right; read it.</think>\n<tool_call>{{"name": "visit", "arguments": {{"url": [{json.dumps(url)}], "goal": "What is this page about?"}}}}</tool_call>'
    obs, r, term, trunc, info = env.step(visit)
    print(f"[assistant]\n{visit}\n\n[tool]\n{obs[:1500]}\n")
    title = re.search(r"\nSummary: \n([^:]+):", obs)
    answer = title.group(1) if title else ""
    final = f"<think>The page matches the description.</think>\n<answer>{answer}</answer>"
    obs, r, term, trunc, info = env.step(final)
    print(
        f"[assistant]\n{final}\n\nGOLD: {task.answer}  reward={r}  em={info['em']}  f1={info['f1']:.2f}  turns={info['turn']}"
    )
    print(f"tool stats: {json.dumps(info['tool_stats'])}\ntimings: {json.dumps(info['timings'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
