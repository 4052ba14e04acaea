"""The GRPO recipes ship as package data: a wheel built from this checkout, installed outside it, loads them."""

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("simweb_core", "wiki_index", "sim_web", "agents", "training")


def test_an_installed_wheel_loads_the_cpu_smoke_recipe(tmp_path):
    src = tmp_path / "src"  # a copy, so the build leaves no build/ or egg-info behind in the checkout
    for name in PACKAGES:
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md", *(p.name for p in ROOT.glob("LICENSE*"))):
        shutil.copy(ROOT / name, src / name)
    wheels, target, cwd = tmp_path / "wheels", tmp_path / "installed", tmp_path / "elsewhere"
    cwd.mkdir()
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), "."],
        cwd=src,
        check=True,
        capture_output=True,
        text=True,
    )
    [wheel] = wheels.glob("*.whl")
    subprocess.run(
        [*pip, "install", "--no-deps", "--target", str(target), str(wheel)],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    )
    assert (target / "training" / "configs" / "cpu-smoke.yaml").is_file()
    code = (
        "import training.grpo.recipes as c; r = c.load_recipe('cpu-smoke'); "
        "print(c.__file__); print(r.name, r.model, r.trainer.max_steps, ','.join(r.tools)); print(c.recipe_names())"
    )
    env = {
        "PYTHONPATH": f"{target}:{sysconfig.get_paths()['purelib']}",
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "OMP_NUM_THREADS": "1",
    }
    res = subprocess.run(
        [sys.executable, "-S", "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    assert res.returncode == 0, res.stderr[-3000:]
    module, recipe, names = res.stdout.splitlines()[-3:]
    assert Path(module).is_relative_to(target)  # the installed copy, not the checkout
    assert recipe == "cpu-smoke tiny 2 search,visit,google_scholar"
    assert names == "['cpu-learn', 'cpu-smoke', 'multi-gpu', 'single-gpu']"
