"""Retrieval: our BM25 vs raw pyserini ``LuceneSearcher`` vs ``bm25s``; dense and hybrid; recall@10.

Run: ``python -m benchmarks.bench_retrieval [--index DIR] [--n 300] [--quick]``.
The query set has known answers: the derived "identify the subject" questions of the index
(a masked first sentence -> the page title), so recall@10 = the answer page is among the
pages of the top-10 passages.
"""

from __future__ import annotations

import argparse
import time

from benchmarks.common import ensure_sample_index, query_latency_ms, table


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the tables."""
    from sim_web.env.tasks import derive_tasks
    from wiki_index.search._java import import_pyserini_search
    from wiki_index.search.index import WikiIndex

    ap = argparse.ArgumentParser()
    ap.add_argument("--index", default=None)
    ap.add_argument("--n", type=int, default=300, help="queries")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    n = 50 if args.quick else args.n
    index = WikiIndex.from_dir(ensure_sample_index(args.index))
    tasks = derive_tasks(index.store, n=n)
    queries = [t.question.split('"')[1] for t in tasks]
    golds = [t.metadata["page_id"] for t in tasks]
    ours = index.bm25
    raw = import_pyserini_search().LuceneSearcher(str(index.path / "bm25"))
    raw.set_bm25(ours.k1, ours.b)
    for q in queries[:20]:  # warm both JVM paths
        ours.search(q, 10), raw.search(q, 10)

    import bm25s

    store = index.store
    passages = [p for batch in store.iter_passages() for p in batch]
    docids = [p.docid for p in passages]
    t = time.perf_counter()
    retriever = bm25s.BM25(k1=ours.k1, b=ours.b)
    retriever.index(
        bm25s.tokenize([f"{p.title}\n{p.text}" for p in passages], stopwords="en", show_progress=False),
        show_progress=False,
    )
    bm25s_build = time.perf_counter() - t

    def bm25s_search(q: str) -> list[str]:
        res, _ = retriever.retrieve(bm25s.tokenize([q], stopwords="en", show_progress=False), k=10, show_progress=False)
        return [docids[i] for i in res[0]]

    lat = {
        "pyserini LuceneSearcher.search (raw)": query_latency_ms(lambda q: raw.search(q, 10), queries),
        "ours BM25Searcher.search": query_latency_ms(lambda q: ours.search(q, 10), queries),
        "ours BM25Searcher.search_passages (+text)": query_latency_ms(lambda q: ours.search_passages(q, 10), queries),
        "bm25s retrieve": query_latency_ms(bm25s_search, queries),
    }
    base = lat["pyserini LuceneSearcher.search (raw)"]
    print(f"\nBM25 latency over {len(queries)} queries, k=10 (median of 3 runs); bm25s index build {bm25s_build:.1f}s")
    print(
        table(
            ["searcher", "ms/query", "vs raw pyserini"], [[k, f"{v:.3f}", f"{v / base:.2f}x"] for k, v in lat.items()]
        )
    )
    t = time.perf_counter()
    ours.batch_search(queries, 10, threads=2)
    bt = time.perf_counter() - t
    print(f"BM25 batch_search (2 threads): {len(queries) / bt:.0f} q/s")

    page_of = {p.docid: p.page_id for p in passages}

    def recall(results: list[list[str]]) -> float:
        return sum(g in {page_of.get(d) for d in r} for g, r in zip(golds, results)) / len(golds)

    rec_rows = [["bm25s", f"{recall([bm25s_search(q) for q in queries]):.3f}", "-", "-"]]
    modes = ["bm25", "dense", "hybrid"] if index.has_dense else ["bm25"]
    for mode in modes:
        s = index.searcher(mode)
        s.search(queries[0], 10)  # load the encoder outside the timing
        one = query_latency_ms(lambda q, s=s: s.search(q, 10), queries[: min(100, len(queries))], reps=1)
        t = time.perf_counter()
        res = s.batch_search(queries, 10)
        qps = len(queries) / (time.perf_counter() - t)
        rec_rows.append([mode, f"{recall([[h.docid for h in r] for r in res]):.3f}", f"{one:.2f}", f"{qps:.0f}"])
    print(f"\nrecall@10 on {len(queries)} derived questions with known answer pages")
    print(table(["mode", "recall@10", "ms/query (one)", "q/s (batch)"], rec_rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
