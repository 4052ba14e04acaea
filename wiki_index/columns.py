"""Passage text as memory-mapped columns, read on the search hot path instead of Lucene's stored JSON.

Layout of ``<index>/columns/`` (written by ``wiki-index build``, or once on first search for an index
built before it existed):

* ``docid.bin`` / ``title.bin`` / ``section.bin`` / ``text.bin``: the UTF-8 strings of every
  passage, concatenated in store order, with ``<name>.off.npy`` (int64, ``n + 1`` offsets);
* ``page_id.npy`` (int64) and ``ordinal.npy`` (int32), in store order;
* ``row_of_doc.npy`` (int64): the store row of each Lucene document number, so a BM25 hit
  (Lucene's internal ``doc``) reaches its text with two array reads and no JSON decoding;
* ``meta.json``: format, passage count, the index's ``content_sha256`` and the Lucene commit
  (``segments_N``) that the document numbers belong to; a mismatch means "rebuild the columns".

Columns are derived data: they can always be rebuilt from the store and the Lucene index.
"""

from __future__ import annotations

import json
import logging
import mmap
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from wiki_index.errors import IndexMismatchError
from wiki_index.types import Passage

log = logging.getLogger(__name__)
FORMAT = 1
STRINGS = ("docid", "title", "section", "text")


class _Strings:
    """One string column: a memory-mapped UTF-8 blob and its offsets."""

    def __init__(self, path: Path, name: str) -> None:
        self.off = _mapped(path / f"{name}.off.npy")
        size = (path / f"{name}.bin").stat().st_size
        if size:
            with open(path / f"{name}.bin", "rb") as f:
                self.blob: bytes | mmap.mmap = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        else:
            self.blob = b""

    def get(self, rows: np.ndarray) -> list[str]:
        """The strings of ``rows`` (an int64 array)."""
        blob = self.blob
        return [blob[a:b].decode("utf-8") for a, b in zip(self.off[rows].tolist(), self.off[rows + 1].tolist())]


def _mapped(path: Path) -> np.ndarray:
    """A read-only memory-mapped ``.npy`` as a plain ndarray (indexing a ``np.memmap`` costs a Python call)."""
    return np.load(path, mmap_mode="r").view(np.ndarray)


class PassageColumns:
    """Read-only passage columns addressed by Lucene document number.

    Args:
        path: The ``columns`` directory.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.meta = json.loads((self.path / "meta.json").read_text(encoding="utf-8"))
        self._row_of_doc = _mapped(self.path / "row_of_doc.npy")
        self._page_id = _mapped(self.path / "page_id.npy")
        self._ordinal = _mapped(self.path / "ordinal.npy")
        self._str = {name: _Strings(self.path, name) for name in STRINGS}

    def __len__(self) -> int:
        return int(self.meta["count"])

    def passage(self, doc: int) -> Passage:
        """The passage of Lucene document number ``doc``."""
        return self.passages([doc])[0]

    def passages(self, docs: list[int]) -> list[Passage]:
        """The passages of several Lucene document numbers, in the order given (a few array reads in all)."""
        if not docs:
            return []
        rows = self._row_of_doc[np.asarray(docs, dtype=np.int64)]
        s = self._str
        return list(map(Passage, s["docid"].get(rows), self._page_id[rows].tolist(), s["title"].get(rows),
                        s["text"].get(rows), s["section"].get(rows), self._ordinal[rows].tolist()))

    def matches(self, content_sha256: str, commit: str) -> bool:
        """Whether these columns belong to the index with this content hash and Lucene commit."""
        m = self.meta
        return m.get("format") == FORMAT and m.get("content_sha256") == content_sha256 and m.get("commit") == commit


def lucene_commit(bm25_dir: Path) -> str:
    """The name of the newest ``segments_N`` file of a Lucene index (its commit)."""
    names = sorted((p.name for p in bm25_dir.glob("segments_*")), key=lambda n: int(n.split("_")[1], 36))
    return names[-1] if names else ""


def write_columns(out: Path, batches: Iterable[list[Passage]], lucene_ids: list[str], content_sha256: str, commit: str) -> Path:
    """Write the columns of a store's passages, mapped to Lucene document numbers.

    Args:
        out: The directory to create (written under a temporary name, then renamed; if another
            process finished first, its copy is kept).
        batches: Every passage of the store, in store order.
        lucene_ids: The passage id of each Lucene document number.
        content_sha256: The index's content hash (from the manifest).
        commit: The Lucene commit the document numbers belong to (:func:`lucene_commit`).

    Returns:
        ``out``.

    Raises:
        IndexMismatchError: The store and the Lucene index hold different passages.
    """
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        docids = _write_rows(tmp, batches)
        np.save(tmp / "row_of_doc.npy", _row_of_doc(docids, lucene_ids))
        meta = {"format": FORMAT, "count": len(docids), "content_sha256": content_sha256, "commit": commit}
        (tmp / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
        try:
            os.rename(tmp, out)
        except OSError:  # another process put its copy there first (same content): keep that one
            if not (out / "meta.json").exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def _write_rows(tmp: Path, batches: Iterable[list[Passage]]) -> list[bytes]:
    """Write the string blobs and the numeric columns; returns the passage ids (UTF-8) in store order."""
    files = {name: open(tmp / f"{name}.bin", "wb") for name in STRINGS}
    offsets: dict[str, list[int]] = {name: [0] for name in STRINGS}
    page_ids: list[int] = []
    ordinals: list[int] = []
    docids: list[bytes] = []
    try:
        for batch in batches:
            for p in batch:
                for name, value in (("docid", p.docid), ("title", p.title), ("section", p.section), ("text", p.text)):
                    data = value.encode("utf-8")
                    files[name].write(data)
                    offsets[name].append(offsets[name][-1] + len(data))
                    if name == "docid":
                        docids.append(data)
                page_ids.append(p.page_id)
                ordinals.append(p.ordinal)
    finally:
        for f in files.values():
            f.close()
    for name in STRINGS:
        np.save(tmp / f"{name}.off.npy", np.asarray(offsets[name], dtype=np.int64))
    np.save(tmp / "page_id.npy", np.asarray(page_ids, dtype=np.int64))
    np.save(tmp / "ordinal.npy", np.asarray(ordinals, dtype=np.int32))
    return docids


def _row_of_doc(store_ids: list[bytes], lucene_ids: list[str]) -> np.ndarray:
    """The store row of each Lucene document number, matched by passage id."""
    store = np.array(store_ids, dtype=bytes) if store_ids else np.zeros(0, dtype="S1")
    lucene = np.array([d.encode("utf-8") for d in lucene_ids], dtype=bytes) if lucene_ids else np.zeros(0, dtype="S1")
    by_store, by_lucene = np.argsort(store, kind="stable"), np.argsort(lucene, kind="stable")
    if len(store) != len(lucene) or not np.array_equal(store[by_store], lucene[by_lucene]):
        raise IndexMismatchError(f"the store holds {len(store)} passages and Lucene {len(lucene)} documents, "
                                 "not the same ids; rebuild the index with `wiki-index build`")
    rows = np.empty(len(lucene), dtype=np.int64)
    rows[by_lucene] = by_store
    return rows
