"""Wheels for another Python and platform: resolve a requirement set for a target machine and download it.

The target is a Python version and a platform tag (``--python 3.12 --platform manylinux_2_28_x86_64``); pip resolves
for it with ``--only-binary=:all:``, since a compiled wheel for another Python cannot be built here. pip evaluates
environment markers (``pyserini==2.4.0; python_version >= '3.12'``, and every dependency's own) with the Python that
runs it, whatever ``--python-version`` says, so pip runs under an interpreter of the target's version
(:func:`~sim_web.bundle.interpreter.find_interpreter`: ``pythonX.Y`` on PATH, pyenv's, the system's). Two more things
make it work:

* packages the target already has (a ``pip freeze --all`` of its image) become stub wheels of their installed version
  with no dependencies, pinned by a constraint: the resolver keeps them (a GPU image's CUDA torch is never replaced) and
  does not descend into their dependencies, which a consistent image (``pip check`` clean) has installed too;
* packages the index serves only as source (pyserini) are built here, once, into a cache; a source-only package whose
  wheel is not pure Python is refused, naming it (build it on a machine like the target and pass ``--find-links``).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from simweb_core.errors import WikiIndexError
from simweb_core.fields import help_field

STUB_LOCAL = "999999999"  # the local label of a stub wheel (see write_stubs)
MAX_SOURCE_BUILDS = 6
COMPILED = (".c", ".cc", ".cpp", ".cxx", ".pyx", ".rs", ".f", ".f90", ".cu")
_NO_MATCH = re.compile(r"No matching distribution found for (\S+)")
#: manylinux aliases (PEP 600): the legacy names of glibc 2.17, 2.12 and 2.5.
_LEGACY = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}


class BundleError(WikiIndexError):
    """A bundle cannot be built or checked: what was expected, what was found, and the fix."""


@dataclass(frozen=True)
class Target:
    """The machine a bundle is for."""

    python: str = help_field(
        f"{sys.version_info.major}.{sys.version_info.minor}", "Python version X.Y (default: this one's)."
    )
    platform: str | None = help_field(
        None,
        "Platform tag such as manylinux_2_28_x86_64 (None: this machine's); older manylinux "
        "tags of the same architecture are accepted too, as pip on the target would.",
    )

    def __post_init__(self) -> None:
        if not re.fullmatch(r"3\.1[1-9]", self.python):
            raise BundleError(f"the target Python must be a version such as 3.12 (3.11 or newer), got {self.python!r}")

    def pip_args(self) -> list[str]:
        """pip's options that make it choose wheels for this target."""
        args = ["--only-binary=:all:", "--python-version", self.python]
        for tag in platform_tags(self.platform):
            args += ["--platform", tag]
        return args

    def describe(self) -> str:
        """``CPython 3.12 on manylinux_2_28_x86_64``."""
        return f"CPython {self.python} on {self.platform or 'this platform'}"


@dataclass(frozen=True)
class Resolved:
    """One package of a resolved set and where its wheel comes from."""

    name: str
    version: str
    url: str
    source: str  # "index" (download it), "installed" (the target has it), "built" (built here), "local" (find-links)


def platform_tags(platform: str | None) -> list[str]:
    """The tags pip should accept for ``platform``: a manylinux tag and every older one of the same architecture.

    Example:
        >>> platform_tags("manylinux_2_17_x86_64")[:2], len(platform_tags("manylinux_2_28_x86_64"))
        (['manylinux_2_17_x86_64', 'manylinux2014_x86_64'], 27)
    """
    if not platform:
        return []
    m = re.fullmatch(r"manylinux_2_(\d+)_(\w+)", platform)
    if not m:
        return [platform]
    glibc, arch = int(m.group(1)), m.group(2)
    tags = []
    for minor in range(glibc, 4, -1):
        tags.append(f"manylinux_2_{minor}_{arch}")
        if minor in _LEGACY:
            tags.append(f"{_LEGACY[minor]}_{arch}")
    return tags


