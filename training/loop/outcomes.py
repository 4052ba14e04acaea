"""The per-rollout outcome table of a run: one JSON line per rollout in ``<run>/loop/outcomes.jsonl``.

A row is ``{"task_id", "step", "reward", "answered", "turns", "tool_calls"}`` (``reward`` is ``None`` for an
unscorable episode; ``step`` is the optimiser step the rollout fed, 1-based). The file is appended as the run goes
and read back whole when a run resumes; :meth:`OutcomeLog.truncate` drops the rows of steps after the checkpoint a
run resumes from (they were played by a run that died before saving, and will be played again).

Example:
    >>> import tempfile, pathlib
    >>> log = OutcomeLog(pathlib.Path(tempfile.mkdtemp()) / "outcomes.jsonl")
    >>> log.append([{"task_id": "a", "step": 1, "reward": 1.0, "answered": True, "turns": 2, "tool_calls": 1}])
    >>> [o.task_id for o in OutcomeLog(log.path).rows]
    ['a']
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from simweb_core.errors import ConfigError


@dataclass(frozen=True)
class Outcome:
    """One row of the pass log: which task a rollout played, at which step, and whether it passed.

    Not a played episode (that is :class:`agents.episode.Episode`, which the rollout keeps with its counts and
    answer): the feedback loop only needs these few columns per rollout to decide which tasks are too easy or too
    hard, and keeps them across a whole run and its resumes.
    """

    task_id: str
    step: int
    reward: float | None
    answered: bool = False
    turns: int = 0
    tool_calls: int = 0

    @classmethod
    def of(cls, row: dict[str, Any]) -> Outcome:
        """Build from a dict (extra keys are ignored).

        Raises:
            ConfigError: When ``task_id`` or ``step`` is missing.
        """
        if "task_id" not in row or "step" not in row:
            raise ConfigError(f"an outcome needs task_id and step, got keys {sorted(row)}")
        reward = row.get("reward")
        return cls(
            str(row["task_id"]),
            int(row["step"]),
            None if reward is None else float(reward),
            bool(row.get("answered", False)),
            int(row.get("turns", 0)),
            int(row.get("tool_calls", 0)),
        )

    def passed(self, threshold: float) -> bool:
        """The rollout succeeded (an unscorable rollout never does)."""
        return self.reward is not None and self.reward >= threshold


class OutcomeLog:
    """The outcome table, in memory and in a JSONL file (created on the first append).

    Args:
        path: The JSONL file; existing rows are loaded.
        persist: Write the file (False on all but the main process of a multi-process run).
    """

    def __init__(self, path: Path, persist: bool = True) -> None:
        self.path, self.persist = Path(path), persist
        self.rows: list[Outcome] = []
        if self.path.is_file():
            lines = self.path.read_text(encoding="utf-8").splitlines()
            self.rows = [Outcome.of(json.loads(line)) for line in lines if line.strip()]

    def append(self, rows: Iterable[dict[str, Any] | Outcome]) -> None:
        """Add rollouts (dicts or :class:`Outcome`) and append them to the file."""
        new = [r if isinstance(r, Outcome) else Outcome.of(r) for r in rows]
        self.rows += new
        if not self.persist:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as f:
            f.writelines(json.dumps(asdict(o)) + "\n" for o in new)

    def __call__(self, rows: Iterable[dict[str, Any]]) -> None:
        """The trainer's ``outcome_sink``."""
        self.append(rows)

    def truncate(self, step: int) -> int:
        """Drop the rows of steps after ``step`` (file rewritten); returns how many were dropped."""
        kept = [o for o in self.rows if o.step <= step]
        dropped = len(self.rows) - len(kept)
        self.rows = kept
        if dropped and self.persist:
            self.path.write_text("".join(json.dumps(asdict(o)) + "\n" for o in kept), encoding="utf-8")
        return dropped

    def last_step(self) -> int:
        """The latest step with a row (0 when empty)."""
        return max((o.step for o in self.rows), default=0)
