"""Per-episode diagnostics of a ``sim-web learn`` eval, and the rates the learning report builds from them.

What an episode did besides its score: how many searches, whether a later search names the bridge entity B (the hop a
bridge question needs), whether a tool response showed the gold answer (a wrong episode that saw it failed at
reading), and whether a later search names the gold answer (a wrong episode that did went past an answer it had
found: one hop too many); and, for a model trained on ``oracle:plan`` demonstrations, whether its first thought planned
the number of facts the question chains.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from sim_web.env.rewards import echoes_question
from training.learn.stats import wilson
from wiki_index.types import bare_title

_CALL = re.compile(r"<tool_call>\s*(\{.*?\})\s*(?:</tool_call>|$)", re.DOTALL)


def tier_of(task_id: str) -> str:
    """``lookup-...`` -> ``lookup`` (the tiers' id prefix)."""
    return task_id.split("-", 1)[0]


def search_queries(messages: list[dict[str, Any]]) -> list[str]:
    """The search queries of an episode's assistant turns, in order.

    >>> search_queries([{"role": "assistant", "content": '<tool_call>{"name": "search", "arguments": '
    ...                 '{"query": ["Kabul capital"]}}</tool_call>'}])
    ['Kabul capital']
    """
    out = []
    for m in messages:
        if m.get("role") != "assistant":
            continue
        for call in _CALL.findall(str(m.get("content", ""))):
            try:
                data = json.loads(call)
            except json.JSONDecodeError:
                continue
            if isinstance(data, dict) and data.get("name") == "search":
                q = (data.get("arguments") or {}).get("query")
                out += [str(x) for x in (q if isinstance(q, list) else [q]) if x]
    return out


def planned_facts(messages: list[dict[str, Any]]) -> int | None:
    """How many facts the episode's first assistant turn says the question chains (``oracle:plan``'s words), or
    ``None`` when it says nothing of the kind.

    >>> planned_facts([{"role": "user", "content": "Q"}, {"role": "assistant", "content":
    ...     "<think>The question chains two facts. I search for the first fact.</think>"}])
    2
    """
    from agents.policies.oracle import planned_facts as stated

    first = next((str(m.get("content", "")) for m in messages if m.get("role") == "assistant"), "")
    return stated(first.split("</think>")[0])


def bridge_entities(run: Path) -> dict[str, str]:
    """Bridge task id -> its middle entity B (without a qualifier), read from the task set the evals ran on."""
    for folder in sorted(run.glob("eval-*")):
        meta = folder / "run.json"
        if not meta.is_file():
            continue
        tasks = Path(str(json.loads(meta.read_text(encoding="utf-8")).get("config", {}).get("tasks") or ""))
        if not tasks.is_file():
            continue
        out = {}
        for line in tasks.read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            if r.get("tier") == "bridge" and r.get("provenance"):
                out[r["id"]] = bare_title(str(r["provenance"][0]["object"]))
        return out
    return {}


def _gold_names(record: dict[str, Any]) -> list[str]:
    """The gold answer(s) and aliases of an episode record, lower-cased."""
    gold = record.get("gold") or []
    return [
        str(g).lower() for g in (gold if isinstance(gold, list) else [gold]) + list(record.get("aliases") or []) if g
    ]


def answer_shown(record: dict[str, Any]) -> bool:
    """Whether a tool response of the episode contains the gold answer or an alias (case-insensitive): the search
    found it, whatever the final answer. A wrong episode with the answer shown failed at reading, not at searching.

    >>> answer_shown({"gold": "Namibia", "aliases": [], "messages": [{"role": "user", "content": "Windhoek?"},
    ...     {"role": "user", "content": "<tool_response>Windhoek is the capital of Namibia.</tool_response>"}]})
    True
    """
    seen = " ".join(
        str(m.get("content", "")).lower()
        for m in (record.get("messages") or [])[1:]
        if m.get("role") in ("user", "tool") and "<tool_response>" in str(m.get("content", ""))
    )
    return any(n in seen for n in _gold_names(record))


def searched_past(record: dict[str, Any], later: list[str] | None = None) -> bool:
    """Whether a search after the first names the gold answer or an alias: the episode had found the answer and
    searched on from it. On a one-hop question that ends wrong, it is one hop too many (``Zagreb`` -> ``Croatia``,
    then ``Croatia is a country in which region?`` and the answer ``Europe``).

    Args:
        record: An eval episode record (``gold``, ``aliases``, ``messages``).
        later: The episode's searches after the first, when the caller has parsed them already (None: parse them).

    Returns:
        True when one of those searches contains the gold answer or an alias (case-insensitive).

    >>> searched_past({"gold": "Croatia", "messages": [{"role": "assistant", "content":
    ...     '<tool_call>{"name": "search", "arguments": {"query": ["Zagreb capital of"]}}</tool_call>'},
    ...     {"role": "assistant", "content":
    ...     '<tool_call>{"name": "search", "arguments": {"query": ["Croatia region"]}}</tool_call>'}]})
    True
    """
    if later is None:
        later = search_queries(record.get("messages") or [])[1:]
    return _names_any(later, _gold_names(record))


def _names_any(queries: list[str], names: list[str]) -> bool:
    """Whether one of ``queries`` contains one of the lower-cased ``names`` (case-insensitive)."""
    return any(n in q.lower() for q in queries for n in names)


def load_stage(folder: Path, bridges: dict[str, str] | None = None) -> dict[str, dict[str, Any]] | None:
    """Task id -> ``{correct, answered, tool_calls, searches, names_bridge, shown, past, restated, plan, answer}`` of
    one eval run, or ``None`` when it has not run. ``names_bridge``: on a bridge task, whether a search after the first
    names the middle entity B (the hop a solver makes once the first search has shown B); ``None`` on other tasks.
    ``shown``: :func:`answer_shown`; ``past``: :func:`searched_past`; ``restated``: whether the final answer restates
    the question (:func:`~sim_web.env.rewards.echoes_question`: a clue's own name); ``plan``: whether the first
    thought's :func:`planned_facts` is the task's oracle searches (``None`` when it states no plan); ``answer``: the
    gold answer, casefolded (tasks that share it are not independent samples: the report resamples them together)."""
    from agents.trajectory import load_records

    path = folder / "trajectories.jsonl"
    if not path.is_file():
        return None
    out = {}
    for r in load_records(path):
        score = r.get("correct", r.get("em", 0.0)) or 0.0
        b = (bridges or {}).get(r["task_id"])
        later = search_queries(r.get("messages") or [])[1:]
        out[r["task_id"]] = {
            "correct": int(score >= 1.0),
            "answered": int(str(r.get("termination", "")).startswith(("answer", "forced_answer"))),
            "tool_calls": sum((r.get("tool_calls") or {}).values()),
            "searches": int((r.get("tool_calls") or {}).get("search", 0)),
            "names_bridge": _names_any(later, [b.lower()]) if b else None,
            "shown": answer_shown(r),
            "past": searched_past(r, later),
            "restated": echoes_question(str(r.get("prediction") or ""), str(r.get("question") or "")),
            "plan": _plan_right(r),
            "answer": str(r.get("gold", "")).casefold(),
            "form": str((r.get("metadata") or {}).get("form") or "template"),
            "form_seen": bool((r.get("metadata") or {}).get("form_seen", True)),
        }
    return out


def _plan_right(record: dict[str, Any]) -> bool | None:
    """Whether the episode's stated plan (:func:`planned_facts`) is its task's ``difficulty.oracle_searches``."""
    planned = planned_facts(record.get("messages") or [])
    if planned is None:
        return None
    return planned == ((record.get("metadata") or {}).get("difficulty") or {}).get("oracle_searches")


def rates(rows: dict[str, dict[str, Any]], ids: list[str]) -> dict[str, Any]:
    """pass@1 of ``ids`` with its 95% Wilson interval, and the diagnostics' rates over the same tasks."""
    k, n = sum(rows[i]["correct"] for i in ids), len(ids)
    hops = [i for i in ids if rows[i].get("names_bridge") is not None]
    lo, hi = wilson(k, n)

    def share(count: float, of: int = n) -> float | None:
        return round(count / of, 4) if of else None

    wrong = [rows[i] for i in ids if not rows[i]["correct"]]
    return {
        "n": n,
        "solved": k,
        "pass@1": share(k),
        "ci95": [round(lo, 4), round(hi, 4)],
        "answer_rate": share(sum(rows[i]["answered"] for i in ids)),
        "tool_calls": round(sum(rows[i]["tool_calls"] for i in ids) / n, 3) if n else None,
        "two_searches": share(sum(rows[i].get("searches", 0) >= 2 for i in ids)),
        "names_bridge": share(sum(bool(rows[i].get("names_bridge")) for i in hops), len(hops)),
        "shown_missed": share(sum(bool(r.get("shown")) for r in wrong)),
        "past_missed": share(sum(bool(r.get("past")) for r in wrong)),
        "restated_missed": share(sum(bool(r.get("restated")) for r in wrong)),
        "plan_right": share(sum(bool(rows[i].get("plan")) for i in ids))
        if any(rows[i].get("plan") is not None for i in ids)
        else None,
    }
