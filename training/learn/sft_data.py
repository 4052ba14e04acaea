"""The SFT stage's demonstrations: which of the oracle's kept episodes the model is fine-tuned on."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from training.learn.config import LearnConfig
from training.learn.rl_pool import POOL_FILE

if TYPE_CHECKING:
    from training.sft.collect import CollectResult


def sft_demos(cfg: LearnConfig, demos: Path, max_turns: int) -> CollectResult:
    """Rejection-sample the demonstration episodes (:func:`training.sft.collect.collect`) and keep the ones SFT sees.

    GRPO's own tasks stay out when ``cfg.rl_share`` set some apart; ``cfg.sft.max_demos`` keeps that many (the first
    ones, or :func:`even_forms` when ``cfg.sft.even_forms``).

    Args:
        cfg: The run's settings.
        demos: The demonstration run's folder.
        max_turns: The recipe's turn cap (longer episodes are not kept).

    Returns:
        The collection result, its ``kept`` rows narrowed as above.
    """
    from training.sft.collect import CollectConfig, collect

    result = collect(CollectConfig(runs=(str(demos),), max_turns=max_turns))
    if cfg.rl_share:  # GRPO's tasks stay out of the demonstrations
        from training.grpo.train import pool_ids

        held = pool_ids(cfg.out_dir() / POOL_FILE)
        result.kept = [r for r in result.kept if r["task_id"] not in held]
    if cfg.sft.max_demos is not None:
        n = cfg.sft.max_demos
        result.kept = even_forms(result.kept, n) if cfg.sft.even_forms else result.kept[:n]
    return result


def even_forms(kept: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """``n`` demonstrations: each tier keeps its share of the first ``n``, drawn from its question forms in turn (in
    file order within a form), so a form the task file holds less of is not also the one the model sees least.

    >>> rows = [{"metadata": {"tier": "b", "form": f}} for f in "xxxxy"] + [{"metadata": {"tier": "l", "form": "x"}}]
    >>> [r["metadata"]["form"] for r in even_forms(rows, 4)], [r["metadata"]["form"] for r in rows[:4]]
    (['x', 'x', 'x', 'y'], ['x', 'x', 'x', 'x'])
    """

    def key(r: dict[str, Any]) -> tuple[str, str]:
        meta = r.get("metadata") or {}
        return str(meta.get("tier", "")), str(meta.get("form", ""))

    quota = Counter(key(r)[0] for r in kept[:n])
    forms: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for r in kept:
        tier, form = key(r)
        forms.setdefault(tier, {}).setdefault(form, []).append(r)
    picked = []
    for tier, by_form in forms.items():
        queues = list(by_form.values())
        rows = [q[i] for i in range(max(map(len, queues))) for q in queues if i < len(q)]
        picked += rows[: quota[tier]]
    order = {id(r): i for i, r in enumerate(kept)}
    return sorted(picked, key=lambda r: order[id(r)])
