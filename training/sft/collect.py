"""Rejection sampling for the SFT cold start: keep only correct, clean, short, unique episodes of an eval run.

The episodes come from the evaluation harness (``sim-web eval`` / ``agents.harness.run_eval``), which runs any
policy (``oracle``, ``hf:PATH``, ``openai:MODEL``) on a task set, ``k`` samples per task, and writes one record
per episode to ``<run>/trajectories.jsonl`` next to the run's settings in ``<run>/run.json``. ``training`` does
not import ``agents`` (they are peers, see ``tests/test_layout.py``), so this module reads those files; the record
keys it relies on are ``key``, ``task_id``, ``correct``, ``termination``, ``turns``, ``steps`` (each with ``kind``
and ``obs_error``), ``summaries``, ``messages`` and ``metadata`` (``uncertainty_types``, ``difficulty.level``).

An episode is kept when, checked in this order (the first failed check is its reason):

1. ``over_turn_cap``: it stayed within ``max_turns`` agent turns and the turn budget did not stop or force it
   (with ``forced_answers``, an answer to Tongyi's forcing prompt on the last allowed call passes);
2. ``no_answer``: it ended with its own ``<answer>`` (not a forced one unless ``forced_answers``, not cut by the
   context, time or observation budget);
3. ``malformed``: every turn parsed (no step of kind ``invalid``);
4. ``tool_error``: no tool call failed on the agent's side (unknown page, bad arguments: ``obs_error``);
5. ``summarised``: the chat is the one the model saw (no ReSum rewrite);
6. ``incorrect``: its answer was judged correct (judge score, else exact match);
7. ``duplicate``: no earlier kept episode has the same message texts.

Example:
    >>> stats = AcceptStats()
    >>> stats.add({"metadata": {"uncertainty_types": ["counting"], "difficulty": {"level": "easy"}}}, None)
    >>> stats.table()["overall"]
    {'seen': 1, 'kept': 1, 'rate': 1.0}
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.turn import ANSWER, MAX_LLM_CALLS, TURN_CAP, forced
from sim_web.protocol import TOOL_NAMES
from simweb_core.errors import ConfigError
from simweb_core.fields import help_field

log = logging.getLogger(__name__)
REASONS = ("over_turn_cap", "no_answer", "malformed", "tool_error", "summarised", "incorrect", "duplicate")
#: Terminations that mean the turn budget ran out (besides ``forced_*:calls`` and the env's turn cap).
CAPPED = (MAX_LLM_CALLS,)
#: The termination of an answer given to the forcing prompt on the last allowed call.
FORCED_AT_CAP = forced("calls", answered=True)
TRAJECTORIES = "trajectories.jsonl"
RUN_FILE = "run.json"
#: The prompt style of a run whose identity names none (the harness records only a non-default style).
DEFAULT_PROMPT = "tongyi"


@dataclass(frozen=True)
class CollectConfig:
    """Which episodes of the harness runs become SFT demonstrations."""

    runs: tuple[str, ...] = help_field(
        (),
        (
            "Eval run folders (each with trajectories.jsonl and run.json), "
            "e.g. from `sim-web eval --split train --k 4 --out RUN`."
        ),
    )
    max_turns: int = help_field(12, "Turn cap: episodes with more agent turns (or stopped by a limit) are rejected.")
    min_score: float = help_field(1.0, "Least correctness score (judge, else exact match) to keep an episode.")
    forced_answers: bool = help_field(
        False,
        (
            "Also keep episodes answered under Tongyi's forcing prompt on "
            "the last allowed call (termination forced_answer:calls), as the "
            "model saw them (the prompt in place of the last tool response): "
            "demonstrations for a policy run with a small --max-llm-calls."
        ),
    )
    require_split: str | None = help_field(
        "train", ("Refuse runs on another task split (None = any); training on held-out tasks would leak the test set.")
    )

    def __post_init__(self) -> None:
        if isinstance(self.runs, str):
            raise ConfigError(
                f"CollectConfig.runs must be a tuple of folders, got the string {self.runs!r}; write runs=({self.runs!r},)"
            )
        if self.max_turns < 1:
            raise ConfigError(f"CollectConfig.max_turns must be >= 1, got {self.max_turns}")
        if not 0.0 < self.min_score <= 1.0:
            raise ConfigError(
                f"CollectConfig.min_score must be in (0, 1], got {self.min_score} (1.0 keeps only fully correct answers)"
            )


def _level(record: dict[str, Any]) -> str:
    difficulty = (record.get("metadata") or {}).get("difficulty")
    if isinstance(difficulty, dict):
        return str(difficulty.get("level", "unknown"))
    return str(difficulty) if difficulty is not None else "unknown"


@dataclass
class AcceptStats:
    """Acceptance counts overall, per rejection reason, per uncertainty type and per difficulty level."""

    seen: int = 0
    kept: int = 0
    reasons: Counter = field(default_factory=Counter)
    by_group: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))

    def add(self, record: dict[str, Any], reason: str | None) -> None:
        """Count one episode; ``reason`` is ``None`` when it was kept."""
        self.seen += 1
        self.kept += reason is None
        if reason:
            self.reasons[reason] += 1
        groups = [f"uncertainty_type={u}" for u in (record.get("metadata") or {}).get("uncertainty_types") or []]
        for g in groups + [f"difficulty={_level(record)}"]:
            self.by_group[g][0] += 1
            self.by_group[g][1] += reason is None

    def table(self) -> dict[str, Any]:
        """``{"overall": {...}, "rejected": {reason: n}, "groups": {group: {seen, kept, rate}}}``."""

        def rate(seen: int, kept: int) -> float | None:
            return round(kept / seen, 4) if seen else None

        return {
            "overall": {"seen": self.seen, "kept": self.kept, "rate": rate(self.seen, self.kept)},
            "rejected": {r: self.reasons.get(r, 0) for r in REASONS},
            "groups": {g: {"seen": s, "kept": k, "rate": rate(s, k)} for g, (s, k) in sorted(self.by_group.items())},
        }


def chat_key(messages: Sequence[dict[str, Any]]) -> str:
    """A digest of a chat's roles and texts (two episodes with the same key are duplicates)."""
    flat = json.dumps([[m.get("role"), m.get("content")] for m in messages], ensure_ascii=False)
    return hashlib.sha256(flat.encode("utf-8")).hexdigest()


