"""A Gymnasium text space that accepts real text (any Unicode), unlike ``spaces.Text``'s default charset."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.spaces import Text

# printable sample alphabet: ASCII, Latin-1, Greek, CJK and markup characters an agent would emit
_SAMPLE = "".join(chr(c) for c in range(32, 127)) + "éüßñçøÅΩλπ中文日本語한국어—“”…\n<>{}[]\"'/"


class TextSpace(Text):
    """Strings of any Unicode characters with ``min_length <= len <= max_length``.

    It subclasses :class:`gymnasium.spaces.Text`, so Gymnasium's vector utilities
    (``batch_space``, ``concatenate``, ``iterate``) treat it as text; only membership and
    sampling change: every character is allowed.

    Args:
        max_length: The longest string in the space.
        min_length: The shortest string in the space.
        seed: Seed of the space's own sampler.
    """

    def __init__(self, max_length: int, *, min_length: int = 0, seed: int | np.random.Generator | None = None) -> None:
        super().__init__(max_length, min_length=min_length, charset=_SAMPLE, seed=seed)

    def contains(self, x: Any) -> bool:
        """Whether ``x`` is a string of allowed length (any characters)."""
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"TextSpace({self.min_length}, {self.max_length})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, TextSpace) and (self.min_length, self.max_length) == (other.min_length, other.max_length)
