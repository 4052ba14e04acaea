"""Open a built index directory: the page store and the three searchers behind one object."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path
from typing import Any, NamedTuple

from simweb_core.errors import ConfigError, IndexNotFoundError
from simweb_core.settings import default_index_dir, env
from wiki_index.manifest import read_manifest
from wiki_index.search.searcher import Searcher
from wiki_index.types import Hit, Passage

MODES = ("bm25", "dense", "hybrid")
BM25_ENGINES = ("lucene", "lite")


class PageHits(NamedTuple):
    """The result of :meth:`WikiIndex.top_pages`: one passage per page, and what the search found."""

    passages: list[Passage]
    """The best passage of each chosen page, in rank order (the ``first`` page leading when it was among the hits)."""
    hits: int
    """Passages the search returned."""
    pages: int
    """Distinct pages among them."""


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
        """Whether the dense (FAISS) part exists already (at build time, or built on an earlier first use)."""
        from wiki_index.store.derived import dense_location

        return dense_location(self.path, self.manifest)[1] is not None

    def _part(self, name: str, make: Any) -> Any:
        with self._lock:
            if name not in self._parts:
                self._parts[name] = make()
            return self._parts[name]

    @property
    def store(self) -> Any:
        """The :class:`~wiki_index.store.store.Store`."""
        from wiki_index.store.store import Store

        return self._part("store", lambda: Store(self.path / "store.duckdb"))

    @property
    def bm25_engine(self) -> str:
        """``lucene`` (pyserini, the default) or ``lite`` (Java-free, :mod:`wiki_index.search.bm25_lite`), from
        ``$SIM_WEB_BM25``."""
        engine = (env("SIM_WEB_BM25") or "lucene").strip().lower()
        if engine not in BM25_ENGINES:
            raise ConfigError(f"SIM_WEB_BM25 must be one of {BM25_ENGINES}, got {engine!r}")
        return engine

    @property
    def bm25(self) -> Any:
        """The BM25 searcher with the manifest's parameters: :class:`~wiki_index.search.bm25.BM25Searcher` (Lucene), or
        :class:`~wiki_index.search.bm25_lite.LiteBM25Searcher` where ``SIM_WEB_BM25=lite``."""
        p = self.manifest["bm25"]
        if self.bm25_engine == "lite":
            return self._part("bm25", self._make_lite)
        from wiki_index.search.bm25 import BM25Searcher

        return self._part("bm25", lambda: BM25Searcher(self.path / "bm25", p["k1"], p["b"], p.get("title_boost", 0.0)))

    def _make_lite(self) -> Any:
        """The Java-free searcher, over postings built once from the columns (kept while they match this index)."""
        from simweb_core.settings import sim_web_home
        from wiki_index.search.bm25_lite import LiteBM25Searcher, build_lite, lite_stamp

        p = self.manifest["bm25"]
        if p.get("title_boost"):
            raise ConfigError("SIM_WEB_BM25=lite does not do the title field of an index built with a title boost")
        cols = self.columns
        stamp = {"content_sha256": self.manifest["content_sha256"], "columns_commit": cols.meta.get("commit", "")}
        own = self.path / "bm25-lite"
        cached = sim_web_home() / "cache" / f"bm25-lite-{stamp['content_sha256'][:16]}"
        where = next((d for d in (own, cached) if lite_stamp(d) == stamp), None)
        if where is None:  # none yet, or postings of an earlier build of this index: (re)build them
            passages = cols.passages(list(range(len(cols))))
            where = own if os.access(self.path, os.W_OK) else cached
            build_lite([q.contents for q in passages], [q.docid for q in passages], where, stamp)
        return LiteBM25Searcher(where, p["k1"], p["b"], cols)

    @property
    def dense(self) -> Any:
        """The :class:`~wiki_index.search.dense.DenseSearcher`; an index built without ``--dense`` encodes its passages
        now, once (with a message and a progress bar; see :mod:`wiki_index.store.derived`)."""
        return self._part("dense", self._make_dense)

    def _make_dense(self) -> Any:
        from wiki_index.search.dense import DenseConfig, DenseSearcher
        from wiki_index.store.derived import build_dense_on_first_use, dense_location

        where, info = dense_location(self.path, self.manifest)
        if info is None:
            where, info = build_dense_on_first_use(self.path, self.manifest, self.store)
        cfg = {k: v for k, v in info.items() if k in DenseConfig.__dataclass_fields__}
        return DenseSearcher(where, DenseConfig(**cfg), self.store.passages_by_id)

    @property
    def titles(self) -> Any:
        """The :class:`~wiki_index.store.titles.TitleLookup` of this index (built on first use, then cached)."""
        return self._part("titles", self._make_titles)

    def _make_titles(self) -> Any:
        from simweb_core.settings import sim_web_home
        from wiki_index.store.titles import TitleLookup

        m = self.manifest
        return TitleLookup(
            self.store, sim_web_home() / "cache" / f"titles-{m['content_sha256'][:16]}-{m['counts']['redirects']}.npz"
        )

    @property
    def columns(self) -> Any:
        """The :class:`~wiki_index.store.columns.PassageColumns` of the BM25 index (built once, on first use, if missing)."""
        return self._part("columns", self._make_columns)

    def _make_columns(self) -> Any:
        from simweb_core.settings import sim_web_home
        from wiki_index.store.columns import PassageColumns, lucene_commit
        from wiki_index.store.derived import write_index_columns

        sha, commit = self.manifest["content_sha256"], lucene_commit(self.path / "bm25")
        own, cached = self.path / "columns", sim_web_home() / "cache" / f"columns-{sha[:16]}-{commit}"
        if not commit and self.bm25_engine == "lite":  # no Lucene index (a Java-free machine): the columns travel
            for path in (own, *sorted(cached.parent.glob(f"columns-{sha[:16]}-*"))):
                if (path / "meta.json").exists() and PassageColumns(path).meta.get("content_sha256") == sha:
                    return PassageColumns(path)
            raise IndexNotFoundError(
                f"{self.path} has no Lucene index and no columns: SIM_WEB_BM25=lite reads <index>/columns, written by "
                "`wiki-index build` (copy that folder along with the index)"
            )
        for path in (own, cached):
            if (path / "meta.json").exists() and PassageColumns(path).matches(sha, commit):
                return PassageColumns(path)
        target = own if os.access(self.path, os.W_OK) else cached
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(target, ignore_errors=True)  # stale columns (another build of the index)
        return PassageColumns(
            write_index_columns(self.path, self.store, self.bm25, sha, target, int(self.manifest["bm25"]["count"]))
        )

    @property
    def hybrid(self) -> Any:
        """The :class:`~wiki_index.search.hybrid.HybridSearcher` over BM25 and dense."""
        from wiki_index.search.hybrid import HybridSearcher

        return self._part("hybrid", lambda: HybridSearcher(self.bm25, self.dense))

    def searcher(self, mode: str = "bm25") -> Searcher:
        """The searcher for ``mode`` (``bm25``, ``dense`` or ``hybrid``)."""
        if mode not in MODES:
            raise ConfigError(f"search mode must be one of {MODES}, got {mode!r}")
        return getattr(self, mode)

    def passages(self, page_id: int) -> list[Passage]:
        """All passages of a page, in order, from the memory-mapped columns (as :meth:`Store.passages
        <wiki_index.store.store.Store.passages>` returns them, in microseconds rather than a DuckDB query)."""
        return self.columns.page_passages(page_id)

    def search(self, query: str, k: int = 10, mode: str = "bm25") -> list[tuple[Hit, Passage]]:
        """Search and return each hit with its passage."""
        if mode == "bm25":
            hits = self.bm25.search_docs(query, k)
            passages = self.columns.passages([d for d, _ in hits])
            return [(Hit(p.docid, s), p) for p, (_, s) in zip(passages, hits)]
        hits = self.searcher(mode).search(query, k)
        by_id = {p.docid: p for p in self.store.passages_by_id([h.docid for h in hits])}
        return [(h, by_id[h.docid]) for h in hits if h.docid in by_id]

    def top_pages(self, query: str, n: int, k: int, mode: str = "bm25", first: int | None = None) -> PageHits:
        """Search ``n`` passages and keep the best passage of each of the first ``k`` pages they come from.

        The same pages and passages as grouping :meth:`search`'s hits by page, but in ``bm25`` mode only the kept
        passages are read from the columns: a search step reads about ``n / k`` times fewer passages.

        Args:
            query: The query.
            n: Passages to search for.
            k: Pages to keep.
            mode: ``bm25``, ``dense`` or ``hybrid``.
            first: A page to put first when one of the hits is on it (a navigational query's page).

        Returns:
            The kept passages, with the number of hits and of distinct pages among them (whether to search deeper).
        """
        if mode == "bm25":
            docs = self.bm25.search_docs(query, n)
            rows, pages = self.columns.page_rows([d for d, _ in docs])
            read, n_hits = self.columns.rows, len(docs)
        else:
            found = [p for _, p in self.search(query, n, mode)]
            rows, pages, n_hits = list(range(len(found))), [p.page_id for p in found], len(found)

            def read(chosen: list[int]) -> list[Passage]:
                return [found[i] for i in chosen]

        best: dict[int, int] = {}
        for page, row in zip(pages, rows):
            best.setdefault(page, row)
        order = ([first] if first in best else []) + [p for p in best if p != first]
        return PageHits(read([best[p] for p in order[:k]]), n_hits, len(best))
