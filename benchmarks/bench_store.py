"""The page store at scale: peak RSS of writing it and the speed of its lookups, sorted tables (ours) vs ART indexes.

Run: ``python -m benchmarks.bench_store [--sizes 100000,1000000] [--links 20] [--quick]``.

Per size, a synthetic store is written in a fresh process with :class:`~wiki_index.store.store.StoreWriter` under the
256 MB memory limit that ``wiki-index build`` uses: page ``i`` has 2 sections, 3 passages, a category and
``--links`` links to pseudo-random titles (1 in 11 names no page), and every 1,000th page a redirect. RSS is
sampled every 20 ms, so ingest and ``finalize`` each get their own peak.

The baseline is what a DuckDB user reaches for to make point lookups fast, and what this store had before: ART
indexes on ``pages(title)``, ``redirects(title)``, ``sections(page_id)``, ``passages(page_id)``, ``links(src)``
and ``links(dst)``, on a copy of the same store without its ``titles`` and ``backlinks`` tables, read by
:func:`art_store` (titles through ``pages`` and ``redirects``, in-links through ``links``). DuckDB builds an ART whole in memory,
so they are built with the memory limit lifted (under 256 MB, ``links(dst)`` fails at 1M pages); the column
reports that process's peak RSS. Lookups: median ms of each :class:`~wiki_index.store.store.Store` method over 400
random pages, both stores read by the same process, alternating.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.common import in_fresh_process, table

#: The ART indexes of the baseline (the store's layout before the sorted tables).
ART_INDEXES = (
    "CREATE UNIQUE INDEX pages_title ON pages(title)",
    "CREATE INDEX redirects_title ON redirects(title)",
    "CREATE INDEX sections_page ON sections(page_id)",
    "CREATE INDEX passages_page ON passages(page_id)",
    "CREATE INDEX links_src ON links(src)",
    "CREATE INDEX links_dst ON links(dst)",
)
LOOKUPS = ("resolve", "page", "passages", "links_from", "in_links")


class PeakRSS:
    """The process's resident set, sampled every ``every`` seconds in a daemon thread; :meth:`take` returns the
    peak in MiB since the last call."""

    def __init__(self, every: float = 0.02) -> None:
        self.peak = 0
        threading.Thread(target=self._run, args=(every,), daemon=True).start()

    @staticmethod
    def now() -> int:
        with open("/proc/self/status", encoding="ascii") as f:
            return next(int(line.split()[1]) // 1024 for line in f if line.startswith("VmRSS"))

    def _run(self, every: float) -> None:
        while True:
            self.peak = max(self.peak, self.now())
            time.sleep(every)

    def take(self) -> int:
        peak, self.peak = max(self.peak, self.now()), self.now()
        return peak


def write_store(path: str, pages: int, links: int) -> dict[str, float]:
    """Write the synthetic store (in this process); returns seconds and peak RSS of ingest and finalize."""
    from wiki_index.store.store import StoreWriter
    from wiki_index.types import Page, Passage, Section

    rss, text = PeakRSS(), " ".join(f"word{i % 997}" for i in range(100))
    writer, t = StoreWriter(path), time.perf_counter()
    for i in range(pages):
        title = f"Page {i}"
        targets = tuple(f"Page {(i * 7919 + j * 104729) % (pages + pages // 10)}" for j in range(links))
        page = Page(
            i,
            title,
            text,
            sections=(Section("", 0, text), Section("History", 2, text)),
            links=targets,
            categories=("Cat",),
        )
        writer.add_page(page, [Passage(f"{i}-{k}", i, title, text, "", k) for k in range(3)])
        if i % 1000 == 0:
            writer.add_redirect(f"Alias {i}", title)
    writer.flush()
    ingest_s, ingest_rss, t = time.perf_counter() - t, rss.take(), time.perf_counter()
    writer.finalize()
    return {
        "ingest_s": ingest_s,
        "ingest_rss": ingest_rss,
        "finalize_s": time.perf_counter() - t,
        "finalize_rss": rss.take(),
    }


def add_art_indexes(path: str) -> dict[str, float]:
    """Turn a store into the ART-index baseline (in this process); returns seconds and peak RSS."""
    import duckdb

    rss, t = PeakRSS(), time.perf_counter()
    con = duckdb.connect(path)
    con.execute("DROP TABLE titles; DROP TABLE backlinks")
    for sql in ART_INDEXES:
        con.execute(sql)
    con.execute("CHECKPOINT")
    con.close()
    return {"art_s": time.perf_counter() - t, "art_rss": rss.take()}


def art_store(path: str) -> Any:
    """The ART baseline opened for reading: titles resolve through ``pages`` and ``redirects`` and in-links come from
    ``links(dst)`` (the lookups its ART indexes serve); the other lookups are :class:`Store`'s own."""
    import duckdb

    from wiki_index.store.store import Store
    from wiki_index.types import normalize_title

    class ArtStore(Store):
        def __init__(self, p: str) -> None:  # Store opens only the current layout; this one lacks titles, backlinks
            self.path, self._local = Path(p), threading.local()
            self._con = duckdb.connect(p, read_only=True)

        def resolve(self, title: str) -> int | None:
            t = normalize_title(title)
            rows = self._rows("SELECT page_id FROM pages WHERE title = ?", [t]) or self._rows(
                "SELECT dst FROM redirects WHERE title = ? AND dst IS NOT NULL", [t]
            )
            return int(rows[0][0]) if rows else None

        def in_links(self, page_id: int) -> list[int]:
            return sorted(
                {int(r[0]) for r in self._rows("SELECT src FROM links WHERE dst = ? AND src <> dst", [page_id])}
            )

    return ArtStore(path)


