"""Writing a task set: JSONL, a Hugging Face dataset, a DuckDB database and a dataset card, side by side.

For ``OUT = <dir>/sailorfog_qa.jsonl`` (by default ``<index>/tasks/sailorfog_qa.jsonl``, the env's
default task set):

* ``OUT``: one record per line (the format :func:`sim_web.env.tasks.load_tasks` reads);
* ``<dir>/sailorfog_qa.hf/``: a ``datasets.DatasetDict`` with ``train`` and ``test`` (``save_to_disk``);
* ``<dir>/sailorfog_qa.duckdb``: tables ``tasks`` (one row per question, the full record as
  JSON in ``record``), ``clues``, ``evidence`` and ``edges``: a separate file, never the index's
  ``store.duckdb`` (other processes hold that one open read-only);
* ``<dir>/sailorfog_qa.card.md`` and ``.card.json``: the dataset card; the JSON card also records the set's
  ``generator_id`` (:mod:`training.synth.outputs.identity`), which ``sim-web synth --if-stale`` compares.

Each file is written to a temporary name and renamed, so a reader never sees half a task set.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

from training.synth.compose.coverage import render_coverage, transfer_summary, type_floors
from training.synth.outputs.audit_summary import latest_reading, render_reading
from training.synth.outputs.identity import generator_id
from training.synth.outputs.records import HARD_HOPS, HARD_SEARCHES, LEVELS
from training.synth.outputs.report import SynthReport
from training.synth.verify.clue_evidence import render_checks
from training.synth.verify.quality import quality, render_quality


def sibling(out: Path, suffix: str) -> Path:
    """``tasks/sailorfog_qa.jsonl`` -> ``tasks/sailorfog_qa{suffix}``."""
    return out.with_name(out.name[: -len(".jsonl")] + suffix if out.name.endswith(".jsonl") else out.stem + suffix)


def write_jsonl(records: list[dict[str, Any]], path: Path) -> None:
    """One JSON record per line (atomic)."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    tmp.replace(path)


def write_hf(records: list[dict[str, Any]], path: Path) -> None:
    """A ``DatasetDict`` of the ``train`` and ``test`` splits, saved with ``save_to_disk`` (atomic)."""
    import datasets

    was_disabled = datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()  # a few hundred rows: no bars
    try:
        _save_hf(datasets, records, path)
    finally:
        if not was_disabled:
            datasets.enable_progress_bars()


