"""Checks on what crosses the backend boundary: the ``k`` a search asks for, and the result lists a backend returns.

Split from :mod:`sim_web.executor.executor` (whose public calls apply them) to keep that module short; a backend that
returns the wrong type fails with a non-retryable :class:`~sim_web.protocol.errors.BackendError`, so the executor
falls back to the next backend instead of retrying.
"""

from __future__ import annotations

from typing import Any

from sim_web.protocol.errors import BackendError


def check_k(k: int) -> int:
    """``k`` when it is a positive int (not a bool); else ``ValueError``."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive int (results wanted), got {k!r}")
    return k


def check_list(value: Any, kind: type, who: str) -> tuple[Any, ...]:
    """``value`` as a tuple when it is a list (or tuple) of ``kind``; else a non-retryable error naming ``who``."""
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, kind) for v in value):
        raise BackendError(f"{who} returned {type(value).__name__}, expected list[{kind.__name__}]", retryable=False)
    return tuple(value)
