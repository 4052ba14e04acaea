"""The DuckDB page store: pages, sections, passages, links, redirects, categories, infobox facts.

One file per index (``store.duckdb``). Writing is batched through Arrow tables; links are
resolved against pages and redirects once, after ingestion, so the dump can be streamed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from wiki_index.errors import IndexNotFoundError
from wiki_index.types import Page, Passage, Section, normalize_title

log = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE pages (page_id BIGINT PRIMARY KEY, title VARCHAR NOT NULL, url VARCHAR, text VARCHAR,
                    description VARCHAR, infobox_type VARCHAR, source VARCHAR, n_words INTEGER);
CREATE TABLE sections (page_id BIGINT, ordinal INTEGER, title VARCHAR, level INTEGER, text VARCHAR);
CREATE TABLE passages (docid VARCHAR PRIMARY KEY, page_id BIGINT, ordinal INTEGER, section VARCHAR, title VARCHAR, text VARCHAR);
CREATE TABLE links (src BIGINT, ordinal INTEGER, target VARCHAR, dst BIGINT);
CREATE TABLE redirects (title VARCHAR, target VARCHAR, dst BIGINT);
CREATE TABLE categories (page_id BIGINT, category VARCHAR);
CREATE TABLE infobox (page_id BIGINT, key VARCHAR, value VARCHAR);
"""

_COLUMNS = {
    "pages": ["page_id", "title", "url", "text", "description", "infobox_type", "source", "n_words"],
    "sections": ["page_id", "ordinal", "title", "level", "text"],
    "passages": ["docid", "page_id", "ordinal", "section", "title", "text"],
    "links": ["src", "ordinal", "target"],
    "redirects": ["title", "target"],
    "categories": ["page_id", "category"],
    "infobox": ["page_id", "key", "value"],
}


class StoreWriter:
    """Append pages, passages and redirects to a new store file, in batches.

    Args:
        path: The DuckDB file to create (must not exist).
        batch_rows: Rows buffered per table before a flush.
    """

    def __init__(self, path: str | Path, batch_rows: int = 20_000) -> None:
        import duckdb

        self.path = Path(path)
        self.con = duckdb.connect(str(self.path))
        self.con.execute(SCHEMA)
        self._buf: dict[str, list[tuple]] = {t: [] for t in _COLUMNS}
        self._batch = batch_rows
        self._titles: set[str] = set()
        self.duplicates = 0

    def add_page(self, page: Page, passages: Iterable[Passage]) -> bool:
        """Buffer one page and its passages; returns ``False`` (and counts) for a duplicate title."""
        if page.title in self._titles:
            self.duplicates += 1
            return False
        self._titles.add(page.title)
        pid = page.page_id
        b = self._buf
        b["pages"].append((pid, page.title, page.url, page.text, page.description, page.infobox_type, page.source, len(page.text.split())))
        b["sections"].extend((pid, i, s.title, s.level, s.text) for i, s in enumerate(page.sections))
        b["passages"].extend((p.docid, pid, p.ordinal, p.section, p.title, p.text) for p in passages)
        b["links"].extend((pid, i, t) for i, t in enumerate(page.links))
        b["categories"].extend((pid, c) for c in page.categories)
        b["infobox"].extend((pid, k, v) for k, v in page.infobox.items())
        if len(b["passages"]) >= self._batch or len(b["links"]) >= 5 * self._batch:
            self.flush()
        return True

    def add_redirect(self, title: str, target: str) -> None:
        """Buffer one redirect (both titles normalised)."""
        self._buf["redirects"].append((title, target))

    def flush(self) -> None:
        """Write every buffered row."""
        import pyarrow as pa

        for table, rows in self._buf.items():
            if not rows:
                continue
            cols = _COLUMNS[table]
            arrow = pa.table({c: [r[i] for r in rows] for i, c in enumerate(cols)})  # noqa: F841 (DuckDB reads it by name)
            self.con.execute(f"INSERT INTO {table} ({', '.join(cols)}) SELECT * FROM arrow")
            rows.clear()

    def finalize(self) -> dict[str, int]:
        """Resolve redirects (chains too) and links, add indexes, close; return the table counts."""
        self.flush()
        c = self.con
        # a title that is a real page is not a redirect; keep one redirect per title
        c.execute("DELETE FROM redirects WHERE title IN (SELECT title FROM pages)")
        c.execute("CREATE TABLE r2 AS SELECT title, any_value(target) AS target, NULL::BIGINT AS dst FROM redirects GROUP BY title")
        c.execute("DROP TABLE redirects; ALTER TABLE r2 RENAME TO redirects")
        for _ in range(5):  # follow redirect chains A -> B -> page
            c.execute("UPDATE redirects SET target = r.target FROM redirects r WHERE redirects.target = r.title AND redirects.title <> r.title")
        c.execute("UPDATE redirects SET dst = p.page_id FROM pages p WHERE redirects.target = p.title")
        c.execute("UPDATE links SET dst = p.page_id FROM pages p WHERE links.target = p.title")
        c.execute("UPDATE links SET dst = r.dst FROM redirects r WHERE links.dst IS NULL AND links.target = r.title")
        c.execute("CREATE UNIQUE INDEX pages_title ON pages(title)")
        c.execute("CREATE INDEX sections_page ON sections(page_id)")
        c.execute("CREATE INDEX passages_page ON passages(page_id)")
        c.execute("CREATE INDEX links_src ON links(src)")
        c.execute("CREATE INDEX links_dst ON links(dst)")
        c.execute("CREATE INDEX redirects_title ON redirects(title)")
        counts = {t: c.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in _COLUMNS}
        counts["links_resolved"] = c.execute("SELECT count(*) FROM links WHERE dst IS NOT NULL").fetchone()[0]
        counts["redirects_resolved"] = c.execute("SELECT count(*) FROM redirects WHERE dst IS NOT NULL").fetchone()[0]
        counts["duplicate_titles"] = self.duplicates
        c.close()
        return counts


