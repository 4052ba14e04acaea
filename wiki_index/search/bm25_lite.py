"""BM25 without Java: Lucene's ranking re-done in numpy, for machines where pyserini cannot run (no JVM).

An option of the sim backend (``SIM_WEB_BM25=lite``); Lucene (:mod:`wiki_index.search.bm25`) stays the default. It
follows what ``wiki-index build`` indexes and how :meth:`BM25Searcher.search_docs
<wiki_index.search.bm25.BM25Searcher.search_docs>` ranks, piece by piece:

* the analyzer (Anserini's default English one): Unicode word segmentation (a regular expression close to
  UAX#29: letters joined by ``.``/``'``/``:``, digits by ``.``/``,``, each CJK ideograph its own word), the English
  possessive ``'s`` dropped, lower case, Lucene's 33 English stop words, the Porter stemmer of Martin Porter's own
  implementation (NLTK's ``MARTIN_EXTENSIONS`` mode, the one Lucene's ``PorterStemFilter`` follows; words of one or
  two letters are left alone);
* the query: bag of words, a term repeated n times weighted n (Anserini's ``BagOfWordsQueryGenerator``);
* the score: Lucene's ``BM25Similarity`` in float32, document lengths stored lossily as Lucene stores its norms
  (``SmallFloat.intToByte4``), clause scores summed in double; ties broken by the passage id, as Lucene's sort does;
  then Anserini's tie adjustment (:func:`~wiki_index.search.bm25.adjust_ties`).

It returns Lucene's document numbers, so :class:`~wiki_index.store.columns.PassageColumns` reads the hits as for
Lucene. The postings are built from the index's columns once (``<index>/bm25-lite/``, or the cache when the index is
read-only) and memory-mapped after that. ``benchmarks/bench_bm25_lite.py`` measures its top-5 agreement with Lucene.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path

import numpy as np

from simweb_core.errors import IndexNotFoundError
from wiki_index.search.bm25 import adjust_ties
from wiki_index.types import Hit, Passage

FORMAT = 1
#: Lucene's ``EnglishAnalyzer.ENGLISH_STOP_WORDS_SET``.
STOP_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there these they this "
    "to was will with".split()
)
_L = r"[^\W\d_]"
_EXT = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f\u200c\u200d"  # combining marks, ZWJ/ZWNJ
_W = rf"[\w{_EXT}]"
_CJK = "\u3040-\u309f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff"  # Hiragana and Han: one per word
_TOKEN = re.compile(
    rf"[{_CJK}]|(?:(?![{_CJK}]){_W})+(?:(?:(?<={_L})[.'’‘:·](?={_L})|(?<=\d)[.,;'’‘](?=\d))(?:(?![{_CJK}]){_W})+)*"
)
_POSSESSIVE = ("'", "’", "＇")


@lru_cache(maxsize=1)
def _stemmer() -> object:
    """NLTK's Porter stemmer in ``MARTIN_EXTENSIONS`` mode, read from NLTK's ``stem/porter.py`` alone.

    ``import nltk`` loads the whole toolkit (seconds, and scipy); the stemmer module needs only ``re`` and an
    abstract base class, so its source is executed on its own with that base class taken as ``object``.
    """
    spec = importlib.util.find_spec("nltk")
    if spec is None or spec.origin is None:
        raise ImportError("the Java-free BM25 (SIM_WEB_BM25=lite) needs NLTK's Porter stemmer: pip install nltk")
    path = Path(spec.origin).parent / "stem" / "porter.py"
    source = path.read_text(encoding="utf-8").replace("from nltk.stem.api import StemmerI", "StemmerI = object")
    namespace: dict = {"__name__": "wiki_index.search._nltk_porter"}
    exec(compile(source, str(path), "exec"), namespace)  # noqa: S102 - NLTK's own module source
    porter = namespace["PorterStemmer"]
    return porter(porter.MARTIN_EXTENSIONS)


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    return word if len(word) <= 2 else _stemmer().stem(word, to_lowercase=False)  # type: ignore[attr-defined]


def analyze(text: str) -> list[str]:
    """The terms Anserini's default English analyzer makes of ``text`` (see the module docstring).

    Args:
        text: Any text (a passage's ``contents`` or a query).

    Returns:
        The stemmed terms, in order, stop words removed.
    """
    out = []
    for m in _TOKEN.finditer(text):
        w = m.group()
        if len(w) >= 2 and w[-1] in "sS" and w[-2] in _POSSESSIVE:
            w = w[:-2]
        w = w.lower()
        if w and w not in STOP_WORDS:
            out.append(_stem(w))
    return out


def _long_to_int4(i: int) -> int:
    bits = i.bit_length()
    if bits < 4:
        return i
    shift = bits - 4
    return ((i >> shift) & 0x07) | ((shift + 1) << 3)


def _int4_to_long(i: int) -> int:
    bits, shift = i & 0x07, (i >> 3) - 1
    return bits if shift == -1 else (bits | 0x08) << shift


_FREE = 255 - _long_to_int4(2**31 - 1)  # Lucene's SmallFloat.NUM_FREE_VALUES (24)


def norm_byte(length: int) -> int:
    """Lucene's ``SmallFloat.intToByte4``: the one byte a document's length is stored as (exact below 24)."""
    return length if length < _FREE else _FREE + _long_to_int4(length - _FREE)


#: Lucene's ``BM25Similarity.LENGTH_TABLE``: the length each norm byte stands for.
LENGTH_TABLE = np.array([b if b < _FREE else _FREE + _int4_to_long(b - _FREE) for b in range(256)], dtype=np.float32)


def lite_stamp(path: str | Path) -> dict[str, str] | None:
    """The ``stamp`` that :func:`build_lite` wrote into ``path`` (which index and columns), or ``None`` if none."""
    meta = Path(path) / "meta.json"
    if not meta.is_file():
        return None
    return json.loads(meta.read_text(encoding="utf-8")).get("stamp")


def build_lite(texts: list[str], ids: list[str], out: str | Path, stamp: dict[str, str] | None = None) -> Path:
    """Write the postings of ``texts`` (in Lucene document order) to ``out``.

    Args:
        texts: Each document's indexed text (the passage's ``contents``), document ``i`` at position ``i``.
        ids: Each document's passage id (ties are broken by it, as Lucene's sort does).
        out: The folder to write (``vocab.json``, ``*.npy``, ``meta.json``).
        stamp: What the postings belong to (the index's content hash, the columns' commit), kept in ``meta.json``.

    Returns:
        ``out``.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    vocab: dict[str, int] = {}
    rows: list[tuple[int, int, int]] = []  # (term, doc, tf)
    lengths = np.zeros(len(texts), dtype=np.int64)
    for doc, text in enumerate(texts):
        terms = analyze(text)
        lengths[doc] = len(terms)
        for term, tf in Counter(terms).items():
            rows.append((vocab.setdefault(term, len(vocab)), doc, tf))
    arr = np.array(rows, dtype=np.int64).reshape(-1, 3)
    arr = arr[np.lexsort((arr[:, 1], arr[:, 0]))]
    offsets = np.searchsorted(arr[:, 0], np.arange(len(vocab) + 1)).astype(np.int64)
    np.save(out / "offsets.npy", offsets)
    np.save(out / "docs.npy", arr[:, 1].astype(np.int32))
    np.save(out / "tfs.npy", arr[:, 2].astype(np.float32))
    np.save(out / "norms.npy", np.array([norm_byte(int(n)) for n in lengths], dtype=np.uint8))
    np.save(out / "id_rank.npy", np.argsort(np.argsort(np.array(ids, dtype=object), kind="stable")).astype(np.int32))
    (out / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
    meta = {"format": FORMAT, "docs": len(texts), "terms": len(vocab), "sum_length": int(lengths.sum()), "stamp": stamp}
    (out / "meta.json").write_text(json.dumps(meta))  # last: a folder without it is unfinished
    return out


class LiteBM25Searcher:
    """Lucene-compatible BM25 over postings written by :func:`build_lite` (the ``search_docs`` side of
    :class:`~wiki_index.search.bm25.BM25Searcher`).

    Args:
        path: The folder :func:`build_lite` wrote.
        k1: BM25 term-frequency saturation (the index manifest's ``bm25.k1``).
        b: BM25 length normalisation (``bm25.b``).
        passages: Reads passages by Lucene document number (the index's columns), for :meth:`search` and :meth:`doc`.
    """

    def __init__(self, path: str | Path, k1: float = 0.9, b: float = 0.4, passages: object = None) -> None:
        self.path = Path(path)
        meta_path = self.path / "meta.json"
        if not meta_path.is_file():
            raise IndexNotFoundError(f"no Java-free BM25 postings in {self.path}; open the index with WikiIndex")
        meta = json.loads(meta_path.read_text())
        if meta.get("format") != FORMAT:
            raise IndexNotFoundError(f"{self.path} holds postings of another format; delete it to rebuild them")
        self.k1, self.b, self.n = k1, b, int(meta["docs"])
        self._passages = passages
        self.vocab: dict[str, int] = json.loads((self.path / "vocab.json").read_text())
        load = {name: np.load(self.path / f"{name}.npy", mmap_mode="r") for name in ("offsets", "docs", "tfs")}
        self._offsets, self._docs, self._tfs = load["offsets"], load["docs"], load["tfs"]
        self._id_rank = np.load(self.path / "id_rank.npy")
        avgdl = np.float32(meta["sum_length"] / max(self.n, 1))
        cache = np.float32(1.0) / (
            np.float32(k1) * ((np.float32(1.0) - np.float32(b)) + np.float32(b) * LENGTH_TABLE / avgdl)
        )
        self._norm_inverse = cache[np.load(self.path / "norms.npy")].astype(np.float32)

    def _idf(self, df: int) -> np.float32:
        return np.float32(np.log(1.0 + (self.n - df + 0.5) / (df + 0.5)))

    def search_docs(self, query: str, k: int = 10) -> list[tuple[int, float]]:
        """Top ``k`` (Lucene document number, score) for ``query``, as Lucene ranks and scores them."""
        counts = Counter(t for t in analyze(query) if t in self.vocab)
        if not counts or k < 1:
            return []
        scores = np.zeros(self.n, dtype=np.float64)
        hit = np.zeros(self.n, dtype=bool)
        for term, boost in counts.items():
            t = self.vocab[term]
            a, z = int(self._offsets[t]), int(self._offsets[t + 1])
            docs, tfs = np.asarray(self._docs[a:z]), np.asarray(self._tfs[a:z])
            weight = np.float32(boost) * self._idf(z - a)
            part = weight - weight / (np.float32(1.0) + tfs * self._norm_inverse[docs])
            scores[docs] += part.astype(np.float64)
            hit[docs] = True
        cand = np.flatnonzero(hit)
        final = scores[cand].astype(np.float32)
        if len(cand) > 4 * k:  # keep a few ties past the k-th score, then sort those exactly
            kth = np.partition(final, len(final) - k)[len(final) - k]
            keep = final >= kth
            cand, final = cand[keep], final[keep]
        order = np.lexsort((self._id_rank[cand], -final))[:k]
        return list(zip(cand[order].tolist(), adjust_ties(final[order].tolist())))

    def search(self, query: str, k: int = 10) -> list[Hit]:
        """Top ``k`` hits for ``query`` (needs ``passages``); a blank query gives ``[]``."""
        ranked = self.search_docs(query, k)
        found = self._passages.passages([d for d, _ in ranked]) if ranked else []  # type: ignore[attr-defined]
        return [Hit(p.docid, s) for p, (_, s) in zip(found, ranked)]

    def batch_search(self, queries: list[str], k: int = 10, threads: int = 1) -> list[list[Hit]]:
        """:meth:`search` for each query, in order (``threads`` is accepted for the protocol and unused)."""
        return [self.search(q, k) for q in queries]

    def doc(self, docid: str) -> Passage | None:
        """Not served here (the postings keep no id -> document map).

        Raises:
            NotImplementedError: Always; read passages by id with ``WikiIndex.store.passages_by_id``.
        """
        raise NotImplementedError("LiteBM25Searcher.doc: read passages by id with WikiIndex.store.passages_by_id")

    def close(self) -> None:
        """Nothing to release (the postings are memory-mapped)."""
