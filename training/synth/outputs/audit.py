"""A repeatable reader's audit of synthesised questions: draw a worksheet, record verdicts, summarise them.

The generator's gates measure what the generator believes; this module serves a person (or a careful model) who
reads every clue's page and records what the page says. The protocol is in ``docs/evaluation.md`` ("Auditing
synthesised questions"). Three steps, each deterministic:

* :func:`worksheet` draws a stratified sample (by difficulty level) of a task file and gathers, per question, its
  clues, the subgraph edges each relational clue rests on (page, passage, evidence sentence) and the text,
  description and infobox of every page the question involves, read from the index's page store.
* A reader fills one audit record per question (:func:`draft` gives the skeleton): a verdict per clue, the sentence
  of the page that supports a true clue (quoted exactly) or why a clue fails, and whether the answer is unique for
  a reader who knows the real world and whether the question is fair.
* :func:`summarise` turns an audit file into clue precision, false and garbled shares, and the rates of questions
  with every clue true, unique for a reader and fair, per level, each with its sample size and 95% Wilson interval;
  :func:`support_problems` checks every quoted sentence against the store.

Example:
    >>> rec = {"id": "q1", "level": "easy", "unique": True, "fair": True, "clues": [
    ...     {"type": "named", "verdict": "no_claim"},
    ...     {"type": "type", "verdict": "true", "page": "Peru", "support": "Peru is a country"}]}
    >>> validate(rec)
    []
    >>> summarise_records([rec])["all"].clue_precision.k
    1
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from training.synth.outputs.audit_summary import (
    _LEVEL_ORDER,
    VERDICTS,
    Figures,
    Rate,
    agreement,
    load_tasks,
    render_summary,
    summarise,
    summarise_records,
    validate,
)

__all__ = [
    "VERDICTS",
    "Rate",
    "Figures",
    "Sheet",
    "agreement",
    "draft",
    "load_tasks",
    "main",
    "page_haystack",
    "render_summary",
    "sheet_markdown",
    "stratified_sample",
    "summarise",
    "summarise_records",
    "support_problems",
    "validate",
    "worksheet",
]

_TASK_KEYS = {"id", "question", "answer", "clues"}


def _level(rec: dict[str, Any]) -> str:
    return str((rec.get("difficulty") or {}).get("level") or rec.get("level") or "unlabelled")


def stratified_sample(records: Sequence[dict[str, Any]], n: int, seed: int) -> list[dict[str, Any]]:
    """``n`` records drawn per level in proportion to the level's size (largest remainder, at least one per level).

    The draw depends only on the records' ids, levels and ``seed``: each level's ids are sorted, then shuffled by a
    generator seeded with ``(seed, level)``; the first records of each shuffled level are taken. A bigger ``n`` keeps
    the smaller draw's questions (a prefix per level), so an audit can grow without redoing its questions.
    """
    by_level: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rec in records:
        by_level[_level(rec)].append(rec)
    total, n = len(records), min(n, len(records))
    levels = sorted(by_level, key=lambda lv: (_LEVEL_ORDER.index(lv) if lv in _LEVEL_ORDER else 9, lv))
    exact = {lv: n * len(by_level[lv]) / total for lv in levels} if total else {}
    take = {lv: max(1 if n >= len(levels) else 0, int(exact[lv])) for lv in levels}
    for lv in sorted(levels, key=lambda lv: int(exact[lv]) - exact[lv]):  # largest remainder first
        if sum(take.values()) >= n:
            break
        take[lv] += 1
    while sum(take.values()) > n:  # the "at least one" floors overshot: trim the biggest level
        take[max(take, key=lambda lv: take[lv])] -= 1
    out = []
    for lv in levels:
        pool = sorted(by_level[lv], key=lambda r: str(r["id"]))
        random.Random(f"{seed}:{lv}").shuffle(pool)
        out += pool[: take[lv]]
    return out


@dataclass
class Sheet:
    """One question as a reader checks it: its clues, their candidate evidence and every page it involves."""

    id: str
    level: str
    question: str
    answer: str
    clues: list[dict[str, Any]]
    pages: dict[str, dict[str, Any]] = field(default_factory=dict)


def _edges_for(clue: dict[str, Any], edges: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The subgraph edges a relational or counting clue rests on: same relation, the clue's entity at one end."""
    rel, ent = clue.get("relation") or "", clue.get("entity")
    if not rel:
        return []
    return [e for e in edges if e.get("relation") == rel and ent in (e.get("source"), e.get("target"))]


