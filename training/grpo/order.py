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

With ``weights`` a tier takes that many places of each round, so a step of 4 prompts can hold 3 bridge tasks and 1
lookup task: lookup's groups still reward stopping after one search, without outweighing bridge's reward for a
second search.

    >>> [t.metadata["tier"][0] for t in interleave_tiers(tasks, seed=0, weights={"bridge": 3})]
    ['b', 'b', 'b', 'l', 'b', 'b', 'b', 'l']
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any


def interleave_tiers(tasks: Sequence[Any], seed: int, weights: Mapping[str, int] | None = None) -> list[Any]:
    """Round-robin over the tiers (in sorted order), each tier shuffled with ``seed``; a tier that runs out starts
    over in a new shuffle until every tier has been played once.

    Args:
        tasks: Tasks with ``metadata["tier"]`` (a task without one forms the tier ``""``).
        seed: Seed of the shuffles inside each tier.
        weights: Places per round of each tier (default 1; a tier not named gets 1).

    Returns:
        Every task at least once, tiers alternating: each round holds ``weights[tier]`` tasks of each tier, for as
        many rounds as the tier that needs the most takes to be played once.
    """
    tiers: dict[str, list[Any]] = {}
    for task in tasks:
        tiers.setdefault(str(task.metadata.get("tier") or ""), []).append(task)
    rng = random.Random(seed)
    ordered = sorted(tiers.items())
    weight = {name: (weights or {}).get(name, 1) for name, _ in ordered}
    rounds = max((-(-len(group) // weight[name]) for name, group in ordered), default=0)
    passes: dict[str, list[Any]] = {}
    out: list[Any] = []
    for i in range(rounds):
        for name, group in ordered:
            for k in range(i * weight[name], (i + 1) * weight[name]):
                if k % len(group) == 0:  # the tier's first pass, or it ran out: a new shuffle
                    passes[name] = _shuffled(group, rng)
                out.append(passes[name][k % len(group)])
    return out


def _shuffled(group: list[Any], rng: random.Random) -> list[Any]:
    copy = list(group)
    rng.shuffle(copy)
    return copy
