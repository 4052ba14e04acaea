"""What the results of an intersection question's searches let a reader answer by the names they show.

The intersection tier's gates make the answer unique over the sample's countries and shown by some clue's search.
Whether a reader who sees only the results (k titles and snippets per search, the recipe's observation) can tell the
answer from the other countries is a different question, and it bounds every policy that answers from results. For
each intersection task of a task file and each search plan (``clues``: one search per clue; ``joint``: ``rule:script``'s
searches, every clue together then one per clue, the first three, which the recipe's turn cap lets be read), it counts
the countries of the sample that each search's results name (a result title or a snippet), and prints per split:

* ``every``: the answer is named by every search;
* ``alone``: the answer is the only country named by every search (the results pin it down);
* ``reader``: the expected score of a reader who knows the answer is a country and picks at random among the countries
  that the most searches name (a tie of three scores 1/3): the ceiling of answering by the names the results show, not
  by what their sentences say about them;
* ``script``: ``rule:script``'s pick from the same results (a title that the most searches show, then its tie-breaks).

Run: ``python -m benchmarks.bench_intersection_evidence [--tasks PATH] [--index DIR] [--k 5] [--snippet-chars 160]``.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

PLANS = ("clues", "joint")
TURN_CAP_SEARCHES = 3  # the cpu-learn recipe's 5 calls: the fifth is a forced answer that hides the fourth's results


def plan_queries(question: str, plan: str) -> list[str]:
    """The searches of ``plan`` for an intersection question."""
    from agents.policies.scripts import intersection_queries, intersection_searches

    if plan == "clues":
        return intersection_queries(question) or []
    return (intersection_searches(question) or [])[:TURN_CAP_SEARCHES]


def task_evidence(task: dict[str, Any], blocks: list[list[tuple[str, str]]], countries: list[str]) -> dict[str, float]:
    """``every``, ``alone``, ``reader`` and ``script`` (see the module docstring) for one task's search results."""
    from agents.policies.baselines import _names
    from agents.policies.scripts import ScriptPolicy
    from wiki_index.types import bare_title

    question, answer = task["question"], bare_title(task["answer"])
    texts = [" ".join(f"{t} {s}" for t, s in block) for block in blocks]
    names = [bare_title(c) for c in countries if not _names(question, bare_title(c))]
    count = {c: sum(bool(_names(text, c)) for text in texts) for c in names}
    best = max(count.values(), default=0)
    top = [c for c in names if count[c] == best] if best else []
    in_every = [c for c in names if count[c] == len(blocks)]
    return {
        "every": float(answer in in_every),
        "alone": float(in_every == [answer]),
        "reader": (answer in top) / len(top) if top else 0.0,
        "script": float(ScriptPolicy._overlap(blocks, question) == answer),
    }


def main(argv: list[str] | None = None) -> None:
    """Print the table of the module docstring."""
    from sim_web.backends.sim import SimBackend, SimConfig
    from simweb_core.settings import default_index_dir
    from training.synth.graph.store_source import StoreSource
    from training.synth.tiers.intersection import Membership
    from training.synth.tiers.view import ResultView
    from wiki_index.search.index import WikiIndex

    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_intersection_evidence")
    ap.add_argument("--index", default=None, help="the index (default: the sample under $SIM_WEB_HOME)")
    ap.add_argument("--tasks", default=None, help="a task file (default: <index>/tasks/cpu-learn.jsonl)")
    ap.add_argument("--k", type=int, default=5, help="results per search (the recipe's search_results)")
    ap.add_argument("--snippet-chars", type=int, default=160, help="snippet length (the recipe's)")
    args = ap.parse_args(argv)
    index_dir = Path(args.index) if args.index else default_index_dir()
    path = Path(args.tasks) if args.tasks else index_dir / "tasks" / "cpu-learn.jsonl"
    if not path.is_file():
        raise SystemExit(f"no task file at {path}: run `sim-web learn --stages tasks` (or pass --tasks PATH)")
    tasks = [
        r for r in map(json.loads, path.read_text(encoding="utf-8").splitlines()) if r.get("tier") == "intersection"
    ]
    if not tasks:
        raise SystemExit(f"{path} has no intersection task: write the set with the intersection tier")
    index = WikiIndex.from_dir(index_dir)
    src = StoreSource(index.store)
    countries = sorted(Membership(src, sorted(src.title(p) for p in src.page_ids())).countries)
    view = ResultView(SimBackend(index, SimConfig(snippet_chars=args.snippet_chars)), args.k)
    sums: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for task in tasks:
        for plan in PLANS:
            blocks = [view.results(q) for q in plan_queries(task["question"], plan)]
            row = sums[(str(task.get("split")), plan)]
            row["n"] += 1
            for key, value in task_evidence(task, blocks, countries).items():
                row[key] += value
    print(f"intersection tasks of {path} (k={args.k}, {args.snippet_chars}-char snippets, {len(countries)} countries)")
    print(
        "| split | searches | n | answer named by every search | the only country named by every search "
        "| reader's ceiling | rule:script |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    for (split, plan), row in sorted(sums.items()):
        n = row["n"]
        cells = " | ".join(f"{row[k] / n:.3f}" for k in ("every", "alone", "reader", "script"))
        print(f"| {split} | {plan} | {int(n)} | {cells} |")


if __name__ == "__main__":
    main()