def canonical(name: str) -> str:
    """The normalised project name (PEP 503): ``Sentence_Transformers`` -> ``sentence-transformers``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_freeze(path: str | Path, warn: Callable[[str], None] = print) -> dict[str, str]:
    """The ``name==version`` lines of a ``pip freeze`` file, by canonical name.

    Editable installs and URL installs carry no version to pin; they are left out with a warning (what the target has
    of them is then shipped again if the bundle needs it).

    Raises:
        BundleError: When the file cannot be read.
    """
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise BundleError(
            f"cannot read the target's freeze {path} ({e}): make it on the target with "
            "`python -m pip freeze --all > FILE`"
        ) from e
    found = {}
    for line in lines:
        line = line.split("#", 1)[0].strip()
        m = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)\s*===?\s*(\S+)", line)
        if m:
            found[canonical(m.group(1))] = m.group(2)
        elif line:
            warn(f"note: {Path(path).name}: {line!r} has no version to pin; not counted as installed")
    return found


def write_stubs(installed: dict[str, str], folder: Path) -> Path:
    """Stub wheels (name and version, no dependencies) for the target's packages, and the constraints that pin them.

    The constraint pins the installed release (``torch==2.11.0``); the stub carries it with a numeric local label
    (``2.11.0+999999999``), which PEP 440 orders above every local build of that release (``+cpu``, ``+cu128``), so
    the resolver takes the stub over any real wheel of the same release on the index or in a find-links folder.

    Returns:
        The constraints file.
    """
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for name, version in sorted(installed.items()):
        public = version.split("+", 1)[0]
        _stub_wheel(folder, name, f"{public}+{STUB_LOCAL}")
        lines.append(f"{name}=={public}")
    path = folder / "constraints.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _stub_wheel(folder: Path, name: str, version: str) -> Path:
    """A wheel with only metadata: ``name`` at ``version``, no files and no dependencies."""
    dist = f"{name.replace('-', '_')}-{version}"
    path = folder / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{dist}.dist-info/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        z.writestr(
            f"{dist}.dist-info/WHEEL",
            "Wheel-Version: 1.0\nGenerator: sim-web bundle\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        z.writestr(f"{dist}.dist-info/RECORD", "")
    return path


def pip(python: str, args: list[str]) -> subprocess.CompletedProcess:
    """Run ``python -m pip``; returns the finished process (output captured; the caller checks the code)."""
    return subprocess.run(
        [python, "-m", "pip", *args, "--disable-pip-version-check"], capture_output=True, text=True, check=False
    )


def build_source_wheel(
    requirement: str, cache: Path, python: str = sys.executable, progress: Callable[[str], None] = print
) -> Path:
    """Build a pure-Python wheel of a source-only ``requirement`` (e.g. ``pyserini==2.4.0``) into ``cache``, once.

    Raises:
        BundleError: When the source cannot be fetched, holds compiled code (its wheel would fit only this machine;
            nothing is compiled), or the build fails.
    """
    cache.mkdir(parents=True, exist_ok=True)
    name, _, version = requirement.partition("==")
    stem = f"{canonical(name).replace('-', '_')}-{version}-"
    done = [p for p in cache.glob("*.whl") if p.name.lower().startswith(stem.lower())] if version else []
    if done:
        return done[0]
    progress(f"[bundle] {requirement} has no wheel for the target: building one from its source (cached in {cache})")
    with tempfile.TemporaryDirectory(prefix="bundle-build-") as tmp:
        r = pip(
            python,
            [
                "download",
                "--no-deps",
                "--no-binary=:all:",
                "--ignore-requires-python",
                "--quiet",
                "-d",
                tmp,
                requirement,
            ],
        )
        sdists = sorted(Path(tmp).glob("*.tar.gz")) + sorted(Path(tmp).glob("*.zip"))
        if r.returncode or not sdists:
            raise BundleError(
                f"{requirement} has no wheel for the target, and its source could not be fetched:\n{_tail(r)}"
            )
        compiled = compiled_sources(sdists[0])
        if compiled:
            raise BundleError(
                f"{requirement} has no wheel for the target, and its source has compiled code "
                f"({', '.join(compiled[:3])}), so a wheel built here would fit only this machine: choose "
                "another --platform / --python, or build it on a machine like the target (`pip wheel "
                f"'{requirement}'`) and pass that folder with --find-links"
            )
        r = pip(python, ["wheel", "--no-deps", "--ignore-requires-python", "--quiet", "-w", tmp, str(sdists[0])])
        built = sorted(Path(tmp).glob("*.whl"))
        if r.returncode or not built or not built[0].name.endswith("-none-any.whl"):
            raise BundleError(f"building a pure-Python wheel of {requirement} failed:\n{_tail(r)}")
        return Path(shutil.move(str(built[0]), cache / built[0].name))


def compiled_sources(sdist: Path) -> list[str]:
    """The files of a source archive that would be compiled (C, C++, Cython, Rust, Fortran, CUDA; build scripts)."""
    if sdist.name.endswith(".zip"):
        with zipfile.ZipFile(sdist) as z:
            names = z.namelist()
    else:
        with tarfile.open(sdist) as tar:
            names = tar.getnames()
    return [n for n in names if n.endswith(COMPILED) or n.rsplit("/", 1)[-1] in ("Cargo.toml", "CMakeLists.txt")]


def resolve(
    requirements: list[str],
    target: Target,
    work: Path,
    *,
    python: str = sys.executable,
    installed: dict[str, str] | None = None,
    find_links: Sequence[Path] = (),
    build_cache: Path | None = None,
    progress: Callable[[str], None] = print,
) -> list[Resolved]:
    """Resolve ``requirements`` for ``target`` (pip's own resolver, a dry run: only metadata is fetched).

    Args:
        requirements: pip requirement strings (``sim-web[train]==0.1.0``).
        target: The target Python and platform.
        work: A scratch folder (stubs, the report).
        python: The interpreter that runs pip, of the target's version
            (:func:`~sim_web.bundle.interpreter.resolver_python`).
        installed: The target's packages (:func:`read_freeze`); they resolve to themselves and are not shipped.
        find_links: Folders of extra wheels (this project's own wheel, prebuilt ones).
        build_cache: Where wheels of source-only packages are built (None: source-only packages are an error).
        progress: Called with one line per step.

    Returns:
        Every package of the resolved set with its source.

    Raises:
        BundleError: With pip's explanation when the set does not resolve for the target.
    """
    stubs = work / "stubs"
    constraints = write_stubs(installed or {}, stubs)
    links = [stubs, *find_links] + ([build_cache] if build_cache else [])
    report = work / "report.json"
    for _ in range(MAX_SOURCE_BUILDS):
        args = [
            "install",
            "--dry-run",
            "--ignore-installed",
            "--progress-bar",
            "off",
            "--report",
            str(report),
            "--target",
            str(work / "target"),
            "-c",
            str(constraints),
            *target.pip_args(),
        ]
        for link in links:
            args += ["--find-links", str(link)]
        r = pip(python, args + list(requirements))
        if r.returncode == 0:
            return _read_report(report, stubs, build_cache, find_links, installed or {})
        missing = _NO_MATCH.search(r.stderr)
        if not missing or build_cache is None:
            hint = (
                (
                    "\n(a package above has no wheel for this platform: if the target's glibc is newer, name its manylinux "
                    "tag in --platform, e.g. manylinux_2_35_x86_64 for Ubuntu 22.04)"
                )
                if "no matching distributions" in r.stdout + r.stderr
                else ""
            )
            raise BundleError(f"{' '.join(requirements)} does not resolve for {target.describe()}:\n{_tail(r)}{hint}")
        build_cache.mkdir(parents=True, exist_ok=True)
        build_source_wheel(missing.group(1).split(";")[0], build_cache, python, progress)
    raise BundleError(f"more than {MAX_SOURCE_BUILDS} source-only packages; the last attempt said:\n{_tail(r)}")


def _read_report(
    report: Path, stubs: Path, built: Path | None, local: Sequence[Path], installed: dict[str, str]
) -> list[Resolved]:
    """The packages of pip's installation report, each with where its wheel comes from (a stub: the installed version)."""
    out = []
    for item in json.loads(report.read_text(encoding="utf-8"))["install"]:
        url, meta = item["download_info"]["url"], item["metadata"]
        path = file_path(url)
        source = "index"
        if path and path.parent == stubs.resolve():
            source = "installed"
        elif path and built and path.parent == built.resolve():
            source = "built"
        elif path and any(path.parent == Path(d).resolve() for d in local):
            source = "local"
        name = canonical(meta["name"])
        out.append(Resolved(name, installed[name] if source == "installed" else meta["version"], url, source))
    return sorted(out, key=lambda r: r.name)


def file_path(url: str) -> Path | None:
    """The local file a ``file://`` URL names (resolved), or None for a remote URL."""
    parsed = urlparse(url)
    return Path(unquote(parsed.path)).resolve() if parsed.scheme == "file" else None


def download(
    resolved: list[Resolved],
    target: Target,
    dest: Path,
    python: str = sys.executable,
    progress: Callable[[str], None] = print,
) -> list[Path]:
    """Put the wheel of every package the target lacks into ``dest`` (downloaded, or copied when built or local).

    Returns:
        The wheel files in ``dest``.

    Raises:
        BundleError: When pip cannot download a pinned wheel.
    """
    dest.mkdir(parents=True, exist_ok=True)
    for r in resolved:
        if r.source in ("built", "local"):
            shutil.copy2(file_path(r.url), dest)
    pins = [f"{r.name}=={r.version}" for r in resolved if r.source == "index"]
    if pins:
        progress(f"[bundle] downloading {len(pins)} wheels for {target.describe()} into {dest}")
        r = pip(python, ["download", "--no-deps", "--quiet", "-d", str(dest), *target.pip_args(), *pins])
        if r.returncode:
            raise BundleError(f"downloading the wheels for {target.describe()} failed:\n{_tail(r)}")
    return sorted(dest.glob("*.whl"))


_NOISE = (
    "is ignored: it is neither",
    "Collecting ",
    "Downloading ",
    "Using cached ",
    "Processing ",
    "Obtaining ",
    "Looking in ",
    "Requirement already satisfied",
    "Would install",
    "  Preparing metadata",
    "  Getting requirements",
    "  Installing build dependencies",
    "  Building wheel",
    "  Created wheel",
    "  Stored in directory",
)


def _tail(r: subprocess.CompletedProcess, lines: int = 30) -> str:
    """The last lines of pip's output that explain it (the conflict and its causes), without its progress lines."""
    text = [
        line
        for line in (r.stdout + r.stderr).splitlines()
        if line.strip() and not line.lstrip().startswith(_NOISE) and "is ignored: it is neither" not in line
    ]
    return "\n".join(text[-lines:])
