"""What every corpus source yields (:class:`Page` or :class:`Redirect`), and the helpers the readers share."""

from __future__ import annotations

import hashlib
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from wiki_index.types import Page

DUMP_SUFFIXES = (".xml", ".xml.bz2", ".bz2")
JSONL_SUFFIXES = (".jsonl", ".jsonl.gz", ".json.gz")


@dataclass(frozen=True)
class Redirect:
    """A redirect page: ``title`` leads to ``target`` (both normalised, the target's fragment dropped)."""

    title: str
    target: str


@dataclass
class SourceStats:
    """Counts kept while a source streams; final once :meth:`CorpusSource.records` is exhausted.

    ``read`` counts input records: ``<page>`` elements of a dump (there and for the sample,
    ``read == kept + redirects + skipped`` at the end) or non-blank lines of a JSONL corpus (where
    several passages make one kept page).
    """

    read: int = 0
    kept: int = 0
    redirects: int = 0
    skipped: int = 0
    skipped_reasons: dict[str, int] = field(default_factory=dict)

    def skip(self, reason: str) -> None:
        """Count one skipped record under ``reason`` (e.g. ``"namespace"``, ``"bad_json"``)."""
        self.skipped += 1
        self.skipped_reasons[reason] = self.skipped_reasons.get(reason, 0) + 1

    def as_dict(self) -> dict:
        """A JSON-ready copy (reasons sorted by name)."""
        return {
            "read": self.read,
            "kept": self.kept,
            "redirects": self.redirects,
            "skipped": self.skipped,
            "skipped_reasons": dict(sorted(self.skipped_reasons.items())),
        }


@runtime_checkable
class CorpusSource(Protocol):
    """A stream of pages and redirects from one corpus."""

    name: str
    stats: SourceStats

    def records(self) -> Iterator[Page | Redirect]:
        """Stream the records; ``stats`` are final when the iterator is exhausted."""
        ...

    def describe(self) -> dict:
        """Manifest entry: ``kind``, ``path``/``paths``, ``bytes``, ``sha256`` of the input files."""
        ...


def file_sha256(path: Path, chunk: int = 1 << 20) -> str:
    """The sha256 hex digest of a file, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


class HashingReader:
    """A binary reader that hashes and counts the bytes passing through (for streaming checksums)."""

    def __init__(self, path: Path) -> None:
        self._f = open(path, "rb")
        self._h = hashlib.sha256()
        self.bytes_read = 0
        self.at_eof = False

    def read(self, n: int = -1) -> bytes:
        """Read up to ``n`` bytes, updating the hash."""
        data = self._f.read(n)
        if not data and n != 0:
            self.at_eof = True
        self._h.update(data)
        self.bytes_read += len(data)
        return data

    def drain(self) -> str:
        """Read the rest of the file and return the sha256 of all of it."""
        while self.read(1 << 20):
            pass
        return self._h.hexdigest()

    def readable(self) -> bool:  # io protocol, used by bz2/gzip wrappers
        return True

    def close(self) -> None:
        """Close the underlying file."""
        self._f.close()


@contextmanager
def time_limit(seconds: float, error: Callable[[], Exception]) -> Iterator[None]:
    """Raise ``error()`` in the block once ``seconds`` have passed (``SIGALRM``; it interrupts Python code).

    Only in the main thread on POSIX (pool workers run tasks there); elsewhere a no-op, leaving
    the parser's own cooperative checks. A timer set by someone else is restored afterwards,
    minus the time spent here.
    """
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return
    armed = [True]

    def _raise(signum, frame):  # noqa: ARG001
        if armed[0]:
            raise error()

    start, old_handler = time.monotonic(), signal.signal(signal.SIGALRM, _raise)
    old_delay = old_interval = 0.0
    try:
        old_delay, old_interval = signal.setitimer(signal.ITIMER_REAL, seconds)
        yield
    finally:
        while True:  # a late alarm may interrupt this clean-up: disarm first, then retry
            try:
                armed[0] = False
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, old_handler)
                break
            except Exception:  # noqa: BLE001
                if not armed[0]:  # not the alarm's own error (it is disarmed by now)
                    raise
        if old_delay > 0:
            signal.setitimer(signal.ITIMER_REAL, max(old_delay - (time.monotonic() - start), 1e-3), old_interval)


def strip_suffixes(name: str) -> str:
    """``"enwiki-x.xml.bz2"`` -> ``"enwiki-x"``: the file name without its format suffixes."""
    low = name.lower()
    for suf in (".bz2", ".gz", ".xml", ".jsonl", ".json"):
        if low.endswith(suf):
            name, low = name[: -len(suf)], low[: -len(suf)]
    return name
