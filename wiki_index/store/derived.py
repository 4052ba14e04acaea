"""Parts of an index derived from its store and built on first use: passage columns and the dense index.

``wiki-index build`` writes BM25 and the columns; the dense (FAISS) part costs minutes to hours of
encoding on a CPU, so unless ``--dense`` asks for it at build time it is built the first time a
``dense`` or ``hybrid`` search needs it, with a message and a progress bar that moves every encoder
batch. Into the index directory when it is writable (the manifest then records it), else into
``$SIM_WEB_HOME/cache``. One process builds at a time (a lock file); the others wait and reuse it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from wiki_index.manifest import MANIFEST, write_manifest

log = logging.getLogger(__name__)


def write_index_columns(path: Path, store: Any, bm25: Any, content_sha256: str, target: Path, n: int) -> Path:
    """Write the passage columns of the index at ``path`` (store + Lucene) into ``target``.

    Streams both sides (store passages in batches, Lucene ids in batches), so memory stays flat
    whatever the corpus size.

    Args:
        path: The index directory.
        store: Its opened :class:`~wiki_index.store.store.Store`.
        bm25: Its opened :class:`~wiki_index.search.bm25.BM25Searcher`.
        content_sha256: The manifest's content hash.
        target: The columns directory to write.
        n: The number of passages (for the progress bar, shown from 200,000 passages).
    """
    from tqdm import tqdm

    from wiki_index.store.columns import lucene_commit, write_columns

    log.info("writing the passage columns of %s (%d passages, once)", path, n)
    with tqdm(total=2 * n, desc="passage columns", unit="passage", disable=n < 200_000, mininterval=1.0) as bar:
        return write_columns(
            target,
            _counted(store.iter_passages(), bar),
            _counted(bm25.lucene_ids(), bar, flat=True),
            content_sha256,
            lucene_commit(path / "bm25"),
        )


def _counted(batches: Iterator[list[Any]], bar: Any, flat: bool = False) -> Iterator[Any]:
    """Pass ``batches`` through (each item of each batch when ``flat``), moving ``bar`` per batch."""
    for batch in batches:
        bar.update(len(batch))
        if flat:
            yield from batch
        else:
            yield batch


def dense_location(path: Path, manifest: dict[str, Any]) -> tuple[Path, dict[str, Any] | None]:
    """Where the dense part of an index lives and what it records (``None``: not built yet).

    Args:
        path: The index directory.
        manifest: Its manifest.
    """
    if manifest.get("dense"):
        return path / "dense", manifest["dense"]
    cached = _cache_dir(manifest)
    info = cached / "dense.json"
    return (cached, json.loads(info.read_text(encoding="utf-8"))) if info.exists() else (cached, None)


def _cache_dir(manifest: dict[str, Any]) -> Path:
    from simweb_core.settings import sim_web_home

    return sim_web_home() / "cache" / f"dense-{manifest['content_sha256'][:16]}"


def build_dense_on_first_use(
    path: Path, manifest: dict[str, Any], store: Any, config: Any = None
) -> tuple[Path, dict[str, Any]]:
    """Build the dense part of an index now (it was built without ``--dense``) and record it.

    Args:
        path: The index directory.
        manifest: Its manifest (updated in place when the index directory records the build).
        store: Its opened :class:`~wiki_index.store.store.Store` (the passages to encode).
        config: A :class:`~wiki_index.search.dense.DenseConfig` (default settings when ``None``).

    Returns:
        The dense directory and its manifest entry.
    """
    from wiki_index.search.dense import DenseConfig, build_dense

    writable = os.access(path, os.W_OK)
    home = path if writable else _cache_dir(manifest)
    home.mkdir(parents=True, exist_ok=True)
    with _locked(home / ".dense.lock"):
        fresh = _reread(path, manifest) if writable else manifest
        where, info = dense_location(path, fresh)
        if info is not None:  # another process built it while we waited
            manifest.update(fresh)
            return where, info
        n = int(manifest["counts"]["passages"])
        print(
            f"wiki-index: {path} has no dense index yet; encoding its {n:,} passages once for dense/hybrid search "
            "(about 30 passages/s per 2 CPU cores; `wiki-index build --dense` does this at build time)",
            file=sys.stderr,
        )
        tmp = home / f".dense.building-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        t0 = time.perf_counter()
        try:
            info = build_dense(tmp, store.iter_passages(), n, config or DenseConfig())
            target = home / "dense" if writable else home
            if writable:
                shutil.rmtree(target, ignore_errors=True)
                os.replace(tmp, target)
                _record(path, fresh, info, time.perf_counter() - t0)
                manifest.update(fresh)
            else:
                for f in tmp.iterdir():
                    os.replace(f, home / f.name)
                (home / "dense.json").write_text(json.dumps(info), encoding="utf-8")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return target, info


def _reread(path: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    try:
        return json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return dict(manifest)


def _record(path: Path, manifest: dict[str, Any], info: dict[str, Any], seconds: float) -> None:
    """Rewrite the manifest with the dense entry (atomically: written beside it, then renamed)."""
    manifest["dense"] = info
    manifest.setdefault("build_seconds", {})["dense"] = round(seconds, 2)
    tmp = path / f".manifest.{os.getpid()}"
    tmp.mkdir(exist_ok=True)
    try:
        write_manifest(tmp, manifest)
        os.replace(tmp / MANIFEST, path / MANIFEST)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def _locked(lock: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``lock`` (POSIX; elsewhere no lock)."""
    if os.name != "posix":
        yield
        return
    import fcntl

    fd = os.open(lock, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
