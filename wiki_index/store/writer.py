"""Write a page store (``store.duckdb``): the schema, batched appends, and the layout :meth:`StoreWriter.finalize` lays out.

Reading is :class:`wiki_index.store.store.Store`'s business; both modules hold the store's SQL.

The finished store has no in-memory (ART) index but the two primary keys. Each table is kept sorted
by the key it is looked up by, so that DuckDB's zone maps (each row group's min/max) skip all but
one row group; every step of :meth:`StoreWriter.finalize` is a join or sort that spills to disk
under the writer's memory limit. An ART index, in contrast, is built whole in memory and grows with
the corpus: 800 MB for the two link indexes of a 1M-page corpus with 20M links.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

from wiki_index.store.titleset import TitleSet, title_key
from wiki_index.types import Page, Passage

log = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE pages (page_id BIGINT PRIMARY KEY, title VARCHAR NOT NULL, url VARCHAR, text VARCHAR,
                    description VARCHAR, infobox_type VARCHAR, source VARCHAR, n_words INTEGER, tkey BIGINT);
CREATE TABLE sections (page_id BIGINT, ordinal INTEGER, title VARCHAR, level INTEGER, text VARCHAR);
CREATE TABLE passages (docid VARCHAR PRIMARY KEY, page_id BIGINT, ordinal INTEGER, section VARCHAR, title VARCHAR, text VARCHAR);
CREATE TABLE links (src BIGINT, ordinal INTEGER, target VARCHAR);
CREATE TABLE redirects (tkey BIGINT, title VARCHAR, target VARCHAR);
CREATE TABLE categories (page_id BIGINT, category VARCHAR);
CREATE TABLE infobox (page_id BIGINT, key VARCHAR, value VARCHAR);
"""

#: The columns each table is appended with (``tkey``: :func:`wiki_index.store.titleset.title_key` of the title).
COLUMNS = {
    "pages": ["page_id", "title", "url", "text", "description", "infobox_type", "source", "n_words", "tkey"],
    "sections": ["page_id", "ordinal", "title", "level", "text"],
    "passages": ["docid", "page_id", "ordinal", "section", "title", "text"],
    "links": ["src", "ordinal", "target"],
    "redirects": ["tkey", "title", "target"],
    "categories": ["page_id", "category"],
    "infobox": ["page_id", "key", "value"],
}

#: Tables whose rows belong to one page, and the order they are kept in (rewritten sorted only when a
#: source gave its pages out of id order).
_BY_PAGE = {
    "pages": "page_id",
    "sections": "page_id, ordinal",
    "passages": "page_id, ordinal",
    "categories": "page_id",
    "infobox": "page_id",
}

#: Redirect chains (A -> B -> page) are followed this many hops.
REDIRECT_HOPS = 5


