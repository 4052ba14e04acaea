"""Passage text as memory-mapped columns, read on the search hot path instead of Lucene's stored JSON.

Layout of ``<index>/columns/`` (written by ``wiki-index build``, or once on first search for an index
built before it existed):

* ``docid.bin`` / ``title.bin`` / ``section.bin`` / ``text.bin``: the UTF-8 strings of every
  passage, concatenated in store order, with ``<name>.off.npy`` (int64, ``n + 1`` offsets);
* ``page_id.npy`` (int64) and ``ordinal.npy`` (int32), in store order (by page id, then position: a
  page's passages are one run of rows, found by binary search);
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

from simweb_core.errors import IndexMismatchError
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

    def get_bytes(self, rows: np.ndarray) -> list[bytes]:
        """The UTF-8 bytes of ``rows`` (an int64 array)."""
        blob = self.blob
        return [blob[a:b] for a, b in zip(self.off[rows].tolist(), self.off[rows + 1].tolist())]


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
        return self._rows(self._row_of_doc[np.asarray(docs, dtype=np.int64)])

    def page_rows(self, docs: list[int]) -> tuple[list[int], list[int]]:
        """The column rows of several Lucene document numbers and their pages' ids, without reading a passage."""
        rows = self._row_of_doc[np.asarray(docs, dtype=np.int64)]
        return rows.tolist(), self._page_id[rows].tolist()

    def rows(self, rows: list[int]) -> list[Passage]:
        """The passages of column rows (as :meth:`page_rows` gives them), in the order given."""
        return self._rows(np.asarray(rows, dtype=np.int64))

    def page_passages(self, page_id: int) -> list[Passage]:
        """All passages of one page, in order (a binary search on the page-id column; ``[]`` for an unknown page)."""
        lo, hi = np.searchsorted(self._page_id, [page_id, page_id + 1])
        return self._rows(np.arange(lo, hi, dtype=np.int64))

    def _rows(self, rows: np.ndarray) -> list[Passage]:
        s = self._str
        return list(
            map(
                Passage,
                s["docid"].get(rows),
                self._page_id[rows].tolist(),
                s["title"].get(rows),
                s["text"].get(rows),
                s["section"].get(rows),
                self._ordinal[rows].tolist(),
            )
        )

    def matches(self, content_sha256: str, commit: str) -> bool:
        """Whether these columns belong to the index with this content hash and Lucene commit."""
        m = self.meta
        return m.get("format") == FORMAT and m.get("content_sha256") == content_sha256 and m.get("commit") == commit


def lucene_commit(bm25_dir: Path) -> str:
    """The name of the newest ``segments_N`` file of a Lucene index (its commit)."""
    names = sorted((p.name for p in bm25_dir.glob("segments_*")), key=lambda n: int(n.split("_")[1], 36))
    return names[-1] if names else ""


