"""Aim fresh tasks at the learning band: a difficulty target from the pass rates, and a synthesizer call that meets it.

The records of :mod:`training.synth` carry ``difficulty`` (subgraph ``nodes`` / ``edges``, ``hops``, ``constraints``,
the shape ``score``, ``level`` and, in newer sets, the measured ``oracle_searches``) and ``uncertainty_types``.
:func:`target_of` turns one round's verdicts into a :class:`Target`:

- tasks in the band (pass rate strictly between 0 and 1): their mean score (and mean oracle searches when measured),
  their subgraph sizes, their uncertainty types;
- no band but both extremes: halfway between the mean score of the solved and of the unsolved tasks;
- only solved tasks: ``shift`` above their mean score (harder); only unsolved: ``shift`` below (easier);
- no verdicts, or tasks without difficulty features: no target (the synthesizer's defaults).

:class:`SynthSource` asks :func:`training.synth.pipeline.generate_with_report` (new seed per round, the same gates)
for ``oversample`` times the tasks wanted, with subgraph sizes around the target's, drops what the run already knows
or holds out, and keeps the candidates closest to the target (score distance, then uncertainty-type overlap).
Nothing is made up here: every fresh task is a synthesizer record that passed its gates.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from training.loop.curate import Decision

log = logging.getLogger(__name__)
SIZES = (3, 4, 5, 6)  # the synthesizer's default subgraph sizes
#: The nominal difficulty score of each curriculum tier (records' ``difficulty.score``: lookup 1, bridge 2; SailorFog-QA
#: questions score hops + cycle rank + constraints / 4, 3 and above), used to pick the tier a target falls in.
TIER_SCORES = {"lookup": 1.0, "bridge": 2.0, "sailorfog": 4.0}


def tier_for(target: Target | None, tiers: Sequence[str]) -> str:
    """The tier whose nominal score is closest to the target's (the harder one on a tie); the first tier without one.

    >>> tier_for(Target(2.0), ("lookup", "bridge", "sailorfog"))
    'bridge'
    >>> tier_for(Target(3.0), ("lookup", "bridge", "sailorfog"))
    'sailorfog'
    """
    if target is None:
        return tiers[0]
    return min(tiers, key=lambda t: (abs(TIER_SCORES[t] - target.score), -TIER_SCORES[t]))


@dataclass(frozen=True)
class Target:
    """The difficulty fresh tasks should have."""

    score: float
    sizes: tuple[int, ...] = SIZES
    uncertainty: Mapping[str, float] = field(default_factory=dict)
    source: str = "band"
    searches: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """For the round log."""
        return {
            "score": round(self.score, 3),
            "sizes": list(self.sizes),
            "uncertainty": dict(self.uncertainty),
            "source": self.source,
            "searches": self.searches,
        }

    def distance(self, d: Mapping[str, Any]) -> float:
        """How far a record's difficulty is: score difference, plus the oracle-search difference when both are measured."""
        gap = abs(float(d["score"]) - self.score)
        if (
            self.searches is not None
            and isinstance(d.get("oracle_searches"), (int, float))
            and d["oracle_searches"] > 0
        ):
            gap += abs(float(d["oracle_searches"]) - self.searches)
        return gap


def difficulty(meta: Mapping[str, Any]) -> dict[str, Any] | None:
    """A task's ``difficulty`` dict from its metadata (``None`` for tasks the synthesizer did not make)."""
    d = meta.get("difficulty")
    return d if isinstance(d, Mapping) and "score" in d else None


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs)


def target_of(decision: Decision, metadata: Mapping[str, Mapping[str, Any]], shift: float = 1.0) -> Target | None:
    """The difficulty target of one round (see the module docstring).

    Args:
        decision: The round's verdicts.
        metadata: Task id -> task metadata (with ``difficulty`` and ``uncertainty_types`` for synthesized tasks).
        shift: Score step taken when only one extreme is seen.

    Returns:
        The target, or ``None`` when nothing steers.
    """

    def scored(ids: Sequence[str]) -> list[tuple[str, dict[str, Any]]]:
        return [(t, d) for t in ids if (d := difficulty(metadata.get(t, {}))) is not None]

    band, solved, unsolved = scored(decision.band), scored(decision.retire_solved), scored(decision.retire_unsolved)
    if band:
        types = Counter(u for t, _ in band for u in metadata[t].get("uncertainty_types", []))
        sizes = tuple(sorted({min(max(int(d["nodes"]), SIZES[0]), SIZES[-1]) for _, d in band}))
        searches = [float(d["oracle_searches"]) for _, d in band if (d.get("oracle_searches") or 0) > 0]
        return Target(
            _mean([d["score"] for _, d in band]),
            sizes,
            {u: c / len(band) for u, c in sorted(types.items())},
            "band",
            _mean(searches) if searches else None,
        )
    if solved and unsolved:
        return Target(
            (_mean([d["score"] for _, d in solved]) + _mean([d["score"] for _, d in unsolved])) / 2, source="between"
        )
    if solved:
        return Target(_mean([d["score"] for _, d in solved]) + shift, source="harder")
    if unsolved:
        return Target(max(0.0, _mean([d["score"] for _, d in unsolved]) - shift), source="easier")
    return None


