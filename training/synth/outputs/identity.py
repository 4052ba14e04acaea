"""The generator identity of a task set: a short hash of the synthesiser's code, its settings and the index it read.

A written set's card records it as ``generator_id``. ``sim-web synth --if-stale`` (what the Makefile runs) compares
that with the identity the same command would write now, so a set made by an older generator, other settings or
another build of the index is written again instead of being trained on. The hash covers:

* the bytes of every ``*.py`` file under ``training/synth/``, each with its relative path (sorted by path);
* the synth settings as the card records them (canonical JSON), less those that change no record
  (:data:`NOT_IDENTITY`);
* the index's content identity from its ``manifest.json`` (:data:`INDEX_KEYS`), or its resolved path when the
  manifest gives none.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: The root of the synthesiser's code (``training/synth/``).
SYNTH_ROOT = Path(__file__).resolve().parents[1]

#: Settings left out of the identity: ``llm`` (the endpoint, never on the card) and ``progress`` (a progress bar).
NOT_IDENTITY = frozenset({"llm", "progress"})

#: Manifest keys that identify what an index's searches and pages return (its build time does not).
INDEX_KEYS = ("content_sha256", "chunk", "bm25", "counts")

#: Hex digits kept of the sha256.
ID_LENGTH = 16


def source_digest(root: str | Path = SYNTH_ROOT) -> str:
    """The sha256 (hex) of every ``*.py`` file under ``root``, each preceded by its relative path.

    Args:
        root: The source tree (default: ``training/synth/``); a test hashes a copy.

    Raises:
        FileNotFoundError: ``root`` holds no ``*.py`` file (the wrong folder: pass the synthesiser's package).
    """
    root = Path(root)
    files = sorted((p.relative_to(root).as_posix(), p) for p in root.rglob("*.py") if p.is_file())
    if not files:
        raise FileNotFoundError(f"expected the synthesiser's *.py files under {root}, found none; pass its package")
    h = hashlib.sha256()
    for rel, path in files:
        h.update(rel.encode("utf-8") + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def index_identity(index_dir: str | Path) -> dict[str, Any]:
    """What identifies an index's content: :data:`INDEX_KEYS` of its manifest, else ``{"path": <resolved path>}``."""
    path = Path(index_dir).resolve()
    try:
        manifest = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        manifest = {}
    if not isinstance(manifest, dict) or not manifest.get("content_sha256"):
        return {"path": str(path)}
    return {k: manifest.get(k) for k in INDEX_KEYS}


def canonical_json(data: Any) -> str:
    """``data`` as JSON with sorted keys and no spaces (tuples as lists, other objects as ``str``)."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def generator_id(config: Mapping[str, Any], index_dir: str | Path, root: str | Path = SYNTH_ROOT) -> str:
    """The generator identity of a task set: the first :data:`ID_LENGTH` hex digits of a sha256.

    Args:
        config: The synth settings, as the card's ``"config"`` records them (``asdict`` of a
            :class:`~training.synth.config.SynthConfig` works too: :data:`NOT_IDENTITY` is dropped).
        index_dir: The index the set is synthesised from.
        root: The synthesiser's source tree (default: ``training/synth/``).

    Returns:
        A short hex string that changes with any source byte, setting or index content.
    """
    settings = {k: v for k, v in config.items() if k not in NOT_IDENTITY}
    h = hashlib.sha256()
    for part in (source_digest(root), canonical_json(settings), canonical_json(index_identity(index_dir))):
        h.update(part.encode("utf-8") + b"\n")
    return h.hexdigest()[:ID_LENGTH]


def stale_reason(out: str | Path, card: str | Path, current: str) -> str:
    """Why the task set at ``out`` must be written again for the identity ``current``; ``""`` when it is up to date.

    Args:
        out: The set's ``.jsonl``.
        card: Its ``.card.json``, which records the identity it was written with.
        current: The identity a new run would record (:func:`generator_id`).
    """
    out, card = Path(out), Path(card)
    if not out.is_file():
        return f"{out} does not exist"
    try:
        recorded = json.loads(card.read_text(encoding="utf-8")).get("generator_id")
    except FileNotFoundError:
        return f"{card} does not exist"
    except (OSError, ValueError, AttributeError) as e:
        return f"{card} cannot be read as a card ({e})"
    if not recorded:
        return f"{card} has no generator_id (written by an older sim-web)"
    if recorded != current:
        return f"generator_id {recorded} differs from the current {current}"
    return ""
