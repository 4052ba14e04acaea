"""Stream a MediaWiki XML export (``pages-articles.xml[.bz2]``, multistream too) into pages and redirects.

Memory stays bounded: the XML is read with ``iterparse`` and every ``<page>`` element is cleared
once read; with ``workers > 1`` at most ``2 * workers`` batches of raw pages are in flight.

A truncated or corrupt file raises :class:`~simweb_core.errors.CorpusError` naming the file, the
number of pages read, the last good title and the byte offset; records before that point have
already been yielded (a consumer that must be all-or-nothing, like the index builder, discards
its partial output on the error).
"""

from __future__ import annotations

import bz2
import itertools
import logging
import multiprocessing as mp
import queue
import re
import sys
import threading
import xml.etree.ElementTree as ET
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import NamedTuple

from simweb_core.errors import ConfigError, CorpusError
from wiki_index.parse.wikitext import Namespaces, ParseConfig, ParseTimeoutError, parse_wikitext
from wiki_index.sources.base import HashingReader, Redirect, SourceStats, file_sha256, strip_suffixes, time_limit
from wiki_index.types import Page, normalize_title

log = logging.getLogger(__name__)

_REDIRECT_RE = re.compile(r"^\s*#\s*redirect\s*:?\s*\[\[([^\]|]*)", re.I)
_MAX_WARNINGS = 20
#: Skip reasons worth a warning (the others, like ``namespace``, are routine in every dump).
_WARN_REASONS = frozenset({"parse_timeout", "parse_error", "xml_namespace", "bad_id", "bad_ns"})
#: Page ids are stored as DuckDB BIGINT.
_MAX_PAGE_ID = 2**63 - 1
_INTEGER = re.compile(r"-?[0-9]{1,40}")


class RawPage(NamedTuple):
    """One ``<page>`` as read from the XML, before parsing (``skip``: why it cannot be used, with ``detail``)."""

    title: str
    ns: int
    page_id: int
    redirect: str | None
    text: str
    skip: str = ""
    detail: str = ""


class Skip(NamedTuple):
    """A page that was not turned into a record, and why."""

    reason: str
    title: str
    detail: str = ""


def process_page(raw: RawPage, config: ParseConfig) -> Page | Redirect | Skip:
    """Turn one raw page into a :class:`Page`, a :class:`Redirect` or a :class:`Skip`.

    Args:
        raw: The page as read from the dump.
        config: Parser settings (time limit, namespaces, ...).

    Returns:
        ``Skip`` reasons: ``"namespace"`` (not ns 0), ``"bad_redirect"``, ``"empty"`` (no text
        after cleaning), ``"parse_timeout"``, ``"parse_error"``, and those the reader found:
        ``"xml_namespace"`` (a ``<page>`` in another XML namespace than the export's),
        ``"bad_id"`` (an ``<id>`` that is not an integer from 0 to 2^63-1), ``"bad_ns"`` (a
        non-integer ``<ns>``).
    """
    if raw.skip:
        return Skip(raw.skip, raw.title, raw.detail)
    if raw.ns != 0:
        return Skip("namespace", raw.title)
    title = normalize_title(raw.title)
    target = raw.redirect
    if target is None and (m := _REDIRECT_RE.match(raw.text)):
        target = m.group(1)
    if target is not None:
        target = normalize_title(target)
        return Redirect(title, target) if target and target != title else Skip("bad_redirect", raw.title)
    if not raw.text.strip():
        return Skip("empty", raw.title)
    limit = config.time_limit_s
    try:
        with time_limit(limit, lambda: ParseTimeoutError(f"parsing {title!r} took longer than {limit}s")):
            parsed = parse_wikitext(title, raw.text, config)
    except ParseTimeoutError as e:
        return Skip("parse_timeout", raw.title, str(e))
    except Exception as e:  # noqa: BLE001 - mwparserfromhell or a pathological page: skip and count
        return Skip("parse_error", raw.title, f"{type(e).__name__}: {e}")
    page = parsed.to_page(raw.page_id, title, source="dump")
    return page if page.text else Skip("empty", raw.title)


def _process_batch(batch: list[RawPage], config: ParseConfig) -> list[Page | Redirect | Skip]:
    return [process_page(raw, config) for raw in batch]


