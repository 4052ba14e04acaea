"""The DuckDB page store: pages, sections, passages, links, redirects, categories, infobox facts.

One file per index (``store.duckdb``), written by :class:`wiki_index.store.writer.StoreWriter`
(re-exported here) and read by :class:`Store`, which opens only the layout the writer lays out now
(:data:`LAYOUT_TABLES`) and asks for a rebuild otherwise.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from simweb_core.errors import IndexMismatchError, IndexNotFoundError
from wiki_index.manifest import MANIFEST, build_command
from wiki_index.store.titleset import title_key
from wiki_index.store.writer import COLUMNS, StoreWriter
from wiki_index.types import Page, Passage, Section, normalize_title

log = logging.getLogger(__name__)
__all__ = ["LAYOUT_TABLES", "PageInfo", "Store", "StoreWriter", "memory_limit"]

#: The tables of a store in the current layout: the appended ones plus the two that
#: :meth:`StoreWriter.finalize` derives (``titles`` for title lookups, ``backlinks`` for in-links).
LAYOUT_TABLES = frozenset(COLUMNS) | {"titles", "backlinks"}


class PageInfo(NamedTuple):
    """One page without its body: the fields that task derivation and synthesis read for every page.

    Attributes:
        page_id: The page id.
        title: The normalised title.
        description: The short description (``""`` when none).
        source: Where the page came from (``"dump"``, ``"lead"``, ``"jsonl"``; ``""`` when unknown).
        text_chars: Length of the page text in characters (``None`` when the text is missing).
        lead: The text of the lead section (``""`` when the page has none).
    """

    page_id: int
    title: str
    description: str
    source: str
    text_chars: int | None
    lead: str


_PAGE_INFO_SQL = (
    "SELECT p.page_id, p.title, coalesce(p.description, ''), coalesce(p.source, ''), length(p.text), "
    "coalesce(s.text, '') FROM pages p LEFT JOIN sections s ON s.page_id = p.page_id AND s.ordinal = 0"
)


def memory_limit(con: Any) -> str:
    """DuckDB's memory limit on a connection, as DuckDB prints it (e.g. ``"244.1 MiB"``)."""
    return con.execute("SELECT current_setting('memory_limit')").fetchone()[0]


def _rebuild_command(index_dir: Path) -> str:
    """The command that rebuilds the index at ``index_dir`` from the source its manifest names (if it has one)."""
    try:
        spec = json.loads((index_dir / MANIFEST).read_text(encoding="utf-8"))["source"]["spec"]
    except (OSError, ValueError, KeyError, TypeError):
        spec = "SOURCE"  # no readable manifest: the user knows what the index was built from
    return build_command(index_dir, str(spec))


