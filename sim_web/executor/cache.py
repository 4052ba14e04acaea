"""The executor's caches: an in-process LRU map and a persistent SQLite store shared across processes.

:class:`SqliteCache` is content-keyed (string keys, usually SHA-256 hex digests) with a per-read TTL,
so one file holds raw upstream replies (Serper JSON, Jina text: long TTLs) and extracted results
(keyed by goal and summariser model) side by side. SQLite's own locking makes it safe for many
processes and threads (WAL mode, a busy timeout); a rollout fleet on one machine shares one file.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from sim_web.protocol.results import ScholarResult, SearchResult, VisitResult
from simweb_core.errors import ConfigError

log = logging.getLogger(__name__)
_TYPES = {"search": SearchResult, "scholar": ScholarResult, "visit": VisitResult}
#: The Python types a field annotation of the result records admits (annotations are strings here).
_ANNOTATED = {"str": str, "int": int, "bool": bool, "None": type(None)}


class CacheRowError(ValueError):
    """A persistent cache row that is not a result of its tool: cut short, or written under an older schema."""


class LRUCache:
    """A thread-safe least-recently-used map; shareable between executors of one process.

    Args:
        maxsize: Capacity in entries.
    """

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._data: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The value of ``key`` (now most recently used), or ``default``."""
        with self._lock:
            if key not in self._data:
                return default
            self._data.move_to_end(key)
            return self._data[key]

    def put(self, key: Hashable, value: Any) -> None:
        """Store ``value``, evicting the least recently used entry when full."""
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        return len(self._data)

    def __getstate__(self) -> dict[str, Any]:
        with self._lock:
            return {"maxsize": self.maxsize, "_data": OrderedDict(self._data)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


class SqliteCache:
    """A persistent string -> string store with timestamps, shared by processes through one SQLite file.

    A database error (a locked or full disk) is logged and read as a miss / a skipped write: the
    cache may lose entries, never an episode.

    Args:
        path: The database file (its directory is created).
        clock: Wall clock in seconds (injectable, to test TTLs without waiting).

    Raises:
        ConfigError: When ``path`` exists but is not an SQLite database (naming it).
    """

    def __init__(self, path: str | Path, clock: Callable[[], float] = time.time) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._clock = clock
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), timeout=30.0, check_same_thread=False, isolation_level=None)
        self._setup()

    def _setup(self, attempts: int = 50) -> None:
        """WAL mode and the table. Switching a new file to WAL ignores the busy timeout, so several processes or
        envs opening the same new file at once can see ``database is locked`` here: wait a little and retry."""
        for attempt in range(1, attempts + 1):
            try:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._db.execute(
                    "CREATE TABLE IF NOT EXISTS cache (key TEXT PRIMARY KEY, value TEXT NOT NULL, created REAL NOT NULL)"
                )
                return
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) or attempt == attempts:
                    raise
                time.sleep(0.01 * attempt)
            except sqlite3.DatabaseError as e:  # "file is not a database": something else sits at the path
                self._db.close()
                raise ConfigError(
                    f"the persistent cache {self.path} is not an SQLite database ({e}): delete that file, "
                    "or point the cache elsewhere (ExecutorConfig.cache_dir / $SIM_WEB_HOME)"
                ) from None

    def get(self, key: str, ttl_s: float | None = None) -> str | None:
        """The value of ``key``, or ``None`` when missing or older than ``ttl_s`` seconds (``None``: no expiry)."""
        try:
            with self._lock:
                row = self._db.execute("SELECT value, created FROM cache WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error as e:
            log.warning("persistent cache %s unreadable (%s): treated as a miss", self.path, e)
            return None
        if row is None or (ttl_s is not None and self._clock() - row[1] > ttl_s):
            return None
        return row[0]

    def put(self, key: str, value: str) -> None:
        """Store ``value`` under ``key`` (replacing, with a fresh timestamp); text that is not valid Unicode is not stored."""
        try:
            with self._lock:
                self._db.execute(
                    "INSERT OR REPLACE INTO cache (key, value, created) VALUES (?, ?, ?)", (key, value, self._clock())
                )
        except (sqlite3.Error, UnicodeEncodeError) as e:
            log.warning("persistent cache %s not written (%s)", self.path, e)

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM cache").fetchone()[0])

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._db.close()


def encode_result(tool: str, value: Any) -> str:
    """A tool result (a list of search / scholar results, or a visit result) as JSON text."""
    if tool == "visit":
        return json.dumps(asdict(value), ensure_ascii=False)
    return json.dumps([asdict(v) for v in value], ensure_ascii=False)


def decode_result(tool: str, text: str) -> Any:
    """The inverse of :func:`encode_result` (tuples for lists, as the executor caches them).

    Raises:
        CacheRowError: When ``text`` is not a result of ``tool`` (cut JSON, other fields, wrong types), so the
            caller can read it as a miss and rewrite it.
    """
    cls = _TYPES[tool]
    try:
        data = json.loads(text)
        if tool == "visit":
            return _record(cls, data)
        if not isinstance(data, list):
            raise TypeError(f"expected a JSON list, got {type(data).__name__}")
        return tuple(_record(cls, d) for d in data)
    except (ValueError, TypeError) as e:
        raise CacheRowError(f"{tool} row is not a cached {cls.__name__} list/record ({e}): {text[:80]!r}") from None


def _record(cls: type, data: Any) -> Any:
    """``cls(**data)``, checking that ``data`` holds exactly the fields ``cls`` needs, of the annotated types.

    Raises:
        TypeError: For anything else.
    """
    if not isinstance(data, dict):
        raise TypeError(f"expected a JSON object, got {type(data).__name__}")
    for f in fields(cls):
        allowed = tuple(_ANNOTATED.get(t.strip(), object) for t in str(f.type).split("|"))
        if f.name in data and not isinstance(data[f.name], allowed):
            raise TypeError(f"field {f.name!r} is {type(data[f.name]).__name__}, expected {f.type}")
    return cls(**data)  # unknown or missing required fields raise TypeError
