"""The ``wiki-index`` command: build, search and inspect indexes.

Examples::

    wiki-index build                        # the bundled sample -> $SIM_WEB_HOME/indexes/sample
    wiki-index build enwiki.xml.bz2 --workers 8  # BM25; dense is encoded on first dense/hybrid use
    wiki-index build --dense                # encode the dense index now rather than on first use
    wiki-index search "theory of relativity" --mode hybrid -k 5
    wiki-index info
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from simweb_core.cli import run_command
from simweb_core.settings import default_index_dir
from wiki_index.types import title_to_url

if TYPE_CHECKING:
    from wiki_index.build import BuildConfig


#: Generated flags (simweb_core.cli): flag -> BuildConfig field path (help, type, choices and default from the field).
BUILD_FLAGS: dict[str, str | tuple[str, str]] = {
    "--dense": ("dense", "Off: the passages are encoded on the first dense/hybrid search instead."),
    "--index-type": "dense_config.index_type",
    "--hnsw-m": "dense_config.hnsw_m",
    "--hnsw-ef-construction": "dense_config.hnsw_ef_construction",
    "--hnsw-ef-search": "dense_config.hnsw_ef_search",
    "--ivf-nlist": "dense_config.ivf_nlist",
    "--pq-m": "dense_config.pq_m",
    "--nprobe": "dense_config.nprobe",
    "--max-seq-length": "dense_config.max_seq_length",
    "--batch-size": "dense_config.batch_size",
    "--chunk-words": "chunk.words",
    "--title-boost": "title_boost",
    "--threads": "threads",
    "--workers": "workers",
}


def cli_base() -> BuildConfig:
    """The config ``wiki-index build`` starts from: :class:`~wiki_index.build.BuildConfig`'s defaults, except that the
    dense index is encoded on the first dense/hybrid search rather than at build time (``--dense`` to encode now)."""
    from wiki_index.build import BuildConfig

    return BuildConfig(dense=False)


def build_config(args: argparse.Namespace) -> BuildConfig:
    """The :class:`~wiki_index.build.BuildConfig` of parsed ``build`` arguments: the flags given, on :func:`cli_base`.

    Raises:
        ConfigError: For values the configs refuse (each config's own checks), naming the field.
    """
    from simweb_core.cli import given_flags
    from simweb_core.data import from_data
    from simweb_core.overrides import apply_overrides
    from wiki_index.build import BuildConfig

    return from_data(BuildConfig, apply_overrides({}, given_flags(args)), base=cli_base())


def _build(args: argparse.Namespace) -> int:
    from wiki_index.build import build_index

    out = build_index(args.source, args.out, build_config(args))
    print(f"index ready at {out}")
    return _info(argparse.Namespace(dir=str(out), json=False))


def _search(args: argparse.Namespace) -> int:
    from wiki_index.search.index import WikiIndex

    if len(args.terms) > 2:
        raise SystemExit("usage: wiki-index search [DIR] QUERY (quote a query that has spaces)")
    path, query = args.terms if len(args.terms) == 2 else (None, args.terms[0])
    index = WikiIndex.from_dir(path)
    results = index.search(query, args.k, args.mode)
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "docid": h.docid,
                        "score": round(h.score, 4),
                        "title": p.title,
                        "section": p.section,
                        "url": title_to_url(p.title),
                        "text": p.text,
                    }
                    for h, p in results
                ],
                ensure_ascii=False,
                indent=2,
            )
        )
        return 0
    print(f"{args.mode} results for {query!r} in {index.path}:")
    for rank, (h, p) in enumerate(results, 1):
        where = f"{p.title} § {p.section}" if p.section else p.title
        print(f"{rank:>3}. {h.score:8.3f}  {where}  [{h.docid}]\n       {p.text[:160]}")
    if not results:
        print("  (no results)")
    return 0


def _info(args: argparse.Namespace) -> int:
    from wiki_index.manifest import read_manifest

    path = Path(args.dir) if args.dir else default_index_dir()
    m = read_manifest(path)
    if getattr(args, "json", False):
        print(json.dumps(m, indent=2, ensure_ascii=False))
        return 0
    size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    print(f"index:   {path} ({size / 2**20:.1f} MiB on disk)")
    print(f"source:  {m['source'].get('spec')} ({m['source'].get('kind')})")
    s = m["stats"]
    print(
        f"records: read {s.get('read')}, kept {s.get('kept')}, redirects {s.get('redirects')}, skipped {s.get('skipped')} {s.get('skipped_reasons') or ''}"
    )
    print("counts:  " + ", ".join(f"{k} {v}" for k, v in m["counts"].items()))
    print(f"bm25:    k1={m['bm25']['k1']} b={m['bm25']['b']} passages={m['bm25']['count']}")
    d = m.get("dense")
    print(
        f"dense:   {d['index_type']} {d['count']}x{d['dim']} max_seq_length={d['max_seq_length']}"
        if d
        else "dense:   not built yet (encoded on the first dense/hybrid search, or now with `wiki-index build --dense`)"
    )
    print(f"built:   {m.get('built_at')} in {m.get('build_seconds')} s; content sha256 {m['content_sha256'][:16]}")
    return 0


def make_parser() -> argparse.ArgumentParser:
    """The argument parser of ``wiki-index``: ``build``'s flags (but its source and ``--out``) are generated from
    :class:`~wiki_index.build.BuildConfig`'s fields; ``search`` and ``info`` have no config."""
    from simweb_core.cli import add_config_flags
    from wiki_index.build import BuildConfig

    p = argparse.ArgumentParser(prog="wiki-index", description="Build, search and inspect Wikipedia indexes.")
    p.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build an index from the sample, a MediaWiki XML dump or a JSONL corpus")
    b.add_argument(
        "source", nargs="?", default="sample", help="'sample' (default), a .xml/.xml.bz2 dump, or a .jsonl(.gz) corpus"
    )
    b.add_argument("--out", default=None, help="index directory (default $SIM_WEB_HOME/indexes/<name>)")
    add_config_flags(b, BuildConfig, BUILD_FLAGS, defaults=cli_base())
    b.set_defaults(func=_build)
    s = sub.add_parser("search", help="search an index")
    s.add_argument("terms", nargs="+", metavar="[DIR] QUERY", help="optional index directory, then the query")
    s.add_argument("-k", type=int, default=10, help="number of results")
    s.add_argument("--mode", default="bm25", choices=["bm25", "dense", "hybrid"])
    s.add_argument("--json", action="store_true", help="print JSON")
    s.set_defaults(func=_search)
    i = sub.add_parser("info", help="print an index's manifest and counts")
    i.add_argument("dir", nargs="?", default=None, help="index directory (default: the sample index)")
    i.add_argument("--json", action="store_true", help="print the raw manifest")
    i.set_defaults(func=_info)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``wiki-index``; returns the exit status."""
    return run_command(make_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