class Store:
    """Read-only access to a store file; safe to share between threads (a cursor per thread).

    Args:
        path: The ``store.duckdb`` file of an index.
    """

    def __init__(self, path: str | Path) -> None:
        import duckdb

        self.path = Path(path)
        if not self.path.is_file():
            raise IndexNotFoundError(f"no page store at {self.path}; build the index with `wiki-index build`")
        self._con = duckdb.connect(str(self.path), read_only=True)
        self._local = threading.local()

    def _cur(self) -> Any:
        cur = getattr(self._local, "cur", None)
        if cur is None:
            cur = self._local.cur = self._con.cursor()
        return cur

    def query(self, sql: str, params: list | tuple = ()) -> list[tuple]:
        """Run a read-only SQL query and return all rows (for tools that need custom joins)."""
        return self._cur().execute(sql, params).fetchall()

    def resolve(self, title: str) -> int | None:
        """Return the page id for a title or redirect title (normalised first), else ``None``."""
        t = normalize_title(title)
        if not t:
            return None
        row = self.query("SELECT page_id FROM pages WHERE title = ?", [t])
        if row:
            return int(row[0][0])
        row = self.query("SELECT dst FROM redirects WHERE title = ? AND dst IS NOT NULL", [t])
        if row:
            return int(row[0][0])
        # last resort, as Wikipedia's own case-insensitive redirects do: a unique case-insensitive match
        row = self.query("SELECT page_id FROM pages WHERE lower(title) = lower(?) LIMIT 2", [t])
        return int(row[0][0]) if len(row) == 1 else None

    def page(self, page_id: int) -> Page | None:
        """Rebuild the full :class:`Page` with id ``page_id`` (links as resolved titles), or ``None``."""
        row = self.query("SELECT page_id, title, url, text, description, infobox_type, source FROM pages WHERE page_id = ?", [page_id])
        if not row:
            return None
        pid, title, url, text, desc, ibt, source = row[0]
        sections = tuple(Section(t, lv, x) for t, lv, x in self.query("SELECT title, level, text FROM sections WHERE page_id = ? ORDER BY ordinal", [pid]))
        links = tuple(dict.fromkeys(r[0] for r in self.query(
            "SELECT coalesce(p.title, l.target) FROM links l LEFT JOIN pages p ON p.page_id = l.dst WHERE l.src = ? ORDER BY l.ordinal", [pid])))
        cats = tuple(r[0] for r in self.query("SELECT category FROM categories WHERE page_id = ?", [pid]))
        info = dict(self.query("SELECT key, value FROM infobox WHERE page_id = ?", [pid]))
        return Page(pid, title, text, url, sections, links, cats, info, ibt or "", desc or "", source or "")

    def page_by_title(self, title: str) -> Page | None:
        """The page for a title or redirect title, or ``None``."""
        pid = self.resolve(title)
        return None if pid is None else self.page(pid)

    def passages(self, page_id: int) -> list[Passage]:
        """All passages of a page, in order."""
        rows = self.query("SELECT docid, page_id, title, text, section, ordinal FROM passages WHERE page_id = ? ORDER BY ordinal", [page_id])
        return [Passage(*r) for r in rows]

    def passage(self, docid: str) -> Passage | None:
        """The passage with id ``docid``, or ``None``."""
        got = self.passages_by_id([docid])
        return got[0] if got else None

    def passages_by_id(self, docids: list[str]) -> list[Passage]:
        """The passages with these ids, in the order given (unknown ids are left out)."""
        if not docids:
            return []
        rows = self.query("SELECT docid, page_id, title, text, section, ordinal FROM passages WHERE docid IN (SELECT unnest(?))", [docids])
        by_id = {r[0]: Passage(*r) for r in rows}
        return [by_id[d] for d in docids if d in by_id]

    def aliases(self, page_id: int) -> list[str]:
        """Redirect titles that lead to the page (natural answer aliases), sorted."""
        return sorted(r[0] for r in self.query("SELECT title FROM redirects WHERE dst = ?", [page_id]))

    def out_links(self, page_id: int) -> list[int]:
        """Ids of the pages this page links to (resolved links only), in link order, no duplicates."""
        rows = self.query("SELECT dst FROM links WHERE src = ? AND dst IS NOT NULL ORDER BY ordinal", [page_id])
        return list(dict.fromkeys(int(r[0]) for r in rows))

    def counts(self) -> dict[str, int]:
        """Row counts of every table."""
        return {t: self.query(f"SELECT count(*) FROM {t}")[0][0] for t in _COLUMNS}

    def close(self) -> None:
        """Close the connection."""
        self._con.close()

