"""Whether two recorded values of a setting ask for the same run, so that a run folder resumes when a path is spelt
another way.

A run folder records the settings it was started with (an eval's identity, a GRPO recipe); a later call that names
the same model or task file another way (relative once, absolute later; a folder reached through a link; a task file
copied with equal bytes beside a second run folder) is the same run and resumes, where a changed value is refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def same_setting(old: Any, new: Any) -> bool:
    """Whether two values of one setting ask for the same run.

    Args:
        old: The value the run folder recorded.
        new: The value asked for now.

    Returns:
        True when the values are equal, or both are strings naming existing local paths with the same kind prefix
        (``hf:./sft`` and ``hf:/runs/x/sft``; a bare path has none) that resolve to one thing or are files with equal
        bytes.

    >>> same_setting(0.8, 0.8), same_setting("hf:model", "openai:model")
    (True, False)
    """
    if old == new:
        return True
    if not (isinstance(old, str) and isinstance(new, str)):
        return False
    a, b = _named_path(old), _named_path(new)
    if a is None or b is None or a[0] != b[0]:
        return False
    pa, pb = a[1], b[1]
    return pa == pb or (pa.is_file() and pb.is_file() and pa.read_bytes() == pb.read_bytes())


def _named_path(value: str) -> tuple[str, Path] | None:
    """The kind prefix ('' for a bare path) and the resolved local path a value names: bare (``/data/tasks.jsonl``)
    or after a kind (``hf:./sft``); None when it names no path that exists."""
    if value and Path(value).exists():
        return "", Path(value).resolve()
    kind, _, rest = value.partition(":")
    if rest and Path(rest).exists():
        return kind, Path(rest).resolve()
    return None