def rank(records: Sequence[Mapping[str, Any]], target: Target | None) -> list[Mapping[str, Any]]:
    """Candidates closest to the target first (:meth:`Target.distance`), then more of its uncertainty types, then id."""
    if target is None:
        return sorted(records, key=lambda r: str(r["id"]))

    def key(r: Mapping[str, Any]) -> tuple[float, float, str]:
        d = difficulty(r)
        overlap = sum(target.uncertainty.get(u, 0.0) for u in r.get("uncertainty_types", []))
        return (target.distance(d) if d else float("inf")), -overlap, str(r["id"])

    return sorted(records, key=key)


@dataclass
class SynthSource:
    """Fresh tasks from the synthesizer, aimed at a target, never a task the run knows or holds out.

    Attributes:
        index_dir: The index the run browses (the synthesizer builds its graph from the same store).
        max_nodes: Entities of the synthesizer's knowledge graph (smaller is faster, fewer questions).
        n_seeds: Seed entities of that graph.
        oversample: Candidates asked per task wanted (the closest to the target are kept).
        exclude_questions: Question texts never to add (held-out tasks, tasks already seen).
        exclude_answers: Answers never to add (held-out tasks' answers: no leak into training).
        generate: The synthesizer entry point (``generate_with_report``'s signature); tests may pass their own.
        tiers: Curriculum tiers fresh tasks may come from (:data:`TIER_SCORES`); each round asks the tier closest to
            its target (:func:`tier_for`), so a run that starts on ``lookup`` moves up as the policy solves it.
        k: Search results an agent sees (the ``lookup`` / ``bridge`` gates look in the top ``k``).
    """

    index_dir: str | Path
    max_nodes: int = 1000
    n_seeds: int = 20
    oversample: float = 3.0
    exclude_questions: set[str] = field(default_factory=set)
    exclude_answers: set[str] = field(default_factory=set)
    generate: Callable[..., Any] | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)
    tiers: tuple[str, ...] = ("sailorfog",)
    k: int = 10

    def __post_init__(self) -> None:
        bad = [t for t in self.tiers if t not in TIER_SCORES]
        if bad or not self.tiers:
            raise ValueError(
                f"SynthSource.tiers must be a non-empty subset of {tuple(TIER_SCORES)}, got {self.tiers!r}"
            )

    def __call__(self, n: int, seed: int, target: Target | None) -> list[dict[str, Any]]:
        """Up to ``n`` fresh, gated task records for the target (fewer when the synthesizer runs out)."""
        if n < 1:
            return []
        tier = tier_for(target, self.tiers)
        records = self._candidates(tier, max(n, round(n * self.oversample)), seed, target)
        fresh = [
            r
            for r in records
            if r["question"] not in self.exclude_questions
            and r["answer"].casefold() not in {a.casefold() for a in self.exclude_answers}
        ]
        chosen = [replace_split(r) for r in rank(fresh, target)[:n]]
        self.exclude_questions.update(r["question"] for r in chosen)
        self.calls.append(
            {
                "seed": seed,
                "tier": tier,
                "wanted": n,
                "candidates": len(records),
                "usable": len(fresh),
                "chosen": len(chosen),
            }
        )
        log.info(
            "loop: synthesized %d candidates (seed %d), %d usable, kept %d", len(records), seed, len(fresh), len(chosen)
        )
        return chosen

    def _candidates(self, tier: str, n: int, seed: int, target: Target | None) -> list[dict[str, Any]]:
        """Gated records of one tier: SailorFog-QA from the knowledge graph, lookup / bridge from the typed facts."""
        if tier == "sailorfog":
            from training.synth.config import SynthConfig
            from training.synth.pipeline import generate_with_report

            cfg = SynthConfig(
                n=n,
                seed=seed,
                max_nodes=self.max_nodes,
                n_seeds=self.n_seeds,
                test_fraction=0.0,
                sizes=target.sizes if target else SIZES,
            )
            return (self.generate or generate_with_report)(self.index_dir, config=cfg)[0]
        from training.synth.tiers.generate import TierConfig, generate_tier

        return generate_tier(self.index_dir, TierConfig(tier=tier, n=n, seed=seed, k=self.k, test_fraction=0.0))[0]


def replace_split(record: Mapping[str, Any]) -> dict[str, Any]:
    """A fresh record for training (``split`` = ``train``, ``loop_fresh`` = True)."""
    return {**record, "split": "train", "loop_fresh": True}
