"""A one-glance PNG of an evaluation run: accuracy vs turns, and accuracy per task type."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agents.metrics import correct


def plot_run(records: Sequence[dict[str, Any]], metrics: dict[str, Any], path: str | Path, title: str = "") -> Path:
    """Save a two-panel figure.

    Left: the share of episodes answered correctly within t turns (a solid line) and the
    distribution of episode lengths (bars). Right: accuracy per uncertainty type, difficulty or
    source (whichever the tasks carry, in that order), else per termination reason.

    Args:
        records: Trajectory records.
        metrics: Their :func:`agents.metrics.aggregate`.
        path: The PNG to write.
        title: Figure title.

    Returns:
        ``path``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    n = len(records) or 1
    max_t = max((r.get("turns", 0) for r in records), default=0)
    ts = list(range(0, max_t + 1))
    solved = [sum(correct(r) >= 1 and r.get("turns", 0) <= t for r in records) / n for t in ts]
    hist = [sum(r.get("turns", 0) == t for r in records) / n for t in ts]
    left.bar(ts, hist, color="#c7d7ea", label="episodes ending at t turns")
    left.step(ts, solved, where="post", color="#1f5fa8", linewidth=2, label="correct within t turns")
    left.set_xlabel("turns")
    left.set_ylabel("share of episodes")
    left.set_ylim(0, 1.02)
    left.set_title("accuracy vs turns")
    left.legend(loc="upper left", fontsize=8)
    groups = next((metrics[k] for k in ("by_uncertainty_type", "by_difficulty", "by_source") if metrics.get(k)), None)
    if groups:
        names = list(groups)
        right.barh(names, [groups[g]["accuracy"] or 0 for g in names], color="#1f5fa8")
        for i, g in enumerate(names):
            right.text(0.01, i, f"n={groups[g]['episodes']}", va="center", color="white", fontsize=8)
        right.set_xlim(0, 1)
        right.set_xlabel("accuracy")
        right.set_title("accuracy per task type")
    else:
        term = metrics.get("termination") or {}
        right.barh(list(term), [v / n for v in term.values()], color="#8a8a8a")
        right.set_xlim(0, 1)
        right.set_xlabel("share of episodes")
        right.set_title("how episodes ended")
    fig.suptitle(title or f"pass@1 {metrics.get('pass@1')}  |  {metrics.get('episodes')} episodes", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
