"""The verifiers venv of the sim-web-tasks tests: made once (by ``make install``, else on a test's first use).

verifiers 0.4 pins ``mcp==2.0.0`` and sim-web's ``openenv`` extra needs ``mcp<2``, so verifiers gets a venv of its
own: ``.venv/verifiers`` (``$SIM_WEB_VERIFIERS_VENV`` names another). It layers on this interpreter's packages (a
``.pth`` file), so sim-web itself is not installed twice, and holds verifiers, uv (the ``null`` harness runs its chat
program as a uv script) and the package of ``integrations/verifiers`` (editable). A stamp file records the pins and
the layered site-packages, so a changed pin makes it again.

    python -m tests.integrations.vf_venv     # what ``make install`` runs
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

from tests.integrations.venvs import stamped_venv

ROOT = Path(__file__).resolve().parents[2]
PINS = ("verifiers==0.4.0", "uv==0.13.8")


def ensure_venv() -> Path:
    """The verifiers venv's interpreter, made first when it is missing or its stamp differs."""
    purelib = sysconfig.get_paths()["purelib"]

    def install(python: Path, pip: list[str]) -> None:
        site = subprocess.check_output(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True
        ).strip()
        (Path(site) / "zz_sim_web.pth").write_text(f"import site; site.addsitedir({purelib!r})\n")
        subprocess.run([*pip, *PINS], check=True)
        subprocess.run([*pip, "--no-deps", "-e", str(ROOT / "integrations" / "verifiers")], check=True)

    venv = Path(os.environ.get("SIM_WEB_VERIFIERS_VENV") or ROOT / ".venv" / "verifiers")
    base = sys._base_executable  # type: ignore[attr-defined]
    return stamped_venv(venv, base, "\n".join((*PINS, purelib)), install, legacy_stamp=".sim-web-tasks-installed")


if __name__ == "__main__":
    print(ensure_venv())