def write_columns(
    out: Path, batches: Iterable[list[Passage]], lucene_ids: Iterable[str], content_sha256: str, commit: str
) -> Path:
    """Write the columns of a store's passages, mapped to Lucene document numbers.

    Memory stays bounded by a batch plus 40 bytes per passage (the id hashes that match store rows
    to Lucene documents): strings and offsets stream to disk, the Lucene ids too (to check the match).

    Args:
        out: The directory to create (written under a temporary name, then renamed; if another
            process finished first, its copy is kept).
        batches: Every passage of the store, in store order.
        lucene_ids: The passage id of each Lucene document number, in document-number order (a list
            or a stream, read once).
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
        rows = _row_of_doc(tmp, _write_rows(tmp, batches), _write_id_column(tmp, "lucene_id", lucene_ids))
        for name in ("lucene_id.bin", "lucene_id.off.npy"):
            (tmp / name).unlink()
        np.save(tmp / "row_of_doc.npy", rows)
        meta = {"format": FORMAT, "count": len(rows), "content_sha256": content_sha256, "commit": commit}
        (tmp / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
        try:
            os.rename(tmp, out)
        except OSError:  # another process put its copy there first (same content): keep that one
            if not (out / "meta.json").exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


class _NpyStream:
    """A 1-d ``.npy`` file written in pieces: the data goes to a side file, the header once the length is known."""

    def __init__(self, path: Path, dtype: type) -> None:
        self.path, self.dtype, self.count = path, np.dtype(dtype), 0
        self._raw = open(path.with_name(path.name + ".raw"), "w+b")  # noqa: SIM115 (closed by close())

    def append(self, values: np.ndarray) -> None:
        """Append ``values`` (cast to the stream's dtype)."""
        self._raw.write(np.ascontiguousarray(values, dtype=self.dtype).tobytes())
        self.count += len(values)

    def close(self) -> None:
        """Write the ``.npy`` file (header, then the data copied over) and remove the side file."""
        header = {"descr": np.lib.format.dtype_to_descr(self.dtype), "fortran_order": False, "shape": (self.count,)}
        self._raw.seek(0)
        with open(self.path, "wb") as f:
            np.lib.format.write_array_header_1_0(f, header)
            shutil.copyfileobj(self._raw, f, 1 << 20)
        self._raw.close()
        os.unlink(self._raw.name)


class _BlobStream:
    """One string column written in pieces: ``<name>.bin`` and ``<name>.off.npy`` (``n + 1`` int64 offsets)."""

    def __init__(self, tmp: Path, name: str) -> None:
        self._bin = open(tmp / f"{name}.bin", "wb")  # noqa: SIM115 (closed by close())
        self._off = _NpyStream(tmp / f"{name}.off.npy", np.int64)
        self._end = 0
        self._off.append(np.zeros(1, dtype=np.int64))

    def append(self, data: list[bytes]) -> None:
        """Append UTF-8 strings."""
        self._bin.write(b"".join(data))
        ends = np.cumsum(np.fromiter(map(len, data), dtype=np.int64, count=len(data))) + self._end
        if len(ends):
            self._end = int(ends[-1])
        self._off.append(ends)

    def close(self) -> None:
        """Finish both files."""
        self._bin.close()
        self._off.close()


def _write_rows(tmp: Path, batches: Iterable[list[Passage]]) -> np.ndarray:
    """Write the string blobs and the numeric columns; returns the ``hash`` of each passage id (UTF-8), in store order."""
    blobs = {name: _BlobStream(tmp, name) for name in STRINGS}
    page_id, ordinal = _NpyStream(tmp / "page_id.npy", np.int64), _NpyStream(tmp / "ordinal.npy", np.int32)
    hashes: list[np.ndarray] = []
    for batch in batches:
        docids = [p.docid.encode("utf-8") for p in batch]
        hashes.append(_hashes(docids))
        blobs["docid"].append(docids)
        for name in ("title", "section", "text"):
            blobs[name].append([getattr(p, name).encode("utf-8") for p in batch])
        page_id.append(np.fromiter((p.page_id for p in batch), dtype=np.int64, count=len(batch)))
        ordinal.append(np.fromiter((p.ordinal for p in batch), dtype=np.int32, count=len(batch)))
    for stream in (*blobs.values(), page_id, ordinal):
        stream.close()
    return np.concatenate(hashes) if hashes else np.zeros(0, dtype=np.int64)


def _write_id_column(tmp: Path, name: str, ids: Iterable[str], chunk: int = 8192) -> np.ndarray:
    """Write one string column from a stream of strings; returns the ``hash`` of each (UTF-8), in order."""
    blob, hashes, batch = _BlobStream(tmp, name), [], []
    for s in ids:
        batch.append(s.encode("utf-8"))
        if len(batch) == chunk:
            hashes.append(_hashes(batch))
            blob.append(batch)
            batch = []
    hashes.append(_hashes(batch))
    blob.append(batch)
    blob.close()
    return np.concatenate(hashes)


def _hashes(ids: list[bytes]) -> np.ndarray:
    """Python's ``hash`` of each id (64-bit, salted per process: compare only within one process)."""
    return np.fromiter(map(hash, ids), dtype=np.int64, count=len(ids))


def _row_of_doc(tmp: Path, store_hashes: np.ndarray, lucene_hashes: np.ndarray) -> np.ndarray:
    """The store row of each Lucene document number, matched by passage id.

    Matched on the ids' 64-bit hashes (sorted on both sides), then checked id by id against the
    strings on disk; should two different ids share a hash, the match is redone on the ids themselves.
    """
    rows = _match(store_hashes, lucene_hashes)
    del store_hashes, lucene_hashes
    if not _same_ids(tmp, rows):
        rows = _exact_row_of_doc(tmp)
    return rows


def _match(store: np.ndarray, lucene: np.ndarray) -> np.ndarray:
    """``rows`` with ``store[rows[d]] == lucene[d]`` for every ``d`` (sorted on both sides).

    Raises:
        IndexMismatchError: The two sides do not hold the same keys.
    """
    if len(store) != len(lucene):
        raise _mismatch(len(store), len(lucene))
    by_store, by_lucene = np.argsort(store, kind="stable"), np.argsort(lucene, kind="stable")
    if not np.array_equal(store[by_store], lucene[by_lucene]):
        raise _mismatch(len(store), len(lucene))
    rows = np.empty(len(lucene), dtype=np.int64)
    rows[by_lucene] = by_store
    return rows


def _mismatch(n_store: int, n_lucene: int) -> IndexMismatchError:
    return IndexMismatchError(
        f"the store holds {n_store} passages and Lucene {n_lucene} documents, "
        "not the same ids; rebuild the index with `wiki-index build`"
    )


def _same_ids(tmp: Path, rows: np.ndarray, chunk: int = 65_536) -> bool:
    """Whether Lucene document ``d``'s id equals the store id at ``rows[d]``, for every ``d``."""
    store, lucene = _Strings(tmp, "docid"), _Strings(tmp, "lucene_id")
    for start in range(0, len(rows), chunk):
        docs = np.arange(start, min(len(rows), start + chunk), dtype=np.int64)
        if store.get_bytes(rows[docs]) != lucene.get_bytes(docs):
            return False
    return True


def _exact_row_of_doc(tmp: Path) -> np.ndarray:
    """The match on the ids themselves (all in memory; only for the rare corpus with a hash collision)."""
    log.warning("two passage ids share a 64-bit hash; matching the columns on the ids themselves")
    store, lucene = (np.array(_every(_Strings(tmp, name)), dtype=bytes) for name in ("docid", "lucene_id"))
    return _match(store, lucene)


def _every(strings: _Strings) -> list[bytes]:
    return strings.get_bytes(np.arange(len(strings.off) - 1, dtype=np.int64))
