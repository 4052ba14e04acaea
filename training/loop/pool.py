"""The training task set as a fixed number of slots whose tasks change between rounds.

The GRPO dataset is one row per slot (:meth:`TaskPool.dataset`); the trainer resolves a row's slot to the task it
holds *now* (:meth:`TaskPool.row`) when it generates, so the sampler, the dataloader, the model, the optimiser and the
step count carry on untouched when a round swaps tasks. When fewer tasks are active than there are slots (the
synthesizer came up short), slots wrap around the active tasks.

The state (active ids in slot order, when each entered, the retired ones and why) is a JSON-able dict saved with
every round, so a resumed run restores the set of its checkpoint's step.

Example:
    >>> from sim_web.env import Task
    >>> pool = TaskPool([Task("a", "Q a?", "A"), Task("b", "Q b?", "B")])
    >>> pool.row(1)["task_id"], pool.row(3)["task_id"]
    ('b', 'b')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sim_web.env import Task
from simweb_core.errors import ConfigError
from training.loop.curate import SOLVED, UNSOLVED, Decision


class TaskPool:
    """Slots over a changing task set.

    Args:
        tasks: The starting tasks (one slot each).
    """

    def __init__(self, tasks: Sequence[Task]) -> None:
        if not tasks:
            raise ConfigError("a TaskPool needs at least one task")
        self.tasks: dict[str, Task] = {}
        self.add_tasks(tasks)
        self.n_slots = len(tasks)
        self.active: list[str] = [t.id for t in tasks]
        self.since: dict[str, int] = {}
        self.retired: dict[str, dict[str, Any]] = {}
        self.round = 0
        self.step = 0

    def add_tasks(self, tasks: Sequence[Task]) -> None:
        """Make tasks known (fresh ones, or those of a resumed run's earlier rounds)."""
        for t in tasks:
            self.tasks.setdefault(t.id, t)

    def row(self, slot: int) -> dict[str, Any]:
        """The dataset fields of the task a slot holds now: ``prompt`` (the question as a user turn) and ``task_id``."""
        task = self.tasks[self.active[int(slot) % len(self.active)]]
        return {"prompt": [{"role": "user", "content": task.question}], "task_id": task.id}

    def dataset(self) -> Any:
        """A ``datasets.Dataset`` with one row per slot (``slot`` plus the fields of its current task)."""
        from datasets import Dataset

        return Dataset.from_list([{**self.row(i), "slot": i} for i in range(self.n_slots)])

    def active_tasks(self) -> list[Task]:
        """The active tasks in slot order."""
        return [self.tasks[t] for t in self.active]

    def apply(self, decision: Decision, fresh: Sequence[Task]) -> dict[str, list[str]]:
        """Retire, bring back and add tasks as a round decided; returns what changed (ids).

        Retired tasks leave their slots; returning tasks, then fresh ones, take the freed slots in order (fresh
        beyond the freed slots are ignored). If retiring would leave no task at all, the retirements are undone.
        """
        retired = [t for t in decision.retired if t in self.active]
        keep = [t for t in self.active if t not in set(retired)]
        incoming = [t for t in decision.returning if t in self.retired]
        self.add_tasks(fresh)
        room = max(0, self.n_slots - len(keep) - len(incoming))
        added = [t.id for t in fresh if t.id not in self.active and t.id not in self.retired][:room]
        if not keep and not incoming and not added:
            retired, keep = [], list(self.active)
        for tid in retired:
            reason = SOLVED if tid in decision.retire_solved else UNSOLVED
            self.retired[tid] = {"reason": reason, "round": decision.round, "step": decision.step}
            self.since.pop(tid, None)
        for tid in incoming + added:
            self.retired.pop(tid, None)
            self.since[tid] = decision.step
        self.active = keep + incoming + added
        self.round, self.step = decision.round, decision.step
        return {
            "retired_solved": [t for t in retired if self.retired[t]["reason"] == SOLVED],
            "retired_unsolved": [t for t in retired if self.retired[t]["reason"] == UNSOLVED],
            "returned": incoming,
            "added": added,
        }

    def state(self) -> dict[str, Any]:
        """The JSON-able state (ids only; task records are saved separately)."""
        return {
            "round": self.round,
            "step": self.step,
            "n_slots": self.n_slots,
            "active": list(self.active),
            "since": dict(self.since),
            "retired": {k: dict(v) for k, v in self.retired.items()},
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Return to a saved state.

        Raises:
            ConfigError: When the state names tasks the pool does not know, or another number of slots.
        """
        unknown = [t for t in [*state["active"], *state["retired"]] if t not in self.tasks]
        if unknown or int(state["n_slots"]) != self.n_slots:
            raise ConfigError(
                f"cannot restore the loop's task pool: unknown tasks {unknown[:5]} or {state['n_slots']} slots "
                f"instead of {self.n_slots} (was the run started with another task set?)"
            )
        self.round, self.step = int(state["round"]), int(state["step"])
        self.active = list(state["active"])
        self.since = {k: int(v) for k, v in state["since"].items()}
        self.retired = {k: dict(v) for k, v in state["retired"].items()}
