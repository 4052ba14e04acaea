"""Headroom before RL: what sampling already finds that greedy decoding misses, per tier and split.

GRPO raises the probability of rollouts that already succeed; it cannot reward what the policy never samples. So
before a GRPO stage the report shows, for the starting model, on train and held-out tasks per tier (and per form
family where tasks carry one): greedy pass@1, sampled pass@1 at the rollout temperature, and pass@k over ``k``
samples (unbiased, :func:`agents.metrics.pass_at_k`). The gap between sampled pass@k and greedy pass@1 is the most
GRPO can move pass@1 towards; a task whose samples all agree (every one right, or every one wrong) gives its group no
variance and no gradient, so the report also gives the share of tasks in a pass-rate band, and :func:`band_pool` is
the GRPO train pool drawn from that band over the train tasks GRPO may train on (the whole train split, or its
``rl_share`` pool; the recipe's tiers).

The samples are an ordinary eval run (:func:`agents.harness.run_eval`, ``k`` samples per task, the recipe's
observation settings, the trainer's temperature), so they resume like every other stage.
"""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from agents.metrics import pass_at_k
from agents.trajectory import load_records
from training.learn.episodes import tier_of

#: The pass-rate band whose groups have reward variance: at least one sample right and one wrong among 8 is
#: likely inside it (a task at 0.1 has 1 - 0.9**8 - 0.1**8 = 57% chance of a mixed group).
BAND = (0.1, 0.9)


def sampled_eval_config(recipe: Any, policy: str, out: str | Path, *, k: int, split: str, **extra: Any) -> Any:
    """The recipe's eval (:meth:`GRPORecipe.eval_config`) with ``k`` samples per task, sampled as the rollouts are
    (the trainer's temperature and top_p).

    Args:
        recipe: A :class:`~training.grpo.config.GRPORecipe`.
        policy: The policy spec (``hf:PATH``).
        out: The run's output folder.
        k: Samples per task.
        split: ``train`` or ``test``.
        **extra: Other ``EvalConfig`` fields (``n``, ``batch_size``, ...).

    Raises:
        ValueError: When ``k < 2`` (one sample is the greedy eval's job) or the trainer samples at temperature 0.
    """
    temperature = float(recipe.trainer.temperature)
    if k < 2 or temperature <= 0:
        raise ValueError(
            f"a headroom eval needs k >= 2 samples at a temperature > 0; found k={k}, temperature={temperature} "
            "(set headroom.k, or the recipe's trainer.temperature)"
        )
    ecfg = recipe.eval_config(policy, out, split=split, **extra)
    sampling = dataclasses.replace(ecfg.agent.sampling, temperature=temperature, top_p=float(recipe.trainer.top_p))
    return dataclasses.replace(ecfg, k=k, agent=dataclasses.replace(ecfg.agent, sampling=sampling))


def task_outcomes(folder: Path) -> dict[str, list[int]]:
    """Task id -> the 0/1 correctness of each of its recorded samples, in sample order (empty when not run)."""
    path = folder / "trajectories.jsonl"
    if not path.is_file():
        return {}
    by_task: dict[str, dict[int, int]] = defaultdict(dict)
    for r in load_records(path):
        score = r.get("correct", r.get("em", 0.0)) or 0.0
        by_task[r["task_id"]][int(r.get("sample", 0))] = int(score >= 1.0)
    return {t: [s[i] for i in sorted(s)] for t, s in by_task.items()}


def _group_of(task_id: str, groups: dict[str, str] | None) -> str:
    """The row a task counts in: ``groups[task_id]`` when given, else its tier (the id's prefix)."""
    return (groups or {}).get(task_id) or tier_of(task_id)


def headroom_rows(
    greedy: dict[str, list[int]],
    sampled: dict[str, list[int]],
    k: int,
    groups: dict[str, str] | None = None,
    band: tuple[float, float] = BAND,
) -> list[dict[str, Any]]:
    """One row per group (tier, or ``groups``' label) and one ``all`` row, over the tasks with both evals.

    Args:
        greedy: Task id -> ``[correct]`` of the greedy eval.
        sampled: Task id -> the correctness of each sample (at least ``k`` per task).
        k: The k of pass@k.
        groups: Optional task id -> row label (e.g. ``"bridge/relative"`` for a tier and form family).
        band: The pass-rate band counted in ``in_band``.

    Returns:
        Rows ``{group, n, greedy, sampled, pass@k, mixed, in_band}``: means over tasks; ``mixed`` is the share of
        tasks whose samples disagree (some right, some wrong), ``in_band`` the share with a pass-rate in ``band``.

    >>> rows = headroom_rows({"bridge-1": [0], "bridge-2": [1]}, {"bridge-1": [0, 1], "bridge-2": [1, 1]}, k=2)
    >>> [(r["group"], r["greedy"], r["sampled"], r["pass@2"], r["mixed"]) for r in rows]
    [('bridge', 0.5, 0.75, 1.0, 0.5), ('all', 0.5, 0.75, 1.0, 0.5)]
    """
    ids = sorted(t for t in greedy if len(sampled.get(t, [])) >= k)
    by: dict[str, list[str]] = defaultdict(list)
    for t in ids:
        by[_group_of(t, groups)].append(t)
    rows = [_row(g, by[g], greedy, sampled, k, band) for g in sorted(by)]
    return rows + ([_row("all", ids, greedy, sampled, k, band)] if ids else [])