class _Prefetch:
    """Read a stream ahead in a background thread (bz2 releases the GIL while it decompresses),
    so decompression overlaps XML parsing; at most ``depth`` chunks are buffered."""

    def __init__(self, stream, chunk: int = 1 << 20, depth: int = 8) -> None:
        self._stream, self._q = stream, queue.Queue(depth)
        self._buf, self._pos, self._eof = b"", 0, False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(chunk,), name="dump-prefetch", daemon=True)
        self._thread.start()

    def _run(self, chunk: int) -> None:
        try:
            while not self._stop.is_set():
                data = self._stream.read(chunk)
                self._put(data)
                if not data:
                    return
        except BaseException as e:  # noqa: BLE001 - handed to the reading thread, raised there
            self._put(e)

    def _put(self, item) -> None:
        while not self._stop.is_set():
            try:
                self._q.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def read(self, n: int = -1) -> bytes:
        """Read up to ``n`` bytes (all remaining bytes when ``n < 0``)."""
        parts = []
        while n != 0:
            if self._pos >= len(self._buf):
                if self._eof:
                    break
                item = self._q.get()
                if isinstance(item, BaseException) or not item:
                    self._eof = True
                    if item:
                        raise item
                    break
                self._buf, self._pos = item, 0
            take = len(self._buf) - self._pos if n < 0 else min(n, len(self._buf) - self._pos)
            parts.append(self._buf[self._pos : self._pos + take])
            self._pos += take
            n = n - take if n > 0 else n
        return b"".join(parts)

    def close(self) -> None:
        """Stop the reader thread and close the stream."""
        self._stop.set()
        self._thread.join()
        self._stream.close()


