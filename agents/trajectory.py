"""Trajectory files: append-only JSONL, resumable, and convertible to SFT demonstrations.

One line per finished episode (the record built by :meth:`agents.loop.ReactAgent.episode`),
keyed by ``"{task_id}#{sample}"``. A line is written (and flushed) only when its episode has
finished, so an interrupted run leaves complete lines plus at most one cut-off line, which
:func:`load_records` skips; rerunning finishes the rest.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


class TrajectoryWriter:
    """Thread-safe appender of trajectory records.

    Args:
        path: The JSONL file (created with its folder if needed).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        if self.path.is_file() and self.path.stat().st_size:
            with self.path.open("rb") as f:  # a cut-off last line must not swallow the next record
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":
                    with self.path.open("a", encoding="utf-8") as g:
                        g.write("\n")

    def write(self, record: dict[str, Any]) -> None:
        """Append one record and flush it to disk."""
        line = json.dumps(record, ensure_ascii=False) + "\n"
        with self._lock, self.path.open("a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())


def load_records(path: str | Path) -> list[dict[str, Any]]:
    """The records of a trajectory file, one per key (the last one wins); unreadable lines are skipped.

    Args:
        path: The JSONL file (a missing file gives ``[]``).
    """
    path = Path(path)
    if not path.is_file():
        return []
    by_key: dict[str, dict[str, Any]] = {}
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                log.warning(
                    "%s:%d: skipping a cut-off or corrupt line (an interrupted write); that episode will be rerun",
                    path,
                    n,
                )
                continue
            if isinstance(rec, dict) and "key" in rec:
                by_key[rec["key"]] = rec
    return list(by_key.values())


def finished_keys(path: str | Path) -> set[str]:
    """Keys of the episodes already recorded in ``path``."""
    return {r["key"] for r in load_records(path)}


def sft_example(record: dict[str, Any], min_score: float = 1.0) -> dict[str, Any] | None:
    """A chat-format SFT demonstration from a successful episode, else ``None``.

    The messages are what the model saw and wrote (the Tongyi system prompt, the question,
    assistant turns, tool responses as user messages), ending with the assistant's answer.
    Episodes that were summarised (ReSum) or forced use their final context.

    Args:
        record: A trajectory record.
        min_score: Least ``correct`` (or ``em``) score to keep the episode.
    """
    score = record.get("correct", record.get("em", 0.0))
    if score is None or score < min_score or not record.get("termination", "").startswith(("answer", "forced_answer")):
        return None
    messages = record.get("context") or record.get("messages") or []
    if not messages or messages[-1]["role"] != "assistant":
        return None
    return {"messages": messages, "task_id": record["task_id"], "policy": record.get("policy"), "score": score}
