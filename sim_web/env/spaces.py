"""A Gymnasium text space that accepts real text (any Unicode), unlike ``spaces.Text``'s default charset.

``AsyncVectorEnv`` needs ``shared_memory=False`` with it: its shared-memory buffer cannot hold real text,
so building one raises an error that names that fix (see :data:`SHARED_MEMORY_FIX`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.error import CustomSpaceError
from gymnasium.spaces import Text
from gymnasium.vector.utils import create_shared_memory

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
        return isinstance(other, TextSpace) and (self.min_length, self.max_length) == (
            other.min_length,
            other.max_length,
        )


SHARED_MEMORY_FIX = (
    "pass shared_memory=False: gym.make_vec('WebResearch-v0', num_envs=N, vectorization_mode='async', "
    "vector_kwargs={'shared_memory': False}), or AsyncVectorEnv(env_fns, shared_memory=False)"
)


@create_shared_memory.register(TextSpace)
def _refuse_shared_memory(space: TextSpace, n: int = 1, ctx: Any = None) -> Any:
    """Refuse a shared-memory buffer for real text, before any worker starts.

    Gymnasium's ``Text`` buffer holds indexes into the space's sample alphabet, so a character outside it
    (``'é'`` in "Kraków") fails in the worker, and ``AsyncVectorEnv`` decodes the buffer once when it is
    built, so every later observation would read back as the empty buffer (all spaces). Observations sent
    through the pipes instead (``shared_memory=False``) arrive intact.

    Raises:
        CustomSpaceError: Always; ``AsyncVectorEnv`` re-raises it as a ``ValueError`` naming ``shared_memory=False``.
    """
    raise CustomSpaceError(
        f"{space!r} observations are any Unicode text, which Gymnasium's shared-memory Text buffer "
        f"cannot carry (it would drop or garble every observation); {SHARED_MEMORY_FIX}"
    )
