"""Build an index directory: source -> parse -> chunk -> DuckDB store + Lucene BM25 (+ FAISS).

Everything is written to a temporary sibling directory (``.NAME.building-PID``) and moved into
place only when the build is complete, so an interrupted build never leaves a half index under
the real name. A build holds a lock on its directory; the next build in the same parent removes
the directories of killed builds (owner PID gone and lock free), never a running build's.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import os
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from simweb_core.errors import ConfigError, CorpusError
from simweb_core.fields import help_field
from simweb_core.settings import default_index_dir
from wiki_index.manifest import versions, write_manifest
from wiki_index.parse.chunking import ChunkConfig, chunk_page
from wiki_index.search.dense import DenseConfig
from wiki_index.types import Passage

log = logging.getLogger(__name__)
#: DuckDB's memory limit while building (the store writer, then the sort that feeds the passage columns).
_MEMORY_LIMIT = "256MB"


@dataclass(frozen=True)
class BuildConfig:
    """What to build and how."""

    chunk: ChunkConfig = help_field(help="Passage length settings.", default_factory=ChunkConfig)
    dense: bool = help_field(True, "Whether to build the dense (FAISS) index too.")
    dense_config: DenseConfig = help_field(help="Encoder and FAISS settings.", default_factory=DenseConfig)
    k1: float = help_field(0.9, "BM25 k1 (recorded; searchers use it).")
    b: float = help_field(0.4, "BM25 b.")
    title_boost: float = help_field(
        0.0,
        "Index the page title as its own field too, weighted this much against the passage text (1.0) at search "
        "time; 0 indexes the text only.",
    )
    threads: int = help_field(2, "Lucene indexing threads.")
    workers: int = help_field(1, "Processes parsing the dump (1 = in-process).")

    def __post_init__(self) -> None:
        if not self.title_boost >= 0:
            raise ConfigError(f"BuildConfig.title_boost must be >= 0 (0: no title field), got {self.title_boost}")
        if self.threads < 1 or self.workers < 1:
            raise ConfigError(f"BuildConfig.threads and workers must be >= 1, got {self.threads} and {self.workers}")


def build_index(
    source: str | os.PathLike, out: str | os.PathLike | None = None, config: BuildConfig = BuildConfig()
) -> Path:
    """Build an index from ``source`` (``"sample"``, a dump path or a JSONL path).

    Args:
        source: What to index.
        out: Target directory; default ``$SIM_WEB_HOME/indexes/<source name>``. An existing
            index there is replaced only once the new one is complete.
        config: Build settings.

    Returns:
        The index directory.

    Raises:
        CorpusError: The source cannot be read or yields no pages.
    """
    from wiki_index.sources import open_source

    src = open_source(source, workers=config.workers)
    target = Path(out) if out else default_index_dir(src.name)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp, lock = _new_build_dir(target)
    t0 = time.perf_counter()
    try:
        built = _build_parts(tmp, src, str(source), config)
        write_manifest(tmp, _manifest(target.name, str(source), src, config, built))
        _unlock_build_dir(tmp, lock)
        lock = None
        _swap_into_place(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        if lock is not None:
            os.close(lock)
    log.info(
        "built %s: %d pages, %d passages in %.1fs",
        target,
        built.counts["pages"],
        built.n_passages,
        time.perf_counter() - t0,
    )
    return target


@dataclass
class _Built:
    """What the build steps report for the manifest."""

    counts: dict[str, int]
    indexed: int
    n_passages: int
    content_sha256: str
    seconds: dict[str, float] = field(default_factory=dict)
    dense: dict[str, Any] | None = None


def _build_parts(tmp: Path, src: Any, source: str, config: BuildConfig) -> _Built:
    """Store + BM25 + passage columns, then the dense index when asked for, all into ``tmp``."""
    t0 = time.perf_counter()
    built = _ingest(tmp, src, source, config)
    _write_columns(tmp, built.content_sha256, built.n_passages)
    built.seconds["parse_store_bm25"] = round(time.perf_counter() - t0, 2)
    t1 = time.perf_counter()
    if config.dense:
        from wiki_index.search.dense import build_dense

        built.dense = build_dense(
            tmp / "dense", _passages_in_order(tmp / "store.duckdb"), built.n_passages, config.dense_config
        )
    built.seconds["dense"] = round(time.perf_counter() - t1, 2)
    return built


def _ingest(tmp: Path, src: Any, source: str, config: BuildConfig) -> _Built:
    """Stream the source into the DuckDB store and the Lucene index; close both.

    Raises:
        CorpusError: No page was kept.
    """
    from tqdm import tqdm

    from wiki_index.search.bm25 import BM25Writer
    from wiki_index.sources.base import Redirect
    from wiki_index.store.store import StoreWriter

    store = StoreWriter(tmp / "store.duckdb", memory_limit=_MEMORY_LIMIT)
    bm25 = BM25Writer(tmp / "bm25", threads=config.threads, title_field=config.title_boost > 0)
    digest, n_passages = hashlib.sha256(), 0
    for rec in tqdm(src.records(), desc="parse", unit="page"):
        if isinstance(rec, Redirect):
            store.add_redirect(rec.title, rec.target)
            continue
        passages = chunk_page(rec, config.chunk)
        if store.add_page(rec, passages):
            bm25.add(passages)
            n_passages += len(passages)
            for p in passages:
                digest.update(f"{p.docid}\t{p.contents}\n".encode())
    counts = store.finalize()
    if counts["pages"] == 0:
        raise CorpusError(
            f"{source}: no pages were kept (read {src.stats.read}, skipped {src.stats.skipped}: "
            f"{src.stats.skipped_reasons}); check the input format"
        )
    return _Built(counts, bm25.close(), n_passages, digest.hexdigest())


def _manifest(name: str, source: str, src: Any, config: BuildConfig, built: _Built) -> dict[str, Any]:
    """The manifest of a finished build."""
    bm25 = {"k1": config.k1, "b": config.b, "count": built.indexed}
    if config.title_boost:
        bm25["title_boost"] = config.title_boost
    return {
        "name": name,
        "source": {"spec": source, **src.describe()},
        "stats": src.stats.as_dict(),
        "counts": built.counts,
        "chunk": asdict(config.chunk),
        "bm25": bm25,
        "dense": built.dense,
        "content_sha256": built.content_sha256,
        "versions": versions(),
        "build_seconds": built.seconds,
        "built_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }


_BUILDING = re.compile(r"\.(?P<name>.+)\.building-(?P<pid>[0-9]+)")
_LOCK_FILE = ".build.lock"


def remove_stale_builds(parent: Path) -> list[Path]:
    """Remove the ``.NAME.building-PID`` directories in ``parent`` that killed builds left behind.

    A directory goes only when its process is gone (``ProcessLookupError`` for the PID) and, when it
    has a lock file, nobody holds that lock (so a build running in another PID namespace that
    shares the folder, such as another container, is left alone). POSIX only: elsewhere nothing is
    removed.

    Args:
        parent: The folder the index directories live in.

    Returns:
        The directories removed.
    """
    if os.name != "posix" or not parent.is_dir():
        return []
    removed = []
    for path in sorted(parent.iterdir()):
        m = _BUILDING.fullmatch(path.name)
        if not m or not path.is_dir() or _owner_alive(int(m["pid"])) or _lock_held(path / _LOCK_FILE):
            continue
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            log.info("removed %s, left behind by build process %s, which is gone", path, m["pid"])
            removed.append(path)
    return removed


def _owner_alive(pid: int) -> bool:
    """Whether ``pid`` may be a live process (anything but a clear "no such process" counts as alive)."""
    if pid <= 0 or pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):  # PermissionError: alive under another user; OverflowError: not a PID here
        return True
    return True


def _new_build_dir(target: Path) -> tuple[Path, int | None]:
    """Clear killed builds' leftovers, then create and lock this build's ``.NAME.building-PID`` directory."""
    remove_stale_builds(target.parent)
    tmp = target.parent / f".{target.name}.building-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    return tmp, _lock_build_dir(tmp)


def _lock_build_dir(tmp: Path) -> int | None:
    """Create and hold (``flock``) the lock file of a build directory; returns its descriptor (``None``: not POSIX)."""
    if os.name != "posix":
        return None
    import fcntl

    fd = os.open(tmp / _LOCK_FILE, os.O_CREAT | os.O_RDWR, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def _unlock_build_dir(tmp: Path, fd: int | None) -> None:
    """Drop the lock file before the directory becomes the index."""
    if fd is not None:
        os.unlink(tmp / _LOCK_FILE)
        os.close(fd)


def _lock_held(lock: Path) -> bool:
    """Whether another process holds ``lock`` (a missing or unreadable lock file is not held)."""
    import fcntl

    try:
        fd = os.open(lock, os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)


def _passages_in_order(store_path: Path, batch: int = 4096) -> Iterator[list[Passage]]:
    """Stream every passage from a finished store, ordered by page and position."""
    from wiki_index.store.store import Store

    store = Store(store_path)
    try:
        yield from store.iter_passages(batch)
    finally:
        store.close()


def _write_columns(tmp: Path, content_sha256: str, n_passages: int) -> None:
    """Write the passage columns that BM25 search reads its text from (see :mod:`wiki_index.store.columns`);
    the store's sort by page spills to disk beyond ``_MEMORY_LIMIT``."""
    from wiki_index.search.bm25 import BM25Searcher
    from wiki_index.store.derived import write_index_columns
    from wiki_index.store.store import Store

    store, searcher = (
        Store(tmp / "store.duckdb", memory_limit=_MEMORY_LIMIT),
        BM25Searcher(tmp / "bm25"),
    )  # ids only: no boost
    try:
        write_index_columns(tmp, store, searcher, content_sha256, tmp / "columns", n_passages)
    finally:
        searcher.close()
        store.close()


def _swap_into_place(tmp: Path, target: Path) -> None:
    """Replace ``target`` by the finished build in ``tmp`` with renames (the old index goes last)."""
    old = None
    if target.exists():
        old = target.parent / f".{target.name}.old-{os.getpid()}"
        os.replace(target, old)
    os.replace(tmp, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
