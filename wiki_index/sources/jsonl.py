"""Pre-chunked JSONL passage corpora (DPR / Search-R1 / FlashRAG wiki-18 and the like), optionally gzipped.

Two record shapes are read, one per line:

* ``{"id": "1", "contents": "\\"Aaron\\"\\nAaron is a prophet ..."}``: the title is the first line
  of ``contents`` (surrounding double quotes removed), the text the rest;
* ``{"id": "1", "title": "Aaron", "text": "Aaron is a prophet ..."}``.

Consecutive passages with the same title become one :class:`Page`; each keeps its record id as
``Passage.docid`` (so existing qrels keep working) and the page text is the passages joined by
spaces. Page ids come from a ``page_id``/``wikipedia_id``/``wiki_id`` field when the first
passage of the page has an integer one (one too large for the store's BIGINT makes the line
a bad line, ``bad_page_id``), else they count pages in input order from 1. A passage
without an ``id`` gets ``"{page_id}-{ordinal}"``. The same title appearing again later (not
consecutively) starts a new page; the store keeps the first and counts the duplicate.
"""

from __future__ import annotations

import gzip
import json
import logging
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from simweb_core.errors import CorpusError
from wiki_index.sources.base import HashingReader, Redirect, SourceStats, file_sha256, strip_suffixes
from wiki_index.types import Page, Passage, Section, normalize_title

log = logging.getLogger(__name__)

_PAGE_ID_FIELDS = ("page_id", "wikipedia_id", "wiki_id")
#: Page ids are DuckDB BIGINTs.
_MIN_PAGE_ID, _MAX_PAGE_ID = -(2**63), 2**63 - 1
_MAX_LOGGED = 5


def _title_text(rec: dict) -> tuple[str, str] | None:
    """``(title, text)`` of one record in either shape, or ``None`` when the fields are missing."""
    title, text = rec.get("title"), rec.get("text")
    if isinstance(title, str) and isinstance(text, str):
        return title, text
    contents = rec.get("contents")
    if isinstance(contents, str):
        first, _, rest = contents.partition("\n")
        first = first.strip()
        if len(first) >= 2 and first[0] == first[-1] == '"':
            first = first[1:-1]
        return first, rest
    return None


