"""Quality measures of a task set, computed from its records alone (the dataset card's "Question quality" part).

* relation mix: the subgraph edges by what their relation says: ``text`` (a phrase taken from the
  sentence that carries the edge, ``"{src} is the capital of {dst}"``), ``infobox`` (a field),
  ``link`` or ``mention`` (the pages are only linked);
* typed-clue share: the share of relational clues that state a typed relation (a text phrase;
  an infobox field is counted apart);
* question length in words (median, max) and relative-clause nesting: the most relative-clause
  markers (``who``, ``whose``, ``which``, ``that is``, ``where``, ``mentioned in the article on``,
  ``linked with``) in one sentence of the question, an upper bound of how deep its clauses nest.

The measures also read the older records (before relation phrases existed), so a set can be
compared with its predecessor: :func:`quality` works on any list of records.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from typing import Any

TEXT_MARK = "{src}"
_UNTYPED = ("link", "mention", "links to", "")
_RELATIVE = re.compile(
    r"\b(?:who|whom|whose|which|where|that (?:is|was|are|were|has|had))\b"
    r"|\bmentioned in the article on\b|\blinked with\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.?!])\s+(?=[A-Z\"])")
_ASKING = re.compile(r"^(?:Which|What|Who|Where)\b")
_OLD_UNTYPED = re.compile(r"\bmentions\b|\bmentioned in the article on\b")


def relation_kind(relation: str) -> str:
    """``text`` for a sentence template, ``link``/``mention`` for a bare link, ``infobox`` for a field name."""
    if TEXT_MARK in relation:
        return "text"
    if relation in ("link", "mention"):
        return relation
    return "link" if relation in _UNTYPED else "infobox"


def words(text: str) -> int:
    """Number of words (runs of letters or digits) of a text."""
    return len(re.findall(r"[\w’'-]+", text))


def nesting(question: str) -> int:
    """The most relative-clause markers in one sentence of ``question`` (a sentence's opening interrogative,
    "Which city ...?", is not one)."""
    return max((len(_RELATIVE.findall(_ASKING.sub("", s))) for s in _SENTENCE.split(question)), default=0)


def _clue_kind(clue: dict[str, Any]) -> str:
    """The relation kind of a relational clue (its ``relation`` field; older records: read from the text)."""
    rel = clue.get("relation")
    if rel is not None:
        return relation_kind(str(rel))
    return "mention" if _OLD_UNTYPED.search(clue.get("text", "")) else "infobox"


def quality(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The quality measures of a set of records (see the module docstring)."""
    edges = Counter(relation_kind(e["relation"]) for r in records for e in r["subgraph"]["edges"])
    rel = [_clue_kind(c) for r in records for c in r["clues"] if c["type"] == "relational"]
    kinds = Counter(rel)
    lengths = [words(r["question"]) for r in records]
    nests = [nesting(r["question"]) for r in records]
    return {
        "edge_relations": dict(sorted(edges.items())),
        "relational_clues": len(rel),
        "relational_clue_kinds": dict(sorted(kinds.items())),
        "typed_clue_share": kinds["text"] / len(rel) if rel else 0.0,
        "typed_or_infobox_share": (kinds["text"] + kinds["infobox"]) / len(rel) if rel else 0.0,
        "question_words_median": statistics.median(lengths) if lengths else 0,
        "question_words_max": max(lengths, default=0),
        "nesting_max": max(nests, default=0),
        "nesting_over_2": sum(n > 2 for n in nests),
        "sentences_median": statistics.median(len(_SENTENCE.split(r["question"])) for r in records) if records else 0,
    }


def render_quality(q: dict[str, Any], before: dict[str, Any] | None = None) -> list[str]:
    """Markdown lines of the quality measures, with a ``before`` column when a previous set's are given."""
    rows = [
        (
            "relational clues with a typed relation phrase",
            f"{q['typed_clue_share']:.1%}",
            before and f"{before['typed_clue_share']:.1%}",
        ),
        (
            "... with a phrase or an infobox field",
            f"{q['typed_or_infobox_share']:.1%}",
            before and f"{before['typed_or_infobox_share']:.1%}",
        ),
        ("median question length (words)", q["question_words_median"], before and before["question_words_median"]),
        ("max question length (words)", q["question_words_max"], before and before["question_words_max"]),
        ("most relative clauses in one sentence", q["nesting_max"], before and before["nesting_max"]),
        ("questions with more than 2 in one sentence", q["nesting_over_2"], before and before["nesting_over_2"]),
        ("median sentences per question", q["sentences_median"], before and before["sentences_median"]),
        ("subgraph edges by relation kind", q["edge_relations"], before and before["edge_relations"]),
    ]
    head = ["| measure | this set |" + (" before |" if before else ""), "|---|---:|" + ("---:|" if before else "")]
    return head + [f"| {name} | {now} |" + (f" {was} |" if before else "") for name, now, was in rows] + [""]
