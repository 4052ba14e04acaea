"""A set of page titles in 32 bytes a title, for the streamed build (:class:`wiki_index.store.writer.StoreWriter`)."""

from __future__ import annotations

import hashlib
from array import array


def title_digest(title: str) -> tuple[int, int]:
    """The two 64-bit halves of a title's 128-bit blake2b digest (unsigned)."""
    d = hashlib.blake2b(title.encode("utf-8"), digest_size=16).digest()
    return int.from_bytes(d[:8], "little"), int.from_bytes(d[8:], "little")


def title_key(title: str) -> int:
    """A title's 64-bit key as a signed integer (a DuckDB ``BIGINT``): the first half of its blake2b digest.

    The store keeps its title lookup table sorted by this key, so that DuckDB's zone maps find a
    title without an in-memory index (see :class:`wiki_index.store.writer.StoreWriter`); the key
    is the same in every Python and DuckDB version.

    >>> title_key("Albert Einstein") == title_key("Albert Einstein") != title_key("Albert einstein")
    True
    """
    hi = title_digest(title)[0]
    return hi - (1 << 64) if hi >= 1 << 63 else hi


class TitleSet:
    """The titles stored so far, as blake2b keys in an open-addressing table (at most 32 bytes a title).

    A Python set of the title strings costs about 110 bytes a title (110 MB per million pages). A
    key is 128 bits of the title's blake2b digest with the lowest bit set to 1 (0 marks a free
    slot); two different titles would have to share all 127 other bits to be taken for one (odds
    about 1e-25 among Wikipedia's 7M titles).
    """

    def __init__(self, capacity: int = 1 << 16) -> None:
        self._hi, self._lo = array("Q", bytes(8 * capacity)), array("Q", bytes(8 * capacity))
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def add(self, title: str) -> bool:
        """Add ``title``; ``False`` when it was there already."""
        hi, lo = title_digest(title)
        lo |= 1  # lo == 0 marks a free slot
        if not self._insert(hi, lo):
            return False
        self._n += 1
        if 2 * self._n > len(self._hi):
            self._grow()
        return True

    def _insert(self, hi: int, lo: int) -> bool:
        his, los, mask = self._hi, self._lo, len(self._hi) - 1
        i = hi & mask
        while los[i]:
            if los[i] == lo and his[i] == hi:
                return False
            i = (i + 1) & mask
        his[i], los[i] = hi, lo
        return True

    def _grow(self) -> None:
        old = zip(self._hi, self._lo)
        self._hi, self._lo = array("Q", bytes(16 * len(self._hi))), array("Q", bytes(16 * len(self._lo)))
        for hi, lo in old:
            if lo:
                self._insert(hi, lo)
