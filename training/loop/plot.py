"""``rounds.png``: how the feedback loop's task set evolved, one point per round (matplotlib, headless)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


def plot_rounds(rounds: Sequence[dict[str, Any]], path: Path) -> Path:
    """Three panels: set size with retired / added counts; mean pass rate and mean difficulty; uncertainty-type mix.

    Args:
        rounds: The entries of ``rounds.jsonl`` (round 0 = the starting set).
        path: Where the PNG goes.

    Returns:
        ``path``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = [r["round"] for r in rounds]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    ax = axes[0]
    ax.plot(x, [r["distinct"] for r in rounds], "o-", label="distinct active tasks")
    width = 0.2
    for i, (key, label) in enumerate(
        [
            ("n_retired_solved", "retired: solved"),
            ("n_retired_unsolved", "retired: unsolved"),
            ("n_returned", "returned"),
            ("n_added", "added (synthesized)"),
        ]
    ):
        ax.bar([v + (i - 1.5) * width for v in x], [r.get(key, 0) for r in rounds], width, label=label)
    ax.set(xlabel="round", ylabel="tasks", title="task set", xticks=x)
    ax.legend(fontsize=7)
    ax = axes[1]
    ax.plot(
        x,
        [r["mean_pass_rate"] if r["mean_pass_rate"] is not None else float("nan") for r in rounds],
        "o-",
        label="mean pass rate (judged tasks)",
    )
    ax.set(xlabel="round", ylabel="pass rate", ylim=(-0.05, 1.05), title="pass rate and difficulty", xticks=x)
    twin = ax.twinx()
    twin.plot(
        x,
        [r["mean_difficulty"] if r["mean_difficulty"] is not None else float("nan") for r in rounds],
        "s--",
        color="tab:red",
        label="mean difficulty score",
    )
    twin.set_ylabel("difficulty score")
    ax.legend(loc="upper left", fontsize=7)
    twin.legend(loc="upper right", fontsize=7)
    ax = axes[2]
    types = sorted({u for r in rounds for u in r.get("uncertainty_types", {})})
    bottom = [0.0] * len(rounds)
    for u in types:
        share = [r["uncertainty_types"].get(u, 0) / max(1, r["distinct"]) for r in rounds]
        ax.bar(x, share, bottom=bottom, label=u)
        bottom = [b + s for b, s in zip(bottom, share)]
    ax.set(xlabel="round", ylabel="uncertainty types per task", title="uncertainty-type mix", xticks=x)
    if types:
        ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path