def _row(
    group: str, ids: list[str], greedy: dict[str, list[int]], sampled: dict[str, list[int]], k: int, band: Any
) -> dict[str, Any]:
    n = len(ids)
    rates = [sum(sampled[t]) / len(sampled[t]) for t in ids]
    return {
        "group": group,
        "n": n,
        "greedy": round(sum(greedy[t][0] for t in ids) / n, 4),
        "sampled": round(sum(rates) / n, 4),
        f"pass@{k}": round(sum(pass_at_k(len(sampled[t]), sum(sampled[t]), k) for t in ids) / n, 4),
        "mixed": round(sum(0 < r < 1 for r in rates) / n, 4),
        "in_band": round(sum(band[0] <= r <= band[1] for r in rates) / n, 4),
    }


def band_pool(sampled: dict[str, list[int]], band: tuple[float, float] = BAND) -> list[str]:
    """The task ids whose sampled pass-rate lies in ``band`` (inclusive), sorted: the GRPO train pool.

    >>> band_pool({"a": [1, 1], "b": [0, 1], "c": [0, 0]})
    ['b']
    """
    lo, hi = band
    return sorted(t for t, s in sampled.items() if s and lo <= sum(s) / len(s) <= hi)


def render(tables: dict[str, list[dict[str, Any]]], k: int) -> list[str]:
    """Markdown lines of the headroom tables, one per split (``{"train": rows, "test": rows}``; other keys are
    skipped)."""
    out = [
        "## Headroom before RL",
        "",
        f"Greedy pass@1, sampled pass@1 and pass@{k} at the rollout temperature. GRPO can move pass@1 at most towards "
        f"pass@{k}; `mixed` is the share of tasks whose {k} samples disagree (the groups with reward variance), "
        f"`in band` the share with a sampled pass-rate in {BAND[0]}-{BAND[1]}.",
        "",
    ]
    for split, rows in tables.items():
        if split not in ("train", "test"):
            continue
        out += [
            f"| {split} | n | greedy pass@1 | sampled pass@1 | pass@{k} | pass@{k} - greedy | mixed | in band |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            gap = r[f"pass@{k}"] - r["greedy"]
            out.append(
                f"| {r['group']} | {r['n']} | {r['greedy']:.3f} | {r['sampled']:.3f} | {r[f'pass@{k}']:.3f} | "
                f"{gap:+.3f} | {r['mixed']:.3f} | {r['in_band']:.3f} |"
            )
        out.append("")
    return out


def _sample_lines(task_file: Path, n: int, seed: int, allowed: Any) -> list[str]:
    """The lines of ``n`` train tasks for which ``allowed(record)`` holds, drawn with ``seed`` over all of them (every
    one when there are fewer), in file order."""
    import random

    lines = [x for x in task_file.read_text(encoding="utf-8").splitlines() if x.strip()]
    rows = [json.loads(x) for x in lines]
    ids = [r["id"] for r in rows if r.get("split") == "train" and allowed(r)]
    keep = set(random.Random(f"headroom|{seed}").sample(ids, min(n, len(ids))))
    return [x for x, r in zip(lines, rows) if r["id"] in keep]


def _train_draw(cfg: Any, recipe: Any, subset: Path) -> None:
    """Write (once) ``subset``, the headroom stage's train tasks: a seeded draw over the train tasks GRPO may train on
    (the recipe's tiers; with ``rl_share``, the RL pool only).

    Raises:
        ConfigError: When an existing draw holds a task GRPO may not train on (drawn with other settings).
    """
    from simweb_core.errors import ConfigError
    from training.grpo.train import pool_ids
    from training.learn.rl_pool import POOL_FILE
    from training.synth.outputs.audit_summary import load_tasks

    held = pool_ids(cfg.out_dir() / POOL_FILE) if cfg.rl_share else None

    def allowed(r: dict[str, Any]) -> bool:
        tier = r.get("tier") or tier_of(str(r["id"]))
        return (held is None or str(r["id"]) in held) and (recipe.tiers is None or tier in recipe.tiers)

    if not subset.is_file():
        lines = _sample_lines(Path(recipe.tasks), cfg.headroom.n_train, cfg.seed, allowed)
        subset.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return
    if bad := [r["id"] for r in load_tasks(subset) if not allowed(r)]:
        raise ConfigError(
            f"{subset} holds {len(bad)} tasks GRPO does not train on now (e.g. {bad[0]}; tiers {recipe.tiers}, "
            f"rl_share {cfg.rl_share}): delete the run's headroom*/ folders to draw again"
        )


def stage_headroom(cfg: Any, recipe: Any, model: Path, settings: dict[str, Any]) -> Path:
    """Sample the SFT model on train and held-out tasks, evaluate it greedily on the same train tasks, and write
    the GRPO pool (``<run>/headroom/pool.json``); returns that folder.

    Folders: ``headroom-greedy-train/`` (greedy), ``headroom-train/`` and ``headroom-test/`` (``cfg.headroom.k``
    samples per task; none when ``n_test`` is 0); the held-out greedy pass@1 is ``eval-sft/``'s. The train tasks are
    a seeded draw of ``n_train`` over the train tasks GRPO may train on (:func:`_train_draw`), written to
    ``headroom/train.jsonl``.
    """
    from agents.harness import run_eval

    h = cfg.headroom
    out = cfg.out_dir() / "headroom"
    out.mkdir(parents=True, exist_ok=True)
    subset = out / "train.jsonl"
    _train_draw(cfg, recipe, subset)
    policy = f"hf:{model}"
    runs: list[tuple[Any, str | None]] = [
        (recipe.eval_config(policy, out.parent / "headroom-greedy-train", split="train", **settings), str(subset)),
        (
            sampled_eval_config(recipe, policy, out.parent / "headroom-train", k=h.k, split="train", **settings),
            str(subset),
        ),
    ]
    if h.n_test:
        test = sampled_eval_config(
            recipe,
            policy,
            out.parent / "headroom-test",
            k=h.k,
            split="test",
            n=h.n_test,
            skip=cfg.eval_skip,
            **settings,
        )
        runs.append((test, None))
    for ecfg, tasks in runs:
        res = run_eval(dataclasses.replace(ecfg, tasks=tasks) if tasks else ecfg)
        if res.failures:
            raise RuntimeError(f"{len(res.failures)} episodes of {ecfg.out} failed (rerun to resume them)")
    pool = band_pool(task_outcomes(out.parent / "headroom-train"), tuple(h.band))
    (out / "pool.json").write_text(
        json.dumps({"k": h.k, "band": list(h.band), "sampled": h.n_train, "ids": pool}, indent=1), encoding="utf-8"
    )
    return out


def summarise(run: Path, k: int | None = None) -> dict[str, Any] | None:
    """The headroom tables of a run folder (``{"k", "train": rows, "test": rows}``), or ``None`` before the stage.

    Rows are per tier and, where the tasks carry one, per tier and form family (``"bridge/relative"``).
    """
    sampled = {s: task_outcomes(run / f"headroom-{s}") for s in ("train", "test")}
    if not any(sampled.values()):
        return None
    k = k or min(len(v) for s in sampled.values() for v in s.values())
    greedy = {"train": task_outcomes(run / "headroom-greedy-train"), "test": task_outcomes(run / "eval-sft")}
    forms = _forms(run)
    out: dict[str, Any] = {"k": k}
    for split in ("train", "test"):
        if sampled[split] and greedy[split]:
            rows = headroom_rows(greedy[split], sampled[split], k)
            by_form = [r for r in headroom_rows(greedy[split], sampled[split], k, forms) if r["group"] != "all"]
            out[split] = rows + ([r for r in by_form if "/" in r["group"]] if forms else [])
    return out


def _forms(run: Path) -> dict[str, str]:
    """Task id -> ``tier/form`` from the headroom runs' recorded metadata (empty when tasks carry no form)."""
    out = {}
    for s in ("train", "test"):
        path = run / f"headroom-{s}" / "trajectories.jsonl"
        for r in load_records(path) if path.is_file() else []:
            meta = r.get("metadata") or {}
            if meta.get("form") and meta.get("tier"):
                out[r["task_id"]] = f"{meta['tier']}/{meta['form']}"
    return out
