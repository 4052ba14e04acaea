"""The manifest of an index directory: what was built, from what, with which settings.

A build writes ``manifest.json`` last, with ``"complete": true``; an index without it, or with
another format version, is refused with a message that gives the exact rebuild command.
"""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path
from typing import Any

from simweb_core.errors import IndexMismatchError, IndexNotFoundError

FORMAT = "sim-web-index/1"
MANIFEST = "manifest.json"


def build_command(path: Path | str, source: str = "sample") -> str:
    """The command that (re)builds the index at ``path``."""
    return f"wiki-index build {source} --out {path}"


def package_version(name: str) -> str | None:
    """The installed version of the distribution ``name``, or None when it is not installed."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def versions() -> dict[str, str]:
    """Versions of the packages that shape an index ("absent" for one not installed)."""
    pkgs = ("sim-web", "pyserini", "duckdb", "faiss-cpu", "sentence-transformers", "mwparserfromhell")
    return {pkg: package_version(pkg) or "absent" for pkg in pkgs}


def write_manifest(index_dir: Path, manifest: dict[str, Any]) -> None:
    """Write the manifest (sorted keys, so two identical builds write identical manifests but for times)."""
    data = {"format": FORMAT, **manifest, "complete": True}
    (index_dir / MANIFEST).write_text(
        json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
    )


def read_manifest(index_dir: Path | str) -> dict[str, Any]:
    """Read and check the manifest of an index directory.

    Raises:
        IndexNotFoundError: No directory, no manifest, or an incomplete build.
        IndexMismatchError: A manifest of another format version.
    """
    path = Path(index_dir)
    source = "sample"
    if not path.is_dir():
        raise IndexNotFoundError(f"no index at {path}. Build it with:\n    {build_command(path, source)}")
    mf = path / MANIFEST
    if not mf.is_file():
        raise IndexNotFoundError(
            f"{path} holds no complete index (no {MANIFEST}; an interrupted build?). Rebuild it with:\n    {build_command(path, source)}"
        )
    try:
        data = json.loads(mf.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise IndexMismatchError(
            f"{mf} is not valid JSON ({e}). Rebuild it with:\n    {build_command(path, source)}"
        ) from e
    source = data.get("source", {}).get("spec", source)
    if data.get("format") != FORMAT:
        raise IndexMismatchError(
            f"{path} has index format {data.get('format')!r}, this sim-web reads {FORMAT!r}. Rebuild it with:\n    {build_command(path, source)}"
        )
    if not data.get("complete"):
        raise IndexNotFoundError(f"{path} is an incomplete build. Rebuild it with:\n    {build_command(path, source)}")
    return data
