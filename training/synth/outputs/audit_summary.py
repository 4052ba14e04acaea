"""The figures of a reader's audit: the record schema (:func:`validate`) and the rates per level (:func:`summarise`).

Split from :mod:`training.synth.outputs.audit` (which draws the worksheet and checks quoted supports, and re-exports these):
an audit file is read (:func:`load_tasks`), each record checked against the protocol of ``docs/evaluation.md``
("Auditing synthesised questions"), and turned into clue precision, false, garbled and unverifiable shares and the
rates of questions with every clue true, unique for a reader and fair, each with its count and 95% Wilson interval.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from training.learn.stats import wilson

__all__ = [
    "VERDICTS",
    "Figures",
    "Rate",
    "agreement",
    "latest_reading",
    "load_tasks",
    "render_reading",
    "render_summary",
    "summarise",
    "summarise_records",
    "validate",
]

#: A clue's verdicts: the four a claim can get, and ``no_claim`` for a clue that only names an entity.
VERDICTS = ("true", "false", "garbled", "unverifiable", "no_claim")
_CLAIM_VERDICTS = VERDICTS[:4]
_LEVEL_ORDER = ("easy", "medium", "hard")
#: The latest committed reading's figures (its audit file is in the repository's tests/data/audit; a test keeps the two
#: equal), shipped with the package so that every dataset card can say what a reader found.
READING = Path(__file__).with_name("reading.json")
_READ_RATES = (
    ("clue precision", "clue_precision"),
    ("questions with every clue true", "every_clue_true"),
    ("unique for a reader", "unique"),
    ("fair", "fair"),
)


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


def agreement(first: Sequence[dict[str, Any]], second: Sequence[dict[str, Any]]) -> dict[str, Rate]:
    """How often a second reader agrees with the first on the questions both read (matched by id): per clue with a
    claim, whether it is true; per question, every clue true, unique and fair. Raises ``ValueError`` when a question
    of ``second`` is not in ``first`` or its clues differ (the two readers must have read the same worksheet)."""
    by_id = {r["id"]: r for r in first}
    same: Counter = Counter()
    total: Counter = Counter()
    for r in second:
        if r["id"] not in by_id or [c["text"] for c in r["clues"]] != [c["text"] for c in by_id[r["id"]]["clues"]]:
            raise ValueError(
                f"{r['id']}: not read by the first reader, or with other clues; expected the same worksheet"
            )
        a = by_id[r["id"]]
        for ca, cb in zip(a["clues"], r["clues"]):
            if ca["verdict"] in _CLAIM_VERDICTS:
                total["clue true"] += 1
                same["clue true"] += (ca["verdict"] == "true") == (cb["verdict"] == "true")
        every = [all(c["verdict"] in ("true", "no_claim") for c in x["clues"]) for x in (a, r)]
        for key, (va, vb) in (
            ("every clue true", every),
            ("unique", (a["unique"], r["unique"])),
            ("fair", (a["fair"], r["fair"])),
        ):
            total[key] += 1
            same[key] += va == vb
    return {k: Rate(same[k], total[k]) for k in ("clue true", "every clue true", "unique", "fair")}


def latest_reading() -> dict[str, Any]:
    """The latest committed reading's figures: ``commit``, ``audit`` (its file), ``set``, ``questions`` and, per
    rate, ``[k, n]``."""
    return json.loads(READING.read_text(encoding="utf-8"))


def render_reading(reading: dict[str, Any]) -> list[str]:
    """The dataset card's section on the latest reading: what was read and its four rates with their intervals."""
    rates = "; ".join(f"{name} {Rate(*reading[key])}" for name, key in _READ_RATES)
    return [
        "## Read against its pages",
        "",
        f"The latest reader's audit (`{reading['audit']}`; protocol in docs/evaluation.md) read {reading['questions']} "
        f"questions of {reading['set']} at commit {reading['commit']}, every clue against its page: {rates}. A "
        "reading holds for the set it drew from; a set drawn with other settings or on another index was not read.",
        "",
    ]
