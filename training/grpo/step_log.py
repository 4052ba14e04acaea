"""What each GRPO step logs: a line of ``metrics.jsonl`` with the process's memory, the progress bar, and the per-step
table ``sim-web grpo`` prints at the end.

The memory columns come after handing the C heap's free pages back (:func:`trim_heap`), so ``memory/rss_gb`` is what
the run holds between steps and ``memory/peak_rss_gb`` the most it ever held during one.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from pathlib import Path
from typing import Any

#: Columns of the metrics table: (header, log key, format).
TABLE = [
    ("step", "step", "{:>4d}"),
    ("reward", "agent/reward_mean", "{:6.3f}"),
    ("answered", "agent/answer_rate", "{:8.2f}"),
    ("dropped", "agent/frac_dropped", "{:7.2f}"),
    ("0-var", "agent/frac_zero_variance_groups", "{:5.2f}"),
    ("calls", "agent/tool_calls_per_episode", "{:5.2f}"),
    ("tool-err", "agent/tool_error_rate", "{:8.2f}"),
    ("tokens", "agent/generated_tokens", "{:6.0f}"),
    ("dupo", "agent/dupo_duplicated_groups", "{:4.0f}"),
    ("gen s", "time/generation", "{:6.1f}"),
    ("tool s", "time/tool", "{:6.2f}"),
    ("train s", "time/training", "{:7.1f}"),
    ("rss GB", "memory/rss_gb", "{:6.2f}"),
]


def peak_rss_gb() -> float | None:
    """The process's peak resident memory so far in GB (None where ``resource`` does not report it, e.g. Windows): a run
    whose memory grows step by step shows it in ``metrics.jsonl`` before the machine runs out."""
    try:
        import resource
    except ImportError:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1e9 if sys.platform == "darwin" else 1e6), 3)  # bytes on macOS, kilobytes on Linux


def rss_gb() -> float | None:
    """The process's resident memory now in GB, from ``/proc/self/statm`` (None where there is none: not Linux)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e9


@functools.cache
def _malloc_trim() -> Any:
    """glibc's ``malloc_trim`` from the C library already loaded in the process, looked up once (None without one)."""
    import ctypes

    try:
        return getattr(ctypes.CDLL(None), "malloc_trim", None)
    except (OSError, TypeError):  # Windows: no handle for the process itself
        return None


def trim_heap() -> float | None:
    """Hand the C heap's free pages back to the system (glibc's ``malloc_trim``); returns the GB it gave back, or None
    where the C library has no ``malloc_trim`` (musl, macOS, Windows).

    A training step frees tensors of many sizes; glibc keeps the freed pages in its heap, so a long run's resident
    memory grows step after step while little of it is in use. Trimming after each step keeps it near what is.
    """
    trim = _malloc_trim()
    before = rss_gb()
    if trim is None or before is None:
        return None
    trim(0)
    after = rss_gb()
    return None if after is None else round(before - after, 3)


def metrics_callback(path: Path, max_steps: int) -> Any:
    """A callback that appends each step's logs to ``metrics.jsonl`` (with the process's memory, after handing the C
    heap's free pages back: :func:`trim_heap`) and shows a progress bar with the key numbers."""
    from tqdm import tqdm
    from transformers import TrainerCallback

    class AgentProgress(TrainerCallback):
        bar: Any = None

        def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if state.is_world_process_zero:
                self.bar = tqdm(total=max_steps, initial=state.global_step, desc="grpo", unit="step")

        def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **kw: Any) -> None:
            if not state.is_world_process_zero or not logs or "agent/reward_mean" not in logs:
                return
            logs["memory/trimmed_gb"] = trim_heap()
            logs["memory/rss_gb"] = rss_gb()
            logs["memory/peak_rss_gb"] = peak_rss_gb()
            with path.open("a", encoding="utf-8") as f:
                f.write(json.dumps({"step": state.global_step, **logs}) + "\n")
            if self.bar is not None:
                self.bar.n = state.global_step
                shown = {"reward": logs["agent/reward_mean"], "answered": logs.get("agent/answer_rate")}
                self.bar.set_postfix({k: f"{v:.3f}" for k, v in shown.items() if v is not None})
                self.bar.refresh()

        def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if self.bar is not None:
                self.bar.close()

    return AgentProgress()


def format_table(rows: list[dict[str, Any]]) -> str:
    """The per-step metrics as a fixed-width table."""
    lines = ["  ".join(h for h, _, _ in TABLE)]
    for r in rows:
        cells = []
        for h, key, fmt in TABLE:
            v = r.get(key)
            cells.append(fmt.format(v).rjust(len(h)) if isinstance(v, (int, float)) else "-".rjust(len(h)))
        lines.append("  ".join(cells))
    return "\n".join(lines)
