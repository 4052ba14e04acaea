"""What a GRPO output folder was started with, so a later sitting resumes that same run or is refused.

A folder's checkpoints hold weights, optimiser state and data order, not the settings that made them. Without a
record, a sitting with another seed, start model or task set would resume (or, once finished, reuse) a run it did not
start and report it as its own. The sitting that starts a folder writes its recipe to ``recipe.json``; later sittings
may differ only in :data:`SITTING_KEYS`, the settings that say how long or where to run, not what is trained.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from typing import Any

from simweb_core.errors import ConfigError
from simweb_core.same import same_setting

log = logging.getLogger(__name__)

RECIPE_FILE = "recipe.json"
SITTING_KEYS = frozenset(
    {
        "name",
        "output_dir",
        "index_dir",
        "resume",
        "threads",
        "heap_return_mib",
        "trainer.max_steps",
        "trainer.save_steps",
        "trainer.keep_checkpoints",
        "trainer.micro_batch",
        "trainer.gradient_checkpointing",
        "prefilter.verdict",
    }
)
"""Recipe keys a later sitting may change: stopping early or going on (``max_steps``), checkpoint cadence, threads,
memory trades, the folder's own path (a run folder may be moved or linked), and a shared DUPO verdict (a content-keyed
cache of the same filter: ``sim-web ablate`` points a resumed configuration at it)."""


def flat(recipe: Any) -> dict[str, Any]:
    """The recipe as dotted keys with JSON values (``{"trainer.max_steps": 45, "tiers": ["bridge"], ...}``)."""
    return _flatten(json.loads(json.dumps(dataclasses.asdict(recipe), default=str)))


def record(out: Path, recipe: Any) -> None:
    """Write the recipe that starts the run in ``out`` (a sitting that starts over replaces the old record)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / RECIPE_FILE).write_text(json.dumps(flat(recipe), indent=1, sort_keys=True), encoding="utf-8")


def started_with(out: Path) -> dict[str, Any] | None:
    """The flat recipe the run in ``out`` was started with: its ``recipe.json``, else the ``config`` of a finished
    run's ``summary.json`` (folders from before the record existed); None when neither says."""
    path = out / RECIPE_FILE
    if path.is_file():
        return dict(json.loads(path.read_text(encoding="utf-8")))
    summary = out / "summary.json"
    config = json.loads(summary.read_text(encoding="utf-8")).get("config") if summary.is_file() else None
    return _flatten(config) if config else None


def _flatten(node: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested sections become dotted keys; ``tier_weights`` (a mapping value, not a section) stays whole."""
    out: dict[str, Any] = {}
    for key, value in node.items():
        if isinstance(value, dict) and value and key != "tier_weights":
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = value
    return out


def check(out: Path, recipe: Any) -> None:
    """Refuse to resume or reuse the run in ``out`` when ``recipe`` differs from what started it.

    Raises:
        ConfigError: naming each differing key with both values, and the fixes (the same settings, another folder,
            or starting over).
    """
    before = started_with(out)
    if before is None:
        log.warning(
            "%s has no record of the recipe that started it: resuming or reusing it without checking its settings", out
        )
        return
    now = flat(recipe)
    diff = sorted(
        k for k in before.keys() | now.keys() if k not in SITTING_KEYS and not same_setting(before.get(k), now.get(k))
    )
    if diff:
        changes = "; ".join(f"{k}: started with {before.get(k)!r}, now {now.get(k)!r}" for k in diff[:6])
        raise ConfigError(
            f"{out} holds a GRPO run started with other settings ({changes}{'; ...' if len(diff) > 6 else ''}). "
            "Resuming or reusing it would report that run as this one. Run with the settings it was started with, "
            "train into another folder (`sim-web learn --set grpo.name=...`, or `output_dir`), or delete the folder "
            "to start over."
        )
