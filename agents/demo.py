"""``make run``, part two: one episode of the oracle agent on a held-out synthesized SailorFog-QA task.

Part one (:mod:`sim_web.demo`) searches the sample in every mode and plays a scripted episode on
a simple derived question; this part shows what the synthesized multi-hop questions look like
and the ReAct loop answering one through the tools, printing the transcript and the reward.
"""

from __future__ import annotations

import argparse
import logging

from sim_web.env.tasks import default_task_path, load_tasks
from simweb_core.settings import default_index_dir


def _short(text: str, limit: int = 700) -> str:
    return text if len(text) <= limit else text[:limit] + f" ... [{len(text) - limit} more characters]"


def main(argv: list[str] | None = None) -> int:
    """Play and print one oracle episode; returns the exit status (0 also when no synthesized set exists yet)."""
    import gymnasium as gym

    import sim_web  # noqa: F401  (registers WebResearch-v0)
    from agents.loop import ReactAgent, run_episode
    from agents.policies.oracle import OraclePolicy
    from sim_web.env import EnvConfig
    from wiki_index.search.index import WikiIndex

    p = argparse.ArgumentParser(prog="python -m agents.demo")
    p.add_argument("--index", default=None, help="index directory (default: the sample index)")
    p.add_argument("--task", type=int, default=0, help="which held-out task (position in the test split)")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    index_dir = str(args.index or default_index_dir())
    path = default_task_path(index_dir)
    if not path.is_file():
        print(f"no synthesized task set at {path}; create it with `sim-web synth --index {index_dir}`")
        return 0
    tasks = load_tasks(path, "test")
    task = tasks[args.task % len(tasks)]
    env = gym.make("WebResearch-v0", config=EnvConfig(index_dir=index_dir), tasks=tasks)
    policy = OraclePolicy(tasks, store=WikiIndex.from_dir(index_dir).store)
    episode = run_episode(ReactAgent(policy), env, task)
    meta = task.metadata
    print(
        f"\n=== oracle episode on synthesized task {task.id} ({meta.get('structure')}, {meta.get('difficulty', {}).get('level')}, "
        f"uncertainty: {', '.join(meta.get('uncertainty_types', []))}) ==="
    )
    print(f"QUESTION: {task.question}\n")
    for m in episode.messages[2:]:
        who = "assistant" if m["role"] == "assistant" else "tool"
        print(f"[{who}]\n{_short(m['content'])}\n")
    print(
        f"GOLD: {task.answer}  prediction: {episode.prediction}  em={episode.em}  turns={episode.counts.turns}  "
        f"tool calls={episode.tool_calls}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
