"""Held-out splits whose answers never occur in training: no held-out answer (or alias) is a train answer.

An id-hashed split lets a frequent answer ("Asia", "United Kingdom") sit on both sides, so a model can score on
held-out tasks by recalling answers it was trained on. :func:`answer_disjoint_split` groups the records whose
answers share a name (the answer or any alias, normalised as the reward normalises them) and puts each group wholly
on one side, drawing groups in a seeded order until each tier's held-out share is reached.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable
from typing import Any

from sim_web.env.rewards import normalize_answer


def answer_names(record: dict[str, Any]) -> set[str]:
    """The normalised names a record's answer goes by (the answer and its aliases)."""
    names = [record["answer"], *(record.get("aliases") or [])]
    return {n for n in (normalize_answer(str(x)) for x in names) if n}


def _groups(records: list[dict[str, Any]]) -> list[list[int]]:
    """Indices of records linked by a shared answer name (union-find), each group in record order."""
    parent = list(range(len(records)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for i, r in enumerate(records):
        for name in sorted(answer_names(r)):
            if name in owner:
                parent[find(i)] = find(owner[name])
            else:
                owner[name] = i
    groups: dict[int, list[int]] = {}
    for i in range(len(records)):
        groups.setdefault(find(i), []).append(i)
    return list(groups.values())


def answer_disjoint_split(
    records: list[dict[str, Any]], test_fraction: dict[str, float] | float, seed: int = 0
) -> list[dict[str, Any]]:
    """Set every record's ``split`` so that no held-out answer name is a train answer name.

    Args:
        records: Task records with ``answer``, ``aliases`` and (optionally) ``tier``; changed in place.
        test_fraction: The held-out share, one for all or per tier (``{"lookup": 0.5, "bridge": 0.5}``).
        seed: Seed of the order in which answer groups are drawn.

    Returns:
        The records. A group joins the held-out side only while it keeps every tier at or under its target, so
        the shares come out at or a little under the fractions asked for.
    """
    tier = [str(r.get("tier") or "all") for r in records]
    frac = test_fraction if isinstance(test_fraction, dict) else {t: test_fraction for t in set(tier)}
    target = {t: frac.get(t, 0.0) * n for t, n in Counter(tier).items()}
    held: Counter = Counter()
    groups = _groups(records)
    order = sorted(
        groups,
        key=lambda g: hashlib.sha1(f"{seed}|{min(min(answer_names(records[i])) for i in g)}".encode()).hexdigest(),
    )
    for g in order:
        size = Counter(tier[i] for i in g)
        test = all(held[t] + n <= target[t] for t, n in size.items())
        if test:
            held.update(size)
        for i in g:
            records[i]["split"] = "test" if test else "train"
    return records


def answer_overlap(records: Iterable[dict[str, Any]]) -> dict[str, int]:
    """How many held-out records share an answer name with a train record (0 for an answer-disjoint split)."""
    records = list(records)
    train = set().union(*(answer_names(r) for r in records if r.get("split") == "train"))
    test = [r for r in records if r.get("split") == "test"]
    return {"test": len(test), "test_answer_in_train": sum(bool(answer_names(r) & train) for r in test)}
