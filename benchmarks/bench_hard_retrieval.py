"""Recall@10 of bm25 / dense / hybrid on a hard query set, and the hybrid fusion tuned on half of it.

Run: ``python -m benchmarks.bench_hard_retrieval [--index DIR] [--tasks FILE] [--quick]``.

The hard query set (see :func:`load_hard_queries`), each query with one known answer page:

* ``question``: the synthesized SailorFog task questions (``<index>/tasks/sailorfog_qa.jsonl``; obfuscated,
  multi-clue); the target is the answer page.
* ``clue``: the distinct clue queries of those tasks with the clue's ``entity`` page as the target. Clues whose
  query is just the entity's title (the ``named`` clues: a title lookup, not a hard query) are left out.
* ``lead``: 50 hand-written paraphrases of sample pages' lead sentences that share no title word with their page
  (``benchmarks/data/lead_paraphrases.jsonl``).

The sets carry the synthesis pipeline's selection biases (``training/synth/verify/gates.py``): a clue query was kept
because the simulator's search (bm25 by default) found its entity in the top results, which favours bm25 on
``clue``; a question was dropped when, searched as is, it put the answer page first (the default
``shortcut_policy="drop"``; all 300 sample tasks have ``shortcut: false``), which works against bm25 on
``question``. The ``lead`` paraphrases have neither bias, but there are only 50.

Each query falls deterministically into the ``tune`` or the ``report`` half by a hash of its text
(:func:`split_of`). recall@10 = the answer page is among the first 10 distinct pages of the ranked passages
(:data:`PASSAGES` of them are retrieved). The fusion grid (depth, RRF k, dense weight with sparse weight 1) is
searched on the tune half by fusing the bm25 and dense rankings retrieved once at the largest depth (exactly what
:class:`~wiki_index.search.hybrid.HybridSearcher` does with those parameters); the report half is then run through the
real ``HybridSearcher`` with the default and the tuned parameters.

Results: docs/benchmarks.md ("Which search mode") and ``benchmarks/data/hard_retrieval_sample.txt``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchmarks.common import ensure_sample_index, table

DATA = Path(__file__).resolve().parent / "data"
LEADS = DATA / "lead_paraphrases.jsonl"
#: Passages retrieved per query; recall@10 looks at the first 10 distinct pages among them.
PASSAGES = 30
#: The fusion grid searched on the tune half.
DEPTHS = (30, 50, 100, 200)
RRF_KS = (0, 2, 5, 10, 20, 30, 60, 100)
DENSE_WEIGHTS = (0.1, 0.15, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)
DEFAULT = {"depth": 50, "rrf_k": 60, "sparse_weight": 1.0, "dense_weight": 1.0}


def split_of(query: str) -> str:
    """``"tune"`` or ``"report"``: the half ``query`` belongs to (by the parity of its SHA-1)."""
    return "tune" if int(hashlib.sha1(query.encode("utf-8")).hexdigest(), 16) % 2 == 0 else "report"


def load_leads(path: str | Path = LEADS) -> list[dict[str, str]]:
    """The hand-written lead paraphrases: ``{"query", "title"}`` rows."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _answer_title(rec: dict[str, Any]) -> str:
    from urllib.parse import unquote

    url = rec.get("answer_url") or ""
    return unquote(url.rsplit("/", 1)[1]).replace("_", " ") if "/wiki/" in url else rec["answer"]


def load_hard_queries(tasks_file: str | Path | None, leads: str | Path = LEADS) -> list[dict[str, str]]:
    """The hard query set: ``{"query", "title", "source", "split"}`` rows (source ``question``, ``clue`` or
    ``lead``), distinct by (query, title), in a fixed order."""
    rows: list[dict[str, str]] = []
    seen: set[tuple[str, str]] = set()

    def add(query: str, title: str, source: str) -> None:
        query = " ".join(query.split())
        key = (query.lower(), title)
        if query and key not in seen:
            seen.add(key)
            rows.append({"query": query, "title": title, "source": source, "split": split_of(query)})

    if tasks_file is not None and Path(tasks_file).is_file():
        with open(tasks_file, encoding="utf-8") as f:
            recs = [json.loads(line) for line in f if line.strip()]
        for rec in recs:
            add(rec["question"], _answer_title(rec), "question")
        for rec in recs:
            for clue in rec.get("clues", []):
                q, ent = clue.get("query") or "", clue.get("entity") or ""
                if ent and q.strip().lower() != ent.strip().lower():
                    add(q, ent, "clue")
    for r in load_leads(leads):
        add(r["query"], r["title"], "lead")
    return rows


