"""The curriculum tiers' growth: bridge questions and facts per page, id-hashed versus answer-disjoint split, and a
seeded sample of the facts behind the bridge questions for a hand check.

Run: ``python -m benchmarks.bench_tiers [--k 5] [--snippet-chars 160] [--sample 50] [--quick]``. It prints, for each
tier, the facts found (forward and reverse), the funnel through the gates, the held-out overlap with train answers
under both splits, and then ``--sample`` facts (page, relation, object, sentence) drawn with a fixed seed; the
verdicts of the hand check are in docs/training.md.
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any


def _overlap(records: list[dict[str, Any]], split: str, fraction: float, seed: int) -> dict[str, int]:
    from sim_web.env.tasks import split_of
    from training.synth.tiers.split import answer_disjoint_split, answer_overlap

    recs = [dict(r) for r in records]
    if split == "id":
        for r in recs:
            r["split"] = split_of(r["id"], fraction)
    else:
        answer_disjoint_split(recs, fraction, seed)
    return answer_overlap(recs)


def _clause(p: dict[str, Any]) -> str:
    rel = p["relation"]
    if "{src}" in rel:
        return rel.replace("{src}", p["page"]).replace("{dst}", p["object"])
    return f"{p['page']} [{rel}] {p['object']}"


def main(argv: list[str] | None = None) -> None:
    """Print the tiers' table and the fact sample."""
    from training.synth.tiers.generate import TierConfig, generate_tier, tier_card

    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_tiers")
    ap.add_argument("--k", type=int, default=5, help="results per search (cpu-learn: 5)")
    ap.add_argument("--snippet-chars", type=int, default=160, help="snippet length (cpu-learn: 160)")
    ap.add_argument("--sample", type=int, default=50, help="bridge facts to print for a hand check")
    ap.add_argument("--quick", action="store_true", help="only the bridge tier, 10 sampled facts")
    args = ap.parse_args(argv)
    tiers = ("bridge",) if args.quick else ("lookup", "bridge")
    print(f"tiers at k={args.k}, snippets of {args.snippet_chars} characters, seed 0, half held out")
    print(
        "| tier | questions | facts/page | reverse facts | candidates | unanswerable | held-out answer in train: id split | answer split | seconds |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    bridge: list[dict[str, Any]] = []
    for tier in tiers:
        t = time.perf_counter()
        cfg = TierConfig(tier=tier, n=10_000, k=args.k, snippet_chars=args.snippet_chars, test_fraction=0.5)
        recs, rep = generate_tier(None, cfg)
        secs = time.perf_counter() - t
        card = tier_card(recs, rep)
        ids, ans = _overlap(recs, "id", 0.5, 0), _overlap(recs, "answer", 0.5, 0)
        print(
            f"| {tier} | {len(recs)} | {card['facts_per_page']} | {rep.facts['reverse_functional']} | "
            f"{rep.funnel['candidates']} | {rep.funnel['unanswerable']} | "
            f"{ids['test_answer_in_train']}/{ids['test']} | {ans['test_answer_in_train']}/{ans['test']} | {secs:.1f} |"
        )
        if tier == "bridge":
            bridge = recs
    facts = sorted({(p["page"], p["relation"], p["object"], p["sentence"]) for r in bridge for p in r["provenance"]})
    n = 10 if args.quick else args.sample
    print(f"\n{n} of the {len(facts)} distinct facts behind the bridge questions (seed 2026), for a hand check:")
    for i, (page, rel, obj, sent) in enumerate(random.Random(2026).sample(facts, min(n, len(facts)))):
        print(f"{i:2d}. {_clause({'page': page, 'relation': rel, 'object': obj})}  <=  {sent[:160]}")


if __name__ == "__main__":
    main()
