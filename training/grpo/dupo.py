"""DUPO (WebSailor): fill the batch with informative groups instead of sampling more, and drop tasks already solved.

Three pure functions, one driver and a cache key:

- :func:`dupo_fill_index`: during RL, a group whose rewards are all equal has advantage 0 everywhere (no learning
  signal). DUPO drops it and refills its place by duplicating another group *of the same batch* whose rewards vary,
  so every optimiser step trains on a full batch of informative groups without extra rollouts. The function returns
  the sample index that does this (``out[k] = in[index[k]]``) and the counts.
- :func:`dupo_weights`: the same filled batch as per-sample weights, which the trainer uses: it trains the same step
  without computing the copies.
- :func:`always_solved`: before RL, the tasks whose ``k`` rollouts of the starting policy all succeeded.
- :func:`prefilter_tasks`: plays those ``k`` rollouts with the trainer's rollout function and drops such tasks
  (:class:`PrefilterConfig`: the ``prefilter:`` section of a GRPO recipe).
- :func:`verdict_key`: the content key a saved verdict carries (recipe, starting weights, tasks), so that a run that
  starts over reuses it only while nothing it depends on changed.

Example:
    >>> import torch
    >>> index, stats = dupo_fill_index(torch.tensor([1., 0., 1., 1., 0., 1.]), 2, seed=0)
    >>> index.tolist(), stats
    ([0, 1, 0, 1, 4, 5], {'groups': 3, 'dropped': 1, 'duplicated': 1})
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from simweb_core.errors import ConfigError
from simweb_core.fields import help_field
from training.grpo.advantage import zero_variance_groups

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PrefilterConfig:
    """DUPO's pre-RL filter: the ``prefilter:`` section of a GRPO recipe."""

    k: int = help_field(
        0, "Play k rollouts per task with the starting policy and drop the tasks it always solves (0 = off)."
    )
    verdict: str | None = help_field(
        None,
        (
            "A saved verdict (another run's prefilter.json from the same "
            "starting model, tasks and seed) to reuse instead of playing "
            "its rollouts again."
        ),
    )
    solved_reward: float | None = help_field(
        None,
        (
            "Reward at or above which a pre-filter rollout counts as solved (None: the recipe's solved_reward). "
            "Under env.reward.call_cost, 1.0 drops only the tasks whose rollouts are all right without a charged "
            "call, and keeps those whose right answers sometimes pay for one: their groups vary under the cost."
        ),
    )

    def __post_init__(self) -> None:
        if self.k < 0:
            raise ConfigError(f"prefilter.k must be >= 0 (0 = off), got {self.k}")
        if self.solved_reward is not None and not 0.0 < self.solved_reward <= 1.0:
            raise ConfigError(
                f"prefilter.solved_reward must be in (0, 1] or null (the recipe's solved_reward), "
                f"got {self.solved_reward!r}"
            )


def dupo_fill_index(rewards: torch.Tensor, group_size: int, seed: int = 0) -> tuple[torch.Tensor, dict[str, int]]:
    """The sample index that replaces zero-variance groups by copies of informative groups of the same batch.

    Args:
        rewards: Flat rewards, ``group_size`` consecutive samples per group; NaN = unscorable.
        group_size: ``G``.
        seed: Seed of the choice of which informative groups are copied (round-robin over a seeded permutation,
            so copies spread over the informative groups).

    Returns:
        ``(index, stats)``: a flat long tensor of sample indices (kept groups stay in place; a dropped group's
        slots point at the samples of a copied group) and ``{"groups", "dropped", "duplicated"}``. When no group
        varies, nothing can be copied: the batch is left as it is and ``dropped`` / ``duplicated`` are 0.

    Raises:
        ConfigError: When the batch is not a whole number of groups.
    """
    flat = zero_variance_groups(rewards, group_size)
    n_groups = flat.numel()
    informative = [g for g in range(n_groups) if not flat[g]]
    empty = [g for g in range(n_groups) if flat[g]]
    index = torch.arange(n_groups * group_size)
    if not informative or not empty:
        return index, {"groups": n_groups, "dropped": 0, "duplicated": 0}
    gen = torch.Generator().manual_seed(seed)
    order = [informative[i] for i in torch.randperm(len(informative), generator=gen).tolist()]
    for k, g in enumerate(empty):
        src = order[k % len(order)]
        index[g * group_size : (g + 1) * group_size] = torch.arange(src * group_size, (src + 1) * group_size)
    return index, {"groups": n_groups, "dropped": len(empty), "duplicated": len(empty)}


def dupo_weights(rewards: torch.Tensor, group_size: int, seed: int = 0) -> tuple[torch.Tensor, dict[str, int]]:
    """DUPO's filled batch as per-sample weights: how many times each sample counts in the loss.

    A copy of a sample has the same tokens, log-probabilities and advantage as the sample, so its gradient is the
    same: weighting the original by ``1 + copies`` (the trainer scales its advantage, which the clipped objective
    carries linearly) and the dropped groups by 0 trains the same step as :func:`dupo_fill_index`'s copied batch,
    without a forward and backward pass over the copies. That holds for the policy term; a KL term (``beta > 0``,
    which no recipe sets) counts each kept sample once instead of ``1 + copies`` times.

    Args:
        rewards: Flat rewards, ``group_size`` consecutive samples per group; NaN = unscorable.
        group_size: ``G``.
        seed: Seed of the choice of copied groups (as :func:`dupo_fill_index`).

    Returns:
        ``(weights, stats)``: float weights of shape ``rewards.shape`` and :func:`dupo_fill_index`'s counts.

    Example:
        >>> w, stats = dupo_weights(torch.tensor([1., 0., 1., 1., 0., 1.]), 2, seed=0)
        >>> w.tolist(), stats["dropped"]
        ([2.0, 2.0, 0.0, 0.0, 1.0, 1.0], 1)
    """
    index, stats = dupo_fill_index(rewards, group_size, seed)
    return torch.bincount(index, minlength=rewards.numel()).to(torch.float32), stats


