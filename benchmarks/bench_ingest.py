"""Ingestion: our dump parser vs ``wikiextractor`` on the real gensim enwiki slice; memory as dumps grow.

Run: ``python -m benchmarks.bench_ingest [--reps 5] [--sizes 5000,20000,50000] [--workers 1] [--quick]``.

1. Speed, same run, median of ``--reps``: both sides read the same raw pages with our streaming
   XML reader; ours turns each article into a :class:`Page` (clean text, sections, links,
   categories, infobox), wikiextractor 3.1 (``Extractor(...).extract``, its per-article API,
   no template definitions) into clean text only. Reported twice: parsing only (raw pages in
   memory) and end to end, streaming (bz2 + XML + parsing; ours is ``DumpSource.records()``).
2. Memory: synthetic dumps made by repeating the real pages with fresh titles and ids, written
   as bz2, each ingested in a fresh subprocess that reports its peak RSS and pages/s.
"""

from __future__ import annotations

import argparse
import bz2
import io
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import table

_CHILD = """
import json, resource, sys, time
from wiki_index.sources.dump import DumpSource
src = DumpSource(sys.argv[1], workers=int(sys.argv[2]))
t = time.perf_counter()
n = sum(1 for _ in src.records())
dt = time.perf_counter() - t
try:  # VmHWM: this process's own peak (ru_maxrss would include the parent's RSS at fork time)
    self_kb = int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM")).split()[1])
except (OSError, StopIteration):
    self_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
kids_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"read": src.stats.read, "kept": src.stats.kept, "seconds": dt,
                  "rss_mb": self_kb / 1024, "children_rss_mb": kids_kb / 1024}))
"""


def gensim_dump() -> Path:
    """The shortened real enwiki dump shipped in the gensim wheel."""
    from wiki_index.sources.sample import _DUMP, package_file

    return package_file(*_DUMP)


def _stream_raw(path: Path):
    """Stream the raw pages of a dump with our XML reader (shared by both sides)."""
    from wiki_index.sources.dump import _XmlPages

    pages = _XmlPages(path)
    try:
        yield from pages
    finally:
        pages.reader.close()


def _ours_streaming(path: Path) -> int:
    from wiki_index.sources.dump import DumpSource
    from wiki_index.types import Page

    return sum(1 for rec in DumpSource(path).records() if isinstance(rec, Page))


def _is_article(raw) -> bool:
    return raw.ns == 0 and raw.redirect is None and not raw.text.lstrip().lower().startswith("#redirect")


def _ours(raws) -> int:
    from wiki_index.parse.wikitext import ParseConfig
    from wiki_index.sources.dump import process_page

    cfg = ParseConfig()
    return sum(1 for raw in raws if _is_article(raw) and process_page(raw, cfg).__class__.__name__ == "Page")


def _wikiextractor(raws) -> int:
    from wikiextractor.extract import Extractor

    n = 0
    for raw in raws:
        if _is_article(raw):
            out = io.StringIO()
            Extractor(raw.page_id, 0, "https://en.wikipedia.org/wiki", raw.title, [raw.text]).extract(out)
            n += bool(out.getvalue())
    return n


def _interleaved(fns: list, reps: int) -> list[float]:
    """Median wall time of each function, running them in turn ``reps`` times (fair under load)."""
    runs: list[list[float]] = [[] for _ in fns]
    for _ in range(reps):
        for i, fn in enumerate(fns):
            t = time.perf_counter()
            fn()
            runs[i].append(time.perf_counter() - t)
    return [statistics.median(r) for r in runs]


def speed(path: Path, reps: int) -> list[list[object]]:
    """Rows of the speed table (articles/s, median of ``reps``, the two tools interleaved)."""
    import logging

    logging.getLogger("wikiextractor").setLevel(logging.ERROR)
    raws = list(_stream_raw(path))
    n = sum(1 for r in raws if _is_article(r))
    _ours(raws[:20]), _wikiextractor(raws[:20])  # warm-up (imports, regex caches)
    t_ours, t_we = _interleaved([lambda: _ours(raws), lambda: _wikiextractor(raws)], reps)
    t_ours_e2e, t_we_e2e = _interleaved(
        [lambda: _ours_streaming(path), lambda: _wikiextractor(_stream_raw(path))], reps
    )
    return [
        ["parse only", n, f"{n / t_ours:.0f}", f"{n / t_we:.0f}", f"{t_we / t_ours:.2f}x"],
        ["bz2 + XML + parse", n, f"{n / t_ours_e2e:.0f}", f"{n / t_we_e2e:.0f}", f"{t_we_e2e / t_ours_e2e:.2f}x"],
    ]


