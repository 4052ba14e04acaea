"""SailorFog-QA-V2 synthesis core: graph construction, subgraph sampling + WL dedup, question generation.

Four tables, all medians of ``--repeats`` runs measured in this one run:

1. the real leads graph (10k Wikipedia lead sections, title-mention edges): build, densify,
   sample, pick targets and generate questions;
2. the store-backed pipeline on the sample index (``wiki-index build`` output): reading the
   store, building the dense KG (typed relations read from each edge's sentence included),
   sampling, the uniqueness and answerability gates, and the whole ``sim-web synth`` run
   (questions per second), with the set's question-quality measures, difficulty levels, the floor per
   uncertainty type and the transfer check (clues a web searcher finds; clues on the link graph);
3. scaling of :func:`build_dense_kg` on ``networkx.powerlaw_cluster_graph`` at 10k, 100k and
   1M edges (per-edge cost against the 10k baseline);
4. scaling of random-walk sampling with WL dedup, and of WL hashing alone, in the number of
   samples on the largest of those graphs (per-sample cost against the smallest count: ~1.0
   means linear), and the WL-bucketed isomorphism registry against a naive one that runs
   ``nx.is_isomorphic`` against every class seen so far.

Run: ``python -m benchmarks.bench_synth [--quick] [--repeats N] [--index DIR | --no-store]``.
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import time
from collections import Counter
from collections.abc import Callable

import networkx as nx

from benchmarks.common import table


def _median(fn: Callable[[], object], repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        gc.collect()  # garbage of the previous step (a 1M-edge graph) must not be collected on this one's clock
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def _synthetic_source(g: nx.Graph):  # noqa: ANN202
    from training.synth.graph.kg import Entity

    attrs = {"kind": "link", "relation": "link"}
    return (lambda t: [(str(u), attrs) for u in g.adj[int(t)]]), (lambda t: Entity(title=t))


def _leads_table(quick: bool, repeats: int) -> None:
    from training.synth import build_dense_kg, generate_question, pick_targets, sample_subgraphs
    from training.synth.compose.clue_builder import AnswerLeakError
    from training.synth.graph.leads import LeadsSource

    t_load, src = _median(LeadsSource.from_json, 1)
    seeds = random.Random(0).sample(src.titles, 20)

    def build(seed_titles: list[str], max_nodes: int):  # noqa: ANN202 - a fresh source: its caches must not hide the cost
        s = LeadsSource(src.records)
        return build_dense_kg(seed_titles, s.neighbours, s.entity, max_nodes=max_nodes, rng=1)

    t_build, kg = _median(lambda: build(seeds, 1500 if quick else len(src.records)), repeats)
    t_all, kg_all = (0.0, None) if quick else _median(lambda: build(src.titles, len(src.records)), repeats)
    n = 200 if quick else 2000
    t_sample, subs = _median(lambda: sample_subgraphs(kg, n, rng=random.Random(2)), repeats)
    ents = kg.entities

    def questions() -> int:
        rng, made = random.Random(3), 0
        for s in subs:
            for tgt in pick_targets(s, 2, rng):
                try:
                    generate_question(s, tgt, ents, rng, kg=kg)
                    made += 1
                except AnswerLeakError:
                    pass
        return made

    t_q, made = _median(questions, repeats)
    r = kg.report
    print(f"\n1) real leads graph ({len(src.records)} leads; medians of {repeats} runs)")
    print(
        table(
            ["step", "size", "time s", "per item"],
            [
                ["load leads JSON", f"{len(src.records)} leads", f"{t_load:.2f}", ""],
                [
                    "build from 20 seeds (BFS + densify)",
                    f"{r.nodes} nodes, {r.after.edges} edges",
                    f"{t_build:.2f}",
                    f"{t_build / max(1, r.after.edges) * 1e6:.0f} us/edge",
                ],
                *(
                    [
                        [
                            "build with every lead as a seed",
                            f"{kg_all.report.nodes} nodes, {kg_all.report.after.edges} edges",
                            f"{t_all:.2f}",
                            f"{t_all / max(1, kg_all.report.after.edges) * 1e6:.0f} us/edge",
                        ]
                    ]
                    if kg_all
                    else []
                ),
                [
                    "sample + WL dedup",
                    f"{len(subs)} subgraphs",
                    f"{t_sample:.2f}",
                    f"{t_sample / max(1, len(subs)) * 1e3:.2f} ms",
                ],
                ["orbits + questions", f"{made} questions", f"{t_q:.2f}", f"{t_q / max(1, made) * 1e3:.2f} ms"],
            ],
        )
    )
    print("(the sampling and question rows use the 20-seed graph; outgoing mentions reach ~4k of the 10k leads)")
    print(
        f"densification: {r.tree_edges} BFS-tree edges + {r.dense_edges} added; cycle rank {r.before.cycle_rank} -> "
        f"{r.after.cycle_rank}; avg clustering {r.before.avg_clustering:.3f} -> {r.after.avg_clustering:.3f}"
    )


def _store_table(index_dir: str | None, quick: bool, repeats: int) -> None:
    from benchmarks.common import ensure_sample_index
    from training.synth import build_dense_kg, sample_subgraphs
    from training.synth.config import SynthConfig
    from training.synth.graph.store_source import StoreSource
    from training.synth.pipeline import generate_with_report
    from wiki_index.search.index import WikiIndex

    path = ensure_sample_index(index_dir)
    index = WikiIndex.from_dir(path)
    t_load, src = _median(lambda: StoreSource(index.store), repeats)
    seeds = [src.title(p) for p in random.Random(0).sample(src.page_ids(), 40)]
    max_nodes = 400 if quick else 3000

    def build(seed_titles: list[str], n: int):  # noqa: ANN202 - a fresh source: its caches must not hide the cost
        s = StoreSource(index.store)
        return build_dense_kg(seed_titles, s.neighbours, s.entity, max_nodes=n, rng=1)

    t_kg, kg = _median(lambda: build(seeds, max_nodes), repeats)
    t_all, kg_all = (0.0, None) if quick else _median(lambda: build([r.title for r in src.rows()], src.n_pages), 1)
    n_sub = 100 if quick else 1200
    t_sample, subs = _median(lambda: sample_subgraphs(kg, n_sub, rng=random.Random(2)), repeats)
    n_q = 5 if quick else 300
    cfg = SynthConfig(max_nodes=max_nodes)
    t_run, (records, rep) = _median(lambda: generate_with_report(path, n=n_q, seed=0, config=cfg), 1)
    tm, f = rep.timings, rep.funnel
    r = kg.report
    rows = [
        ["read the store (preload)", f"{src.n_pages} pages", f"{t_load:.2f}", ""],
        [
            f"dense KG from 40 seeds (max {max_nodes})",
            f"{r.nodes} nodes, {r.after.edges} edges",
            f"{t_kg:.2f}",
            f"{t_kg / max(1, r.after.edges) * 1e6:.0f} us/edge",
        ],
    ]
    if kg_all is not None:
        a = kg_all.report
        rows.append(
            [
                "dense KG, every page a seed",
                f"{a.nodes} nodes, {a.after.edges} edges",
                f"{t_all:.2f}",
                f"{t_all / max(1, a.after.edges) * 1e6:.0f} us/edge",
            ]
        )
    rows += [
        [
            "sample + WL dedup",
            f"{len(subs)} subgraphs",
            f"{t_sample:.2f}",
            f"{t_sample / max(1, len(subs)) * 1e3:.2f} ms",
        ],
        [
            "uniqueness gate (whole corpus)",
            f"{f['checked_unique']} drafts",
            f"{tm.get('gate_unique', 0):.2f}",
            f"{tm.get('gate_unique', 0) / max(1, f['checked_unique']) * 1e3:.1f} ms",
        ],
        [
            "shortcut gate (BM25 top-1)",
            f"{f['checked_shortcut']} questions",
            f"{tm.get('gate_shortcut', 0):.2f}",
            f"{tm.get('gate_shortcut', 0) / max(1, f['checked_shortcut']) * 1e3:.1f} ms",
        ],
        [
            "answerability gate (sim search/visit)",
            f"{f['checked_answerable']} questions, {f['searches']} searches",
            f"{tm.get('gate_answerable', 0):.2f}",
            f"{tm.get('gate_answerable', 0) / max(1, f['checked_answerable']) * 1e3:.1f} ms",
        ],
        [f"whole synth run (n={n_q})", f"{len(records)} questions", f"{t_run:.2f}", f"{len(records) / t_run:.1f} q/s"],
    ]
    print(f"\n2) store-backed pipeline on the sample index {path} (medians of {repeats} runs; the synth run once)")
    print(table(["step", "size", "time s", "per item"], rows))
    print(
        f"gate pass rates: unique {rep.rate('unique', 'checked_unique'):.1%}, shortcut "
        f"{rep.rate('shortcut', 'checked_shortcut'):.1%}, answerable {rep.rate('answerable', 'checked_answerable'):.1%}"
    )
    from training.synth.verify.quality import quality

    q = quality(records)
    print(
        f"question quality: typed relation phrases on {q['typed_clue_share']:.1%} of relational clues, median "
        f"{q['question_words_median']} words (max {q['question_words_max']}), at most {q['nesting_max']} relative "
        f"clauses in a sentence; KG edges with a typed relation: {rep.kg.get('typed_relations', 0)}"
    )
    levels = Counter(r["difficulty"]["level"] for r in records)
    print(f"measured difficulty levels: {dict(sorted(levels.items()))}")
    from training.synth.compose.coverage import transfer_summary, type_floors

    floors = type_floors(records, rep.kg.get("support"))
    print(
        "uncertainty types (share of questions, floor met): "
        + ", ".join(f"{t} {f['share']:.1%}{'' if f['met'] else ' SHORT'}" for t, f in floors.items())
    )
    tr = transfer_summary(records)
    print(
        f"transfer check: evidence found by searching the clue {tr['evidence_share_mean']:.1%} per question, "
        f"clues on the link graph {tr['link_share_mean']:.1%} ({tr['questions_with_link_clue']} questions)"
    )


def _build_scaling(edge_targets: list[int], repeats: int) -> nx.Graph:
    from training.synth import build_dense_kg

    rows, base, graphs = [], None, {}
    for target in edge_targets:
        g = nx.powerlaw_cluster_graph(max(10, target // 5), 5, 0.3, seed=0)  # ~5 edges per node
        graphs[target] = g
        nb, ent = _synthetic_source(g)
        reps = repeats if g.number_of_edges() < 500_000 else 1
        t, kg = _median(lambda: build_dense_kg(["0"], nb, ent, max_nodes=g.number_of_nodes(), rng=0), reps)  # noqa: B023 (run here)
        per_edge = t / kg.graph.number_of_edges() * 1e6
        base = base or per_edge
        rows.append(
            [
                f"{g.number_of_edges():,}",
                f"{g.number_of_nodes():,}",
                reps,
                f"{t:.2f}",
                f"{per_edge:.1f}",
                f"{per_edge / base:.2f}",
            ]
        )
    print(
        "\n3) build_dense_kg on powerlaw_cluster_graph(n, 5, 0.3): edges vs build time (baseline: the smallest graph)"
    )
    print(table(["edges", "nodes", "runs", "build s", "us/edge", "per-edge ratio vs baseline"], rows))
    return graphs[edge_targets[-1]]


class _NaiveRegistry:
    """Baseline: one list of class representatives, ``nx.is_isomorphic`` against each (no WL buckets)."""

    def __init__(self) -> None:
        self.reps: list[nx.Graph] = []

    def classify(self, g: nx.Graph) -> int:
        for i, r in enumerate(self.reps):
            if nx.is_isomorphic(g, r):
                return i
        self.reps.append(g)
        return len(self.reps) - 1


def _sampling_scaling(g: nx.Graph, counts: list[int], repeats: int) -> None:
    from training.synth.graph.sampling import StructureRegistry, sample_subgraphs_with_report

    rows, base, wl_rows, wl_base = [], None, [], None
    subs = sample_subgraphs_with_report(g, 20, rng=random.Random(0))[0]  # warm-up: imports, first-call caches
    nx.weisfeiler_lehman_graph_hash(subs[0].graph)
    for n in counts:
        t, (subs, rep) = _median(lambda: sample_subgraphs_with_report(g, n, rng=random.Random(n)), repeats)  # noqa: B023
        per = t / max(1, len(subs)) * 1e3
        base = base or per
        rows.append(
            [n, len(subs), rep.tries, rep.classes, rep.wl_collisions, f"{t:.2f}", f"{per:.2f}", f"{per / base:.2f}"]
        )
        graphs = [s.graph for s in subs]
        t_wl, _ = _median(
            lambda: [nx.weisfeiler_lehman_graph_hash(h, iterations=h.number_of_nodes()) for h in graphs],  # noqa: B023
            repeats,
        )
        per_wl = t_wl / max(1, len(graphs)) * 1e6
        wl_base = wl_base or per_wl
        wl_rows.append([len(graphs), f"{t_wl:.3f}", f"{per_wl:.0f}", f"{per_wl / wl_base:.2f}"])
    print(
        f"\n4a) random-walk sampling + WL dedup on a {g.number_of_edges():,}-edge powerlaw graph "
        f"(baseline: {counts[0]} samples)"
    )
    print(
        table(
            [
                "samples",
                "got",
                "tries",
                "iso classes",
                "WL collisions",
                "time s",
                "ms/sample",
                "per-sample ratio vs baseline",
            ],
            rows,
        )
    )
    print(f"\n4b) WL hashing alone (nx.weisfeiler_lehman_graph_hash) of those samples (baseline: {counts[0]} samples)")
    print(table(["samples", "time s", "us/sample", "per-sample ratio vs baseline"], wl_rows))
    graphs = [s.graph for s in subs]

    def classify_all(reg_factory: Callable[[], object]) -> None:
        reg = reg_factory()
        for h in graphs:
            reg.classify(h)

    t_wl, _ = _median(lambda: classify_all(StructureRegistry), repeats)
    t_naive, _ = _median(lambda: classify_all(_NaiveRegistry), repeats)
    print(f"\n4c) isomorphism classes of the {len(graphs)} sampled subgraphs (baseline: naive pairwise is_isomorphic)")
    print(
        table(
            ["registry", "time s", "us/graph", "speed-up vs baseline"],
            [
                ["naive: is_isomorphic vs every class", f"{t_naive:.3f}", f"{t_naive / len(graphs) * 1e6:.0f}", "1.00"],
                [
                    "ours: shape cache, WL buckets, is_isomorphic",
                    f"{t_wl:.3f}",
                    f"{t_wl / len(graphs) * 1e6:.0f}",
                    f"{t_naive / t_wl:.2f}",
                ],
            ],
        )
    )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its tables; ``--quick`` for a small smoke run."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes, one run each")
    ap.add_argument("--repeats", type=int, default=3, help="runs per measurement (median reported)")
    ap.add_argument("--index", default=None, help="the sample index (default: $SIM_WEB_HOME's, built if absent)")
    ap.add_argument("--no-store", action="store_true", help="skip table 2 (needs a built index)")
    args = ap.parse_args(argv)
    repeats = 1 if args.quick else max(1, args.repeats)
    _leads_table(args.quick, repeats)
    if not args.no_store:
        _store_table(args.index, args.quick, repeats)
    g = _build_scaling([2_000, 10_000] if args.quick else [10_000, 100_000, 1_000_000], repeats)
    _sampling_scaling(g, [100, 200, 400] if args.quick else [1000, 2000, 4000, 8000], repeats)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
