"""Train tasks kept for GRPO only: answer-disjoint from the SFT demonstrations.

When SFT and GRPO train on the same tasks, GRPO's reward can rise by recalling answers the demonstrations taught
(the model saw "... Which city is it? Houston" during SFT), a gain that held-out tasks, whose answers never occur in
training, cannot show. :func:`rl_pool` holds back a share of each tier's train tasks, whole answer groups at a
time (the held-out split's own rule, :func:`training.synth.tiers.split.answer_disjoint_split`), so no GRPO task
shares an answer name with an SFT demonstration; the SFT stage skips those tasks and GRPO trains only on them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from simweb_core.errors import ConfigError
from training.synth.outputs.audit_summary import load_tasks

POOL_FILE = "rl-pool.json"


def rl_pool(records: list[dict[str, Any]], share: float, seed: int) -> list[str]:
    """The ids of the train records held back for GRPO: about ``share`` of each tier, whole answer groups at a time.

    Args:
        records: Task records (``id``, ``answer``, ``aliases``, ``tier``, ``split``); not changed.
        share: The share of each tier's train records to hold back, in (0, 1).
        seed: Seed of the order in which answer groups are drawn (the run's seed; the draw differs from the
            held-out split's because it runs over the train records only).

    Returns:
        The held-back ids in record order. No held-back record shares an answer name (answer or alias) with a
        train record left for SFT.

    >>> recs = [{"id": str(i), "answer": a, "tier": "bridge", "split": "train"}
    ...         for i, a in enumerate(["Rome", "Rome", "Oslo", "Lima", "Bern", "Bern"])]
    >>> pool = rl_pool(recs, 0.5, 0)
    >>> {recs[int(i)]["answer"] for i in pool} & {r["answer"] for r in recs if r["id"] not in pool}
    set()
    """
    from training.synth.tiers.split import answer_disjoint_split

    if not 0 < share < 1:
        raise ConfigError(f"rl_share must be in (0, 1) to hold train tasks back for GRPO, got {share}")
    train = [dict(r) for r in records if r.get("split") == "train"]  # the split marks these copies only
    answer_disjoint_split(train, share, seed)
    return [str(r["id"]) for r in train if r["split"] == "test"]


def write_rl_pool(task_path: Path, out: Path, share: float, seed: int) -> Path:
    """Write (once) ``<out>/rl-pool.json``, the GRPO-only train task ids of the task set, and return its path.

    Raises:
        ConfigError: When the task set does not exist, when the run already has an SFT dataset but no pool (it was
            built from every train task), or when an existing pool file was drawn with another share or seed (delete
            it, with the SFT model trained beside it, to draw again).
    """
    path = out / POOL_FILE
    wanted = {"tasks": str(task_path), "share": share, "seed": seed}
    if path.is_file():
        stored = json.loads(path.read_text(encoding="utf-8"))
        made = {k: stored.get(k) for k in wanted}
        if made != wanted:
            raise ConfigError(
                f"{path} was drawn with {made}, this run asks for {wanted}: delete it "
                "and the run's sft/, sft-data/ and GRPO folders, or run with the settings it was drawn with"
            )
        return path
    if (out / "sft-data" / "README.md").is_file():
        raise ConfigError(
            f"{out} holds an SFT dataset built without rl_share, on tasks GRPO would now train on: give this run "
            "another --out, or delete its sft/, sft-data/ and GRPO folders"
        )
    if not task_path.is_file():
        raise ConfigError(f"rl_share needs the run's task set, {task_path} does not exist: run the tasks stage first")
    records = load_tasks(task_path)
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**wanted, "ids": rl_pool(records, share, seed)}, indent=1), encoding="utf-8")
    return path


def grpo_task_pool(out: Path, rl_share: float, use_headroom: bool) -> Path | None:
    """The pool file GRPO trains on in run folder ``out``, or ``None`` for the recipe's own tasks.

    The headroom stage's band (``headroom/pool.json``) when ``use_headroom`` and the stage has run, else the RL pool
    (``rl-pool.json``) when ``rl_share`` is set. With ``rl_share`` the headroom stage draws from the RL pool, so its band
    is a part of it.

    Raises:
        ConfigError: When ``rl_share`` is set and the headroom band holds a task outside the RL pool (it was drawn before
            the RL pool existed, over tasks SFT was shown).
    """
    from training.grpo.train import pool_ids

    band = out / "headroom" / "pool.json"
    if use_headroom and band.is_file():
        if rl_share and (outside := pool_ids(band) - pool_ids(out / POOL_FILE)):
            raise ConfigError(
                f"{band} holds {len(outside)} tasks outside {out / POOL_FILE} (e.g. {sorted(outside)[0]}): it was drawn "
                "without rl_share; delete the run's headroom*/ folders to draw it again from the RL pool"
            )
        return band
    return out / POOL_FILE if rl_share else None