def always_solved(
    task_ids: Sequence[str], rewards: Sequence[float | None], k: int, solved_reward: float = 1.0
) -> set[str]:
    """The tasks every one of whose ``k`` rollouts reached ``solved_reward`` (DUPO's pre-RL filter).

    Args:
        task_ids: One task id per rollout.
        rewards: One reward per rollout (``None`` = unscorable, never a success).
        k: Rollouts per task; a task with fewer is never counted as solved.
        solved_reward: A rollout succeeds when its reward is at least this.

    Returns:
        The ids of the always-solved tasks.

    Raises:
        ConfigError: For mismatched lengths or ``k < 1``.
    """
    if len(task_ids) != len(rewards) or k < 1:
        raise ConfigError(
            f"always_solved needs one reward per task id and k >= 1; got {len(task_ids)}, {len(rewards)}, k={k}"
        )
    seen: dict[str, list[bool]] = {}
    for tid, r in zip(task_ids, rewards):
        seen.setdefault(tid, []).append(r is not None and r >= solved_reward)
    return {tid for tid, ok in seen.items() if len(ok) >= k and all(ok)}


def prefilter_tasks(
    trainer: Any, rollout: Any, tasks: Sequence[Any], k: int, solved_reward: float = 1.0, batch: int = 16
) -> tuple[list[Any], dict[str, Any]]:
    """Play ``k`` rollouts per task with the starting policy and drop the tasks it always solves.

    Args:
        trainer: The (not yet trained) GRPO trainer; its model generates.
        rollout: A :class:`~training.grpo.rollout.AgentRollout` over the same tasks.
        tasks: The task set.
        k: Rollouts per task.
        solved_reward: Reward at or above which an episode counts as solved.
        batch: Episodes per rollout call.

    Returns:
        ``(kept tasks, report)`` with the report's ``k``, ``tasks``, ``dropped`` (ids) and ``episodes``. All tasks
        are kept when every one of them is solved (an empty set cannot train).
    """
    acc = trainer.accelerator
    prompts = [(t, [{"role": "user", "content": t.question}]) for t in tasks for _ in range(k)]
    mine = prompts[acc.process_index :: acc.num_processes]  # each process plays a share; the verdict uses all of them
    played: list[tuple[str, float | None]] = []
    from tqdm.auto import tqdm

    bar = tqdm(total=len(mine), desc=f"DUPO prefilter ({k} per task)", unit="ep", disable=not acc.is_main_process)
    for start in range(0, len(mine), batch):
        chunk = mine[start : start + batch]
        res = rollout([p for _, p in chunk], trainer)
        played += [(t.id, r) for (t, _), r in zip(chunk, res["env_reward"])]
        bar.update(len(chunk))
        bar.set_postfix(solved=sum(r is not None and r >= solved_reward for _, r in played))
    bar.close()
    if acc.num_processes > 1:
        from accelerate.utils import gather_object

        played = gather_object(played)
    ids, rewards = [tid for tid, _ in played], [r for _, r in played]
    solved = always_solved(ids, rewards, k, solved_reward)
    kept = [t for t in tasks if t.id not in solved] or list(tasks)
    report = {
        "k": k,
        "solved_reward": solved_reward,
        "tasks": len(tasks),
        "dropped": sorted(solved) if len(kept) < len(tasks) else [],
        "episodes": len(ids),
    }
    log.warning(
        "DUPO prefilter: %d of %d tasks always solved in %d rollouts, dropped", len(report["dropped"]), len(tasks), k
    )
    return kept, report


#: Recipe fields that name or place a run without changing what its pre-filter rollouts play.
_NOT_IN_KEY = ("name", "output_dir", "resume")


def verdict_key(recipe: Any, task_ids: Sequence[str]) -> str:
    """A content key of a pre-filter verdict: the recipe (less its name, folder and resume switch, and the verdict it
    may reuse), the starting model's weight files and the task ids.

    A run that starts over (no checkpoint yet) reuses its saved ``prefilter.json`` only when this key matches, so an
    interrupted run does not replay the filter, and a changed model, task set or setting never reuses a stale one.

    Args:
        recipe: The run's :class:`~training.grpo.config.GRPORecipe`.
        task_ids: The ids of the tasks the filter plays, in order.

    Returns:
        A hex digest.
    """
    key = dataclasses.asdict(recipe)
    for name in _NOT_IN_KEY:
        key.pop(name, None)
    key["prefilter"].pop("verdict", None)
    key["weights"] = _weights_digest(Path(recipe.model))
    key["task_ids"] = list(task_ids)
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _weights_digest(folder: Path) -> str | None:
    """SHA-256 over a model folder's top-level weight and config files, by name (``None`` for a name that is not a
    folder, such as ``tiny``, whose weights the seed in the recipe fixes)."""
    from wiki_index.sources.base import file_sha256

    if not folder.is_dir():
        return None
    files = sorted(
        f for f in folder.iterdir() if f.is_file() and (f.suffix in (".safetensors", ".bin") or f.name == "config.json")
    )
    return hashlib.sha256(json.dumps([[f.name, file_sha256(f)] for f in files]).encode()).hexdigest()
