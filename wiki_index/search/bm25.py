"""BM25 over passages with Lucene (pyserini 1.6.0 / Anserini), built and searched in-process.

The Lucene classes are reached through :mod:`wiki_index.search._java`, so opening a searcher starts
the JVM (about 1 s) but imports neither torch nor the rest of pyserini. The search hot path
(:meth:`BM25Searcher.search_docs`) asks Lucene's ``IndexSearcher`` for document numbers and
scores only, ranked exactly as Anserini's ``SimpleSearcher`` ranks them; the text comes from
:mod:`wiki_index.store.columns`, not from decoding each hit's stored JSON.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from simweb_core.errors import IndexNotFoundError
from wiki_index.search import _java
from wiki_index.types import Hit, Passage

log = logging.getLogger(__name__)


def passage_json(p: Passage, title_field: bool = False) -> str:
    """The raw JSON document stored in Lucene for a passage (Anserini ``JsonCollection`` shape).

    With ``title_field``, the page title also goes into its own ``title`` key (indexed as its own field).
    """
    d = {"id": p.docid, "contents": p.contents, "page_id": p.page_id, "section": p.section, "ordinal": p.ordinal}
    if title_field:
        d["title"] = p.title
    return json.dumps(d, ensure_ascii=False)


def adjust_ties(scores: list[float]) -> list[float]:
    """Anserini's ``ScoreTiesAdjusterReranker`` in Python: scores rounded to 1e-4, the n-th tie lowered by n * 1e-6.

    Float32 arithmetic, as in Java, so the scores equal those of ``SimpleSearcher.search``.
    """
    import numpy as np

    x = np.asarray(scores, dtype=np.float64) * 1e4
    floor = np.floor(x)
    r = ((floor + (x - floor >= 0.5)) / 1e4).astype(np.float32)  # Java's (float) (Math.round(s * 1e4d) / 1e4d)
    if len(r) < 2 or bool(np.all(r[:-1] - r[1:] > np.float32(1e-4))):
        return r.tolist()
    dup, eps, gap = 0, np.float32(1e-6), np.float32(1e-4)
    for i in range(1, len(r)):  # a tie: walk in order, each step reads the adjusted score before it
        if r[i - 1] - r[i] > gap:
            dup = 0
        else:
            dup += 1
            r[i] = r[i] - eps * np.float32(dup)
    return r.tolist()


def passage_from_raw(raw: str) -> Passage:
    """Rebuild a :class:`Passage` from the raw JSON stored in Lucene."""
    d = json.loads(raw)
    title, _, text = d["contents"].partition("\n")
    return Passage(d["id"], int(d["page_id"]), title, text, d.get("section", ""), int(d.get("ordinal", 0)))


#: Lucene's in-memory indexing buffer, in MB. Anserini's ``SimpleIndexer`` hard-codes 2,048, which lets the Java heap
#: (and the build's peak RSS) grow with the corpus; a smaller buffer keeps a large build's peak memory flat.
RAM_BUFFER_MB = 256.0


def _cap_ram_buffer(indexer: Any) -> None:
    """Lower the indexer's Lucene RAM buffer to :data:`RAM_BUFFER_MB` (a live IndexWriter setting).

    ``SimpleIndexer`` keeps its ``IndexWriter`` in a private field, read here by reflection; if a future
    Anserini renames it, the build goes on with Anserini's own buffer and says so.
    """
    try:
        from jnius import cast

        fields = _java.autoclass("org.apache.commons.lang3.reflect.FieldUtils")
        writer = cast("org.apache.lucene.index.IndexWriter", fields.readField(indexer, "writer", True))
        writer.getConfig().setRAMBufferSizeMB(RAM_BUFFER_MB)
    except Exception as e:  # noqa: BLE001 - any reflection failure only costs memory
        log.warning(
            "could not cap Lucene's indexing buffer at %.0f MB (%s); the build uses Anserini's 2 GB", RAM_BUFFER_MB, e
        )


class BM25Writer:
    """Index passages with Anserini's ``SimpleIndexer`` (multi-threaded), storing the raw JSON.

    Args:
        index_dir: The Lucene index directory to create.
        threads: Indexing threads.
        batch: Documents handed to Java per call.
        title_field: Also index the page title as its own ``title`` field (for a title boost at search time).
    """

    def __init__(self, index_dir: str | Path, threads: int = 2, batch: int = 5_000, title_field: bool = False) -> None:
        JIndexer = _java.autoclass("io.anserini.index.SimpleIndexer")
        args = [
            "-index",
            str(index_dir),
            "-storeRaw",
            "-storePositions",
            "-storeDocvectors",
            "-threads",
            str(threads),
            "-input",
            "",
            "-collection",
            "JsonCollection",
        ]
        if title_field:
            args += ["-fields", "title"]
        self._title_field = title_field
        with _java.jvm_lock:
            self._ix = JIndexer(args)
            _cap_ram_buffer(self._ix)
        self._buf: list[str] = []
        self._batch = batch
        self.count = 0

    def add(self, passages: Iterable[Passage]) -> None:
        """Queue passages for indexing."""
        for p in passages:
            self._buf.append(passage_json(p, self._title_field))
        if len(self._buf) >= self._batch:
            self._flush()

    def _flush(self) -> None:
        if self._buf:
            with _java.jvm_lock:
                self._ix.addRawDocuments(self._buf)
            self.count += len(self._buf)
            self._buf = []

    def close(self) -> int:
        """Commit the index; returns the number of passages indexed."""
        self._flush()
        with _java.jvm_lock:
            self._ix.close()
        return self.count


class BM25Searcher:
    """BM25 search over a Lucene passage index (the :class:`~wiki_index.search.searcher.Searcher` protocol).

    Args:
        index_dir: The Lucene index directory (``<index>/bm25``).
        k1: BM25 term-frequency saturation (Anserini's default for passages, 0.9).
        b: BM25 length normalisation (0.4).
        title_boost: Weight of the ``title`` field next to ``contents`` (1.0); 0 searches ``contents`` only.
            Only for an index built with a title field (``BuildConfig.title_boost``).
    """

    def __init__(self, index_dir: str | Path, k1: float = 0.9, b: float = 0.4, title_boost: float = 0.0) -> None:
        path = Path(index_dir)
        if not (path.is_dir() and any(path.glob("segments_*"))):
            raise IndexNotFoundError(f"no Lucene index in {path}; build it with `wiki-index build`")
        self.k1, self.b = k1, b
        searcher_class = _java.autoclass("io.anserini.search.SimpleSearcher")
        with _java.jvm_lock:
            self._s = searcher_class(str(path))
            self._s.set_bm25(float(k1), float(b))
        self._JArrayList = _java.autoclass("java.util.ArrayList")
        self.path = path
        self.title_boost = title_boost
        self._fields = self._field_map(title_boost) if title_boost else None
        self._lucene: tuple[Any, ...] | None = None

    @staticmethod
    def _field_map(title_boost: float) -> Any:
        from jnius import cast

        fields = _java.autoclass("java.util.HashMap")()
        with _java.jvm_lock:
            fields.put("contents", _java.autoclass("java.lang.Float")(1.0))
            fields.put("title", _java.autoclass("java.lang.Float")(float(title_boost)))
        return cast("java.util.Map", fields)

    def _direct(self) -> tuple[Any, ...]:
        """Lucene's own searcher over the same index, set up as ``SimpleSearcher.search`` sets up its own:
        same analyzer, bag-of-words query, BM25 parameters and sort (score, then the ``id`` field)."""
        with _java.jvm_lock:
            if self._lucene is not None:
                return self._lucene
            from jnius import cast

            A = _java.autoclass
            reader = A("org.apache.lucene.index.DirectoryReader").open(
                A("org.apache.lucene.store.FSDirectory").open(A("java.io.File")(str(self.path)).toPath())
            )
            searcher = A("org.apache.lucene.search.IndexSearcher")(cast("org.apache.lucene.index.IndexReader", reader))
            searcher.setSimilarity(
                A("org.apache.lucene.search.similarities.BM25Similarity")(float(self.k1), float(self.b))
            )
            field = A("org.apache.lucene.search.SortField")
            sort = A("org.apache.lucene.search.Sort")(
                field.FIELD_SCORE, field("id", A("org.apache.lucene.search.SortField$Type").STRING_VAL)
            )
            analyzer = A("io.anserini.index.IndexCollection").DEFAULT_ANALYZER
            self._lucene = (reader, searcher, sort, analyzer, A("io.anserini.search.query.BagOfWordsQueryGenerator")())
        return self._lucene

    def search_docs(self, query: str, k: int = 10) -> list[tuple[int, float]]:
        """Like :meth:`search`, but each hit as (Lucene document number, score): no stored field is read.

        Same ranking and scores as :meth:`search` (which reads every hit's stored document in Java);
        pair it with :class:`~wiki_index.store.columns.PassageColumns` to get the passages.
        """
        if not query.strip():
            return []
        _, searcher, sort, analyzer, generator = self._direct()
        with _java.jvm_lock:
            q = (
                generator.buildQuery(self._fields, analyzer, query)
                if self._fields
                else generator.buildQuery("contents", analyzer, query)
            )
            top = searcher.search(q, int(k), sort, True)
            hits = [(sd.doc, sd.score) for sd in top.scoreDocs]
        return list(zip([d for d, _ in hits], adjust_ties([s for _, s in hits])))

    def lucene_ids(self, batch: int = 10_000) -> Iterator[list[str]]:
        """The ``id`` of every Lucene document, in document-number order, in batches (read from its doc values).

        Raises:
            IndexNotFoundError: The index has deleted documents (an index built by ``wiki-index`` has none).
        """
        from jnius import cast

        reader = self._direct()[0]
        with _java.jvm_lock:
            if reader.numDocs() != reader.maxDoc():
                raise IndexNotFoundError(f"{self.path} has deleted documents; rebuild it with `wiki-index build`")
            leaves = [cast("org.apache.lucene.index.LeafReaderContext", c).reader() for c in reader.leaves().toArray()]
            doc_values = _java.autoclass("org.apache.lucene.index.DocValues")
        for leaf in leaves:  # leaves are in document-number order
            with _java.jvm_lock:
                values, n = doc_values.getBinary(leaf, "id"), leaf.maxDoc()
            for start in range(0, n, batch):
                with _java.jvm_lock:
                    ids = [
                        values.binaryValue().utf8ToString()
                        for i in range(start, min(n, start + batch))
                        if values.advanceExact(i)
                    ]
                yield ids  # outside the lock: other threads may search while the caller works

    def _raw_search(self, query: str, k: int) -> Any:
        """``SimpleSearcher``'s own search (call under the JVM lock)."""
        return self._s.search_fields(query, self._fields, int(k)) if self._fields else self._s.search(query, int(k))

    def search(self, query: str, k: int = 10) -> list[Hit]:
        """Top ``k`` passages for ``query``; an empty or blank query gives ``[]``."""
        if not query.strip():
            return []
        with _java.jvm_lock:
            return [Hit(h.docid, float(h.score)) for h in self._raw_search(query, k)]

    def search_passages(self, query: str, k: int = 10) -> list[tuple[Hit, Passage]]:
        """Like :meth:`search` but with each hit's passage, read from the Lucene stored document."""
        if not query.strip():
            return []
        with _java.jvm_lock:
            hits = [(h.docid, float(h.score), h.lucene_document.get("raw")) for h in self._raw_search(query, k)]
        return [(Hit(d, s), passage_from_raw(raw)) for d, s, raw in hits]

    def batch_search(self, queries: list[str], k: int = 10, threads: int = 1) -> list[list[Hit]]:
        """Search many queries with Lucene's own thread pool; results in query order."""
        qids = [str(i) for i in range(len(queries))]
        out: list[list[Hit]] = [[] for _ in queries]
        live = [(q, i) for q, i in zip(queries, qids) if q.strip()]
        if not live:
            return out
        with _java.jvm_lock:
            jq, jid = self._JArrayList(), self._JArrayList()
            for q, i in live:
                jq.add(q)
                jid.add(i)
            res = (
                self._s.batch_search_fields(jq, jid, int(k), int(threads), self._fields)
                if self._fields
                else self._s.batch_search(jq, jid, int(k), int(threads))
            )
            for entry in res.entrySet().toArray():
                out[int(entry.getKey())] = [Hit(h.docid, float(h.score)) for h in entry.getValue()]
        return out

    def close(self) -> None:
        """Close the Lucene readers (the searcher is unusable afterwards)."""
        with _java.jvm_lock:
            if self._lucene is not None:
                self._lucene[0].close()
                self._lucene = None
            self._s.close()

    def doc(self, docid: str) -> Passage | None:
        """The passage with id ``docid`` from the Lucene stored fields, or ``None``."""
        with _java.jvm_lock:
            d = self._s.doc(docid)
            raw = d.get("raw") if d is not None else None
        return passage_from_raw(raw) if raw else None
