"""The ablation report: a fixed-width table for the terminal, ``results.md``, ``results.json`` and ``rewards.png``.

Example:
    >>> print(format_table([{"name": "base", "switch": "-", "final_reward": 0.25, "heldout_pass1": 0.1, "answer_rate": 0.5,
    ...                      "dropped": 0.0, "tokens": 1200, "wall_seconds": 3.5}]).splitlines()[2])
    base    -        0.250   0.100      0.50     0.00    1200     3.5
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: (header, result key, format) of each column.
COLUMNS = [
    ("config", "name", "{}"),
    ("switch", "switch", "{}"),
    ("reward", "final_reward", "{:.3f}"),
    ("pass@1", "heldout_pass1", "{:.3f}"),
    ("answered", "answer_rate", "{:.2f}"),
    ("dropped", "dropped", "{:.2f}"),
    ("tokens", "tokens", "{:.0f}"),
    ("wall s", "wall_seconds", "{:.1f}"),
]
QUICK_NOTE = (
    "--quick: a tiny random model on CPU, 2 steps per configuration, 2 held-out tasks. It checks the plumbing; "
    "the numbers mean nothing at that size."
)


def _cells(r: dict[str, Any]) -> list[str]:
    out = []
    for _, key, fmt in COLUMNS:
        v = r.get(key)
        out.append("-" if v is None else fmt.format(v))
    return out


def format_table(results: Sequence[dict[str, Any]]) -> str:
    """The results as a fixed-width table (text columns left-aligned, numbers right-aligned)."""
    rows = [[h for h, _, _ in COLUMNS]] + [_cells(r) for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    lines = []
    for k, row in enumerate(rows):
        cells = [c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown(results: Sequence[dict[str, Any]], note: str = "") -> str:
    """The results as a markdown table (with an optional note under it)."""
    head = "| " + " | ".join(h for h, _, _ in COLUMNS) + " |"
    rule = "|" + "|".join("---" if i < 2 else "---:" for i in range(len(COLUMNS))) + "|"
    body = ["| " + " | ".join(_cells(r)) + " |" for r in results]
    return "\n".join([head, rule, *body]) + (f"\n\n{note}\n" if note else "\n")


def plot_rewards(results: Sequence[dict[str, Any]], path: Path, title: str = "") -> Path:
    """One PNG with the train reward per step of every configuration."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    for r in results:
        pts = [(s, v) for s, v in r.get("curve", []) if v is not None]
        if pts:
            ax.plot([s for s, _ in pts], [v for _, v in pts], "o-", label=r["name"], markersize=3)
    ax.set(
        xlabel="optimiser step",
        ylabel="train reward (mean over the batch)",
        title=title or "GRPO ablation: reward vs step",
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def write_report(results: Sequence[dict[str, Any]], out: Path, note: str = "") -> dict[str, Path]:
    """``results.md``, ``results.json`` and ``rewards.png`` in ``out``; returns their paths."""
    paths = {"markdown": out / "results.md", "json": out / "results.json", "plot": out / "rewards.png"}
    clean = [{k: v for k, v in r.items() if k != "skipped"} for r in results]
    paths["markdown"].write_text(markdown(clean, note), encoding="utf-8")
    paths["json"].write_text(json.dumps({"note": note, "results": clean}, indent=1), encoding="utf-8")
    plot_rewards(clean, paths["plot"])
    return paths
