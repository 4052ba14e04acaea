"""Where GRPO's train reward rose: on tasks the SFT demonstrations showed, on their answers, or on neither.

A GRPO run whose train reward climbs while its held-out score stays flat may be recalling answers: when SFT and GRPO
draw on the same train split, GRPO meets tasks (or answers) the demonstrations taught, and its updates can make the
model say those answers again without reading better. Held-out tasks share no answer with training, so they cannot
reward that. This module splits every GRPO rollout's reward by thirds of the run and by the task's relation to the
SFT dataset: ``sft task`` (a demonstrated task), ``sft answer`` (another task whose answer or alias a demonstration
had), ``new`` (neither). Only the last group measures what a held-out task can show; ``rl_share`` makes it the only
group (:mod:`training.learn.rl_pool`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from training.synth.outputs.audit_summary import load_tasks

GROUPS = ("sft task", "sft answer", "new")


def sft_task_ids(data: Path) -> set[str] | None:
    """The task ids of the SFT dataset saved in ``data`` (None when there is none)."""
    if not (data / "dataset_info.json").is_file():
        return None
    from datasets import load_from_disk

    ds = load_from_disk(str(data))
    return set(map(str, ds["task_id"])) if "task_id" in ds.column_names else None


def reward_by_relation(
    outcomes: list[dict[str, Any]], records: dict[str, dict[str, Any]], sft_ids: set[str]
) -> dict[str, dict[str, dict[str, Any]]]:
    """Mean rollout reward per tier, relation group and third of the run.

    Args:
        outcomes: GRPO's ``outcomes.jsonl`` rows (``task_id``, ``step``, ``reward``).
        records: The task records by id (``answer``, ``aliases``, ``tier``).
        sft_ids: The task ids of the SFT demonstrations.

    Returns:
        ``{tier: {group: {"tasks": n distinct tasks, "reward": [third 1, third 2, third 3]}}}``; a third with no
        rollout of the group is ``None``.

    >>> recs = {"a": {"answer": "Oslo", "tier": "bridge"}, "b": {"answer": "Oslo", "tier": "bridge"},
    ...         "c": {"answer": "Lima", "tier": "bridge"}}
    >>> rows = [{"task_id": t, "step": s, "reward": r} for t, s, r in [("b", 1, 0.0), ("b", 3, 1.0), ("c", 2, 0.5)]]
    >>> reward_by_relation(rows, recs, {"a"})["bridge"]["sft answer"]
    {'tasks': 1, 'reward': [0.0, None, 1.0]}
    """
    from training.synth.tiers.split import answer_names

    shown = set().union(*(answer_names(records[i]) for i in sft_ids if i in records))
    last = max((int(r["step"]) for r in outcomes), default=1)
    sums: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    tasks: dict[tuple[str, str], set[str]] = defaultdict(set)
    for row in outcomes:
        rec = records.get(str(row["task_id"]))
        if rec is None:
            continue
        group = "sft task" if row["task_id"] in sft_ids else "sft answer" if answer_names(rec) & shown else "new"
        tier = str(rec.get("tier") or "all")
        third = min(2, 3 * (int(row["step"]) - 1) // last)
        sums[(tier, group, third)].append(float(row["reward"]))
        tasks[(tier, group)].add(str(row["task_id"]))
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for tier, group in sorted(tasks, key=lambda k: (k[0], GROUPS.index(k[1]))):
        means = [sum(v) / len(v) if (v := sums.get((tier, group, k))) else None for k in range(3)]
        out.setdefault(tier, {})[group] = {"tasks": len(tasks[(tier, group)]), "reward": means}
    return out


def summarise(run: Path) -> dict[str, Any]:
    """:func:`reward_by_relation` for every GRPO folder of ``run`` with outcomes (empty without an SFT dataset)."""
    sft_ids = sft_task_ids(run / "sft-data")
    if not sft_ids:
        return {}
    out: dict[str, Any] = {}
    task_sets: dict[str, dict[str, dict[str, Any]]] = {}  # the runs of one folder share their task file
    for folder in sorted(p for p in run.glob("grpo*") if (p / "outcomes.jsonl").is_file()):
        try:
            tasks = str(json.loads((folder / "summary.json").read_text(encoding="utf-8"))["config"]["tasks"])
            if tasks not in task_sets:
                task_sets[tasks] = {str(r["id"]): r for r in load_tasks(tasks)}
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a run still training has no summary yet
        with (folder / "outcomes.jsonl").open(encoding="utf-8") as f:
            rows = [json.loads(line) for line in f if line.strip()]
        out[folder.name] = reward_by_relation(rows, task_sets[tasks], sft_ids)
    return out


def render(summary: dict[str, Any]) -> list[str]:
    """The report's table: per GRPO run, tier and relation group, the tasks and the mean reward by thirds."""
    lines = [
        "GRPO train reward by the task's relation to the SFT demonstrations (the same task, another task with a "
        "demonstrated answer, or neither; only `new` is what held-out tasks can show):",
        "",
        "| GRPO run | tier | rollouts on | tasks | reward, first third | second | last |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, tiers in summary.items():
        for tier, groups in tiers.items():
            for group, g in groups.items():
                cells = " | ".join("-" if v is None else f"{v:.3f}" for v in g["reward"])
                lines.append(f"| {name} | {tier} | {group} | {g['tasks']} | {cells} |")
    return lines