def make_synthetic(src: Path, dest: Path, n_pages: int) -> int:
    """Write a bz2 dump of ``n_pages`` pages: the real pages repeated with fresh titles and ids."""
    xml = bz2.decompress(src.read_bytes()).decode("utf-8")
    head, _, rest = xml.partition("  <page>")
    body, _, _ = ("  <page>" + rest).rpartition("</mediawiki>")
    blocks = [b for b in re.split(r"(?=  <page>)", body) if b.strip()]
    written = 0
    with bz2.open(dest, "wt", encoding="utf-8", compresslevel=1) as out:
        out.write(head)
        copy = 0
        while written < n_pages:
            for block in blocks:
                if written >= n_pages:
                    break
                block = re.sub(r"<title>(.*?)</title>", lambda m: f"<title>{m.group(1)} {copy}</title>", block, count=1)  # noqa: B023 (called at once)
                block = re.sub(
                    r"<id>(\d+)</id>",
                    lambda m: f"<id>{int(m.group(1)) + copy * 10_000_000}</id>",  # noqa: B023
                    block,
                    count=1,
                )
                out.write(block)
                written += 1
            copy += 1
        out.write("</mediawiki>\n")
    return written


def memory(path: Path, sizes: list[int], workers: int, tmp: Path) -> list[list[object]]:
    """Rows of the memory table: one fresh subprocess per synthetic dump size."""
    rows, peaks = [], []
    for n in sizes:
        dump = tmp / f"synthetic-{n}.xml.bz2"
        t = time.perf_counter()
        make_synthetic(path, dump, n)
        gen = time.perf_counter() - t
        out = subprocess.run(
            [sys.executable, "-c", _CHILD, str(dump), str(workers)], capture_output=True, text=True, check=True
        )
        r = json.loads(out.stdout.strip().splitlines()[-1])
        peaks.append(max(r["rss_mb"], r["children_rss_mb"]))
        rows.append(
            [
                n,
                f"{dump.stat().st_size / 1e6:.1f}",
                r["kept"],
                f"{r['read'] / r['seconds']:.0f}",
                f"{r['kept'] / r['seconds']:.0f}",
                f"{r['rss_mb']:.0f}",
                f"{r['children_rss_mb']:.0f}",
                f"{peaks[-1] / peaks[0]:.2f}x",
                f"{gen:.0f}",
            ]
        )
        dump.unlink()
    return rows


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the tables."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=5, help="repetitions per speed measurement (median)")
    ap.add_argument("--sizes", default="5000,20000,50000", help="synthetic dump sizes in pages")
    ap.add_argument("--workers", type=int, default=1, help="parser processes for the memory runs")
    ap.add_argument("--quick", action="store_true", help="1 repetition, small synthetic dumps")
    args = ap.parse_args(argv)
    reps = 1 if args.quick else args.reps
    sizes = [150, 300] if args.quick else [int(s) for s in args.sizes.split(",")]
    path = gensim_dump()

    print(f"dump: {path.name} ({path.stat().st_size / 1e6:.1f} MB bz2)")
    print(f"\nspeed, articles/s (median of {reps}; baseline: wikiextractor 3.1 Extractor.extract)")
    print(table(["stage", "articles", "ours", "wikiextractor", "ours / wikiextractor"], speed(path, reps)))
    print("  ours also extracts sections, links, categories, infobox; wikiextractor only clean text")

    with tempfile.TemporaryDirectory() as tmp:
        rows = memory(path, sizes, args.workers, Path(tmp))
    print(f"\nmemory as the dump grows (workers={args.workers}; baseline: the smallest dump's peak RSS)")
    print(
        table(
            [
                "pages",
                "bz2 MB",
                "articles",
                "pages/s",
                "articles/s",
                "peak RSS MB",
                "workers' RSS MB",
                "RSS vs smallest",
                "gen s",
            ],
            rows,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
