"""SailorFog-QA-V2 end to end: store -> dense KG -> subgraphs -> orbit-balanced targets -> questions -> gates -> records.

:func:`generate` is deterministic for a seed: every random choice flows from
``random.Random(seed)`` (the graph, the samples, the targets) or from a per-item generator
seeded by ``(seed, subgraph index, target)``. An item depends on earlier ones only through what the set has
accepted so far (the uncertainty types it is short of, :func:`~training.synth.compose.steering.short_types`) and the targets
one search already answered (not asked again). Subgraphs are visited round-robin over their (structure, size)
buckets, so the accepted set stays balanced over structures when it stops at ``n``; within a subgraph, targets whose
relations other pages state come first (:func:`~training.synth.compose.steering.target_key`).

Questions are sampled from the typed view of the graph (:func:`~training.synth.compose.transfer.typed_view`): every clue is
a relation or a fact a page states. Gates, in order (each counted in :class:`~training.synth.outputs.report.SynthReport`): the answer never appears in the text
(generator), the clue tree parses, not a duplicate, the clues single out the answer in the whole
corpus (:class:`~training.synth.verify.uniqueness.Verifier`; one or two look-alikes it leaves are named in a negation and the
check runs again), BM25 top-1 on the question is not already the
answer (``shortcut_policy``), and every evidence page and the answer are reachable with the
simulator's own search (:class:`~training.synth.verify.gates.SearchGates`).
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

from training.synth.compose.constraints import flatten
from training.synth.compose.coverage import type_support
from training.synth.compose.llm import LLMGenerator
from training.synth.compose.steering import short_types, target_key
from training.synth.compose.transfer import transfer_check, typed_view
from training.synth.config import SynthConfig
from training.synth.drafting import Ctx, draft_question
from training.synth.graph.kg_build import build_dense_kg
from training.synth.graph.orbits import interleave, targets_at_depth
from training.synth.graph.sampling import sample_subgraphs_with_report
from training.synth.graph.store_source import StoreSource
from training.synth.outputs.records import build_record
from training.synth.outputs.report import SynthReport
from training.synth.verify.clue_check import ClueChecker
from training.synth.verify.gates import SearchGates, sim_search, sim_visit
from training.synth.verify.uniqueness import Verifier

log = logging.getLogger(__name__)


def _seeds(src: StoreSource, cfg: SynthConfig, rng: random.Random, gates: SearchGates) -> dict[str, str | None]:
    """Seed titles -> the search query that found them (``None`` for randomly drawn seeds)."""
    pool = [p for p in src.page_ids() if len(src.out_ids(p)) >= cfg.min_seed_links]
    if not pool:
        raise ValueError(
            f"no page of the store links to {cfg.min_seed_links}+ pages; lower min_seed_links or "
            f"build the index from a corpus with links"
        )
    seeds: dict[str, str | None] = {}
    for q in cfg.seed_queries:
        for t in gates.titles(q)[:3]:
            seeds.setdefault(t, q)
    for p in rng.sample(pool, min(cfg.n_seeds, len(pool))):
        seeds.setdefault(src.title(p), None)
    return seeds


def generate_with_report(
    index_dir: str | Path | None = None,
    n: int | None = None,
    seed: int | None = None,
    generator: str | None = None,
    *,
    config: SynthConfig | None = None,
) -> tuple[list[dict[str, Any]], SynthReport]:
    """Synthesise up to ``n`` verified questions from an index.

    Args:
        index_dir: The index directory (default: the sample index under ``$SIM_WEB_HOME``).
        n: Questions wanted (overrides ``config.n``).
        seed: Seed (overrides ``config.seed``).
        generator: ``"template"`` or ``"llm"`` (overrides ``config.generator``).
        config: Everything else.

    Returns:
        ``(records, report)``; fewer than ``n`` records when the graph runs out of subgraphs
        that pass the gates (logged).
    """
    from sim_web.backends.sim import SimBackend
    from sim_web.env.tasks import split_of
    from wiki_index.search.index import WikiIndex

    base = config or SynthConfig()
    over = {k: v for k, v in (("n", n), ("seed", seed), ("generator", generator)) if v is not None}
    cfg = SynthConfig(**{**{f: getattr(base, f) for f in base.__dataclass_fields__}, **over})
    rep = SynthReport(config={k: v for k, v in asdict(cfg).items() if k != "llm"})
    t0 = time.perf_counter()
    index = WikiIndex.from_dir(index_dir)
    rep.index = str(index.path)
    src = StoreSource(index.store)
    backend = SimBackend(index)
    gates = SearchGates(sim_search(backend, cfg.k), sim_visit(backend))
    verifier = Verifier(src, max_candidates=cfg.max_candidates)
    llm = LLMGenerator(cfg.llm) if cfg.generator == "llm" else None
    rng = random.Random(cfg.seed)
    rep.timings["load"] = time.perf_counter() - t0

    t = time.perf_counter()
    kg = typed_view(_grow_kg(src, cfg, rng, gates, rep))
    s = time.perf_counter()
    checker = ClueChecker(src)
    checker.prune(kg)  # the verification stage: facts and relations re-read in their evidence before composing
    rep.timings["verify_clues"] = time.perf_counter() - s
    rep.kg["typed_view"] = {"nodes": kg.graph.number_of_nodes(), "edges": kg.graph.number_of_edges()}
    rep.kg["support"] = type_support(kg)
    rep.timings["kg"] = time.perf_counter() - t

    t = time.perf_counter()
    n_sub = math.ceil(cfg.n * cfg.oversample / cfg.targets_per_subgraph)
    subs, srep = sample_subgraphs_with_report(kg, n_sub, sizes=cfg.sizes, rng=rng, typed_prob=cfg.typed_prob)
    rep.timings["sample"] = time.perf_counter() - t
    rep.sampling = {
        "wanted": n_sub,
        "got": len(subs),
        "tries": srep.tries,
        "iso_classes": srep.classes,
        "wl_collisions": srep.wl_collisions,
        "duplicates": srep.duplicate,
        "class_full": srep.class_full,
    }

    t = time.perf_counter()
    records = _run_gates(cfg, kg, interleave(subs, rng), src, gates, verifier, llm, rep, split_of, checker)
    rep.clue_checks = dict(sorted(checker.counts.items()))
    rep.timings["generate_and_gate"] = time.perf_counter() - t
    rep.timings["total"] = time.perf_counter() - t0
    rep.funnel["searches"], rep.funnel["visits"] = gates.searches, gates.visits
    if llm is not None:
        rep.llm = {"requests": llm.requests, "rejected": dict(llm.rejected), "model": cfg.llm.model}
    log.info(
        "synth: %d records in %.1f s; funnel %s; uniqueness %s",
        len(records),
        rep.timings["total"],
        dict(rep.funnel),
        dict(rep.uniqueness),
    )
    if len(records) < cfg.n:
        log.warning("synthesised %d of %d questions; raise --oversample or max_nodes for more", len(records), cfg.n)
    return records, rep


def _grow_kg(src: StoreSource, cfg: SynthConfig, rng: random.Random, gates: SearchGates, rep: SynthReport) -> Any:
    """The dense knowledge graph from the seeds (with a progress bar), its nodes annotated; counts go to ``rep.kg``."""
    from tqdm.auto import tqdm

    seeds = _seeds(src, cfg, rng, gates)
    with tqdm(total=cfg.max_nodes, desc="knowledge graph", unit="entity", disable=not cfg.progress) as bar:

        def entity(title: str) -> Any:
            ent = src.entity(title)
            bar.update(ent is not None)
            return ent

        kg = build_dense_kg(list(seeds), src.neighbours, entity, max_nodes=cfg.max_nodes, rng=rng)
    for node, data in kg.graph.nodes(data=True):
        data.update(src.node_stats(node))
        data["found_by"] = "seed_query" if seeds.get(node) else "seed" if node in seeds else "expansion"
        data["query"] = seeds.get(node)
    r = kg.report
    rep.kg = {
        "seeds": r.seeds,
        "nodes": r.nodes,
        "tree_edges": r.tree_edges,
        "dense_edges": r.dense_edges,
        "before": asdict(r.before),
        "after": asdict(r.after),
        "edge_passages_found": src.passage_found,
        "edge_passages_missing": src.passage_missing,
        "typed_relations": src.typed_relations,
        "edge_kinds": dict(Counter(d["kind"] for _, _, d in kg.graph.edges(data=True))),
    }
    return kg


def _run_gates(
    cfg: SynthConfig,
    kg: Any,
    order: list,
    src: StoreSource,
    gates: SearchGates,
    verifier: Verifier,
    llm: LLMGenerator | None,
    rep: SynthReport,
    split_of: Any,
    checker: ClueChecker | None = None,
) -> list[dict[str, Any]]:
    """Generate questions subgraph by subgraph until ``cfg.n`` pass every gate."""
    from tqdm.auto import tqdm

    ctx = Ctx(cfg, kg, src, gates, verifier, llm, rep, checker=checker)
    f, records = rep.funnel, []
    bar = tqdm(total=cfg.n, desc="questions", unit="q", disable=not cfg.progress)
    for i, sub in order:
        if len(records) >= cfg.n:
            break
        f["subgraphs"] += 1
        ctx.steer = short_types(records, cfg.steer_margin) if cfg.steer_types else frozenset()
        key = target_key(kg.entities, sub, ctx.steer, cfg.other_pages_first)
        rng = random.Random(f"{cfg.seed}:{i}:targets")
        for target in targets_at_depth(sub, cfg.targets_per_subgraph, cfg.min_hops, rng, key=key):
            if len(records) >= cfg.n:
                break
            if cfg.skip_shortcut_targets and target in ctx.easy:
                f["shortcut_target_skipped"] += 1
                continue
            ctx.steer = short_types(records, cfg.steer_margin) if cfg.steer_types else frozenset()
            got = draft_question(ctx, i, sub, target)
            if got is not None and got[4]:
                ctx.easy.add(target)
            if got is None or (got[4] and cfg.shortcut_policy == "drop"):
                continue
            rec = _answerable_record(ctx, got[5], *got[:5])
            if rec is not None:
                rec["split"] = split_of(rec["id"], cfg.test_fraction)
                records.append(rec)
                f["accepted"] += 1
                bar.update(1)
    bar.close()
    rep.timings.update({f"gate_{k}": v for k, v in ctx.timing.items()})
    return records


def _answerable_record(
    ctx: Ctx, sub: Any, draft: Any, root: Any, question: str, u: Any, shortcut: bool
) -> dict[str, Any] | None:
    """The record of a question whose entities the simulator's search all reaches, else ``None`` (counted)."""
    f, cfg = ctx.rep.funnel, ctx.cfg
    s = time.perf_counter()
    ret = ctx.gates.retrieval(root, sub.graph, draft.head)
    ctx.timing["answerable"] += time.perf_counter() - s
    f["checked_answerable"] += 1
    if not ret.answerable:
        f["unanswerable"] += 1
        return None
    f["answerable"] += 1
    weight = cfg.shortcut_weight if shortcut and cfg.shortcut_policy == "downweight" else 1.0
    s = time.perf_counter()
    clues = [c["text"] for c in flatten(root, draft.head) if c["entity"] == root.entity and c["type"] != "type"]
    reach = ctx.gates.reach(question, clues, root.entity)
    ctx.timing["difficulty"] += time.perf_counter() - s
    s = time.perf_counter()
    transfer = transfer_check(root, sub.graph, ctx.gates.titles, draft.head)
    ctx.timing["transfer"] += time.perf_counter() - s
    return build_record(
        draft=draft,
        question=question,
        root=root,
        sub=sub,
        src=ctx.src,
        retrieval=ret,
        shortcut=shortcut,
        generator=cfg.generator,
        seed=cfg.seed,
        split="train",
        weight=weight,
        candidates=u.candidates,
        reach=reach,
        transfer=transfer,
        checker=ctx.checker,
    )


def generate(
    index_dir: str | Path | None = None,
    n: int = 300,
    seed: int = 0,
    generator: str = "template",
    *,
    min_hops: int | None = None,
    config: SynthConfig | None = None,
) -> list[dict[str, Any]]:
    """Synthesise ``n`` verified questions (see :func:`generate_with_report`); returns the records only.

    ``min_hops`` (overrides ``config.min_hops``): every question chains at least this many typed facts."""
    if min_hops is not None:
        base = config or SynthConfig()
        config = SynthConfig(**{**{f: getattr(base, f) for f in base.__dataclass_fields__}, "min_hops": min_hops})
    return generate_with_report(index_dir, n, seed, generator, config=config)[0]
