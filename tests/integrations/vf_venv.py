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

ROOT = Path(__file__).resolve().parents[2]
PINS = ("verifiers==0.4.0", "uv==0.13.8")


def ensure_venv() -> Path:
    """The verifiers venv's interpreter, made first when it is missing or its stamp differs."""
    venv = Path(os.environ.get("SIM_WEB_VERIFIERS_VENV") or ROOT / ".venv" / "verifiers")
    stamp = venv / ".sim-web-tasks-installed"
    want = "\n".join((*PINS, sysconfig.get_paths()["purelib"]))
    python = venv / "bin" / "python"
    if stamp.is_file() and stamp.read_text() == want and python.exists():
        return python
    subprocess.run([sys._base_executable, "-m", "venv", "--clear", str(venv)], check=True)  # type: ignore[attr-defined]
    site = Path(
        subprocess.check_output(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True
        ).strip()
    )
    (site / "zz_sim_web.pth").write_text(f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, *PINS], check=True)
    subprocess.run([*pip, "--no-deps", "-e", str(ROOT / "integrations" / "verifiers")], check=True)
    stamp.write_text(want)
    return python


if __name__ == "__main__":
    print(ensure_venv())