def _save_hf(datasets: Any, records: list[dict[str, Any]], path: Path) -> None:
    full = datasets.Dataset.from_list(records)  # one schema for both splits, even an empty one
    dd = datasets.DatasetDict(
        {s: full.select([i for i, r in enumerate(records) if r["split"] == s]) for s in ("train", "test")}
    )
    tmp = path.with_name(path.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    dd.save_to_disk(str(tmp), num_shards={s: 1 for s in dd})  # an empty split still gets a (readable) shard
    shutil.rmtree(path, ignore_errors=True)
    tmp.replace(path)


def write_duckdb(records: list[dict[str, Any]], path: Path) -> None:
    """Tables ``tasks``, ``clues``, ``evidence`` and ``edges`` in a new DuckDB file (atomic)."""
    import duckdb

    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    con = duckdb.connect(str(tmp))
    try:
        con.execute("""
            CREATE TABLE tasks (id VARCHAR PRIMARY KEY, split VARCHAR, question VARCHAR, answer VARCHAR,
                aliases VARCHAR[], answer_url VARCHAR, structure VARCHAR, uncertainty_types VARCHAR[],
                target_orbit INTEGER, nodes INTEGER, edges INTEGER, hops INTEGER, constraints INTEGER, level VARCHAR,
                shortcut BOOLEAN, weight DOUBLE, generator VARCHAR, seed BIGINT, record VARCHAR);
            CREATE TABLE clues (task_id VARCHAR, ordinal INTEGER, entity VARCHAR, type VARCHAR, text VARCHAR, query VARCHAR);
            CREATE TABLE evidence (task_id VARCHAR, title VARCHAR, url VARCHAR, docid VARCHAR);
            CREATE TABLE edges (task_id VARCHAR, source VARCHAR, target VARCHAR, relation VARCHAR, kind VARCHAR,
                page VARCHAR, passage VARCHAR);
        """)
        con.executemany(
            "INSERT INTO tasks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    r["id"],
                    r["split"],
                    r["question"],
                    r["answer"],
                    r["aliases"],
                    r["answer_url"],
                    r["structure"],
                    r["uncertainty_types"],
                    r["target_orbit"],
                    r["difficulty"]["nodes"],
                    r["difficulty"]["edges"],
                    r["difficulty"]["hops"],
                    r["difficulty"]["constraints"],
                    r["difficulty"]["level"],
                    r["shortcut"],
                    r["weight"],
                    r["generator"],
                    r["seed"],
                    json.dumps(r, ensure_ascii=False),
                )
                for r in records
            ],
        )
        con.executemany(
            "INSERT INTO clues VALUES (?, ?, ?, ?, ?, ?)",
            [
                (r["id"], i, c["entity"], c["type"], c["text"], c["query"])
                for r in records
                for i, c in enumerate(r["clues"])
            ],
        )
        con.executemany(
            "INSERT INTO evidence VALUES (?, ?, ?, ?)",
            [
                (r["id"], e["title"], e["url"], d)
                for r in records
                for e in r["evidence"]
                for d in (e["docids"] or [None])
            ],
        )
        con.executemany(
            "INSERT INTO edges VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    r["id"],
                    e["source"],
                    e["target"],
                    e["relation"],
                    e["kind"],
                    e["provenance"]["page"],
                    e["provenance"]["passage"],
                )
                for r in records
                for e in r["subgraph"]["edges"]
            ],
        )
    finally:
        con.close()
    tmp.replace(path)