class StoreWriter:
    """Append pages, passages and redirects to a new store file, in batches.

    Args:
        path: The DuckDB file to create (must not exist).
        batch_rows: Rows buffered per table before a flush.
        memory_limit: DuckDB's memory limit (e.g. ``"256MB"``), kept through :meth:`finalize`: beyond
            it, table blocks are evicted and joins and sorts spill to disk, so the writer's memory
            stays flat as the corpus grows. ``None``: DuckDB's default (80% of RAM).
    """

    def __init__(self, path: str | Path, batch_rows: int = 20_000, memory_limit: str | None = "256MB") -> None:
        import duckdb

        self.path = Path(path)
        self.con = duckdb.connect(str(self.path), config={"memory_limit": memory_limit} if memory_limit else {})
        self.con.execute(SCHEMA)
        self._buf: dict[str, list[tuple]] = {t: [] for t in COLUMNS}
        self._batch = batch_rows
        self._titles = TitleSet()
        self.duplicates = 0

    def add_page(self, page: Page, passages: Iterable[Passage]) -> bool:
        """Buffer one page and its passages; returns ``False`` (and counts) for a duplicate title."""
        if not self._titles.add(page.title):
            self.duplicates += 1
            return False
        pid = page.page_id
        b = self._buf
        b["pages"].append(
            (
                pid,
                page.title,
                page.url,
                page.text,
                page.description,
                page.infobox_type,
                page.source,
                len(page.text.split()),
                title_key(page.title),
            )
        )
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
        self._buf["redirects"].append((title_key(title), title, target))

    def flush(self) -> None:
        """Write every buffered row."""
        import pyarrow as pa

        for table, rows in self._buf.items():
            if not rows:
                continue
            cols = COLUMNS[table]
            arrow = pa.table({c: [r[i] for r in rows] for i, c in enumerate(cols)})  # noqa: F841 (DuckDB reads it by name)
            self.con.execute(f"INSERT INTO {table} ({', '.join(cols)}) SELECT * FROM arrow")
            rows.clear()

    def finalize(self) -> dict[str, int]:
        """Resolve redirects (chains too) and links, lay the tables out for lookups, close; return the table counts.

        Under the writer's memory limit throughout. The result:

        - ``redirects (tkey, title, target, dst)``: one per title that is not a page's, chains followed;
        - ``links (src, ordinal, target, dst)``, sorted by ``src, ordinal``; ``dst`` is the page the
          target names, directly or through a redirect (``NULL``: no such page);
        - ``backlinks (dst, src)``: each resolved link between two pages once, sorted by ``dst``;
        - ``titles (tkey, title, page_id)``: every page title and resolved redirect title, sorted by key;
        - the per-page tables in page-id order.
        """
        self.flush()
        c = self.con
        self._resolve_redirects()
        c.execute(
            "CREATE TABLE l2 AS SELECT l.src, l.ordinal, l.target, coalesce(p.page_id, r.dst) AS dst FROM links l "
            "LEFT JOIN pages p ON p.title = l.target LEFT JOIN redirects r ON r.title = l.target ORDER BY l.src, l.ordinal"
        )
        c.execute("DROP TABLE links; ALTER TABLE l2 RENAME TO links")
        c.execute(
            "CREATE TABLE backlinks AS SELECT DISTINCT dst, src FROM links WHERE dst IS NOT NULL AND dst <> src ORDER BY dst, src"
        )
        c.execute(
            "CREATE TABLE titles AS SELECT tkey, title, page_id FROM pages "
            "UNION ALL SELECT tkey, title, dst FROM redirects WHERE dst IS NOT NULL ORDER BY tkey, title"
        )
        for table, order in _BY_PAGE.items():
            self._keep_in_page_order(table, order)
        counts = {t: c.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in COLUMNS}
        counts["links_resolved"] = c.execute("SELECT count(*) FROM links WHERE dst IS NOT NULL").fetchone()[0]
        counts["redirects_resolved"] = c.execute("SELECT count(*) FROM redirects WHERE dst IS NOT NULL").fetchone()[0]
        counts["duplicate_titles"] = self.duplicates
        c.execute("CHECKPOINT")
        c.close()
        return counts

    def _resolve_redirects(self) -> None:
        """Replace ``redirects`` by one row per redirect title that is not a page title, chains followed, with ``dst``."""
        c = self.con
        c.execute(
            "CREATE TABLE r0 AS SELECT any_value(r.tkey) AS tkey, r.title, min(r.target) AS target FROM redirects r "
            "ANTI JOIN pages p ON p.title = r.title GROUP BY r.title"
        )
        for hop in range(REDIRECT_HOPS):  # follow chains A -> B -> page
            chained = f"FROM r{hop} a JOIN r{hop} b ON b.title = a.target AND b.title <> a.title"
            if not c.execute(f"SELECT count(*) {chained}").fetchone()[0]:
                break
            c.execute(
                f"CREATE TABLE r{hop + 1} AS SELECT a.tkey, a.title, coalesce(b.target, a.target) AS target FROM r{hop} a "
                f"LEFT JOIN r{hop} b ON b.title = a.target AND b.title <> a.title"
            )
            c.execute(f"DROP TABLE r{hop}")
        else:
            hop = REDIRECT_HOPS
        c.execute("DROP TABLE redirects")
        c.execute(
            f"CREATE TABLE redirects AS SELECT r.tkey, r.title, r.target, p.page_id AS dst FROM r{hop} r "
            "LEFT JOIN pages p ON p.title = r.target ORDER BY r.title"
        )
        c.execute(f"DROP TABLE r{hop}")

    def _keep_in_page_order(self, table: str, order: str) -> None:
        """Rewrite ``table`` sorted by ``order`` when its rows are not in page-id order already (zone maps need it)."""
        c = self.con
        down = c.execute(
            f"SELECT count(*) FROM (SELECT page_id < lag(page_id) OVER (ORDER BY rowid) AS down FROM {table}) WHERE down"
        )
        if not down.fetchone()[0]:
            return
        log.info("store: %s rows are out of page-id order; sorting them", table)
        if table in ("pages", "passages"):  # their primary keys stay with them: sort a copy, then swap the rows
            c.execute(f"CREATE TEMP TABLE sorted AS SELECT * FROM {table} ORDER BY {order}")
            c.execute(f"DELETE FROM {table}; INSERT INTO {table} SELECT * FROM sorted; DROP TABLE sorted")
            return
        c.execute(f"CREATE TABLE sorted AS SELECT * FROM {table} ORDER BY {order}")
        c.execute(f"DROP TABLE {table}; ALTER TABLE sorted RENAME TO {table}")
