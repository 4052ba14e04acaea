"""TRL through OpenEnv: ``examples/trl_openenv.py`` run as written against a live server, one GRPO step on a CPU.

Like the README's TRL block (``test_trl_readme.py``): the bundled SmolLM2, the session's sample index as the
default index, a subprocess; here the rollouts' tools and rewards come from the server over OpenEnv's own client.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from live_server import running

pytest.importorskip("openenv.core", reason="the openenv extra is not installed: pip install -e '.[openenv]'")
pytest.importorskip("trl", reason="the train extra is not installed: pip install -e '.[train]'")

from sim_web.serve.http import create_app  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
RUNNER = """import json, runpy, sys
trainer = runpy.run_path(sys.argv[1], run_name="example")["main"]()
print("RESULT " + json.dumps({"step": trainer.state.global_step, "tools": sorted(t.__name__ for t in trainer.tools),
                              "logs": trainer.state.log_history[0]}))
"""


@pytest.mark.slow  # a real GRPO step of SmolLM2 through a live server: minutes on 2 cores (`make test-slow`)
def test_the_trl_openenv_example_trains_one_step(sample_index, tmp_path):
    from agents.models import SMOLLM2_NAME, smollm2_path

    home = sample_index.parents[1]  # the session's sample index is the example's default index
    link = home / "models" / SMOLLM2_NAME
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(smollm2_path(), target_is_directory=True)
    (tmp_path / "runner.py").write_text(RUNNER, encoding="utf-8")
    app = create_app(str(sample_index))
    registry = app.state.openenv_sessions
    with running(app) as url:
        env = {
            **os.environ,
            "SIM_WEB_HOME": str(home),
            "SIM_WEB_OPENENV_URL": url,
            "HF_HUB_OFFLINE": "1",
            "TRL_EXPERIMENTAL_SILENCE": "1",
            "PYTHONPATH": str(ROOT),
        }
        proc = subprocess.run(
            [sys.executable, "runner.py", str(ROOT / "examples" / "trl_openenv.py")],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=1500,
        )
        assert proc.returncode == 0, proc.stderr[-4000:]
        end = time.monotonic() + 60  # the trainer's process is gone: its sockets dropped, their envs closed
        while registry.live and time.monotonic() < end:
            time.sleep(0.05)
        assert registry.live == 0
    result = json.loads(proc.stdout.split("RESULT ", 1)[1])
    assert result["step"] == 1 and result["tools"] == ["answer", "google_scholar", "search", "visit"]
    assert result["logs"]["num_tokens"] > 0 and "rewards/OpenEnvResearch/mean" in result["logs"]
    assert registry.opened >= 2  # every rollout had its own OpenEnv session on the server