class _XmlPages:
    """Iterate the raw pages of a dump, remembering how far it got (for error messages)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.reader = HashingReader(path)
        self.pages = 0
        self.last_title = ""
        self.namespaces: dict[int, str] = {}

    def __iter__(self) -> Iterator[RawPage]:
        with open(self.path, "rb") as f:
            magic = f.read(3)
        stream = _Prefetch(bz2.BZ2File(self.reader)) if magic == b"BZh" else self.reader
        try:
            yield from self._parse(stream)
        except (EOFError, OSError, ET.ParseError, ValueError) as e:  # ValueError: bad bytes or numbers
            raise CorpusError(
                f"{self.path}: the dump is truncated or corrupt ({type(e).__name__}: {e}) after {self.pages} pages "
                f"(last good page: {self.last_title or 'none'!r}), around byte {self.reader.bytes_read:,} of "
                f"{self.path.stat().st_size:,}. Re-download the file and check it against the dump's checksums."
            ) from None
        finally:
            if stream is not self.reader:  # the reader itself is drained (hashed) and closed by the source
                stream.close()

    def _parse(self, stream) -> Iterator[RawPage]:
        ctx = iter(ET.iterparse(stream, events=("start", "end")))
        _, root = next(ctx)
        q, _, local = root.tag.rpartition("}")
        if local != "mediawiki":
            raise CorpusError(
                f"{self.path}: expected a MediaWiki XML export (root element <mediawiki>), "
                f"found <{local}>; export pages with Special:Export or use a pages-articles dump"
            )
        q = q + "}" if q else ""
        page_tag, siteinfo_tag = q + "page", q + "siteinfo"
        depth = 1  # inside <mediawiki>
        for event, elem in ctx:
            if event == "start":
                depth += 1
                continue
            depth -= 1
            if elem.tag == page_tag or (depth == 1 and elem.tag.rpartition("}")[2] == "page"):
                raw = _raw_page(elem, q)
                root.clear()
                self.pages += 1
                yield raw
                self.last_title = raw.title
            elif elem.tag == siteinfo_tag:
                for ns in elem.iter(q + "namespace"):
                    key = _integer(ns.get("key", "0"))
                    if key is None:  # one unusable name costs nothing but its prefix being recognised
                        log.warning(
                            "%s: ignored <namespace key=%r> in <siteinfo> (expected an integer key)",
                            self.path.name,
                            ns.get("key"),
                        )
                        continue
                    self.namespaces[key] = ns.text or ""
                root.clear()


def _raw_page(elem: ET.Element, q: str) -> RawPage:
    """Read one ``<page>`` element (``q``: the export's ``{namespace}``); problems become ``RawPage.skip``."""
    own_q = elem.tag[: elem.tag.rfind("}") + 1]
    title = elem.findtext(own_q + "title") or ""
    if own_q != q:
        return RawPage(
            title,
            0,
            0,
            None,
            "",
            "xml_namespace",
            f"<page> in XML namespace {own_q[1:-1] or 'none'!r}, expected {q[1:-1] or 'none'!r} as the "
            "rest of the export; re-export the page with the same MediaWiki version",
        )
    ns_text, id_text = elem.findtext(q + "ns") or "0", elem.findtext(q + "id") or "0"
    ns, page_id = _integer(ns_text), _integer(id_text)
    if ns is None:
        return RawPage(title, 0, 0, None, "", "bad_ns", f"<ns> is {ns_text[:40]!r}, expected an integer")
    if page_id is None or not 0 <= page_id <= _MAX_PAGE_ID:
        return RawPage(
            title, ns, 0, None, "", "bad_id", f"<id> is {id_text[:40]!r}, expected an integer from 0 to 2^63-1"
        )
    revs = elem.findall(q + "revision")
    red = elem.find(q + "redirect")
    return RawPage(
        title,
        ns,
        page_id,
        None if red is None else red.get("title", ""),
        (revs[-1].findtext(q + "text") or "") if revs else "",
    )


def _integer(text: str) -> int | None:
    """``int(text)``, or ``None`` when it is not a plain decimal integer (at most 40 characters)."""
    return int(text) if _INTEGER.fullmatch(text.strip()) else None


@dataclass
class DumpSource:
    """A MediaWiki XML dump (``.xml`` or ``.bz2``, multistream included), main namespace only.

    Attributes:
        path: The dump file.
        workers: Parser processes (1 parses in this process; more use a process pool).
        config: Parser settings; the dump's own namespace names are added on reading.
        batch_pages: Pages per task sent to a worker.
    """

    path: Path
    workers: int = 1
    config: ParseConfig = field(default_factory=ParseConfig)
    batch_pages: int = 64

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        if self.workers < 1:
            raise ConfigError(f"DumpSource.workers must be >= 1, got {self.workers}; use 1 or os.cpu_count()")
        self.name = strip_suffixes(self.path.name)
        self.stats = SourceStats()
        self._sha256: str | None = None
        self._warned = 0

    def records(self) -> Iterator[Page | Redirect]:
        """Stream pages and redirects in dump order (the same order for any number of workers).

        Raises:
            CorpusError: The file is not a MediaWiki export, or is truncated/corrupt.
        """
        self.stats = SourceStats()
        pages = _XmlPages(self.path)
        results = self._results(pages)
        try:
            for rec in results:
                if isinstance(rec, Skip):
                    self._skip(rec)
                    continue
                if isinstance(rec, Redirect):
                    self.stats.redirects += 1
                else:
                    self.stats.kept += 1
                yield rec
            self._sha256 = pages.reader.drain()
        finally:
            results.close()  # stops the read-ahead thread and the worker pool when the caller stops early
            pages.reader.close()

    def _results(self, pages: _XmlPages) -> Iterator[Page | Redirect | Skip]:
        raw_iter = iter(pages)
        first = next(raw_iter, None)  # <siteinfo> (the namespace names) is read before the first page
        cfg = self.config
        if pages.namespaces:
            cfg = replace(cfg, namespaces=Namespaces.from_siteinfo(pages.namespaces))

        def all_raw() -> Iterator[RawPage]:
            for raw in itertools.chain([first] if first else [], raw_iter):
                self.stats.read += 1
                yield raw

        if self.workers == 1:
            for raw in all_raw():
                yield process_page(raw, cfg)
            return
        # not fork: a process that already runs the JVM or other threads (a server, a test session,
        # a notebook that searched first) can fork while one of them holds a lock, and the child
        # then hangs forever (seen here: a worker stuck on a futex after a 16-thread search). The
        # forkserver starts workers from a clean single-threaded process; like spawn, it needs
        # the `if __name__ == "__main__":` guard in user scripts that build with workers > 1.
        method = "forkserver" if sys.platform.startswith("linux") else "spawn"
        timeout = self.batch_pages * cfg.time_limit_s + 120
        with mp.get_context(method).Pool(self.workers) as pool:
            pending: deque = deque()
            for batch in _batches(all_raw(), self.batch_pages):
                pending.append((batch[0].title, pool.apply_async(_process_batch, (batch, cfg))))
                while len(pending) > 2 * self.workers:
                    yield from _get(pending.popleft(), timeout)
            while pending:
                yield from _get(pending.popleft(), timeout)

    def _skip(self, rec: Skip) -> None:
        self.stats.skip(rec.reason)
        if rec.reason in _WARN_REASONS and self._warned < _MAX_WARNINGS:
            self._warned += 1
            log.warning("%s: skipped page %r (%s): %s", self.path.name, rec.title, rec.reason, rec.detail)

    def describe(self) -> dict:
        """Manifest entry: kind, absolute path, size and sha256 (computed while streaming when possible)."""
        if self._sha256 is None:
            self._sha256 = file_sha256(self.path)
        return {
            "kind": "dump",
            "path": str(self.path.resolve()),
            "bytes": self.path.stat().st_size,
            "sha256": self._sha256,
        }


def _batches(raws: Iterator[RawPage], size: int, max_chars: int = 8_000_000) -> Iterator[list[RawPage]]:
    batch: list[RawPage] = []
    chars = 0
    for raw in raws:
        batch.append(raw)
        chars += len(raw.text)
        if len(batch) >= size or chars >= max_chars:
            yield batch
            batch, chars = [], 0
    if batch:
        yield batch


def _get(item: tuple, timeout: float) -> list:
    first_title, result = item
    try:
        return result.get(timeout)
    except mp.TimeoutError:
        raise CorpusError(
            f"a parser worker did not answer within {timeout:.0f}s on the batch starting at page "
            f"{first_title!r} (it may have crashed); rerun with workers=1 to find the page"
        ) from None
