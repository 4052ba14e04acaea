"""Dense retrieval at scale: FAISS flat / HNSW / IVF-PQ built through ``wiki_index.search.dense`` at 100k (or 1M) vectors.

Run: ``python -m benchmarks.bench_dense_scale [--index DIR] [--n 100000 [1000000]] [--threads 1] [--quick]``.

How the data is made (nothing here is encoded at scale: the encoder runs ~30 passages/s on 2 CPU cores):

* Base vectors: the real all-MiniLM-L6-v2 passage embeddings of an index whose dense part is built (``wiki-index
  build --dense``; the sample has 17,658 passages), read back from its flat (or HNSW) ``index.faiss``. Row ``i`` of
  the N-vector set is ``base[i % n_base] + sigma * g / sqrt(dim)`` renormalised, ``g`` standard normal (seed 0),
  ``sigma`` = ``--noise`` (0.5): a copy sits at cosine ~0.90 to its source, and the ~N/n_base copies of one passage
  at ~0.80 to each other (real nearest neighbours in the sample: median 0.69, 90th percentile 0.80). The set is
  therefore a little denser than real text, which makes it harder, not easier, for the approximate indexes.
  Without a built dense index the base is synthetic instead (2,000 random unit centres, Gaussian spread); the
  output says which.
* Queries: real ones by default: the index's task questions (``<index>/tasks/sailorfog_qa.jsonl``) and the 50
  hand-written lead paraphrases (``benchmarks/data/lead_paraphrases.jsonl``), encoded once with the real encoder
  and cached in ``$TMPDIR/sim-web-bench-dense/``. ``--quick`` (or ``--held-out``) uses held-out perturbed base
  vectors instead (noise seed 1, not in the index), so it needs no encoder.
* Exact top-10 from the flat index; recall@10 = share of those 10 in an index's top 10. Copies of one passage
  crowd the exact top 10 as N grows (at 1M each sample passage has ~57 copies), and their order is decided by the
  noise alone, so "passage recall@10" also counts a copy as its source passage (``id % n_base``): the share of the
  exact top 10's distinct source passages found, i.e. would a user get the same passages.

Each index is built by :func:`wiki_index.search.dense.index_vectors` (the code path of ``wiki-index build --dense``:
``_make_index``, training, chunked adds, search settings), written with ``faiss.write_index`` and searched through
:class:`wiki_index.search.dense.DenseSearcher.search_vectors`. Reported per type: build (train + add) seconds, bytes on
disk and the RSS growth of loading it (in a fresh process) vs :func:`~wiki_index.search.dense.memory_estimate`, ms/query for one batch of all
queries (median of 3) and the median of single queries, and recall@10; then a sweep of ``efSearch`` (HNSW) and ``nprobe``
(IVF-PQ, also with ``pq_m`` 96 and 48), to show the speed/recall trade-off behind the defaults.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import table

LEADS = Path(__file__).resolve().parent / "data" / "lead_paraphrases.jsonl"
CACHE = Path(tempfile.gettempdir()) / "sim-web-bench-dense"
K = 10


def base_vectors(index_dir: Path | None) -> tuple[np.ndarray, str]:
    """The real passage embeddings of ``index_dir`` (or synthetic ones when it has no flat/HNSW dense part)."""
    import faiss

    from wiki_index.manifest import MANIFEST
    from wiki_index.store.derived import dense_location

    if index_dir is not None and (index_dir / MANIFEST).is_file():
        manifest = json.loads((index_dir / MANIFEST).read_text(encoding="utf-8"))
        where, info = dense_location(index_dir, manifest)
        if info is not None and info.get("index_type") in ("flat", "hnsw"):
            ix = faiss.read_index(str(where / "index.faiss"))
            return ix.reconstruct_n(0, ix.ntotal), f"real embeddings of {ix.ntotal:,} passages from {where}"
    rng = np.random.default_rng(0)
    centres = _unit(rng.standard_normal((2_000, 384)).astype(np.float32))
    x = centres[rng.integers(0, 2_000, 20_000)] + rng.standard_normal((20_000, 384)).astype(np.float32) * 0.04
    return _unit(x), "SYNTHETIC vectors (no flat dense index found; build one with `wiki-index build --dense`)"


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def perturbed(base: np.ndarray, n: int, sigma: float, seed: int) -> np.ndarray:
    """``n`` rows ``base[i % len(base)] + sigma * g / sqrt(dim)``, renormalised (``g`` from ``seed``), made in chunks."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, base.shape[1]), dtype=np.float32)
    for start in range(0, n, 65_536):
        rows = np.arange(start, min(n, start + 65_536)) % len(base)
        noise = rng.standard_normal((len(rows), base.shape[1]), dtype=np.float32) * (sigma / np.sqrt(base.shape[1]))
        out[start : start + len(rows)] = _unit(base[rows] + noise)
    return out


