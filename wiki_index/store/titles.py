"""Fast "does this text name a page?" lookups: a sorted array of 64-bit title hashes.

The simulated search engine asks it for every query (a navigational query puts the named page
first), so it must cost microseconds, not a database round trip (~0.4 ms per DuckDB query), and
stay small at Wikipedia scale: 12 bytes per title or redirect (about 200 MB for 17M titles),
versus gigabytes for a Python dict. Keys are the case-folded normalised titles; a key shared
by several pages (``AIDS`` / ``Aids``) is marked ambiguous and settled by the store's exact
resolution. The arrays are built on first use from the store and cached under
``$SIM_WEB_HOME/cache`` keyed by the index's content hash.
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np

from wiki_index.types import normalize_title

log = logging.getLogger(__name__)
AMBIGUOUS = -1


def title_key(text: str) -> int:
    """The 64-bit key of a title or query: blake2b of the case-folded normalised title."""
    folded = normalize_title(text).casefold()
    return int.from_bytes(hashlib.blake2b(folded.encode("utf-8"), digest_size=8).digest(), "little", signed=True)


class TitleLookup:
    """Resolve a text that names a page (title or redirect, any case) to its page id.

    Args:
        store: The index's :class:`~wiki_index.store.store.Store` (rows to build from; exact resolution).
        cache_file: Where to keep the built arrays (``None``: build in memory every time).
    """

    def __init__(self, store: Any, cache_file: str | Path | None = None) -> None:
        self.store = store
        self.keys, self.ids = self._load(Path(cache_file) if cache_file else None)

    def _load(self, cache: Path | None) -> tuple[np.ndarray, np.ndarray]:
        if cache is not None and cache.is_file():
            try:
                with np.load(cache) as data:
                    return data["keys"], data["ids"]
            except (OSError, ValueError, KeyError) as e:
                log.warning("rebuilding the title lookup: cannot read %s (%s)", cache, e)
        pairs: dict[int, int] = {}
        for title, pid in self.store.title_ids():
            k = title_key(title)
            pairs[k] = pid if pairs.get(k, pid) == pid else AMBIGUOUS
        keys = np.fromiter(pairs.keys(), dtype=np.int64, count=len(pairs))
        ids = np.fromiter(pairs.values(), dtype=np.int64, count=len(pairs))
        order = np.argsort(keys, kind="stable")
        keys, ids = keys[order], ids[order]
        if cache is not None:
            try:
                cache.parent.mkdir(parents=True, exist_ok=True)
                tmp = cache.with_name(f"{cache.stem}.{os.getpid()}.tmp.npz")
                np.savez(tmp, keys=keys, ids=ids)
                os.replace(tmp, cache)
            except OSError as e:  # a read-only home only costs the next process the rebuild
                log.debug("could not cache the title lookup at %s: %s", cache, e)
        return keys, ids

    def __len__(self) -> int:
        return len(self.keys)

    def lookup(self, text: str) -> int | None:
        """The page id that ``text`` names exactly (a title or redirect, case aside), else ``None``."""
        if not text or len(text) > 256:
            return None
        k = title_key(text)
        i = int(np.searchsorted(self.keys, k))
        if i == len(self.keys) or self.keys[i] != k:
            return None
        pid = int(self.ids[i])
        return self.store.resolve(text) if pid == AMBIGUOUS else pid
