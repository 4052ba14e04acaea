"""Open a built index directory: the page store and the three searchers behind one object."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from wiki_index.errors import ConfigError, IndexMismatchError
from wiki_index.manifest import build_command, read_manifest
from wiki_index.searcher import Searcher
from wiki_index.settings import default_index_dir
from wiki_index.types import Hit, Passage

MODES = ("bm25", "dense", "hybrid")


class WikiIndex:
    """A built index: ``store`` (DuckDB), ``bm25`` (Lucene), ``dense`` (FAISS) and ``hybrid``.

    Parts open lazily on first use, so opening an index is cheap and BM25-only users never
    import torch. Use :meth:`from_dir`.

    Args:
        path: The index directory (holding ``manifest.json``).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.manifest: dict[str, Any] = read_manifest(self.path)
        self._lock = threading.RLock()
        self._parts: dict[str, Any] = {}

    @classmethod
    def from_dir(cls, path: str | Path | None = None) -> WikiIndex:
        """Open the index at ``path`` (default: the sample index under ``$SIM_WEB_HOME``)."""
        return cls(path or default_index_dir())

    @property
    def has_dense(self) -> bool:
        """Whether the index was built with a dense (FAISS) part."""
        return bool(self.manifest.get("dense"))

    def _part(self, name: str, make: Any) -> Any:
        with self._lock:
            if name not in self._parts:
                self._parts[name] = make()
            return self._parts[name]

    @property
    def store(self) -> Any:
        """The :class:`~wiki_index.store.Store`."""
        from wiki_index.store import Store

        return self._part("store", lambda: Store(self.path / "store.duckdb"))

    @property
    def bm25(self) -> Any:
        """The :class:`~wiki_index.bm25.BM25Searcher` with the manifest's parameters."""
        from wiki_index.bm25 import BM25Searcher

        p = self.manifest["bm25"]
        return self._part("bm25", lambda: BM25Searcher(self.path / "bm25", p["k1"], p["b"]))

    @property
    def dense(self) -> Any:
        """The :class:`~wiki_index.dense.DenseSearcher` (an error naming the fix if none was built)."""
        from wiki_index.dense import DenseConfig, DenseSearcher

        if not self.has_dense:
            src = self.manifest.get("source", {}).get("spec", "sample")
            raise IndexMismatchError(f"{self.path} was built without a dense index; rebuild with:\n    {build_command(self.path, src)} --dense")
        cfg = {k: v for k, v in self.manifest["dense"].items() if k in DenseConfig.__dataclass_fields__}
        return self._part("dense", lambda: DenseSearcher(self.path / "dense", DenseConfig(**cfg), self.store.passages_by_id))

    @property
    def titles(self) -> Any:
        """The :class:`~wiki_index.titles.TitleLookup` of this index (built on first use, then cached)."""
        return self._part("titles", self._make_titles)

    def _make_titles(self) -> Any:
        from wiki_index.settings import sim_web_home
        from wiki_index.titles import TitleLookup

        m = self.manifest
        return TitleLookup(self.store, sim_web_home() / "cache" / f"titles-{m['content_sha256'][:16]}-{m['counts']['redirects']}.npz")

    @property
    def hybrid(self) -> Any:
        """The :class:`~wiki_index.hybrid.HybridSearcher` over BM25 and dense."""
        from wiki_index.hybrid import HybridSearcher

        return self._part("hybrid", lambda: HybridSearcher(self.bm25, self.dense))

    def searcher(self, mode: str = "bm25") -> Searcher:
        """The searcher for ``mode`` (``bm25``, ``dense`` or ``hybrid``)."""
        if mode not in MODES:
            raise ConfigError(f"search mode must be one of {MODES}, got {mode!r}")
        return getattr(self, mode)

    def search(self, query: str, k: int = 10, mode: str = "bm25") -> list[tuple[Hit, Passage]]:
        """Search and return each hit with its passage."""
        if mode == "bm25":
            return self.bm25.search_passages(query, k)
        hits = self.searcher(mode).search(query, k)
        by_id = {p.docid: p for p in self.store.passages_by_id([h.docid for h in hits])}
        return [(h, by_id[h.docid]) for h in hits if h.docid in by_id]
