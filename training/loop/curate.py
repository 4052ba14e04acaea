"""Curation rules of the data-policy feedback loop: pure functions over the outcome table and the pool's state.

Every ``every`` optimiser steps a round judges each active task on its most recent rollouts *since it (re)entered
the set* (at most ``window`` of them, at least ``min_rollouts``, else no verdict yet):

- pass rate 1: retired as ``solved`` (no learning signal left);
- pass rate 0: retired as ``unsolved`` (too hard for now); after ``revisit_after`` rounds it may return
  (oldest first, at most ``max_return`` per round, only into slots freed this round);
- strictly between: the learning band; kept, and the band steers the fresh tasks (:mod:`training.loop.steer`).

The slots freed by retirements and not taken by returning tasks are what the synthesizer is asked to fill.

Example:
    >>> from training.loop.outcomes import Outcome
    >>> rows = [Outcome("a", 1, 1.0), Outcome("a", 1, 1.0), Outcome("b", 1, 0.0), Outcome("b", 1, 1.0)]
    >>> d = curate(["a", "b"], {}, {}, rows, round_=1, step=1, config=CurationConfig(min_rollouts=2))
    >>> d.retire_solved, d.band, d.n_fresh
    (['a'], ['b'], 1)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from simweb_core.errors import ConfigError
from simweb_core.fields import help_field
from training.loop.outcomes import Outcome

SOLVED, UNSOLVED = "solved", "unsolved"


@dataclass(frozen=True)
class CurationConfig:
    """When and how the task set is curated."""

    every: int = help_field(10, "Optimiser steps between curation rounds.")
    window: int = help_field(16, "Most recent rollouts of a task that decide its pass rate.")
    min_rollouts: int = help_field(4, "Rollouts a task needs (since it entered the set) before a verdict.")
    solved_reward: float = help_field(1.0, "Reward at or above which an episode counts as solved (a pass).")
    revisit_after: int = help_field(2, "Rounds a too-hard task stays retired before it may return.")
    max_return: int = help_field(2, "Too-hard tasks that return per round (oldest retirement first).")

    def __post_init__(self) -> None:
        if min(self.every, self.window, self.min_rollouts) < 1 or self.min_rollouts > self.window:
            raise ConfigError(
                f"CurationConfig needs every, window, min_rollouts >= 1 and min_rollouts <= window; got "
                f"{self.every}, {self.window}, {self.min_rollouts}"
            )
        if self.revisit_after < 1 or self.max_return < 0:
            raise ConfigError(
                f"CurationConfig needs revisit_after >= 1 and max_return >= 0; got {self.revisit_after}, {self.max_return}"
            )


@dataclass(frozen=True)
class TaskStats:
    """A task's recent record."""

    attempts: int
    passes: int

    @property
    def rate(self) -> float:
        """Pass rate (0 without attempts)."""
        return self.passes / self.attempts if self.attempts else 0.0


@dataclass
class Decision:
    """What one round decided (task ids)."""

    round: int
    step: int
    retire_solved: list[str] = field(default_factory=list)
    retire_unsolved: list[str] = field(default_factory=list)
    returning: list[str] = field(default_factory=list)
    band: list[str] = field(default_factory=list)
    unjudged: list[str] = field(default_factory=list)
    stats: dict[str, TaskStats] = field(default_factory=dict)

    @property
    def retired(self) -> list[str]:
        """Every task retired this round."""
        return self.retire_solved + self.retire_unsolved

    @property
    def n_fresh(self) -> int:
        """Freed slots left for fresh tasks."""
        return max(0, len(self.retired) - len(self.returning))


def recent_stats(
    outcomes: Sequence[Outcome], tasks: Sequence[str], since: Mapping[str, int], window: int, solved_reward: float
) -> dict[str, TaskStats]:
    """Each task's last ``window`` rollouts after step ``since[task]`` (default 0), in step order.

    Args:
        outcomes: The outcome table (any order; stable within a step).
        tasks: The task ids to judge.
        since: Step after which a task's rollouts count (when it last entered the set).
        window: Most recent rollouts kept per task.
        solved_reward: Reward at or above which a rollout counts as a pass.

    Returns:
        Task id -> :class:`TaskStats` (0 attempts for a task without rollouts).
    """
    wanted = set(tasks)
    per: dict[str, list[Outcome]] = {t: [] for t in tasks}
    for o in sorted(outcomes, key=lambda o: o.step):
        if o.task_id in wanted and o.step > since.get(o.task_id, 0):
            per[o.task_id].append(o)
    out = {}
    for t, rows in per.items():
        last = rows[-window:]
        out[t] = TaskStats(len(last), sum(o.passed(solved_reward) for o in last))
    return out


def returning_tasks(
    retired: Mapping[str, Mapping[str, int | str]], round_: int, config: CurationConfig, free: int
) -> list[str]:
    """Too-hard tasks whose time out is over, oldest retirement first, at most ``max_return`` and ``free``.

    Args:
        retired: Task id -> ``{"reason", "round", ...}`` of the retired tasks.
        round_: The current round.
        config: ``revisit_after`` and ``max_return``.
        free: Slots freed this round.
    """
    due = [
        (int(info["round"]), tid)
        for tid, info in retired.items()
        if info["reason"] == UNSOLVED and round_ - int(info["round"]) >= config.revisit_after
    ]
    return [tid for _, tid in sorted(due)][: min(config.max_return, free)]


def curate(
    active: Sequence[str],
    since: Mapping[str, int],
    retired: Mapping[str, Mapping[str, int | str]],
    outcomes: Sequence[Outcome],
    round_: int,
    step: int,
    config: CurationConfig,
) -> Decision:
    """One curation round (see the module docstring).

    Args:
        active: The active task ids.
        since: Step at which each active task (re)entered the set (default 0).
        retired: The retired tasks (``{"reason", "round"}`` each).
        outcomes: The outcome table.
        round_: This round's number (1-based).
        step: The optimiser step it runs after.
        config: The rules.

    Returns:
        The decision; nothing is changed here (see :meth:`training.loop.pool.TaskPool.apply`).
    """
    stats = recent_stats(outcomes, active, since, config.window, config.solved_reward)
    d = Decision(round_, step, stats=stats)
    for tid in active:
        s = stats[tid]
        if s.attempts < config.min_rollouts:
            d.unjudged.append(tid)
        elif s.passes == s.attempts:
            d.retire_solved.append(tid)
        elif s.passes == 0:
            d.retire_unsolved.append(tid)
        else:
            d.band.append(tid)
    d.returning = returning_tasks(retired, round_, config, len(d.retired))
    return d
