"""The order in which GRPO meets its train tasks when ``balance_tiers`` is on.

TRL's sampler shuffles the whole task list, so with two prompts per step a step often holds two tasks of one tier.
When the tiers want opposite habits (a one-hop ``lookup`` is solved by stopping after one search, a ``bridge`` needs
a second), such a step pushes the stop/continue decision one way for everyone. Interleaving the tiers puts one task
of each tier in the same step, so the group advantages reward stopping on one and searching on in the other within
one gradient.

Example:
    >>> from types import SimpleNamespace as T
    >>> tasks = [T(id=f"l{i}", metadata={"tier": "lookup"}) for i in range(2)]
    >>> tasks += [T(id=f"b{i}", metadata={"tier": "bridge"}) for i in range(3)]
    >>> [t.metadata["tier"] for t in interleave_tiers(tasks, seed=0)]
    ['bridge', 'lookup', 'bridge', 'lookup', 'bridge']
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any


def interleave_tiers(tasks: Sequence[Any], seed: int) -> list[Any]:
    """Round-robin over the tiers (in sorted order), each tier shuffled with ``seed``; when a tier runs out the
    others go on in turn.

    Args:
        tasks: Tasks with ``metadata["tier"]`` (a task without one forms the tier ``""``).
        seed: Seed of the shuffle inside each tier.

    Returns:
        Every task once, tiers alternating.
    """
    tiers: dict[str, list[Any]] = {}
    for task in tasks:
        tiers.setdefault(str(task.metadata.get("tier") or ""), []).append(task)
    rng = random.Random(seed)
    queues = []
    for name in sorted(tiers):
        group = list(tiers[name])
        rng.shuffle(group)
        queues.append(group)
    out: list[Any] = []
    while any(queues):
        for queue in queues:
            if queue:
                out.append(queue.pop(0))
    return out