def real_queries(index_dir: Path | None, limit: int) -> tuple[np.ndarray, str]:
    """Task questions and lead paraphrases encoded with the real encoder (cached by text and model)."""
    texts: list[str] = []
    tasks = index_dir / "tasks" / "sailorfog_qa.jsonl" if index_dir else None
    if tasks and tasks.is_file():
        texts += [
            json.loads(line)["question"] for line in tasks.read_text(encoding="utf-8").splitlines() if line.strip()
        ]
    texts += [json.loads(line)["query"] for line in LEADS.read_text(encoding="utf-8").splitlines() if line.strip()]
    texts = texts[:limit]
    from wiki_index.search.dense import DenseConfig, Encoder, default_model_path

    key = hashlib.sha256(("\n".join(texts) + default_model_path()).encode()).hexdigest()[:16]
    path = CACHE / f"queries-{key}.npy"
    if not path.is_file():
        CACHE.mkdir(parents=True, exist_ok=True)
        t = time.perf_counter()
        vecs = Encoder(DenseConfig(dtype="float32")).encode(texts)
        np.save(path, vecs)
        print(f"encoded {len(texts)} queries in {time.perf_counter() - t:.1f}s -> {path}")
    return np.load(path), "real queries (task questions + lead paraphrases), encoded"


_LOAD = """
import os, sys, faiss
def rss():
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
before = rss()
index = faiss.read_index(sys.argv[1])
print(rss() - before)
"""


def load_rss(path: Path) -> int:
    """RSS growth of a fresh Python process loading ``path`` with ``faiss.read_index`` (after importing faiss)."""
    out = subprocess.run([sys.executable, "-c", _LOAD, str(path)], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[-1])


def build_one(x: np.ndarray, cfg: Any, where: Path) -> dict[str, Any]:
    """Build ``cfg``'s index over ``x`` with our build path, write it to ``where`` and measure size and load RSS."""
    import faiss

    from wiki_index.search.dense import index_vectors, memory_estimate

    t = time.perf_counter()
    index = index_vectors(x, cfg)
    build_s = time.perf_counter() - t
    where.mkdir(parents=True, exist_ok=True)
    faiss.write_index(index, str(where / "index.faiss"))
    del index
    (where / "docids.txt").write_text("".join(f"{i}\n" for i in range(len(x))), encoding="utf-8")
    return {
        "build_s": build_s,
        "disk": (where / "index.faiss").stat().st_size,
        "rss": load_rss(where / "index.faiss"),
        "estimate": memory_estimate(len(x), x.shape[1], cfg),
    }


def recall(got: list[list[Any]], truth: np.ndarray, n_base: int = 0) -> float:
    """Mean share of the exact top-``K`` ids (rows of ``truth``) among each query's hits.

    With ``n_base``, ids are first mapped to their source passage (``id % n_base``): a copy of the same passage
    counts as that passage (the share of the exact top-``K``'s distinct passages that the hits contain).
    """
    key = (lambda i: i % n_base) if n_base else (lambda i: i)
    shares = []
    for hits, t in zip(got, truth):
        want = {key(int(i)) for i in t.tolist()}
        shares.append(len({key(int(h.docid)) for h in hits[:K]} & want) / len(want))
    return float(np.mean(shares))


def timed_search(searcher: Any, q: np.ndarray, singles: int) -> tuple[list[list[Any]], float, float]:
    """All queries in one batch (ms/query, median of 3 runs) and the median ms of ``singles`` one-query searches."""
    runs = []
    for _ in range(3):
        t = time.perf_counter()
        hits = searcher.search_vectors(q, K)
        runs.append((time.perf_counter() - t) * 1000 / len(q))
    batch_ms = statistics.median(runs)
    one = []
    for i in range(min(singles, len(q))):
        t0 = time.perf_counter()
        searcher.search_vectors(q[i : i + 1], K)
        one.append((time.perf_counter() - t0) * 1000)
    return hits, batch_ms, statistics.median(one)


def run_size(
    x: np.ndarray, q: np.ndarray, cfgs: dict[str, Any], work: Path, singles: int, n_base: int
) -> dict[str, Any]:
    """Build and search every config in ``cfgs`` over ``x``; the flat one gives the exact top-``K``."""
    from wiki_index.search.dense import DenseSearcher

    rows, searchers, truth = [], {}, None
    for name, cfg in cfgs.items():
        m = build_one(x, cfg, work / name)
        s = DenseSearcher(work / name, cfg, lambda ids: [])
        hits, batch_ms, single_ms = timed_search(s, q, singles)
        if truth is None:
            truth = np.array([[int(h.docid) for h in hs[:K]] for hs in hits])
        else:
            searchers[name] = s  # the flat one is not swept (and is the largest)
        rows.append(
            [
                name,
                f"{m['build_s']:.1f}",
                f"{m['disk'] / 2**20:.1f}",
                f"{m['rss'] / 2**20:.1f}",
                f"{m['estimate'] / 2**20:.1f}",
                f"{m['disk'] / m['estimate']:.3f}",
                f"{batch_ms:.3f}",
                f"{single_ms:.2f}",
                f"{recall(hits, truth):.3f}",
                f"{recall(hits, truth, n_base):.3f}",
            ]
        )
    return {"rows": rows, "searchers": searchers, "truth": truth}