def _page(store: Any, title: str, max_links: int) -> dict[str, Any]:
    pid = store.resolve(title)
    page = None if pid is None else store.page(pid)
    if page is None:
        return {"missing": True}
    return {
        "description": page.description,
        "infobox": dict(page.infobox),
        "text": page.text,
        "links": list(page.links[:max_links]),
    }


def _open_store(index_dir: Path) -> Any:
    from wiki_index.store.store import Store

    path = index_dir / "store.duckdb"
    if not path.is_file():
        raise FileNotFoundError(f"no page store at {path}: pass index_dir= the index the tasks were made from")
    return Store(path)


def worksheet(
    task_file: str | Path, n: int, seed: int, index_dir: str | Path | None = None, max_links: int = 40
) -> list[Sheet]:
    """A deterministic stratified sample of a task file, with everything a reader needs to check each clue.

    Args:
        task_file: A SailorFog-QA ``.jsonl`` (``<index>/tasks/sailorfog_qa.jsonl`` by default).
        n: Questions wanted (fewer when the file is smaller).
        seed: Seed of the draw (see :func:`stratified_sample`).
        index_dir: The index whose page store the pages are read from (default: the task file's ``../..``).
        max_links: Linked titles listed per page (the look-alikes a reader weighs for uniqueness).

    Returns:
        One :class:`Sheet` per drawn question, in draw order (by level).
    """
    task_file = Path(task_file)
    store = _open_store(Path(index_dir) if index_dir else task_file.resolve().parent.parent)
    try:
        sheets = []
        records = load_tasks(task_file)
        bad = [str(r.get("id", i)) for i, r in enumerate(records) if not _TASK_KEYS <= set(r)]
        if bad:
            raise ValueError(
                f"{task_file}: records {bad[:5]} lack one of {sorted(_TASK_KEYS)} (a `sim-web synth` file?)"
            )
        for rec in stratified_sample(records, n, seed):
            edges = (rec.get("subgraph") or {}).get("edges") or []
            clues = [dict(c, edges=_edges_for(c, edges)) for c in rec["clues"]]
            titles = dict.fromkeys([*(rec.get("subgraph") or {}).get("nodes", []), rec["answer"]])
            pages = {t: _page(store, t, max_links) for t in titles}
            sheets.append(Sheet(rec["id"], _level(rec), rec["question"], rec["answer"], clues, pages))
        return sheets
    finally:
        store.close()


def sheet_markdown(sheet: Sheet, max_chars: int | None = None) -> str:
    """The sheet as a reader reads it: question, numbered clues with their edges' evidence, then the pages.

    ``max_chars`` cuts each page's text there (a long article's lead is what most clues rest on); the cut is marked.
    """
    out = [f"## {sheet.id} ({sheet.level})", "", f"Q: {sheet.question}", f"A: {sheet.answer}", ""]
    for i, c in enumerate(sheet.clues):
        out.append(f"{i}. [{c['type']}] {c['entity']}: {c['text']}" + (f"  ({c['relation']})" if c["relation"] else ""))
        for e in c["edges"]:
            prov = e.get("provenance") or {}
            out.append(
                f"    - {e['source']} -> {e['target']} [{e['kind']}] page {prov.get('page')}: {prov.get('evidence')}"
            )
    for title, p in sheet.pages.items():
        out += ["", f"### {title}"]
        if p.get("missing"):
            out.append("(not in the store)")
            continue
        out.append(f"desc: {p['description']}")
        if p["infobox"]:
            out.append("infobox: " + "; ".join(f"{k}: {v}" for k, v in p["infobox"].items()))
        text = p["text"]
        if max_chars is not None and len(text) > max_chars:
            text = text[:max_chars] + f" [... {len(text) - max_chars} more characters on the page]"
        out += [text, "links: " + ", ".join(p["links"])]
    return "\n".join(out) + "\n"