def reject_reason(record: dict[str, Any], cfg: CollectConfig) -> str | None:
    """Why an episode is not a demonstration (``None`` when it passes every check but the duplicate one).

    Args:
        record: A harness trajectory record.
        cfg: The turn cap and the least score.

    Returns:
        One of :data:`REASONS` (not ``duplicate``), or ``None``.
    """
    steps = record.get("steps") or []
    term = str(record.get("termination", ""))
    forced_ok = cfg.forced_answers and term == FORCED_AT_CAP and bool(record.get("context"))
    capped = term in CAPPED or ((term.endswith(":calls") or term == TURN_CAP) and not forced_ok)
    if int(record.get("turns", len(steps))) > cfg.max_turns or capped:
        return "over_turn_cap"
    if term != ANSWER and not forced_ok:
        return "no_answer"
    if any(s.get("kind") == "invalid" for s in steps):
        return "malformed"
    if any(s.get("obs_error") for s in steps):
        return "tool_error"
    messages = demo_messages(record)
    if record.get("summaries") or not messages or messages[-1].get("role") != "assistant":
        return "summarised"
    score = record.get("correct", record.get("em"))
    if score is None or float(score) < cfg.min_score:
        return "incorrect"
    return None


def demo_messages(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The chat to train on: what the model saw (``context``) for a forced answer, else the env's ``messages``."""
    if record.get("termination") == FORCED_AT_CAP and record.get("context"):
        return record["context"]
    return record.get("messages") or []


def select(records: Iterable[dict[str, Any]], cfg: CollectConfig) -> tuple[list[dict[str, Any]], AcceptStats]:
    """Filter harness records into demonstrations.

    Args:
        records: Trajectory records (several runs may be chained; order decides which duplicate is kept).
        cfg: The filter settings.

    Returns:
        The kept records, in input order, and the acceptance statistics.
    """
    stats = AcceptStats()
    kept: list[dict[str, Any]] = []
    seen_chats: set[str] = set()
    for rec in records:
        reason = reject_reason(rec, cfg)
        if reason is None:
            key = chat_key(demo_messages(rec))
            reason = "duplicate" if key in seen_chats else None
            seen_chats.add(key)
        stats.add(rec, reason)
        if reason is None:
            kept.append({**rec, "messages": demo_messages(rec)})
    return kept, stats


def load_run(run: str | Path, cfg: CollectConfig) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A harness run's settings (``run.json`` identity) and its records, after checking split and tools.

    Raises:
        ConfigError: When the folder is not a harness run, is on another split, or names tools the env does not have.
    """
    run = Path(run)
    if not (run / RUN_FILE).is_file() or not (run / TRAJECTORIES).is_file():
        raise ConfigError(
            f"{run} is not an eval run folder: expected {RUN_FILE} and {TRAJECTORIES} there "
            "(make one with `sim-web eval --split train --out FOLDER`)"
        )
    identity = json.loads((run / RUN_FILE).read_text(encoding="utf-8")).get("identity", {})
    if cfg.require_split and identity.get("split") != cfg.require_split:
        raise ConfigError(
            f"{run} ran on split {identity.get('split')!r}, expected {cfg.require_split!r}: SFT data comes from the "
            "train split (rerun the eval with --split train, or set require_split=None)"
        )
    extra = sorted(set(identity.get("tools") or ()) - set(TOOL_NAMES))
    if extra:
        raise ConfigError(
            f"{run} ran with tools {extra}, which are not tools of the env {TOOL_NAMES}: the dataset's system "
            "prompt would describe tools a trained policy cannot call; rerun the eval with the env's tools"
        )
    records = []
    with (run / TRAJECTORIES).open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                log.warning("%s:%d: skipping a cut-off line", run / TRAJECTORIES, n)
    by_key = {r["key"]: r for r in records if isinstance(r, dict) and "key" in r}  # a resumed run: the last line wins
    return identity, list(by_key.values())


@dataclass
class CollectResult:
    """What :func:`collect` kept and how it judged the rest."""

    kept: list[dict[str, Any]]
    stats: AcceptStats
    sources: list[dict[str, Any]]

    @property
    def prompt(self) -> str:
        """The system prompt style of the source runs (one style: :func:`collect` refuses a mix)."""
        return str(self.sources[0]["prompt"]) if self.sources else DEFAULT_PROMPT


def collect(cfg: CollectConfig) -> CollectResult:
    """Read every run of ``cfg.runs`` and keep the demonstrations.

    Returns:
        The kept records, the statistics and each run's policy / split / tools / prompt style / k.

    Raises:
        ConfigError: When no run is given, a run is unusable (see :func:`load_run`) or the runs used different
            system prompt styles (``sim-web eval --prompt``).
    """
    if not cfg.runs:
        raise ConfigError(
            "CollectConfig.runs is empty: give at least one eval run folder (sim-web eval --split train --out RUN)"
        )
    records: list[dict[str, Any]] = []
    sources = []
    for run in cfg.runs:
        identity, recs = load_run(run, cfg)
        samples = Counter(r["task_id"] for r in recs)
        sources.append(
            {
                "run": str(run),
                "policy": identity.get("policy"),
                "split": identity.get("split"),
                "tools": identity.get("tools"),
                "prompt": identity.get("prompt", DEFAULT_PROMPT),
                "episodes": len(recs),
                "tasks": len(samples),
                "k": max(samples.values(), default=0),
            }
        )
        records += recs
    _check_one_prompt(sources)
    kept, stats = select(records, cfg)
    log.info("kept %d of %d episodes", stats.kept, stats.seen)
    return CollectResult(kept, stats, sources)


def _check_one_prompt(sources: Sequence[dict[str, Any]]) -> None:
    """Refuse runs with different system prompt styles: one dataset would teach two prompts.

    Raises:
        ConfigError: Naming the runs of each style.
    """
    styles: dict[str, list[str]] = defaultdict(list)
    for s in sources:
        styles[s["prompt"]].append(s["run"])
    if len(styles) > 1:
        found = "; ".join(f"{style}: {', '.join(runs)}" for style, runs in sorted(styles.items()))
        raise ConfigError(
            f"the runs used different system prompt styles ({found}); collect runs of one style (the --prompt "
            "of `sim-web eval`), one dataset per style"
        )


def format_stats(stats: AcceptStats) -> str:
    """The acceptance table as aligned text."""
    t = stats.table()
    o = t["overall"]
    lines = [f"{'kept':<34} {o['kept']}/{o['seen']} ({o['rate']})"]
    lines += [f"{'rejected: ' + r:<34} {n}" for r, n in t["rejected"].items()]
    lines += [f"{g:<34} {v['kept']}/{v['seen']} ({v['rate']})" for g, v in t["groups"].items()]
    return "\n".join(lines)
