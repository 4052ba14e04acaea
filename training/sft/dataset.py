"""The SFT dataset: kept episodes as chats, pre-tokenised with the one wire renderer, saved with a card.

Columns (one row per episode):

- ``messages``: the chat exactly as the env recorded it (``info["messages"]``): Tongyi system prompt with the
  tool schemas and date, the question, raw assistant turns, ``<tool_response>`` user turns;
- ``tools``: the enabled tools' schemas as a JSON string (TRL's conversational path reads it; our renderer
  does not pass ``tools=`` since the schemas are already in the system prompt);
- ``input_ids`` and ``assistant_masks``: :func:`training.wire.encode_chat` under the given tokenizer's chat
  template (1 on assistant content and its end-of-turn token; system, question, tool responses, headers and
  separators 0). TRL 1.16's ``SFTTrainer`` takes such a pre-tokenised dataset as is and turns
  ``assistant_masks`` into ``-100`` labels;
- ``task_id``, ``sample``, ``policy``, ``uncertainty_types``, ``difficulty``, ``turns``, ``num_tokens``,
  ``num_trained_tokens``.

Example:
    >>> tools_json(("search",)).startswith('[{"type": "function"')
    True
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sim_web.tools.toolbox import tool_schema
from simweb_core.errors import ConfigError
from training.sft.collect import CollectResult, format_stats
from training.wire import encode_chat

log = logging.getLogger(__name__)
CARD = "README.md"


def tools_json(tools: Sequence[str]) -> str:
    """The tools' schemas (OpenAI function format, as in the system prompt) as one JSON string."""
    return json.dumps([tool_schema(t) for t in tools], ensure_ascii=False)


def example_row(record: dict[str, Any], tokenizer: Any, tools: str) -> dict[str, Any]:
    """One dataset row from a kept harness record.

    Args:
        record: A trajectory record that passed :func:`training.sft.collect.select`.
        tokenizer: The tokenizer (with the chat template) the model trains and runs with.
        tools: :func:`tools_json` of the run's tools.

    Returns:
        The row (see the module docstring for its columns).
    """
    messages = [{"role": m["role"], "content": m["content"]} for m in record["messages"]]
    enc = encode_chat(tokenizer, messages)
    mask = enc.assistant_mask
    md = record.get("metadata") or {}
    difficulty = md.get("difficulty")
    level = difficulty.get("level") if isinstance(difficulty, dict) else difficulty
    return {
        "messages": messages,
        "tools": tools,
        "input_ids": enc.ids,
        "assistant_masks": mask,
        "task_id": record["task_id"],
        "sample": int(record.get("sample", 0)),
        "policy": str(record.get("policy", "")),
        "uncertainty_types": [str(u) for u in md.get("uncertainty_types") or []],
        "difficulty": str(level or "unknown"),
        "turns": int(record.get("turns", 0)),
        "num_tokens": len(enc.ids),
        "num_trained_tokens": sum(mask),
    }


def build_dataset(
    records: Sequence[dict[str, Any]], tokenizer: Any, tools: Sequence[str], max_tokens: int | None = None
) -> Any:
    """A ``datasets.Dataset`` of the kept episodes.

    Args:
        records: Kept harness records.
        tokenizer: The model's tokenizer (its chat template renders the chats).
        tools: The tools the episodes ran with (for the ``tools`` column).
        max_tokens: Drop episodes longer than this many tokens (``None`` keeps all); SFT never cuts an
            episode, since a cut one would teach turns without their answer.

    Returns:
        The dataset, rows in the order of ``records``.

    Raises:
        ConfigError: When no record is left.
    """
    from datasets import Dataset

    schema = tools_json(tools)
    rows = [example_row(r, tokenizer, schema) for r in records]
    kept = [r for r in rows if max_tokens is None or r["num_tokens"] <= max_tokens]
    if len(kept) < len(rows):
        log.info("dropped %d of %d episodes longer than %d tokens", len(rows) - len(kept), len(rows), max_tokens)
    if not kept:
        raise ConfigError(
            f"no episode left for the dataset ({len(rows)} kept by collection, none within max_tokens={max_tokens}); "
            "collect more episodes or raise max_tokens"
        )
    return Dataset.from_list(kept)