def draft(sheet: Sheet) -> dict[str, Any]:
    """The skeleton audit record of a sheet: every verdict still to fill (``named`` clues carry no claim)."""
    return {
        "id": sheet.id,
        "level": sheet.level,
        "question": sheet.question,
        "answer": sheet.answer,
        "clues": [
            {
                "text": c["text"],
                "type": c["type"],
                "entity": c["entity"],
                "verdict": "no_claim" if c["type"] == "named" else None,
                "page": c["entity"],
                "support": "",
                "why": "",
            }
            for c in sheet.clues
        ],
        "unique": None,
        "unique_why": "",
        "fair": None,
        "fair_why": "",
    }


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def page_haystack(store: Any, title: str) -> str | None:
    """What a support may quote from a page: title, text, description and ``key: value`` infobox lines (or ``None``)."""
    pid = store.resolve(title)
    page = None if pid is None else store.page(pid)
    if page is None:
        return None
    box = [f"{k}: {v}" for k, v in page.infobox.items()]
    return _norm("\n".join([page.title, page.text, page.description, *box]))


def support_problems(audit_file: str | Path, index_dir: str | Path) -> list[str]:
    """Each quoted support that does not occur (whitespace-normalised) in its page in the index's store."""
    store = _open_store(Path(index_dir))
    cache: dict[str, str | None] = {}
    bad = []
    try:
        for rec in load_tasks(audit_file):
            for i, c in enumerate(rec["clues"]):
                if not c.get("support"):
                    continue
                page = c.get("page") or ""
                if page not in cache:
                    cache[page] = page_haystack(store, page)
                hay = cache[page]
                if hay is None:
                    bad.append(f"{rec['id']} clue {i}: no page {page!r} in the store")
                elif _norm(c["support"]) not in hay:
                    bad.append(f"{rec['id']} clue {i}: {c['support']!r} is not on page {page!r}")
    finally:
        store.close()
    return bad


def main(argv: list[str] | None = None) -> int:
    """``python -m training.synth.outputs.audit {worksheet,summary,agreement,check}``: see ``--help``."""
    ap = argparse.ArgumentParser(prog="python -m training.synth.outputs.audit", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("worksheet", help="draw a sample; write <out>/worksheet.md and <out>/draft.jsonl")
    w.add_argument("tasks", help="task .jsonl")
    w.add_argument("--n", type=int, default=100, help="questions to draw (default 100)")
    w.add_argument("--seed", type=int, default=0, help="seed of the draw (default 0)")
    w.add_argument("--index", default=None, help="index directory (default: the task file's ../..)")
    w.add_argument("--out", required=True, help="output directory")
    w.add_argument("--max-chars", type=int, default=None, help="cut each page's text in the worksheet here")
    s = sub.add_parser("summary", help="print the audit's figures as a Markdown table")
    s.add_argument("audit", help="audit .jsonl")
    g = sub.add_parser("agreement", help="how often a second reader agrees with the first on the questions both read")
    g.add_argument("audit", help="the first reader's audit .jsonl")
    g.add_argument("second", help="the second reader's records of some of the same questions")
    c = sub.add_parser("check", help="check every quoted support against the page store")
    c.add_argument("audit", help="audit .jsonl")
    c.add_argument("--index", required=True, help="index directory")
    args = ap.parse_args(argv)
    if args.cmd == "worksheet":
        sheets = worksheet(args.tasks, args.n, args.seed, args.index)
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "worksheet.md").write_text(
            "\n".join(sheet_markdown(s, args.max_chars) for s in sheets), encoding="utf-8"
        )
        (out / "draft.jsonl").write_text("".join(json.dumps(draft(s)) + "\n" for s in sheets), encoding="utf-8")
        print(f"{len(sheets)} questions: {out / 'worksheet.md'}, {out / 'draft.jsonl'}")
        return 0
    if args.cmd == "summary":
        print(render_summary(summarise(args.audit)), end="")
        return 0
    if args.cmd == "agreement":
        rates = agreement(load_tasks(args.audit), load_tasks(args.second))
        print("; ".join(f"{name}: {rate}" for name, rate in rates.items()))
        return 0
    bad = support_problems(args.audit, args.index)
    print("\n".join(bad) if bad else "every quoted support is on its page")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