class Store:
    """Read-only access to a store file; safe to share between threads (a cursor per thread).

    Args:
        path: The ``store.duckdb`` file of an index.
        memory_limit: DuckDB's memory limit (e.g. ``"512MB"``: whole-corpus sorts spill to disk
            beyond it); ``None``: DuckDB's default (80% of RAM).

    Raises:
        IndexNotFoundError: No file at ``path``.
        IndexMismatchError: The file lacks a table of the current layout (:data:`LAYOUT_TABLES`); the message
            gives the ``wiki-index build`` command that rebuilds the index.
    """

    def __init__(self, path: str | Path, memory_limit: str | None = None) -> None:
        import duckdb

        self.path = Path(path)
        if not self.path.is_file():
            raise IndexNotFoundError(f"no page store at {self.path}; build the index with `wiki-index build`")
        self._con = duckdb.connect(
            str(self.path), read_only=True, config={"memory_limit": memory_limit} if memory_limit else {}
        )
        self._local = threading.local()
        tables = {r[0] for r in self._con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        if missing := sorted(LAYOUT_TABLES - tables):
            self._con.close()
            raise IndexMismatchError(
                f"{self.path} is a page store in another layout (no table {', '.join(missing)}); this sim-web reads "
                f"only the layout it builds (tables {', '.join(sorted(LAYOUT_TABLES))}). Rebuild the index with:\n"
                f"    {_rebuild_command(self.path.parent)}"
            )

    def _cur(self) -> Any:
        cur = getattr(self._local, "cur", None)
        if cur is None:
            cur = self._local.cur = self._con.cursor()
        return cur

    def _rows(self, sql: str, params: list | tuple = ()) -> list[tuple]:
        return self._cur().execute(sql, params).fetchall()

    def resolve(self, title: str) -> int | None:
        """Return the page id for a title or redirect title (normalised first), else ``None``."""
        t = normalize_title(title)
        if not t:
            return None
        row = self._rows("SELECT page_id FROM titles WHERE tkey = ? AND title = ?", [title_key(t), t])
        if row:
            return int(row[0][0])
        # last resort, as Wikipedia's own case-insensitive redirects do: a unique case-insensitive match
        row = self._rows("SELECT page_id FROM pages WHERE lower(title) = lower(?) LIMIT 2", [t])
        return int(row[0][0]) if len(row) == 1 else None

    def page(self, page_id: int) -> Page | None:
        """Rebuild the full :class:`Page` with id ``page_id`` (links as resolved titles), or ``None``."""
        row = self._rows(
            "SELECT page_id, title, url, text, description, infobox_type, source FROM pages WHERE page_id = ?",
            [page_id],
        )
        if not row:
            return None
        pid, title, url, text, desc, ibt, source = row[0]
        rows = sorted(
            self._rows("SELECT ordinal, title, level, text FROM sections WHERE page_id = ?", [pid])
        )  # sorted here: cheaper than ORDER BY
        sections = tuple(Section(t, lv, x) for _, t, lv, x in rows)
        links = tuple(
            dict.fromkeys(
                r[0]
                for r in self._rows(
                    "SELECT coalesce(p.title, l.target) FROM links l LEFT JOIN pages p ON p.page_id = l.dst WHERE l.src = ? ORDER BY l.ordinal",
                    [pid],
                )
            )
        )
        cats = tuple(self.categories(pid))
        info = dict(self._rows("SELECT key, value FROM infobox WHERE page_id = ?", [pid]))
        return Page(pid, title, text, url, sections, links, cats, info, ibt or "", desc or "", source or "")

    def page_by_title(self, title: str) -> Page | None:
        """The page for a title or redirect title, or ``None``."""
        pid = self.resolve(title)
        return None if pid is None else self.page(pid)

    def passages(self, page_id: int) -> list[Passage]:
        """All passages of a page, in order."""
        rows = self._rows(
            "SELECT docid, page_id, title, text, section, ordinal FROM passages WHERE page_id = ?", [page_id]
        )
        return sorted((Passage(*r) for r in rows), key=lambda p: p.ordinal)  # sorted here: 0.3 ms cheaper than ORDER BY

    def passage(self, docid: str) -> Passage | None:
        """The passage with id ``docid``, or ``None``."""
        got = self.passages_by_id([docid])
        return got[0] if got else None

    def passages_by_id(self, docids: list[str]) -> list[Passage]:
        """The passages with these ids, in the order given (unknown ids are left out)."""
        if not docids:
            return []
        rows = self._rows(
            "SELECT docid, page_id, title, text, section, ordinal FROM passages WHERE docid IN (SELECT unnest(?))",
            [docids],
        )
        by_id = {r[0]: Passage(*r) for r in rows}
        return [by_id[d] for d in docids if d in by_id]

    def aliases(self, page_id: int) -> list[str]:
        """Redirect titles that lead to the page (natural answer aliases), sorted."""
        return sorted(r[0] for r in self._rows("SELECT title FROM redirects WHERE dst = ?", [page_id]))

    def out_links(self, page_id: int) -> list[int]:
        """Ids of the pages this page links to (resolved links only), in link order, no duplicates."""
        rows = self._rows("SELECT dst FROM links WHERE src = ? AND dst IS NOT NULL ORDER BY ordinal", [page_id])
        return list(dict.fromkeys(int(r[0]) for r in rows))

    def counts(self) -> dict[str, int]:
        """Row counts of every table."""
        return {t: self._rows(f"SELECT count(*) FROM {t}")[0][0] for t in COLUMNS}

    # --- whole-corpus reads (task derivation, knowledge-graph synthesis, title lookup, builds) ---

    def page_count(self) -> int:
        """Number of pages."""
        return int(self._rows("SELECT count(*) FROM pages")[0][0])

    def page_ids(self) -> list[int]:
        """Every page id, ascending."""
        return [int(r[0]) for r in self._rows("SELECT page_id FROM pages ORDER BY page_id")]

    def url(self, page_id: int) -> str | None:
        """The stored URL of a page, or ``None`` (no such page, or no URL stored)."""
        row = self._rows("SELECT url FROM pages WHERE page_id = ?", [page_id])
        return row[0][0] if row else None

    def page_leads(self) -> list[tuple[int, str, str]]:
        """``(page_id, title, lead text)`` of every page that has a lead section, by page id."""
        return self._rows(
            "SELECT p.page_id, p.title, s.text FROM pages p JOIN sections s "
            "ON s.page_id = p.page_id AND s.ordinal = 0 ORDER BY p.page_id"
        )

    def page_infos(self) -> list[PageInfo]:
        """A :class:`PageInfo` for every page, in table order."""
        return [PageInfo(*r) for r in self._rows(_PAGE_INFO_SQL)]

    def page_info(self, page_id: int) -> PageInfo | None:
        """The :class:`PageInfo` of one page, or ``None``."""
        row = self._rows(_PAGE_INFO_SQL + " WHERE p.page_id = ?", [page_id])
        return PageInfo(*row[0]) if row else None

    def pages_matching(self, phrase: str, limit: int, lead_chars: int = 600) -> list[int]:
        """Pages whose description or lead start contains ``phrase``, case-insensitively.

        Args:
            phrase: A lowercase phrase (matched as a substring of the lowercased fields).
            limit: The most page ids returned.
            lead_chars: How much of the lead section is searched.

        Returns:
            Page ids, in no particular order.
        """
        return [
            int(r[0])
            for r in self._rows(
                "SELECT p.page_id FROM pages p LEFT JOIN sections s ON s.page_id = p.page_id AND s.ordinal = 0 "
                "WHERE contains(lower(coalesce(p.description, '')), ?) OR contains(lower(left(coalesce(s.text, ''), ?)), ?) "
                "LIMIT ?",
                [phrase, lead_chars, phrase, limit],
            )
        ]

    def title_ids(self) -> list[tuple[str, int]]:
        """``(title, page_id)`` of every page, then ``(redirect title, target page id)`` of every resolved redirect."""
        return self._rows(
            "SELECT title, page_id FROM pages UNION ALL SELECT title, dst FROM redirects WHERE dst IS NOT NULL"
        )

    def redirect_targets(self) -> list[tuple[str, int]]:
        """``(redirect title, target page id)`` of every resolved redirect, in table order."""
        return self._rows("SELECT title, dst FROM redirects WHERE dst IS NOT NULL")

    def link_edges(self) -> list[tuple[int, int, int, str]]:
        """Every resolved link between two different pages, once per page pair.

        Returns:
            ``(src, dst, ordinal, anchor)``: the position and target text of the first link from
            ``src`` to ``dst``; sorted by ``src``, then ``ordinal``.
        """
        return self._rows(
            "SELECT src, dst, min(ordinal), arg_min(target, ordinal) FROM links "
            "WHERE dst IS NOT NULL AND dst <> src GROUP BY src, dst ORDER BY src, 3"
        )

    def links_from(self, page_id: int) -> list[tuple[int, int, str]]:
        """``(dst, ordinal, anchor)`` of the first link to each other page from this one, in link order."""
        return self._rows(
            "SELECT dst, min(ordinal), arg_min(target, ordinal) FROM links WHERE src = ? "
            "AND dst IS NOT NULL AND dst <> src GROUP BY dst ORDER BY 2",
            [page_id],
        )

    def in_links(self, page_id: int) -> list[int]:
        """Ids of the other pages that link to this one, ascending, no duplicates."""
        return [int(r[0]) for r in self._rows("SELECT src FROM backlinks WHERE dst = ? ORDER BY src", [page_id])]

    def infobox_rows(self) -> list[tuple[int, str, str]]:
        """``(page_id, key, value)`` of every infobox field, in table order."""
        return self._rows("SELECT page_id, key, value FROM infobox")

    def infobox_facts(self, page_id: int) -> dict[str, str]:
        """The infobox of one page, one value per key (DuckDB's ``any_value`` where a key repeats)."""
        return dict(self._rows("SELECT key, any_value(value) FROM infobox WHERE page_id = ? GROUP BY key", [page_id]))

    def categories(self, page_id: int) -> list[str]:
        """Category names of one page, in table order."""
        return [r[0] for r in self._rows("SELECT category FROM categories WHERE page_id = ?", [page_id])]

    def category_rows(self) -> list[tuple[int, str]]:
        """``(page_id, category)`` of every category membership, in table order."""
        return self._rows("SELECT page_id, category FROM categories")

    def category_members(self) -> dict[str, list[int]]:
        """Page ids of each category, keyed by the category name lowercased by DuckDB, in table order."""
        members: dict[str, list[int]] = {}
        for cat, pid in self._rows("SELECT lower(category), page_id FROM categories"):
            members.setdefault(cat, []).append(int(pid))
        return members

    def first_passages(self, n: int) -> list[tuple[str, str]]:
        """``(title, text)`` of the first passage of up to ``n`` pages, in the order they were stored (no sort:
        cheap on any corpus size; e.g. to warm a searcher up with varied queries)."""
        return [
            (str(t), str(x))
            for t, x in self._rows("SELECT title, text FROM passages WHERE ordinal = 0 LIMIT ?", [int(n)])
        ]

    def iter_passages(self, batch: int = 4096) -> Iterator[list[Passage]]:
        """Stream every passage in batches, ordered by page id and position (a cursor of its own).

        Args:
            batch: Passages per yielded list.
        """
        cur = self._con.cursor()
        try:
            cur.execute("SELECT docid, page_id, title, text, section, ordinal FROM passages ORDER BY page_id, ordinal")
            while rows := cur.fetchmany(batch):
                yield [Passage(*r) for r in rows]
        finally:
            cur.close()

    def close(self) -> None:
        """Close the connection."""
        self._con.close()
