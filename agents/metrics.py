"""Metrics of an evaluation run: pass@k (unbiased), EM / F1 / judge, turns, tools, errors, tokens, time.

pass@k uses the unbiased estimator of Chen et al. (2021): with ``n`` samples of which ``c`` are
correct, ``pass@k = 1 - C(n-c, k) / C(n, k)``, averaged over tasks (tasks with fewer than ``k``
samples are left out of that k). An episode is correct when its judge score is 1 when a judge
was used, else when its answer matches the gold answer or an alias exactly (normalised EM).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one task.

    Args:
        n: Samples drawn.
        c: Correct samples among them.
        k: The k of pass@k (``1 <= k <= n``).

    Returns:
        The probability that at least one of ``k`` samples drawn without replacement is correct.

    Raises:
        ValueError: If not ``0 <= c <= n`` and ``1 <= k <= n``.
    """
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"pass_at_k needs 0 <= c <= n and 1 <= k <= n; got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def correct(record: dict[str, Any]) -> float:
    """The correctness of one episode (judge when present, else EM)."""
    judge = record.get("judge")
    return float(judge if judge is not None else record.get("em", 0.0))


def _mean(xs: Sequence[float]) -> float | None:
    return round(sum(xs) / len(xs), 4) if xs else None


def _accuracy(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {
        "episodes": len(records),
        "accuracy": _mean([correct(r) for r in records]),
        "em": _mean([r.get("em", 0.0) for r in records]),
        "f1": _mean([r.get("f1", 0.0) for r in records]),
    }


def _groups(records: Iterable[dict[str, Any]], key: str) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        md = r.get("metadata") or {}
        if key == "uncertainty_type":
            for u in md.get("uncertainty_types") or []:
                out[str(u)].append(r)
        elif key == "difficulty":
            d = md.get("difficulty")
            level = d.get("level") if isinstance(d, dict) else d
            if level is not None:
                out[str(level)].append(r)
        elif md.get(key) is not None:
            out[str(md[key])].append(r)
    return dict(sorted(out.items()))


def aggregate(records: Sequence[dict[str, Any]], ks: Sequence[int] = (1,)) -> dict[str, Any]:
    """All metrics of a set of trajectory records.

    Args:
        records: Trajectory records (several samples of a task share its ``task_id``).
        ks: The k values of pass@k to report.

    Returns:
        A JSON-ready dict (see docs/evaluation.md for the fields).
    """
    by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        by_task[r["task_id"]].append(r)
    counts = {t: (len(rs), sum(correct(r) >= 1.0 for r in rs)) for t, rs in by_task.items()}
    pass_k = {}
    for k in sorted(set(ks)):
        vals = [pass_at_k(n, c, k) for n, c in counts.values() if n >= k]
        pass_k[f"pass@{k}"] = round(sum(vals) / len(vals), 4) if vals else None
    actions = [s for r in records for s in r.get("steps", []) if s.get("purpose") in ("act", "force")]
    tool_steps = [s for s in actions if s.get("kind") == "tool_call"]
    tools: Counter[str] = Counter()
    for r in records:
        tools.update(r.get("tool_calls") or {})
    n = len(records) or 1
    out: dict[str, Any] = {
        "episodes": len(records),
        "tasks": len(by_task),
        "samples_per_task": max((c[0] for c in counts.values()), default=0),
        "pass@1": round(sum(c / m for m, c in counts.values()) / len(counts), 4) if counts else None,
        **{k: v for k, v in pass_k.items() if k != "pass@1"},
        "accuracy": _mean([correct(r) for r in records]),
        "em": _mean([r.get("em", 0.0) for r in records]),
        "f1": _mean([r.get("f1", 0.0) for r in records]),
        "judge": _mean([r["judge"] for r in records if r.get("judge") is not None]),
        "answered": _mean([float(r.get("prediction") is not None) for r in records]),
        "mean_turns": _mean([r.get("turns", 0) for r in records]),
        "mean_llm_calls": _mean([r.get("llm_calls", 0) for r in records]),
        "tool_calls_per_episode": {t: round(c / n, 4) for t, c in sorted(tools.items())},
        "tool_calls_total": dict(sorted(tools.items())),
        "format_validity": _mean([float(s.get("kind") != "invalid") for s in actions]),
        "tool_error_rate": _mean([float(bool(s.get("obs_error"))) for s in tool_steps]),
        "tool_errors": dict(sorted(Counter(s["obs_error"] for s in tool_steps if s.get("obs_error")).items())),
        "action_errors": dict(sorted(Counter(s["error"] for s in actions if s.get("error")).items())),
        "tokens": {
            "prompt_mean": _mean([r["tokens"]["prompt"] for r in records if "tokens" in r]),
            "completion_mean": _mean([r["tokens"]["completion"] for r in records if "tokens" in r]),
            "completion_total": sum(r["tokens"]["completion"] for r in records if "tokens" in r),
            "peak_context_mean": _mean([r["tokens"]["peak_context"] for r in records if "tokens" in r]),
        },
        "seconds": {
            "episode_mean": _mean([r["timings"]["total_seconds"] for r in records if "timings" in r]),
            "llm_mean": _mean([r["timings"]["llm_seconds"] for r in records if "timings" in r]),
            "env_mean": _mean([r["timings"]["env_seconds"] for r in records if "timings" in r]),
        },
        "summaries_mean": _mean([len(r.get("summaries") or []) for r in records]),
        "termination": dict(sorted(Counter(r.get("termination", "") for r in records).items())),
        # calls a fallback backend (the index, behind the real web) answered, and calls no backend answered
        "fallbacks": sum((r.get("tool_stats") or {}).get("fallbacks", 0) for r in records),
        "failures": sum((r.get("tool_stats") or {}).get("failures", 0) for r in records),
    }
    for key in ("uncertainty_type", "difficulty", "source"):
        groups = _groups(records, key)
        if groups:
            out[f"by_{key}"] = {g: _accuracy(rs) for g, rs in groups.items()}
    return out


def format_table(metrics: dict[str, Any], title: str = "") -> str:
    """The headline metrics as an aligned plain-text table (for the terminal)."""

    def f(v: Any) -> str:
        if v is None:
            return "-"
        if isinstance(v, float):
            return f"{v:.3f}"
        if isinstance(v, dict):
            return ", ".join(f"{k}={f(x)}" for k, x in v.items()) or "-"
        return str(v)

    rows = [(k, metrics.get(k)) for k in ("episodes", "tasks", "samples_per_task") if k in metrics]
    rows += [(k, v) for k, v in metrics.items() if k.startswith("pass@")]
    rows += [
        (k, metrics.get(k))
        for k in (
            "accuracy",
            "em",
            "f1",
            "judge",
            "answered",
            "format_validity",
            "tool_error_rate",
            "mean_turns",
            "mean_llm_calls",
            "summaries_mean",
            "tool_calls_per_episode",
        )
    ]
    tok, sec = metrics.get("tokens", {}), metrics.get("seconds", {})
    rows += [
        ("tokens/episode (prompt, completion)", f"{f(tok.get('prompt_mean'))}, {f(tok.get('completion_mean'))}"),
        (
            "seconds/episode (total, llm, env)",
            f"{f(sec.get('episode_mean'))}, {f(sec.get('llm_mean'))}, {f(sec.get('env_mean'))}",
        ),
        ("termination", metrics.get("termination")),
    ]
    if "run" in metrics:
        run = metrics["run"]
        rows += [("run wall seconds", run.get("wall_seconds")), ("episodes/s", run.get("episodes_per_second"))]
    for key in ("by_uncertainty_type", "by_difficulty", "by_source"):
        for g, m in (metrics.get(key) or {}).items():
            rows.append(
                (f"{key[3:]}={g}", f"acc {f(m['accuracy'])}  em {f(m['em'])}  f1 {f(m['f1'])}  (n={m['episodes']})")
            )
    width = max(len(k) for k, _ in rows)
    lines = [title] if title else []
    lines += [f"{k.ljust(width)}  {f(v)}" for k, v in rows]
    return "\n".join(lines)
