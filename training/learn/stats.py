"""The statistics of the learning report: a rate's Wilson interval, and two stages compared task by task.

Example:
    >>> lo, hi = wilson(5, 20)
    >>> round(lo, 3), round(hi, 3)
    (0.112, 0.469)
    >>> mcnemar_p(0, 0)
    1.0
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["ci_text", "mcnemar_p", "paired_bootstrap", "wilson"]


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a rate ``k / n`` (``(0, 1)`` for ``n = 0``)."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, mid - half), min(1.0, mid + half)


def mcnemar_p(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value: ``b`` tasks solved only before, ``c`` only after."""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2**n
    return min(1.0, 2 * tail)


def paired_bootstrap(
    before: Sequence[float],
    after: Sequence[float],
    reps: int = 10_000,
    seed: int = 0,
    groups: list[str] | None = None,
) -> tuple[float, float]:
    """95% interval of ``mean(after) - mean(before)`` with tasks resampled in pairs.

    ``groups`` (one label per task) resamples whole groups instead: tasks that share a label (the same gold answer,
    reached through the same last page) are not independent samples, and treating them as such makes the interval
    too narrow. With every label distinct it is the per-task interval, draw for draw.

    Example:
        >>> paired_bootstrap([0, 0, 1, 1], [1, 1, 1, 1], reps=2000) == paired_bootstrap(
        ...     [0, 0, 1, 1], [1, 1, 1, 1], reps=2000, groups=["a", "b", "c", "d"])
        True
    """
    import numpy as np

    d = np.asarray(after, dtype=float) - np.asarray(before, dtype=float)
    if d.size == 0:
        return 0.0, 0.0
    if groups is None:
        sums, counts = d, np.ones_like(d)
    else:
        labels = {g: k for k, g in enumerate(dict.fromkeys(groups))}
        which = np.asarray([labels[g] for g in groups])
        sums = np.bincount(which, weights=d, minlength=len(labels))
        counts = np.bincount(which, minlength=len(labels)).astype(float)
    idx = np.random.default_rng(seed).integers(0, sums.size, size=(reps, sums.size))
    means = sums[idx].sum(axis=1) / counts[idx].sum(axis=1)
    # float noise (a mean of thirds off by 1e-17) would print an interval ending at 0 as "-0.000"
    lo, hi = (round(float(np.percentile(means, q)), 10) + 0.0 for q in (2.5, 97.5))
    return lo, hi


def ci_text(ci: Sequence[float] | None) -> str:
    """An interval as ``lo to hi`` with signs, or ``-`` where a summary has none.

    >>> ci_text((-0.1, 0.25)), ci_text(None)
    ('-0.100 to +0.250', '-')
    """
    return "-" if ci is None else f"{ci[0]:+.3f} to {ci[1]:+.3f}"
