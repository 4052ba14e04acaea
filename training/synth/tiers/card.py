"""The dataset card of a curriculum tier: counts per split and form, the gates' funnel, the measured rates."""

from __future__ import annotations

from collections import Counter
from typing import Any

from training.synth.extract.relations import relation_words
from training.synth.tiers.forms import form_card


def tier_card(records: list[dict[str, Any]], report: Any) -> dict[str, Any]:
    """The tier's dataset card: counts per split, the gates' funnel and the measured rates."""
    n = len(records)
    f = report.funnel
    cand = max(f["candidates"] - f["duplicate_or_leak"], 1)
    return {
        "tier": report.config.get("tier"),
        "records": n,
        "splits": dict(Counter(r["split"] for r in records)),
        "facts": dict(report.facts),
        "facts_per_page": round(
            (report.facts["functional"] + report.facts["reverse_functional"] - report.facts["reverse_duplicate"])
            / max(report.facts["pages"], 1),
            4,
        ),
        "funnel": dict(f),
        "forms": form_card(records),
        "unseen_forms": list(report.config.get("unseen_forms") or []),
        "uniqueness": "the clues' members intersect in the answer alone, over every country of the sample"
        if report.config.get("tier") == "intersection"
        else "functional relation on its page (one object, no list in the evidence sentence)",
        "answerable_rate": round(1 - f["unanswerable"] / cand, 3),
        "question_retrieves_answer_rate": round(f["question_finds_answer"] / cand, 3),
        "question_retrieves_answer_meaning": "the point (lookup: kept only when it does)"
        if report.config.get("tier") == "lookup"
        else "a defect (bridge: such questions are dropped)",
        "oracle_searches_mean": round(sum(r["difficulty"]["oracle_searches"] for r in records) / n, 3) if n else 0.0,
        "relations": dict(
            Counter(
                relation_words(p["relation"]) or p["relation"] for r in records for p in r["provenance"][:1]
            ).most_common(15)
        ),
        "examples": [{"question": r["question"], "answer": r["answer"]} for r in records[:5]],
    }


def render_tier_card(card: dict[str, Any]) -> str:
    """The card as Markdown."""
    lines = [
        f"# Task set: tier `{card['tier']}` ({card['records']} questions)",
        "",
        f"splits: {card['splits']}",
        f"facts: {card['facts']} ({card['facts_per_page']} functional facts per page, both directions)",
        f"funnel: {card['funnel']}",
        f"forms (per split): {card.get('forms')}; never trained on: {card.get('unseen_forms')}",
        f"uniqueness: {card['uniqueness']}",
        f"answerable by the oracle's searches: {card['answerable_rate']}",
        f"question alone retrieves the answer page (top k): {card['question_retrieves_answer_rate']} "
        f"({card['question_retrieves_answer_meaning']})",
        f"oracle searches (mean): {card['oracle_searches_mean']}",
        f"relations (most common): {card['relations']}",
        "",
        "examples:",
    ]
    lines += [f"- {e['question']} -> {e['answer']}" for e in card["examples"]]
    return "\n".join(lines) + "\n"
