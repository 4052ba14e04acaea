"""The order in which GRPO meets its train tasks when ``balance_tiers`` is on.

TRL's sampler shuffles the whole task list, so with two prompts per step a step often holds two tasks of one tier.
When the tiers want opposite habits (a one-hop ``lookup`` is solved by stopping after one search, a ``bridge`` needs
a second), such a step pushes the stop/continue decision one way for everyone. Interleaving the tiers puts one task
of each tier in the same step, so the group advantages reward stopping on one and searching on in the other within
one gradient. The tiers are rarely the same size (DUPO's pre-filter drops more of the easy tier), so a smaller tier
starts over, reshuffled, until the largest has been played once: every step stays mixed to the end of the list.

Example:
    >>> from types import SimpleNamespace as T
    >>> tasks = [T(id=f"l{i}", metadata={"tier": "lookup"}) for i in range(2)]
    >>> tasks += [T(id=f"b{i}", metadata={"tier": "bridge"}) for i in range(3)]
    >>> [t.metadata["tier"] for t in interleave_tiers(tasks, seed=0)]
    ['bridge', 'lookup', 'bridge', 'lookup', 'bridge', 'lookup']
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any


def interleave_tiers(tasks: Sequence[Any], seed: int) -> list[Any]:
    """Round-robin over the tiers (in sorted order), each tier shuffled with ``seed``; a tier that runs out starts
    over in a new shuffle until the largest tier has been played once.

    Args:
        tasks: Tasks with ``metadata["tier"]`` (a task without one forms the tier ``""``).
        seed: Seed of the shuffles inside each tier.

    Returns:
        Every task at least once, tiers alternating: the number of tiers times the largest tier's size.
    """
    tiers: dict[str, list[Any]] = {}
    for task in tasks:
        tiers.setdefault(str(task.metadata.get("tier") or ""), []).append(task)
    rng = random.Random(seed)
    ordered = sorted(tiers.items())
    rounds = max((len(group) for _, group in ordered), default=0)
    passes: dict[str, list[Any]] = {}
    out: list[Any] = []
    for i in range(rounds):
        for name, group in ordered:
            if i % len(group) == 0:  # the tier's first pass, or it ran out: a new shuffle
                passes[name] = _shuffled(group, rng)
            out.append(passes[name][i % len(group)])
    return out


def _shuffled(group: list[Any], rng: random.Random) -> list[Any]:
    copy = list(group)
    rng.shuffle(copy)
    return copy