def top_pages(docids: Iterable[str], page_of: dict[str, int], n: int = 10) -> list[int]:
    """The first ``n`` distinct pages of a ranked docid list."""
    out: list[int] = []
    for d in docids:
        p = page_of.get(d)
        if p is not None and p not in out:
            out.append(p)
            if len(out) == n:
                break
    return out


def _recall(results: list[list[str]], golds: list[int | None], page_of: dict[str, int]) -> float:
    hits = [g is not None and g in top_pages(r, page_of) for g, r in zip(golds, results)]
    return sum(hits) / len(hits) if hits else float("nan")


def _fuse(sparse: list[Any], dense: list[Any], cfg: dict[str, Any]) -> list[str]:
    """What ``HybridSearcher(**cfg).search(q, PASSAGES)`` returns, from rankings retrieved at a larger depth."""
    from wiki_index.search.hybrid import rrf

    d = max(cfg["depth"], PASSAGES)
    fused = rrf([sparse[:d], dense[:d]], PASSAGES, cfg["rrf_k"], [cfg["sparse_weight"], cfg["dense_weight"]])
    return [h.docid for h in fused]


def tune(
    sparse: list[list[Any]], dense: list[list[Any]], golds: list[int | None], page_of: dict[str, int]
) -> tuple[dict[str, Any], float, list[list[object]]]:
    """Grid-search the fusion on these queries; the best config, its recall and the top rows. Among equal recalls
    the config that differs from :data:`DEFAULT` in the fewest parameters wins (then the grid order)."""
    grid = [
        {"depth": dp, "rrf_k": k, "sparse_weight": 1.0, "dense_weight": w}
        for dp in DEPTHS
        for k in RRF_KS
        for w in DENSE_WEIGHTS
    ]
    scored = []
    for cfg in grid:
        r = _recall([_fuse(s, d, cfg) for s, d in zip(sparse, dense)], golds, page_of)
        scored.append((r, cfg == DEFAULT, cfg))
    scored.sort(key=lambda t: (-t[0], sum(t[2][p] != DEFAULT[p] for p in DEFAULT)))
    best_r, _, best = scored[0]
    rows = [[c["depth"], c["rrf_k"], c["dense_weight"], f"{r:.3f}"] for r, _, c in scored[:8]]
    default_r = next(r for r, is_default, _ in scored if is_default)
    rows.append(["default: 50", 60, 1.0, f"{default_r:.3f}"])
    return best, best_r, rows


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the tables."""
    from wiki_index.search.hybrid import HybridSearcher
    from wiki_index.search.index import WikiIndex

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", default=None, help="index directory (default: the sample index)")
    ap.add_argument("--tasks", default=None, help="SailorFog task records (default: <index>/tasks/sailorfog_qa.jsonl)")
    ap.add_argument(
        "--quick", action="store_true", help="20 queries per source, bm25 only unless the dense index exists"
    )
    args = ap.parse_args(argv)
    index = WikiIndex.from_dir(ensure_sample_index(args.index))
    tasks = Path(args.tasks) if args.tasks else index.path / "tasks" / "sailorfog_qa.jsonl"
    rows = load_hard_queries(tasks)
    if args.quick:
        rows = [r for src in ("question", "clue", "lead") for r in [x for x in rows if x["source"] == src][:20]]
    store = index.store
    page_of = {p.docid: p.page_id for batch in store.iter_passages() for p in batch}
    golds = [store.resolve(r["title"]) for r in rows]
    missing = sum(g is None for g in golds)
    counts = {
        (s, h): sum(r["source"] == s and r["split"] == h for r in rows)
        for s in ("question", "clue", "lead")
        for h in ("tune", "report")
    }
    print(f"hard query set: {len(rows)} queries ({missing} whose answer page is not in the index count as misses)")
    print(
        table(
            ["source", "tune", "report"],
            [[s, counts[(s, "tune")], counts[(s, "report")]] for s in ("question", "clue", "lead")],
        )
    )

    queries = [r["query"] for r in rows]
    tune_ix = [i for i, r in enumerate(rows) if r["split"] == "tune"]
    rep_ix = [i for i, r in enumerate(rows) if r["split"] == "report"]
    with_dense = index.has_dense or not args.quick
    depth = max(DEPTHS)
    t = time.perf_counter()
    sparse = index.bm25.batch_search(queries, depth)
    print(f"bm25: {len(queries)} queries at depth {depth} in {time.perf_counter() - t:.1f}s")
    results: dict[str, list[list[str]]] = {"bm25": [[h.docid for h in hs[:PASSAGES]] for hs in sparse]}
    if with_dense:
        dense_s = index.dense  # encodes the index on first use
        t = time.perf_counter()
        dense = dense_s.batch_search(queries, depth)
        print(f"dense: {len(queries)} queries at depth {depth} in {time.perf_counter() - t:.1f}s")
        results["dense"] = [[h.docid for h in hs[:PASSAGES]] for hs in dense]
        best, _, grid_rows = tune(
            [sparse[i] for i in tune_ix], [dense[i] for i in tune_ix], [golds[i] for i in tune_ix], page_of
        )
        print(f"\nfusion tuned on the tune half ({len(tune_ix)} queries); best 8 of the grid and the default")
        print(table(["depth", "rrf_k", "dense_weight (sparse 1.0)", "recall@10 (tune)"], grid_rows))
        print(f"tuned: {best}")
        rep_q = [queries[i] for i in rep_ix]
        for name, cfg in (("hybrid default", DEFAULT), ("hybrid tuned", best)):
            hy = HybridSearcher(index.bm25, dense_s, **cfg)
            got = hy.batch_search(rep_q, PASSAGES)
            full: list[list[str]] = [[] for _ in queries]
            for i, hs in zip(rep_ix, got):
                full[i] = [h.docid for h in hs]
            for i in tune_ix:
                full[i] = _fuse(sparse[i], dense[i], cfg)
            results[name] = full

    out = []
    for mode, res in results.items():
        row: list[object] = [mode]
        for half in (tune_ix, rep_ix):
            row.append(f"{_recall([res[i] for i in half], [golds[i] for i in half], page_of):.3f}")
        for src in ("question", "clue", "lead"):
            ix = [i for i in rep_ix if rows[i]["source"] == src]
            row.append(f"{_recall([res[i] for i in ix], [golds[i] for i in ix], page_of):.3f}")
        out.append(row)
    n = {s: sum(rows[i]["source"] == s for i in rep_ix) for s in ("question", "clue", "lead")}
    print(f"\nrecall@10 (answer page among the top-10 distinct pages of {PASSAGES} passages)")
    print(
        table(
            [
                "mode",
                f"tune (n={len(tune_ix)})",
                f"report (n={len(rep_ix)})",
                f"report question (n={n['question']})",
                f"report clue (n={n['clue']})",
                f"report lead (n={n['lead']})",
            ],
            out,
        )
    )
    if "hybrid tuned" in results:
        found = {m: [golds[i] in top_pages(results[m][i], page_of) for i in rep_ix] for m in results}
        for m in ("hybrid default", "hybrid tuned"):
            only_h = sum(h and not b for h, b in zip(found[m], found["bm25"]))
            only_b = sum(b and not h for h, b in zip(found[m], found["bm25"]))
            print(f"report half, {m} vs bm25: {only_h} queries found only by {m}, {only_b} only by bm25")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