def sweep(searchers: dict[str, Any], q: np.ndarray, truth: np.ndarray, singles: int, n_base: int) -> list[list[object]]:
    """Recall@10 and latency of each built HNSW/IVF-PQ index across ``efSearch`` / ``nprobe`` values."""
    from wiki_index.search.dense import apply_search_params

    out: list[list[object]] = []
    for name, s in searchers.items():
        knob = {"hnsw": "hnsw_ef_search", "ivfpq": "nprobe"}.get(s.cfg.index_type)
        if knob is None:
            continue
        for v in (8, 16, 32, 64, 128, 256):
            apply_search_params(s.index, replace(s.cfg, **{knob: v}))
            hits, batch_ms, single_ms = timed_search(s, q, singles)
            out.append(
                [
                    name,
                    f"{knob}={v}",
                    f"{batch_ms:.3f}",
                    f"{single_ms:.2f}",
                    f"{recall(hits, truth):.3f}",
                    f"{recall(hits, truth, n_base):.3f}",
                ]
            )
        apply_search_params(s.index, s.cfg)
    return out


def configs(variants: bool) -> dict[str, Any]:
    """The index configurations measured: the defaults of each type, and (``variants``) IVF-PQ with fewer code bytes."""
    from wiki_index.search.dense import DenseConfig

    base = {
        "flat": DenseConfig(index_type="flat"),
        "hnsw": DenseConfig(index_type="hnsw"),
        "ivfpq": DenseConfig(index_type="ivfpq"),
    }
    if variants:
        base["ivfpq m96"] = DenseConfig(index_type="ivfpq", pq_m=96)
        base["ivfpq m48"] = DenseConfig(index_type="ivfpq", pq_m=48)
    return base


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the tables."""
    import faiss
    import torch

    from simweb_core.settings import default_index_dir
    from wiki_index.search.dense import DenseConfig

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", default=None, help="index with a built flat dense part (default: the sample index)")
    ap.add_argument("--n", type=int, nargs="+", default=[100_000], help="vector counts (default 100000)")
    ap.add_argument("--noise", type=float, default=0.5, help="sigma of the perturbation (cosine ~1/sqrt(1+sigma^2))")
    ap.add_argument("--queries", type=int, default=400, help="queries (real ones: at most the available texts)")
    ap.add_argument("--singles", type=int, default=200, help="queries timed one at a time")
    ap.add_argument("--threads", type=int, default=1, help="FAISS/torch threads (the cores are shared)")
    ap.add_argument(
        "--held-out", action="store_true", help="perturbed held-out vectors as queries instead of real ones"
    )
    ap.add_argument("--defaults-only", action="store_true", help="skip the IVF-PQ pq_m=96/48 variants")
    ap.add_argument("--quick", action="store_true", help="10k vectors, 100 held-out queries, defaults only")
    args = ap.parse_args(argv)
    faiss.omp_set_num_threads(args.threads)
    torch.set_num_threads(args.threads)
    sizes = [10_000] if args.quick else args.n
    index_dir = Path(args.index) if args.index else default_index_dir()
    base, source = base_vectors(index_dir)
    if args.quick or args.held_out:
        q, qsource = (
            perturbed(base, min(args.queries, 100 if args.quick else args.queries), args.noise, seed=1),
            "held-out perturbed vectors",
        )
        q = q[np.random.default_rng(2).permutation(len(q))]
    else:
        q, qsource = real_queries(index_dir, args.queries)
    print(
        f"base: {source}; noise sigma {args.noise}; queries: {len(q)} {qsource}; {args.threads} thread(s); "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    work = Path(tempfile.mkdtemp(prefix="bench-dense-"))
    try:
        for n in sizes:
            x = perturbed(base, n, args.noise, seed=0)
            res = run_size(
                x, q, configs(not (args.quick or args.defaults_only)), work / str(n), args.singles, len(base)
            )
            print(f"\nN = {n:,} x {x.shape[1]} (recall@{K} vs exact flat search)")
            print(
                table(
                    [
                        "index",
                        "build s",
                        "disk MiB",
                        "load RSS MiB",
                        "estimate MiB",
                        "disk/estimate",
                        "batch ms/q",
                        "single ms (median)",
                        f"recall@{K}",
                        f"passage recall@{K}",
                    ],
                    res["rows"],
                )
            )
            print(
                f"\nN = {n:,}: search-time knob sweep (defaults: hnsw_ef_search={DenseConfig().hnsw_ef_search}, nprobe={DenseConfig().nprobe})"
            )
            print(
                table(
                    ["index", "setting", "batch ms/q", "single ms (median)", f"recall@{K}", f"passage recall@{K}"],
                    sweep(res["searchers"], q, res["truth"], args.singles, len(base)),
                )
            )
            print(
                f"load average at the end: {os.getloadavg()[0]:.1f} (timings are noisy when other jobs share the CPUs)"
            )
            del x, res
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
