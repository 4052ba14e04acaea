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
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from training.learn.stats import wilson

__all__ = [
    "VERDICTS",
    "Rate",
    "Figures",
    "Sheet",
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

#: A clue's verdicts: the four a claim can get, and ``no_claim`` for a clue that only names an entity.
VERDICTS = ("true", "false", "garbled", "unverifiable", "no_claim")
_CLAIM_VERDICTS = VERDICTS[:4]
_LEVEL_ORDER = ("easy", "medium", "hard")
_TASK_KEYS = {"id", "question", "answer", "clues"}


def load_tasks(task_file: str | Path) -> list[dict[str, Any]]:
    """The records of a task ``.jsonl`` file (one JSON object a line; blank lines skipped)."""
    path = Path(task_file)
    if not path.is_file():
        raise FileNotFoundError(f"no task file at {path}: expected a .jsonl written by `sim-web synth`")
    out = []
    for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}:{no}: not a JSON object ({err.msg}); expected one record a line") from None
    return out


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


def validate(rec: dict[str, Any]) -> list[str]:
    """What is wrong with one audit record (empty when it follows the protocol's schema)."""
    rid = rec.get("id", "?")
    bad = [f"{rid}: no {k!r}" for k in ("id", "level", "clues") if not rec.get(k)]
    for k in ("unique", "fair"):
        if not isinstance(rec.get(k), bool):
            bad.append(f"{rid}: {k!r} must be true or false, found {rec.get(k)!r}")
    clues = rec.get("clues") or []
    for i, c in enumerate(clues):
        v, where = c.get("verdict"), f"{rid} clue {i}"
        if v not in VERDICTS:
            bad.append(f"{where}: verdict {v!r} is not one of {VERDICTS}")
        elif (v == "no_claim") != (c.get("type") == "named"):
            bad.append(f"{where}: only a `named` clue has no claim, and a `named` clue has none (found {v!r})")
        elif v == "true" and not (c.get("support") and c.get("page")):
            bad.append(f"{where}: a true clue quotes its supporting sentence and names its page")
        elif v in ("false", "garbled", "unverifiable") and not c.get("why"):
            bad.append(f"{where}: a {v} clue says why")
    if rec.get("unique") is False and not rec.get("unique_why"):
        bad.append(f"{rid}: a non-unique question names what else fits (unique_why)")
    if rec.get("fair") is True and (rec.get("unique") is not True or any(c.get("verdict") == "false" for c in clues)):
        bad.append(f"{rid}: a fair question is unique and has no false clue")
    if rec.get("fair") is False and not rec.get("fair_why"):
        bad.append(f"{rid}: an unfair question says why (fair_why)")
    return bad


@dataclass(frozen=True)
class Rate:
    """``k`` of ``n``, with its 95% Wilson interval."""

    k: int
    n: int

    @property
    def value(self) -> float:
        """``k / n`` (0 when ``n`` is 0)."""
        return self.k / self.n if self.n else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        """The 95% Wilson score interval."""
        return wilson(self.k, self.n)

    def __str__(self) -> str:
        lo, hi = self.interval
        return f"{100 * self.value:.1f}% ({self.k}/{self.n}; {100 * lo:.1f}-{100 * hi:.1f})"


@dataclass(frozen=True)
class Figures:
    """An audit's figures over one group of questions (a level, or all)."""

    questions: int
    clue_precision: Rate  # true / clues with a claim
    false: Rate
    garbled: Rate
    unverifiable: Rate
    every_clue_true: Rate
    with_bad_clue: Rate  # at least one false or garbled clue
    unique: Rate
    fair: Rate


def _figures(recs: Sequence[dict[str, Any]]) -> Figures:
    verdicts = Counter(c["verdict"] for r in recs for c in r["clues"] if c["verdict"] != "no_claim")
    claims, q = sum(verdicts.values()), len(recs)

    def share(pred: Any) -> Rate:
        return Rate(sum(1 for r in recs if pred(r)), q)

    def claim_verdicts(r: dict[str, Any]) -> list[str]:
        return [c["verdict"] for c in r["clues"] if c["verdict"] != "no_claim"]

    return Figures(
        questions=q,
        clue_precision=Rate(verdicts["true"], claims),
        false=Rate(verdicts["false"], claims),
        garbled=Rate(verdicts["garbled"], claims),
        unverifiable=Rate(verdicts["unverifiable"], claims),
        every_clue_true=share(lambda r: all(v == "true" for v in claim_verdicts(r))),
        with_bad_clue=share(lambda r: any(v in ("false", "garbled") for v in claim_verdicts(r))),
        unique=share(lambda r: r["unique"]),
        fair=share(lambda r: r["fair"]),
    )


def summarise_records(recs: Sequence[dict[str, Any]]) -> dict[str, Figures]:
    """Figures per level and over all (key ``"all"``); raises ``ValueError`` on a record that breaks the schema."""
    problems = [p for r in recs for p in validate(r)]
    if problems:
        raise ValueError(f"{len(problems)} schema problem(s) in the audit, first: {problems[:5]}")
    levels = sorted(
        {r["level"] for r in recs}, key=lambda lv: (_LEVEL_ORDER.index(lv) if lv in _LEVEL_ORDER else 9, lv)
    )
    out = {lv: _figures([r for r in recs if r["level"] == lv]) for lv in levels}
    out["all"] = _figures(recs)
    return out


def summarise(audit_file: str | Path) -> dict[str, Figures]:
    """:func:`summarise_records` of an audit ``.jsonl`` (one record a line)."""
    return summarise_records(load_tasks(audit_file))


def render_summary(figs: dict[str, Figures]) -> str:
    """A Markdown table of the figures, one column per group: each rate with its count and Wilson interval."""
    rows = [
        ("questions", lambda f: str(f.questions)),
        ("clues with a claim", lambda f: str(f.clue_precision.n)),
        ("clue precision (true)", lambda f: str(f.clue_precision)),
        ("false clues", lambda f: str(f.false)),
        ("garbled clues", lambda f: str(f.garbled)),
        ("unverifiable clues", lambda f: str(f.unverifiable)),
        ("questions with every clue true", lambda f: str(f.every_clue_true)),
        ("questions with a false or garbled clue", lambda f: str(f.with_bad_clue)),
        ("unique for a reader", lambda f: str(f.unique)),
        ("fair", lambda f: str(f.fair)),
    ]
    cols = list(figs)
    out = ["| measure | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    out += [f"| {name} | " + " | ".join(get(figs[c]) for c in cols) + " |" for name, get in rows]
    return "\n".join(out) + "\n"


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
    """``python -m training.synth.audit {worksheet,summary,check}``: see ``--help``."""
    ap = argparse.ArgumentParser(prog="python -m training.synth.audit", description=__doc__.split("\n")[0])
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
    bad = support_problems(args.audit, args.index)
    print("\n".join(bad) if bad else "every quoted support is on its page")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
