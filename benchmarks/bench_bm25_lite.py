"""Java-free BM25 (``SIM_WEB_BM25=lite``) against Lucene: top-5 agreement on the task questions, and speed.

Run: ``python -m benchmarks.bench_bm25_lite [--index DIR] [--n 0] [--passages 2000]``.

Queries: the ``question`` of every task in ``<index>/tasks/*.jsonl`` (``--n`` caps them; 0: all). For each, both
engines' top 5 passages (``search_docs``, the ranking the sim backend reads): the share of questions whose top 5 is
the same list, the same set, the same first hit, and the mean overlap. Then the analyzer alone: the share of
``--passages`` passages whose terms equal Lucene's analyzer's, token for token. Then per-query latency (median of 3
runs) and the lite postings' build time and size. ``bm25s`` (where installed) is measured beside them twice, for
agreement and speed: with its own tokenizer (English stop words, no stemming), and on the lite analyzer's terms (so
only the scoring engine differs from lite's).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import random
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.common import ensure_sample_index, query_latency_ms, table


def questions(index: Path, n: int = 0) -> list[str]:
    """The ``question`` of every task under ``<index>/tasks/*.jsonl``, deduplicated, in file order (``n`` > 0 caps)."""
    seen: dict[str, None] = {}
    for path in sorted((index / "tasks").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                seen.setdefault(json.loads(line)["question"], None)
    qs = list(seen)
    return qs[:n] if n > 0 else qs


def agreement(a: list[list[int]], b: list[list[int]]) -> dict[str, float]:
    """Shares of queries whose two rankings agree: same list, same set, same first hit; and the mean overlap."""
    n = max(len(a), 1)
    return {
        "same list": sum(x == y for x, y in zip(a, b)) / n,
        "same set": sum(set(x) == set(y) for x, y in zip(a, b)) / n,
        "same top-1": sum(x[:1] == y[:1] for x, y in zip(a, b)) / n,
        "mean overlap": sum(len(set(x) & set(y)) / max(len(x), len(y), 1) for x, y in zip(a, b)) / n,
    }


def analyzer_agreement(index_dir: Path, n: int) -> float:
    """Share of ``n`` random passages (seed 0) whose lite terms equal those of Anserini's analyzer."""
    from wiki_index.search import _java
    from wiki_index.search.bm25_lite import analyze
    from wiki_index.store.columns import PassageColumns

    cols = PassageColumns(index_dir / "columns")
    docs = random.Random(0).sample(range(len(cols)), min(n, len(cols)))
    texts = [p.contents for p in cols.passages(docs)]
    lucene = _java.autoclass("io.anserini.index.IndexCollection").DEFAULT_ANALYZER
    utils = _java.autoclass("io.anserini.analysis.AnalyzerUtils")
    with _java.jvm_lock:
        theirs = [list(utils.analyze(lucene, t).toArray()) for t in texts]
    return sum(analyze(t) == x for t, x in zip(texts, theirs)) / max(len(texts), 1)


def main(argv: list[str] | None = None) -> int:
    """Run the comparison and print the tables."""
    from wiki_index.search.bm25_lite import LiteBM25Searcher, build_lite
    from wiki_index.search.index import WikiIndex

    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_bm25_lite", description=__doc__.split("\n\n")[0])
    ap.add_argument("--index", default=None)
    ap.add_argument("--n", type=int, default=0, help="questions (0: all)")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--passages", type=int, default=2000, help="passages for the analyzer comparison")
    args = ap.parse_args(argv)
    index_dir = ensure_sample_index(args.index)
    index = WikiIndex.from_dir(index_dir)
    qs = questions(index_dir, args.n)
    lucene = index.bm25
    cols = index.columns
    p = index.manifest["bm25"]
    passages = cols.passages(list(range(len(cols))))
    with tempfile.TemporaryDirectory(prefix="bm25-lite-") as tmp:
        t0 = time.perf_counter()
        build_lite([x.contents for x in passages], [x.docid for x in passages], Path(tmp) / "lite")
        build_s = time.perf_counter() - t0
        size = sum(f.stat().st_size for f in (Path(tmp) / "lite").iterdir())
        lite = LiteBM25Searcher(Path(tmp) / "lite", p["k1"], p["b"], cols)
        ranked_l = [[d for d, _ in lucene.search_docs(q, args.k)] for q in qs]
        ranked_p = [[d for d, _ in lite.search_docs(q, args.k)] for q in qs]
        engines = {"lite": ranked_p}
        bm25s_engines = _bm25s_engines(passages, args.k, p)
        engines.update({name: [run(q) for q in qs] for name, run in bm25s_engines.items()})
        found = {name: agreement(ranked_l, ranked) for name, ranked in engines.items()}
        rows = [[m] + [f"{found[name][m]:.3f}" for name in engines] for m in found["lite"]]
        print(f"top-{args.k} agreement with Lucene over {len(qs)} task questions ({len(passages)} passages)")
        print(table(["measure", *engines], rows))
        print(
            f"analyzer: {analyzer_agreement(index_dir, args.passages):.3f} of {args.passages} passages tokenised as Lucene does"
        )
        lat = [
            ["Lucene (pyserini, search_docs)", f"{query_latency_ms(lambda q: lucene.search_docs(q, args.k), qs):.2f}"]
        ]
        lat.append(["lite (numpy, search_docs)", f"{query_latency_ms(lambda q: lite.search_docs(q, args.k), qs):.2f}"])
        lat += [[name, f"{query_latency_ms(run, qs):.2f}"] for name, run in bm25s_engines.items()]
        print(f"\nper-query latency, k={args.k}, median of 3 runs over {len(qs)} questions")
        print(table(["engine", "ms/query"], lat))
        print(f"lite postings: built in {build_s:.1f} s, {size / 2**20:.1f} MiB on disk")
        shutil.rmtree(Path(tmp) / "lite", ignore_errors=True)
    return 0


def _bm25s_engines(passages: list, k: int, p: dict) -> dict[str, Callable[[str], list[int]]]:
    """``bm25s`` (Lucene's formula and ``k1``/``b``) as two rankers returning document numbers: on its own tokenizer,
    and on the lite analyzer's terms; none where it is not installed."""
    try:
        import bm25s
    except ImportError:
        return {}
    from wiki_index.search.bm25_lite import analyze

    texts = [x.contents for x in passages]
    own = bm25s.BM25(k1=p["k1"], b=p["b"], method="lucene")
    own.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    lite_terms = bm25s.BM25(k1=p["k1"], b=p["b"], method="lucene")
    lite_terms.index([analyze(t) for t in texts], show_progress=False)

    def ranked(retriever: object, tokens: object) -> list[int]:
        docs, scores = retriever.retrieve(tokens, k=k, show_progress=False)  # type: ignore[attr-defined]
        return [int(d) for d, s in zip(docs[0], scores[0]) if s > 0]

    version = importlib.metadata.version("bm25s")
    return {
        f"bm25s {version} (own tokenizer)": lambda q: ranked(
            own, bm25s.tokenize([q], stopwords="en", show_progress=False)
        ),
        f"bm25s {version} (lite analyzer)": lambda q: ranked(lite_terms, [analyze(q) or ["_"]]),
    }


if __name__ == "__main__":
    raise SystemExit(main())
