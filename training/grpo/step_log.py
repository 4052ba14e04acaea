"""What each GRPO step logs: a line of ``metrics.jsonl`` with the process's memory, the progress bar, and the per-step
table ``sim-web grpo`` prints at the end.

The memory columns come after handing the C heap's free pages back (:func:`trim_heap`), so ``memory/rss_gb`` is what
the run holds between steps and ``memory/peak_rss_gb`` the most it ever held during one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from training.grpo.memory import peak_rss_gb, rss_gb, trim_heap

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
