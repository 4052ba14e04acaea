"""The data-policy feedback loop of a GRPO run: outcome table -> curation round -> fresh tasks -> the same trainer.

The outcome table (:mod:`training.loop.outcomes`, ``<run>/outcomes.jsonl``, written by every run) is handed in.
Files under ``<run>/loop/``:

- ``rounds.jsonl``: one line per round (round 0 = the starting set) with what changed, the set's size, mean pass rate,
  difficulty and uncertainty-type mix, the steering target and the pool's state (so a resumed run restores it);
- ``tasks.jsonl``: every fresh task record the synthesizer produced for the run;
- ``rounds.png``: the set's evolution (:mod:`training.loop.plot`).

:meth:`FeedbackLoop.callback` is a ``TrainerCallback`` that runs a round every ``every`` optimiser steps (before that
step's checkpoint is written, so checkpoint ``N`` and the state of round ``N`` go together). :meth:`FeedbackLoop.resume`
truncates the round log to a checkpoint's step and restores that round's pool.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim_web.env import Task
from simweb_core.errors import ConfigError
from simweb_core.fields import help_field
from training.loop.curate import CurationConfig, Decision, curate
from training.loop.outcomes import OutcomeLog
from training.loop.pool import TaskPool
from training.loop.steer import TIER_SCORES, Target, difficulty, target_of

log = logging.getLogger(__name__)
#: A synthesizer: ``(n, seed, target) -> task records``.
Synthesize = Callable[[int, int, "Target | None"], list[dict[str, Any]]]


@dataclass(frozen=True)
class LoopConfig(CurationConfig):
    """The ``loop:`` section of a GRPO recipe: whether the loop runs, its curation rules and its synthesizer's knobs."""

    enabled: bool = help_field(
        False,
        (
            "Run the data-policy feedback loop: retire tasks with pass rate 0 "
            "or 1, add fresh synthesized tasks aimed at the learning band, "
            "same trainer."
        ),
    )
    synth_max_nodes: int = help_field(
        1000, "Knowledge-graph size of the loop's synthesizer calls (smaller: faster, fewer tasks)."
    )
    tiers: tuple[str, ...] = help_field(
        ("sailorfog",),
        (
            "Curriculum tiers the fresh tasks come from "
            "(lookup, bridge, sailorfog); each round asks "
            "the tier closest to the learning band."
        ),
    )
    synth_oversample: float = help_field(
        3.0, "Candidates synthesized per fresh task wanted (the closest to the target are kept)."
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        bad = [t for t in self.tiers if t not in TIER_SCORES]
        if bad or not self.tiers:
            raise ConfigError(f"loop.tiers must be a non-empty subset of {tuple(TIER_SCORES)}, got {self.tiers!r}")
        if self.synth_max_nodes < 1 or self.synth_oversample < 1:
            raise ConfigError(
                f"loop needs synth_max_nodes >= 1 and synth_oversample >= 1, got {self.synth_max_nodes}, "
                f"{self.synth_oversample}"
            )


class FeedbackLoop:
    """Curation rounds over a :class:`TaskPool`.

    Args:
        pool: The training set's slots.
        out_dir: ``<run>/loop``.
        outcomes: The run's outcome table (the trainer's ``outcome_sink``).
        config: The curation rules.
        synthesize: Where fresh tasks come from (:class:`training.loop.steer.SynthSource`).
        seed: Base seed; round ``r`` asks the synthesizer with seed ``seed * 1000 + r``.
        on_added: Called with the fresh :class:`Task` objects of a round (the rollout must know their questions).
        persist: Write the files (the main process); every process runs the same rounds on the same outcomes.
    """

    def __init__(
        self,
        pool: TaskPool,
        out_dir: Path,
        outcomes: OutcomeLog,
        config: CurationConfig,
        synthesize: Synthesize,
        seed: int = 0,
        on_added: Callable[[list[Task]], None] | None = None,
        persist: bool = True,
    ) -> None:
        self.pool, self.out, self.outcomes, self.config, self.synthesize = (
            pool,
            Path(out_dir),
            outcomes,
            config,
            synthesize,
        )
        self.seed, self.on_added, self.persist = seed, on_added, persist
        self.out.mkdir(parents=True, exist_ok=True)
        self._rounds: list[dict[str, Any]] = self.rounds()

    @property
    def rounds_path(self) -> Path:
        """``rounds.jsonl``."""
        return self.out / "rounds.jsonl"

    def rounds(self) -> list[dict[str, Any]]:
        """The round log (as on disk)."""
        if not self.rounds_path.is_file():
            return []
        return [json.loads(line) for line in self.rounds_path.read_text(encoding="utf-8").splitlines() if line.strip()]

    def start(self, resume_step: int | None) -> None:
        """Begin a run: fresh logs (``resume_step`` None), or the logs and pool of checkpoint ``resume_step``."""
        if resume_step is None:
            for name in ("rounds.jsonl", "tasks.jsonl", "rounds.png"):
                if self.persist:
                    (self.out / name).unlink(missing_ok=True)
            self._rounds = []
            self._log_round(
                Decision(0, 0), {"retired_solved": [], "retired_unsolved": [], "returned": [], "added": []}, None
            )
        else:
            self.resume(resume_step)

    def resume(self, step: int) -> None:
        """Keep the round history up to ``step`` and restore the pool of the last round at or before it (the outcome
        table is truncated by its owner)."""
        rounds = self._rounds = [r for r in self.rounds() if r["step"] <= step]
        if self.persist:
            self.rounds_path.write_text("".join(json.dumps(r) + "\n" for r in rounds), encoding="utf-8")
        fresh = self.fresh_tasks()
        self.pool.add_tasks(fresh)
        if self.on_added:
            self.on_added(fresh)
        if rounds:
            self.pool.restore(rounds[-1]["state"])
        log.warning(
            "loop: resumed at step %d (round %d, %d outcomes in the history)",
            step,
            self.pool.round,
            len(self.outcomes.rows),
        )

    def fresh_tasks(self) -> list[Task]:
        """Every fresh task synthesized so far in this run."""
        path = self.out / "tasks.jsonl"
        if not path.is_file():
            return []
        return [
            Task.from_record(json.loads(line), str(path))
            for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()
        ]

    def run_round(self, step: int) -> dict[str, Any]:
        """Curate, synthesize, swap; returns the round's log entry."""
        round_ = self.pool.round + 1
        d = curate(self.pool.active, self.pool.since, self.pool.retired, self.outcomes.rows, round_, step, self.config)
        target = target_of(d, {tid: t.metadata for tid, t in self.pool.tasks.items()})
        records = self.synthesize(d.n_fresh, self.seed * 1000 + round_, target) if d.n_fresh else []
        fresh = [Task.from_record(r, "synthesizer") for r in records]
        if records and self.persist:
            with (self.out / "tasks.jsonl").open("a", encoding="utf-8") as f:
                f.writelines(json.dumps(r) + "\n" for r in records)
        changed = self.pool.apply(d, fresh)
        if self.on_added and fresh:
            self.on_added(fresh)
        entry = self._log_round(d, changed, target)
        log.warning(
            "loop round %d (step %d): retired %d solved / %d unsolved, %d returned, %d added; %d active",
            round_,
            step,
            len(changed["retired_solved"]),
            len(changed["retired_unsolved"]),
            len(changed["returned"]),
            len(changed["added"]),
            len(self.pool.active),
        )
        return entry

    def _log_round(self, d: Decision, changed: dict[str, list[str]], target: Target | None) -> dict[str, Any]:
        if d.round == 0:
            self.pool.round, self.pool.step = 0, 0
        judged = [s.rate for s in d.stats.values() if s.attempts >= self.config.min_rollouts]
        entry = {
            "round": d.round,
            "step": d.step,
            "size": len(self.pool.active),
            "slots": self.pool.n_slots,
            **{k: v for k, v in changed.items()},
            **{f"n_{k}": len(v) for k, v in changed.items()},
            "band": len(d.band),
            "unjudged": len(d.unjudged),
            "mean_pass_rate": sum(judged) / len(judged) if judged else None,
            "pass_rates": {t: round(s.rate, 4) for t, s in sorted(d.stats.items()) if s.attempts},
            "target": target.as_dict() if target else None,
            **mix(self.pool.active_tasks()),
            "state": self.pool.state(),
        }
        self._rounds.append(entry)
        if self.persist:
            with self.rounds_path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(entry) + "\n")
            self._plot()
        return entry

    def _plot(self) -> None:
        try:
            from training.loop.plot import plot_rounds

            plot_rounds(self._rounds, self.out / "rounds.png")
        except ImportError as e:  # matplotlib is optional
            log.warning("loop: no rounds.png (%s)", e)

    def callback(self) -> Any:
        """A ``TrainerCallback``: the outcome sink stays on the trainer; this runs a round every ``every`` steps."""
        from transformers import TrainerCallback

        loop = self

        class FeedbackLoopCallback(TrainerCallback):
            def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
                if state.global_step % loop.config.every == 0 and state.global_step > loop.pool.step:
                    loop.run_round(state.global_step)

        return FeedbackLoopCallback()


def mix(tasks: Sequence[Task]) -> dict[str, Any]:
    """The difficulty and uncertainty-type mix of a task set (for the round log)."""
    diffs = [d for t in tasks if (d := difficulty(t.metadata)) is not None]
    levels = Counter(str(d.get("level")) for d in diffs)
    types = Counter(u for t in tasks for u in t.metadata.get("uncertainty_types", []))
    return {
        "distinct": len({t.id for t in tasks}),
        "fresh": sum(bool(t.metadata.get("loop_fresh")) for t in tasks),
        "mean_difficulty": sum(float(d["score"]) for d in diffs) / len(diffs) if diffs else None,
        "levels": dict(sorted(levels.items())),
        "uncertainty_types": dict(sorted(types.items())),
    }