def difficulty_table(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per difficulty level: how many questions, and what was measured on them (means and shares)."""
    out: dict[str, dict[str, Any]] = {}
    for lv in LEVELS:
        rs = [r["difficulty"] for r in records if r["difficulty"]["level"] == lv]
        n = len(rs)

        def mean(key: str, rs: list[dict[str, Any]] = rs, n: int = n) -> float:
            return round(sum(float(d.get(key) or 0) for d in rs) / n, 2) if n else 0.0

        out[lv] = {
            "questions": n,
            "oracle_searches": mean("oracle_searches"),
            "search_tries": mean("search_tries"),
            "top10_question": mean("top10_question"),
            "top10_clue": mean("top10_clue"),
            "hops": mean("hops"),
            "nodes": mean("nodes"),
            "constraints": mean("constraints"),
        }
    return out


def build_card(
    records: list[dict[str, Any]], report: SynthReport, before: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The dataset card as data: counts per split / structure / uncertainty type / difficulty, the gate rates, the
    question-quality measures (:mod:`training.synth.verify.quality`; of an earlier set too when ``before`` is given)."""
    f = report.funnel
    count = lambda key: dict(sorted(Counter(key(r) for r in records).items()))  # noqa: E731
    return {
        "records": len(records),
        "splits": count(lambda r: r["split"]),
        "structures": count(lambda r: r["structure"]),
        "uncertainty_types": dict(sorted(Counter(t for r in records for t in r["uncertainty_types"]).items())),
        "type_floors": type_floors(records, report.kg.get("support")),
        "transfer": transfer_summary(records),
        "difficulty": {lv: sum(r["difficulty"]["level"] == lv for r in records) for lv in LEVELS},
        "difficulty_measured": difficulty_table(records),
        "quality": quality(records),
        "quality_before": quality(before) if before else None,
        "hops": count(lambda r: r["difficulty"]["hops"]),
        "subgraph_nodes": count(lambda r: r["difficulty"]["nodes"]),
        "target_orbit": count(lambda r: r["target_orbit"]),
        "target_degree": count(
            lambda r: sum(r["answer"] in (e["source"], e["target"]) for e in r["subgraph"]["edges"])
        ),
        "generator": count(lambda r: r["generator"]),
        "gates": {
            "drafts": f["drafts"],
            "answer_leak_skipped": f["answer_leak"],
            "parse_error": f["parse_error"],
            "duplicates": f["duplicate"],
            "uniqueness_pass_rate": report.rate("unique", "checked_unique"),
            "uniqueness": dict(report.uniqueness),
            "shortcut_rate": report.rate("shortcut", "checked_shortcut"),
            "shortcut_policy": report.config.get("shortcut_policy"),
            "answerability_pass_rate": report.rate("answerable", "checked_answerable"),
            "llm_rejected": f["llm_rejected"],
            "accepted": f["accepted"],
            "shortcut_first_drafts": f["shortcut_first"],
            "shortcut_reworded": f["shortcut_reworded"],
            "shortcut_branch_dropped": f["shortcut_branch_dropped"],
            "look_alikes_excluded": f["look_alikes_excluded"],
            "look_alike_dropped": f["look_alike_dropped"],
            "clue_check_dropped": f["clue_check_dropped"],
            "shortcut_targets_skipped": f["shortcut_target_skipped"],
            "facts_added": {k: f[f"facts_added_{k}"] for k in range(7) if f[f"facts_added_{k}"]},
            "shortcut_in_set": sum(r["shortcut"] for r in records),
        },
        "clue_checks": report.clue_checks,
        "kg": report.kg,
        "sampling": report.sampling,
        "timings_s": {k: round(v, 2) for k, v in report.timings.items()},
        "searches": f["searches"],
        "visits": f["visits"],
        "llm": report.llm,
        "config": report.config,
        "index": report.index,
    }


def _table(title: str, rows: dict[Any, Any]) -> list[str]:
    return [f"| {title} | count |", "|---|---:|"] + [f"| {k} | {v} |" for k, v in rows.items()] + [""]


def render_card(card: dict[str, Any]) -> str:
    """The dataset card as Markdown."""
    g, kg, cfg = card["gates"], card["kg"], card["config"]
    lines = [
        "# SailorFog-QA-V2 task set (synthesised from the simulated web)",
        "",
        f"{card['records']} questions ({', '.join(f'{k}: {v}' for k, v in card['splits'].items())}) from `{card['index']}`,",
        f"generator `{cfg.get('generator')}`, seed {cfg.get('seed')}, in {card['timings_s'].get('total', 0)} s.",
        "",
        f"Knowledge graph: {kg.get('nodes')} entities from {kg.get('seeds')} seeds, {kg.get('tree_edges')} BFS edges + "
        f"{kg.get('dense_edges')} added by densification (cycle rank {kg.get('after', {}).get('cycle_rank')}, "
        f"clustering {kg.get('after', {}).get('avg_clustering', 0):.3f}); edge kinds {kg.get('edge_kinds')}.",
        f"Subgraphs: {card['sampling'].get('got')} sampled by random walks in {card['sampling'].get('tries')} tries, "
        f"{card['sampling'].get('iso_classes')} isomorphism classes (WL hash + isomorphism check).",
        "",
        "## Quality gates",
        "",
        "| gate | value |",
        "|---|---:|",
        f"| drafts | {g['drafts']} |",
        f"| uniqueness pass rate (clues fit only the answer, checked on the whole corpus) | {g['uniqueness_pass_rate']:.1%} |",
        f"| shortcut rate (BM25 top-1 on the question is the answer; policy `{g['shortcut_policy']}`) | {g['shortcut_rate']:.1%} |",
        f"| answerability pass rate (every evidence page found with the sim's own search) | {g['answerability_pass_rate']:.1%} |",
        f"| duplicates dropped | {g['duplicates']} |",
        f"| answer leaks skipped | {g['answer_leak_skipped']} |",
        f"| LLM rewrites rejected | {g['llm_rejected']} |",
        f"| accepted | {g['accepted']} |",
        f"| shortcut questions kept in the set | {g['shortcut_in_set']} |",
        "",
        f"Uniqueness outcomes: {g['uniqueness']}; unique only once a negation named the one or two look-alikes the "
        f'check left ("It is not ..."): {g.get("look_alikes_excluded", 0)}; dropped because a page of the answer\'s '
        f"type named beside it on the question's own pages fits every clue: {g.get('look_alike_dropped', 0)}.",
        "",
    ]
    lines += render_checks(card.get("clue_checks") or {})
    lines += render_reading(latest_reading())
    lines += [
        f"Drafts a single search answered at first: {g.get('shortcut_first_drafts', 0)}, of which "
        f"{g.get('shortcut_reworded', 0)} were written again with every entity described (and, where that was not "
        f"enough, without the optional facts and a leaf relation quoted from the answer's own lead, then without one "
        f"branch of the answer's tree: {g.get('shortcut_branch_dropped', 0)}) and passed; targets a search had "
        f"answered in an earlier subgraph, not asked again: {g.get('shortcut_targets_skipped', 0)}; facts about "
        f"the answer the uniqueness check asked for (count: questions): {g.get('facts_added', {})}.",
        "",
    ]
    lines += ["## Question quality", ""] + render_quality(card["quality"], card.get("quality_before"))
    lines += [
        "## Difficulty, measured",
        "",
        "Level: `easy` when the answer page is in the sim's top 10 for a single clue, the oracle needs one search, or "
        "the question has a single constraint; `hard` when it is neither "
        f"for a single clue nor for the whole question, the question chains at least {HARD_HOPS} typed facts and "
        f"the oracle needs at least {HARD_SEARCHES} searches; `medium` otherwise.",
        "",
        "| level | questions | oracle searches | solver tries | answer in top 10: question | ... a single clue "
        "| hops | nodes |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {lv} | {d['questions']} | {d['oracle_searches']} | {d['search_tries']} | {d['top10_question']:.0%} | "
        f"{d['top10_clue']:.0%} | {d['hops']} | {d['nodes']} |"
        for lv, d in card["difficulty_measured"].items()
    ]
    lines += [""]
    lines += render_coverage(card["type_floors"], card["transfer"])
    lines += (
        ["## Counts", ""]
        + _table("structure", card["structures"])
        + _table("uncertainty type", card["uncertainty_types"])
    )
    lines += (
        _table("difficulty", card["difficulty"])
        + _table("hops", card["hops"])
        + _table("target orbit", card["target_orbit"])
    )
    lines += _table("target degree in subgraph", card["target_degree"])
    lines += ["## Timings (s)", ""] + [f"- {k}: {v}" for k, v in card["timings_s"].items()] + [""]
    return "\n".join(lines)


def write_outputs(
    records: list[dict[str, Any]], report: SynthReport, out: str | Path, before: list[dict[str, Any]] | None = None
) -> dict[str, Path]:
    """Write the JSONL, the HF dataset, the DuckDB file and the card next to each other.

    Args:
        records: The records.
        report: The run's report (for the card).
        out: The JSONL path; the other outputs take its stem (see the module docstring).
        before: An earlier set's records, for the card's before/after quality table.

    Returns:
        Output kind -> path.
    """
    out = Path(out)
    if out.suffix != ".jsonl":
        raise ValueError(f"the output must be a .jsonl path (the others are written next to it), got {out}")
    out.parent.mkdir(parents=True, exist_ok=True)
    paths = {
        "jsonl": out,
        "hf": sibling(out, ".hf"),
        "duckdb": sibling(out, ".duckdb"),
        "card_md": sibling(out, ".card.md"),
        "card_json": sibling(out, ".card.json"),
    }
    paths["card_json"].unlink(missing_ok=True)  # a run cut short leaves no card vouching for the new JSONL
    write_jsonl(records, paths["jsonl"])
    write_hf(records, paths["hf"])
    write_duckdb(records, paths["duckdb"])
    card = {**build_card(records, report, before), "generator_id": generator_id(report.config, report.index)}
    paths["card_json"].write_text(json.dumps(card, indent=1, default=str), encoding="utf-8")
    paths["card_md"].write_text(render_card(card), encoding="utf-8")
    return paths
