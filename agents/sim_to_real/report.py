"""The numbers of a sim-to-real report: one run's summary, the side-by-side table, the markdown and the PNG.

A run's summary is computed from its trajectory records (each carries the executor's ``tool_stats``
of its episode, written by :class:`agents.loop.ReactAgent`) and its :func:`agents.metrics.aggregate`
metrics. Upstream API calls are the backends' own counts of HTTP requests (every attempt, retries and
key rotations included); the cost is an estimate from :class:`ApiPrices`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from simweb_core.errors import ConfigError
from simweb_core.fields import help_field

COUNTERS = (
    "calls",
    "successes",
    "fallbacks",
    "failures",
    "cache_hits",
    "retries",
    "timeouts",
    "backend_errors",
    "short_circuits",
)


@dataclass(frozen=True)
class ApiPrices:
    """What one upstream call is assumed to cost (USD), for the report's estimate. Check your own plans' prices."""

    serper_usd_per_1k: float = help_field(
        1.00,
        (
            "Serper, per 1,000 queries (search or scholar): about $0.30-1.00 by volume; the small-plan price by "
            "default. Every request is counted, although Serper bills only successful ones (an upper bound)."
        ),
    )
    jina_usd_per_1m_tokens: float = help_field(
        0.02, "Jina Reader, per million output tokens (it bills the page text it returns)."
    )
    jina_tokens_per_page: int = help_field(
        10_000, "Assumed mean tokens of one page read (the report counts requests, not Jina's token usage)."
    )
    summariser_usd_per_1m_tokens: float = help_field(
        0.10,
        (
            "The page summariser ($API_BASE / $SUMMARY_MODEL_NAME), per million input tokens (a small hosted "
            "model such as Qwen3-30B-A3B; 0 for your own server)."
        ),
    )
    summariser_tokens_per_call: int = help_field(
        12_000, "Assumed mean tokens of one summariser call (the cut page plus the extractor prompt)."
    )

    def __post_init__(self) -> None:
        if (
            min(self.serper_usd_per_1k, self.jina_usd_per_1m_tokens, self.summariser_usd_per_1m_tokens) < 0
            or min(self.jina_tokens_per_page, self.summariser_tokens_per_call) < 0
        ):
            raise ConfigError(f"ApiPrices must not be negative, got {asdict(self)}")

    def cost(self, api: dict[str, int]) -> dict[str, float]:
        """Estimated USD per upstream for the request counts ``api`` (``serper``, ``jina``, ``summariser``), and ``total``."""
        usd = {
            "serper": api.get("serper", 0) * self.serper_usd_per_1k / 1000,
            "jina": api.get("jina", 0) * self.jina_tokens_per_page * self.jina_usd_per_1m_tokens / 1e6,
            "summariser": api.get("summariser", 0)
            * self.summariser_tokens_per_call
            * self.summariser_usd_per_1m_tokens
            / 1e6,
        }
        usd["total"] = sum(usd.values())
        return {k: round(v, 6) for k, v in usd.items()}


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100) by linear interpolation between closest ranks; ``None`` for no values.

    >>> percentile([1.0, 2.0, 3.0, 4.0], 50), percentile([5.0], 95), percentile([], 50)
    (2.5, 5.0, None)
    """
    if not values:
        return None
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _latency(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """p50 / p95 of the env step time of tool calls (ms), overall and per tool."""
    by_tool: dict[str, list[float]] = {}
    for r in records:
        for s in r.get("steps", []):
            if s.get("kind") == "tool_call":
                by_tool.setdefault(s.get("tool") or "?", []).append(1000 * float(s.get("env_seconds", 0.0)))
    every = [x for xs in by_tool.values() for x in xs]

    def pct(xs: list[float]) -> dict[str, float | None]:
        return {"p50_ms": _round(percentile(xs, 50)), "p95_ms": _round(percentile(xs, 95)), "n": len(xs)}

    return {**pct(every), "by_tool": {t: pct(xs) for t, xs in sorted(by_tool.items())}}


def _round(x: float | None, nd: int = 3) -> float | None:
    return None if x is None else round(x, nd)


def _tool_stats(records: Sequence[dict[str, Any]]) -> tuple[dict[str, int], dict[str, int]]:
    """The executor counters and upstream events summed over the episodes."""
    counts: Counter[str] = Counter()
    events: Counter[str] = Counter()
    for r in records:
        ts = r.get("tool_stats") or {}
        counts.update({k: int(ts.get(k, 0)) for k in COUNTERS})
        events.update(ts.get("events") or {})
    return {k: counts[k] for k in COUNTERS}, dict(sorted(events.items()))


def run_summary(records: Sequence[dict[str, Any]], metrics: dict[str, Any], prices: ApiPrices) -> dict[str, Any]:
    """One run (a policy on a backend) in the report's terms.

    Args:
        records: Its trajectory records (with ``tool_stats``).
        metrics: Their :func:`agents.metrics.aggregate`.
        prices: Per-call prices for the cost estimate.

    Returns:
        A JSON-ready dict: accuracy (``pass@k``, ``accuracy``, ``judge``), ``mean_turns``, ``tool_calls``,
        ``tool_errors``, the executor counters (``executor``, with ``reconciles``: calls = successes +
        fallbacks + failures), ``latency``, ``api`` (HTTP requests per upstream), ``events`` and ``cost_usd``.
    """
    counts, events = _tool_stats(records)
    api = {
        "serper": events.get("serper.http_requests", 0),
        "jina": events.get("jina.http_requests", 0),
        "summariser": events.get("jina.summariser_ok", 0) + events.get("jina.summariser_failures", 0),
    }
    return {
        "episodes": metrics.get("episodes"),
        "tasks": metrics.get("tasks"),
        **{k: v for k, v in metrics.items() if k.startswith("pass@")},
        "accuracy": metrics.get("accuracy"),
        "judge": metrics.get("judge"),
        "answered": metrics.get("answered"),
        "mean_turns": metrics.get("mean_turns"),
        "tool_calls": metrics.get("tool_calls_total", {}),
        "tool_error_rate": metrics.get("tool_error_rate"),
        "tool_errors": metrics.get("tool_errors", {}),
        "executor": {
            **counts,
            "reconciles": counts["calls"] == counts["successes"] + counts["fallbacks"] + counts["failures"],
        },
        "latency": _latency(records),
        "api": api,
        "raw_cache_hits": events.get("serper.raw_cache_hits", 0) + events.get("jina.raw_cache_hits", 0),
        "key_rotations": events.get("jina.key_rotations", 0),
        "events": events,
        "cost_usd": prices.cost(api),
    }


#: The rows of the side-by-side table: (label, path into a run summary).
ROWS = [
    ("pass@1", ("pass@1",)),
    ("accuracy", ("accuracy",)),
    ("answered", ("answered",)),
    ("mean turns", ("mean_turns",)),
    ("executor calls (queries + URLs)", ("executor", "calls")),
    ("tool error rate", ("tool_error_rate",)),
    ("successes", ("executor", "successes")),
    ("fallbacks", ("executor", "fallbacks")),
    ("failures", ("executor", "failures")),
    ("retries", ("executor", "retries")),
    ("timeouts", ("executor", "timeouts")),
    ("cache hits", ("executor", "cache_hits")),
    ("raw cache hits", ("raw_cache_hits",)),
    ("Jina key rotations", ("key_rotations",)),
    ("tool latency p50 ms", ("latency", "p50_ms")),
    ("tool latency p95 ms", ("latency", "p95_ms")),
    ("Serper requests", ("api", "serper")),
    ("Jina requests", ("api", "jina")),
    ("summariser calls", ("api", "summariser")),
    ("est. cost USD", ("cost_usd", "total")),
]


def _get(d: dict[str, Any], path: Sequence[str]) -> Any:
    for p in path:
        d = d.get(p) if isinstance(d, dict) else None  # type: ignore[assignment]
    return d


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "NO"
    if isinstance(v, float):
        return f"{v:.4f}".rstrip("0").rstrip(".") if abs(v) < 1 else f"{v:.1f}"
    if isinstance(v, dict):
        return ", ".join(f"{k} {_fmt(x)}" for k, x in v.items()) or "-"
    return str(v)


def markdown(report: dict[str, Any]) -> str:
    """The report as markdown: one sim | real table per policy, the pass@1 grid, the format check, the prices."""
    lines = [
        f"# Sim-to-real report ({report['mode']})",
        "",
        (
            f"Tasks: {report['tasks']} (split {report['split']}), {report['n_tasks']} tasks x k={report['k']}; "
            f"correctness by {'the judge ' + str(report['judge']) if report['judge'] else 'exact match'}."
        ),
        "",
    ]
    lines += ["## pass@1", "", "| policy | sim | real | real - sim |", "|---|---|---|---|"]
    for name, p in report["policies"].items():
        s, r = p["sim"].get("pass@1"), p["real"].get("pass@1")
        lines.append(
            f"| {name} | {_fmt(s)} | {_fmt(r)} | {_fmt(None if s is None or r is None else round(r - s, 4))} |"
        )
    for name, p in report["policies"].items():
        lines += ["", f"## {name}", "", "| | sim | real |", "|---|---|---|"]
        lines += [f"| {label} | {_fmt(_get(p['sim'], path))} | {_fmt(_get(p['real'], path))} |" for label, path in ROWS]
        for key in ("tool_calls", "tool_errors"):
            lines.append(f"| {key.replace('_', ' ')} | {_fmt(p['sim'][key])} | {_fmt(p['real'][key])} |")
        lines.append(
            f"| counts reconcile | {_fmt(p['sim']['executor']['reconciles'])} | {_fmt(p['real']['executor']['reconciles'])} |"
        )
    fc = report["format_check"]
    lines += [
        "",
        "## Format check (every observation parses with the Tongyi grammar)",
        "",
        "| backend | observations | parsed | forms |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {b} | {fc[b]['observations']} | {fc[b]['parsed']} | {_fmt(fc[b]['forms'])} |" for b in ("sim", "real")
    ]
    lines.append(f"\nResult: **{'passed' if fc['passed'] else 'FAILED'}**.")
    for b in ("sim", "real"):
        lines += [f"- {b} {f['key']} turn {f['turn']} ({f['tool']}): {f['problem']}" for f in fc[b]["failures"]]
    if report.get("mock"):
        m = report["mock"]
        lines += [
            "",
            "## Local mocks",
            "",
            f"Injected faults: {', '.join(m['faults'])}.",
            f"Requests the mocks received: Serper {m['received']['serper']}, Jina {m['received']['jina']}.",
        ]
    lines += ["", "## Assumed prices (USD; estimate only)", ""]
    lines += [f"- {k}: {v}" for k, v in report["prices"].items()]
    return "\n".join(lines) + "\n"


def plot(report: dict[str, Any], path: str | Path) -> Path | None:
    """A three-panel PNG (pass@1, tool calls by tool, upstream requests), or ``None`` without matplotlib."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(report["policies"])
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2))
    width = 0.38
    for j, backend in enumerate(("sim", "real")):
        xs = [i + (j - 0.5) * width for i in range(len(names))]
        axes[0].bar(xs, [report["policies"][n][backend].get("pass@1") or 0 for n in names], width, label=backend)
    axes[0].set_xticks(range(len(names)), names, fontsize=8)
    axes[0].set_ylim(0, 1.02)
    axes[0].set_title("pass@1")
    axes[0].legend(fontsize=8)
    tools = sorted({t for p in report["policies"].values() for b in ("sim", "real") for t in p[b]["tool_calls"]})
    for j, backend in enumerate(("sim", "real")):
        calls = [sum(p[backend]["tool_calls"].get(t, 0) for p in report["policies"].values()) for t in tools]
        axes[1].bar([i + (j - 0.5) * width for i in range(len(tools))], calls, width, label=backend)
    axes[1].set_xticks(range(len(tools)), tools, fontsize=8)
    axes[1].set_title("tool calls by tool (all policies)")
    axes[1].legend(fontsize=8)
    ups = ("serper", "jina", "summariser")
    for j, name in enumerate(names):
        real = report["policies"][name]["real"]
        axes[2].bar(
            [i + (j - (len(names) - 1) / 2) * (0.8 / len(names)) for i in range(3)],
            [real["api"][u] for u in ups],
            0.8 / len(names),
            label=f"{name} (${real['cost_usd']['total']:.4f})",
        )
    axes[2].set_xticks(range(3), ups, fontsize=8)
    axes[2].set_title("real-web requests (est. cost)")
    axes[2].legend(fontsize=7)
    fig.suptitle(f"sim vs real ({report['mode']}): {report['n_tasks']} tasks x k={report['k']}", fontsize=10)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