def dataset_card(ds: Any, result: CollectResult, tokenizer_name: str, max_tokens: int | None) -> str:
    """The dataset card (markdown): counts, acceptance table, source runs, tokenizer."""
    n_tok = ds["num_tokens"]
    n_train = ds["num_trained_tokens"]
    lines = [
        "# sim-web SFT demonstrations",
        "",
        (
            "Rejection-sampled episodes of the simulated web (`sim-web sft collect`): correct, every turn parsed, no "
            "agent-side tool error, within the turn cap, no duplicates."
        ),
        "",
        "## Counts",
        "",
        (
            f"- examples: {len(ds)} (tasks: {len(set(ds['task_id']))}); kept by collection {result.stats.kept}, of which "
            f"{result.stats.kept - len(ds)} were longer than max_tokens"
        ),
        (
            f"- tokens per example: mean {sum(n_tok) / len(ds):.0f}, max {max(n_tok)}; trained (assistant) tokens: "
            f"{sum(n_train)} of {sum(n_tok)} ({sum(n_train) / max(1, sum(n_tok)):.1%})"
        ),
        f"- turns per example: mean {sum(ds['turns']) / len(ds):.2f}",
        f"- longest kept: {max_tokens if max_tokens else 'no limit'} tokens",
        f"- tokenizer: `{tokenizer_name}` (chat template rendered by `training.wire.encode_chat`)",
        (
            f"- system prompt: `{result.prompt}` (the runs' `sim-web eval --prompt`; evaluate and train the model with the "
            "same style)"
        ),
        "",
        "## Sources",
        "",
        "| run | policy | split | tools | prompt | episodes | tasks | k |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {s['run']} | {s['policy']} | {s['split']} | {', '.join(s['tools'] or [])} | {s.get('prompt', 'tongyi')} | "
        f"{s['episodes']} | {s['tasks']} | {s['k']} |"
        for s in result.sources
    ]
    lines += [
        "",
        "## Acceptance",
        "",
        "```",
        format_stats(result.stats),
        "```",
        "",
        "## Columns",
        "",
        (
            "`messages`, `tools` (JSON string), `input_ids`, `assistant_masks` (1 = trained), `task_id`, "
            "`sample`, `policy`, `uncertainty_types`, `difficulty`, `turns`, `num_tokens`, `num_trained_tokens`."
        ),
        "",
    ]
    return "\n".join(lines)


def save(ds: Any, out: str | Path, card: str, stats: dict[str, Any]) -> Path:
    """``save_to_disk`` plus ``README.md`` (the card) and ``acceptance.json`` in the same folder."""
    out = Path(out)
    ds.save_to_disk(str(out))
    (out / CARD).write_text(card, encoding="utf-8")
    (out / "acceptance.json").write_text(json.dumps(stats, indent=2), encoding="utf-8")
    return out


def load(path: str | Path) -> Any:
    """A saved SFT dataset.

    Raises:
        ConfigError: When the folder is not one (no ``input_ids`` / ``assistant_masks`` columns).
    """
    from datasets import load_from_disk

    path = Path(path)
    if not (path / "dataset_info.json").is_file():
        raise ConfigError(
            f"{path} is not a saved dataset: build one with `sim-web sft collect RUN --tokenizer MODEL --out {path}`"
        )
    ds = load_from_disk(str(path))
    missing = {"input_ids", "assistant_masks", "messages"} - set(ds.column_names)
    if missing:
        raise ConfigError(f"{path} lacks the columns {sorted(missing)}: rebuild it with `sim-web sft collect`")
    return ds