def lookups(paths: list[str], pages: int, n: int = 400, rounds: int = 2) -> dict[str, dict[str, float]]:
    """Median ms of each lookup on each store (the first: ours; the others: ART baselines), ``rounds`` passes
    alternating between the stores."""
    from wiki_index.store.store import Store

    rng = random.Random(0)
    ids = [rng.randrange(pages) for _ in range(n)]
    args = {"resolve": [f"Page {i}" for i in ids], "page": ids, "passages": ids, "links_from": ids, "in_links": ids}
    stores = {p: Store(p) if k == 0 else art_store(p) for k, p in enumerate(paths)}
    times: dict[str, dict[str, list[float]]] = {p: {m: [] for m in LOOKUPS} for p in paths}
    for _ in range(rounds):
        for p, store in stores.items():
            for m in LOOKUPS:
                fn = getattr(store, m)
                for a in args[m]:
                    t = time.perf_counter()
                    fn(a)
                    times[p][m].append(time.perf_counter() - t)
    for store in stores.values():
        store.close()
    return {p: {m: statistics.median(v) * 1000 for m, v in ms.items()} for p, ms in times.items()}


def measure(pages: int, links: int, work: Path) -> list[list[object]]:
    """Write, copy into the baseline and time one size; returns its two table rows."""
    ours, art = str(work / f"sorted-{pages}.duckdb"), str(work / f"art-{pages}.duckdb")
    w = in_fresh_process("benchmarks.bench_store", "write_store", ours, pages, links)  # each peak RSS its own
    shutil.copy(ours, art)
    a = in_fresh_process("benchmarks.bench_store", "add_art_indexes", art)
    ms = in_fresh_process("benchmarks.bench_store", "lookups", [ours, art], pages)
    mib = {p: os.path.getsize(p) / 2**20 for p in (ours, art)}
    head = [
        f"{pages:,}",
        f"{pages * links:,}",
        f"{w['ingest_s']:.1f}",
        f"{w['ingest_rss']:,}",
        f"{w['finalize_s']:.1f}",
    ]
    rows = [
        head
        + ["sorted tables", f"{w['finalize_rss']:,}", f"{mib[ours]:.0f}"]
        + [f"{ms[ours][m]:.2f}" for m in LOOKUPS],
        head
        + [f"+ ART indexes ({a['art_s']:.1f} s)", f"{a['art_rss']:,}", f"{mib[art]:.0f}"]
        + [f"{ms[art][m]:.2f} ({ms[art][m] / ms[ours][m]:.2f}x)" for m in LOOKUPS],
    ]
    print("ROWS", json.dumps(rows), file=sys.stderr, flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    """Measure each size and print the table."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_store")
    ap.add_argument("--sizes", default="100000,1000000", help="comma-separated page counts")
    ap.add_argument("--links", type=int, default=20, help="links per page")
    ap.add_argument("--quick", action="store_true", help="2,000 pages")
    args = ap.parse_args(argv)
    sizes = [2000] if args.quick else [int(s) for s in args.sizes.split(",")]
    work = Path(tempfile.mkdtemp(prefix="sim-web-store-"))
    try:
        rows = [r for n in sizes for r in measure(n, args.links, work)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"\npage store (synthetic, {args.links} links a page; StoreWriter under 256 MB; lookups: median ms, "
        "ratio = ART / sorted)"
    )
    print(
        table(
            [
                "pages",
                "links",
                "ingest s",
                "ingest peak MiB",
                "finalize s",
                "layout",
                "peak MiB",
                "disk MiB",
                *[f"{m} ms" for m in LOOKUPS],
            ],
            rows,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
