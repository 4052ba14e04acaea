"""Split a file into parts of bounded size with a sha256 manifest, and join them back, checking every part.

Transfers to air-gapped machines are often capped per file. :func:`split_file` cuts one archive into
``NAME.part000``, ``NAME.part001``, ... and writes ``manifest.json`` (the size and sha256 of every part and of the
whole); :func:`join_parts` checks every part against the manifest before it writes a byte, names each missing or
damaged part, then joins them and checks the whole again.

This module uses the standard library only: ``sim-web bundle`` copies it into the bundle as ``join_bundle.py``, which
runs on the target before anything is installed::

    python3 join_bundle.py            # in the folder with the parts: check, join, unpack
    python3 join_bundle.py --check    # only check the parts (e.g. after each transfer)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

MANIFEST = "manifest.json"
#: The files a bundle's folder holds besides its parts (``sim-web bundle`` writes them), and the folder it unpacks.
BUNDLE_FILES = (MANIFEST, "join_bundle.py", "README.txt", "sim-web-bundle")
FORMAT = "sim-web-bundle-parts/1"
CHUNK = 1 << 20


class PartsError(Exception):
    """A part is missing, has the wrong size or hash, or the manifest is unreadable."""


def sha256_file(path: Path) -> str:
    """The hex sha256 of a file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def split_file(
    path: str | Path, out_dir: str | Path, max_part_bytes: int, progress: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Cut ``path`` into parts of at most ``max_part_bytes`` in ``out_dir`` and write ``manifest.json`` there.

    Args:
        path: The file to split (a bundle archive).
        out_dir: Where the parts and the manifest go.
        max_part_bytes: The most bytes of one part (the transfer limit).
        progress: Called with one line per part written.

    Returns:
        The manifest (also written as ``out_dir/manifest.json``).

    Raises:
        PartsError: For a part size below 1 byte.
    """
    src, out = Path(path), Path(out_dir)
    if max_part_bytes < 1:
        raise PartsError(f"the part size must be at least 1 byte, got {max_part_bytes}")
    out.mkdir(parents=True, exist_ok=True)
    parts, whole = [], hashlib.sha256()
    with src.open("rb") as f:
        while True:
            name = f"{src.name}.part{len(parts):03d}"
            size, h = _copy_part(f, out / name, max_part_bytes, whole)
            if size == 0 and parts:
                (out / name).unlink()
                break
            parts.append({"name": name, "bytes": size, "sha256": h})
            if progress:
                progress(f"{name}: {size / 2**20:.1f} MiB")
            if size < max_part_bytes:
                break
    manifest = {
        "format": FORMAT,
        "archive": src.name,
        "bytes": sum(p["bytes"] for p in parts),
        "sha256": whole.hexdigest(),
        "max_part_bytes": max_part_bytes,
        "parts": parts,
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def _copy_part(f: Any, dest: Path, limit: int, whole: Any) -> tuple[int, str]:
    """Copy up to ``limit`` bytes from ``f`` to ``dest``; returns (bytes, sha256) and feeds ``whole``."""
    h, size = hashlib.sha256(), 0
    with dest.open("wb") as g:
        while size < limit:
            block = f.read(min(CHUNK, limit - size))
            if not block:
                break
            g.write(block)
            h.update(block)
            whole.update(block)
            size += len(block)
    return size, h.hexdigest()


def read_manifest(folder: str | Path) -> dict[str, Any]:
    """The parts manifest of ``folder``.

    Raises:
        PartsError: When it is missing or not a parts manifest.
    """
    path = Path(folder) / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise PartsError(
            f"cannot read {path} ({e}): copy manifest.json from the bundle's folder next to the parts"
        ) from e
    if manifest.get("format") != FORMAT:
        raise PartsError(
            f"{path} is not a parts manifest: expected format {FORMAT!r}, found {manifest.get('format')!r}"
        )
    return manifest


def plain_name(name: Any) -> bool:
    """Whether ``name`` is a file name without a directory part (not ``../x``, ``/x``, ``a/x``, ``.``)."""
    return isinstance(name, str) and name not in ("", ".", "..") and Path(name).name == name and "\\" not in name


def archive_name(manifest: dict[str, Any], folder: Path) -> str:
    """The manifest's ``archive``: a plain file name, so the joined archive lands inside ``folder``, and none of the
    bundle's own files (a part, the manifest, this script), which joining would overwrite.

    Raises:
        PartsError: For a name with a directory part (``../x``, ``/etc/x``, ``sub/x``), no name at all, or the name
            of one of the bundle's own files.
    """
    name = manifest.get("archive")
    if not plain_name(name):
        raise PartsError(
            f"{folder / MANIFEST} names the archive {name!r}, expected a plain file name inside {folder} "
            "(e.g. sim-web-bundle.tar.gz): the manifest was tampered with or damaged; copy the bundle's folder again"
        )
    parts = manifest.get("parts")
    own = {*BUNDLE_FILES, Path(__file__).name}
    own |= {str(p.get("name")) for p in parts if isinstance(p, dict)} if isinstance(parts, list) else set()
    if str(name).casefold() in {n.casefold() for n in own}:
        raise PartsError(
            f"{folder / MANIFEST} names the archive {name!r}, one of the bundle's own files, which joining would "
            "overwrite: the manifest was tampered with or damaged; copy the bundle's folder again"
        )
    return str(name)


def check_parts(folder: str | Path, progress: Callable[[str], None] | None = None) -> list[str]:
    """Check every part in ``folder`` against the manifest.

    Returns:
        One line per bad part (missing, wrong size, wrong sha256), naming it and what was expected; empty when all
        parts are good.
    """
    folder = Path(folder)
    problems = []
    for part in read_manifest(folder)["parts"]:
        if not plain_name(part.get("name")):
            problems.append(f"{part.get('name')!r}: not a plain file name inside {folder} (a tampered manifest)")
            continue
        path = folder / part["name"]
        if not path.is_file():
            problems.append(f"{part['name']}: missing (expected {part['bytes']} bytes)")
            continue
        size = path.stat().st_size
        if size != part["bytes"]:
            problems.append(f"{part['name']}: {size} bytes, expected {part['bytes']} (incomplete copy?)")
            continue
        found = sha256_file(path)
        if found != part["sha256"]:
            problems.append(f"{part['name']}: sha256 {found}, expected {part['sha256']} (damaged in transfer)")
        elif progress:
            progress(f"{part['name']}: ok")
    return problems


def join_parts(
    folder: str | Path, dest: str | Path | None = None, progress: Callable[[str], None] | None = None
) -> Path:
    """Check all parts, then join them into the archive and check its sha256.

    Args:
        folder: The folder with ``manifest.json`` and the parts.
        dest: The joined archive (default: the manifest's archive name inside ``folder``).
        progress: Called with one line per checked part.

    Returns:
        The joined archive.

    Raises:
        PartsError: Naming every missing or damaged part (nothing is written then), or when the joined archive's
            sha256 differs from the manifest's.
    """
    folder = Path(folder)
    manifest = read_manifest(folder)
    out = Path(dest) if dest else folder / archive_name(manifest, folder)
    problems = check_parts(folder, progress)
    if problems:
        raise PartsError(
            f"{len(problems)} of {len(manifest['parts'])} parts are bad; copy them again:\n  " + "\n  ".join(problems)
        )
    whole = hashlib.sha256()
    with out.open("wb") as g:
        for part in manifest["parts"]:
            with (folder / part["name"]).open("rb") as f:
                for block in iter(lambda: f.read(CHUNK), b""):
                    g.write(block)
                    whole.update(block)
    if whole.hexdigest() != manifest["sha256"]:
        out.unlink()
        raise PartsError(
            f"the joined archive's sha256 is {whole.hexdigest()}, expected {manifest['sha256']}: "
            "the manifest does not belong to these parts; copy the bundle's folder again"
        )
    return out


def extract(archive: str | Path, dest: str | Path) -> Path:
    """Unpack a joined bundle archive into ``dest`` (no absolute paths or links out of it)."""
    with tarfile.open(archive) as tar:
        if hasattr(tarfile, "data_filter"):  # 3.11.4+
            tar.extractall(dest, filter="data")
        else:  # pragma: no cover - older patch releases
            tar.extractall(dest)
    return Path(dest)


def main(argv: list[str] | None = None) -> int:
    """``python3 join_bundle.py [--check] [--dir DIR]``: check the parts, join them, unpack the bundle."""
    p = argparse.ArgumentParser(
        prog="join_bundle.py", description="Check (sha256) and join the parts of a sim-web bundle."
    )
    p.add_argument(
        "--dir", default=str(Path(__file__).resolve().parent), help="folder with manifest.json and the parts"
    )
    p.add_argument("--check", action="store_true", help="only check the parts")
    p.add_argument("--no-extract", action="store_true", help="join into the archive but do not unpack it")
    args = p.parse_args(argv)
    try:
        if args.check:
            problems = check_parts(args.dir, print)
            if problems:
                print("BAD PARTS (copy them again):\n  " + "\n  ".join(problems), file=sys.stderr)
                return 1
            print("all parts are good")
            return 0
        archive = join_parts(args.dir, progress=print)
        print(f"joined {archive} (sha256 checked)")
        if not args.no_extract:
            root = extract(archive, args.dir)
            print(f"unpacked into {root}; next: bash {root / 'sim-web-bundle' / 'install.sh'}")
            archive.unlink()
    except PartsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
