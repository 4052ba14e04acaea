"""The one searcher protocol that BM25, dense and hybrid retrieval all implement."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from wiki_index.types import Hit, Passage


@runtime_checkable
class Searcher(Protocol):
    """Retrieve passages for text queries.

    Parameters (``k1``/``b``, encoder, fusion constant...) are fixed in the constructor;
    there are no setters.
    """

    def search(self, query: str, k: int = 10) -> list[Hit]:
        """Return the top ``k`` hits for ``query``, best first."""
        ...

    def batch_search(self, queries: list[str], k: int = 10, threads: int = 1) -> list[list[Hit]]:
        """Return the top ``k`` hits for each query, in the order of ``queries``."""
        ...

    def doc(self, docid: str) -> Passage | None:
        """Return the passage with id ``docid``, or ``None`` if there is none."""
        ...