@dataclass
class JsonlSource:
    """A JSONL passage corpus (``.jsonl``, ``.jsonl.gz`` or ``.json.gz``).

    Attributes:
        path: The file.
        strict: Raise :class:`CorpusError` (naming ``file:line``) on the first bad line instead of
            skipping and counting it (reasons ``"bad_json"``, ``"missing_field"``, ``"empty"``,
            ``"bad_page_id"``: a page id, given or counted on, that does not fit a DuckDB BIGINT).
    """

    path: Path
    strict: bool = False

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        self.name = strip_suffixes(self.path.name)
        self.stats = SourceStats()
        self._sha256: str | None = None
        self._logged = 0

    def records(self) -> Iterator[Page | Redirect]:
        """Stream one :class:`Page` per run of consecutive same-title passages.

        Raises:
            CorpusError: The file is missing, empty, truncated (gzip), or (``strict``) has a bad line.
        """
        self.stats = SourceStats()
        if not self.path.is_file():
            raise CorpusError(f"JSONL corpus {str(self.path)!r} does not exist; check the path")
        reader = HashingReader(self.path)
        with open(self.path, "rb") as f:
            gz = f.read(2) == b"\x1f\x8b"
        stream = gzip.GzipFile(fileobj=reader) if gz else reader
        lineno = 0
        try:
            title, key, passages, next_id = "", None, [], 1
            for lineno, line in enumerate(_lines(stream), start=1):
                if not line.strip():
                    continue
                self.stats.read += 1
                rec = self._record(line, lineno)
                if rec is None:
                    continue
                rec_title, text, docid, page_id = rec
                if passages and rec_title != title:
                    yield self._page(key, title, passages)
                    passages = []
                if not passages:
                    key = page_id if page_id is not None else next_id
                    if key > _MAX_PAGE_ID:  # numbering on from an id at the very top of the range
                        self._bad(
                            "bad_page_id",
                            lineno,
                            f"the page has no page id and the next free one, {key}, does not "
                            "fit a DuckDB BIGINT; give it a page_id",
                        )
                        continue
                    title, next_id = rec_title, max(next_id, key) + 1
                passages.append(Passage(docid or f"{key}-{len(passages)}", key, title, text, "", len(passages)))
            if passages:
                yield self._page(key, title, passages)
            self._sha256 = reader.drain()
        except (EOFError, OSError, zlib.error) as e:
            raise CorpusError(
                f"{self.path}: cannot read past line {lineno} ({type(e).__name__}: {e}); "
                "the file is truncated or not gzip/UTF-8 JSONL. Re-create or re-download it."
            ) from None
        finally:
            reader.close()
        if self.stats.read == 0:
            raise CorpusError(
                f"{self.path}: the JSONL corpus is empty; expected one JSON object per line "
                '({"id", "contents"} or {"id", "title", "text"})'
            )

    def _record(self, line: bytes, lineno: int) -> tuple[str, str, str | None, int | None] | None:
        """Decode one line to ``(title, text, docid, page_id)``; ``None`` (counted) when unusable."""
        try:
            rec = json.loads(line)
        except ValueError as e:
            return self._bad("bad_json", lineno, f"not a JSON object ({e})")
        if not isinstance(rec, dict):
            return self._bad("bad_json", lineno, f"expected a JSON object, found {type(rec).__name__}")
        tt = _title_text(rec)
        if tt is None:
            return self._bad(
                "missing_field", lineno, f'expected "contents" or "title"+"text", found keys {sorted(rec)}'
            )
        title, text = normalize_title(tt[0]), " ".join(tt[1].split())
        if not title or not text:
            return self._bad("empty", lineno, "empty title or text")
        docid = rec.get("id", rec.get("_id"))
        field = next(
            (f for f in _PAGE_ID_FIELDS if isinstance(rec.get(f), int) or str(rec.get(f, "")).isdecimal()), None
        )
        pid = None
        if field is not None:
            value = rec[field]
            pid = value if isinstance(value, int) else int(value) if len(value) <= 20 else _MAX_PAGE_ID + 1
            if not _MIN_PAGE_ID <= pid <= _MAX_PAGE_ID:
                return self._bad(
                    "bad_page_id",
                    lineno,
                    f"{field} {str(value)[:40]} is out of range; expected an integer "
                    f"that fits a DuckDB BIGINT, at most {_MAX_PAGE_ID}",
                )
        return title, text, None if docid is None else str(docid), pid

    def _bad(self, reason: str, lineno: int, detail: str) -> None:
        if self.strict:
            raise CorpusError(
                f"{self.path}:{lineno}: {detail}; fix the line or open the corpus with strict=False to skip it"
            )
        self.stats.skip(reason)
        if self._logged < _MAX_LOGGED:
            self._logged += 1
            log.warning("%s:%d: skipped (%s): %s", self.path, lineno, reason, detail)
        return None

    def _page(self, page_id: int, title: str, passages: list[Passage]) -> Page:
        text = " ".join(p.text for p in passages)
        self.stats.kept += 1
        return Page(
            page_id=page_id,
            title=title,
            text=text,
            sections=(Section("", 0, text),),
            source="jsonl",
            passages=tuple(passages),
        )

    def describe(self) -> dict:
        """Manifest entry: kind, absolute path, size and sha256."""
        if self._sha256 is None:
            self._sha256 = file_sha256(self.path)
        return {
            "kind": "jsonl",
            "path": str(self.path.resolve()),
            "bytes": self.path.stat().st_size,
            "sha256": self._sha256,
        }


def _lines(stream) -> Iterator[bytes]:
    """Split a binary stream into lines without loading it whole."""
    buf = b""
    while chunk := stream.read(1 << 20):
        buf += chunk
        *lines, buf = buf.split(b"\n")
        yield from lines
    if buf:
        yield buf
